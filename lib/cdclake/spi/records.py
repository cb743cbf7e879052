"""What a source hands the engine: log records in log order, and what a DDL statement did.

A source that decodes its log on the driver yields :data:`LogRecord` objects
(:meth:`cdclake.spi.RecordLogReader.records`); the engine buffers row changes by transaction and keeps
committed work only. A source that decodes in Spark hands log rows instead (:mod:`cdclake.spi.logrows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cdclake.schema import TableSchema
from cdclake.spi.position import Position


@dataclass
class Begin:
    txid: str
    position: Position


@dataclass
class RowChange:
    """One row change inside a transaction. ``before``/``after`` hold canonical values."""

    txid: str
    table: str  # "database.table"
    op: str  # "c" | "u" | "d" | "t"
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    schema_version: int


@dataclass
class Commit:
    txid: str
    position: Position  # the position just after the commit: resuming here skips this txn
    commit_ts: datetime | None


@dataclass
class Rollback:
    txid: str
    position: Position


@dataclass
class Ddl:
    """A schema change, already applied to the decoder's schema registry.

    ``changes`` maps each affected table to its schema after the statement (``None`` = dropped);
    ``renamed_from`` maps a new table name to the old one for table renames.
    """

    position: Position  # just after the statement
    statement: str
    database: str | None
    changes: dict[str, TableSchema | None]
    commit_ts: datetime | None = None
    renamed_from: dict[str, str] = field(default_factory=dict)
    column_renames: dict[str, dict[str, str]] = field(default_factory=dict)  # table -> {old: new}
    skipped_reason: str | None = None  # set when an unparsable statement was skipped by config
    # table -> why its changes stop being captured here (a statement or row shape cdclake cannot
    # apply); such a table is parked until it is re-snapshotted, the others go on
    parked: dict[str, str] = field(default_factory=dict)
    # table -> why the rows it had before the statement must be read again from the source (the log
    # does not carry what the statement did to them: a row-dependent default, a lossy type change...)
    reread: dict[str, str] = field(default_factory=dict)
    # tables the statement made anew (CREATE TABLE, CREATE OR REPLACE): they start empty, whatever a table
    # of the same name held before; rows the statement itself writes (CREATE ... SELECT) follow as row events
    created: list[str] = field(default_factory=list)


@dataclass
class WindowEnd:
    """Last record of :meth:`cdclake.spi.RecordLogReader.records`: where the next window starts."""

    position: Position


LogRecord = Begin | RowChange | Commit | Rollback | Ddl | WindowEnd


@dataclass
class DdlOutcome:
    """What one DDL statement did to the table schemas (a source's DDL parser returns it)."""

    changes: dict[str, TableSchema | None] = field(default_factory=dict)  # 'db.table' -> after/None
    renamed_from: dict[str, str] = field(default_factory=dict)  # new name -> old name
    truncated: list[str] = field(default_factory=list)
    ignored: bool = False  # the statement does not affect any known table schema
    # table (name after the statement) -> {old column name: new column name}; renames keep data
    column_renames: dict[str, dict[str, str]] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)  # tables made anew (empty) by the statement
    # table -> why its rows changed without row events (DROP/TRUNCATE/EXCHANGE PARTITION...): read them again
    reread: dict[str, str] = field(default_factory=dict)
    # table -> why its shape and rows are unknown after the statement (renamed from a table the parser does not
    # know): the source parks it, if captured, until it is re-snapshotted
    unknown: dict[str, str] = field(default_factory=dict)
