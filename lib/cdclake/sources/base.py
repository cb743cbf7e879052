"""The one small interface between the engine and a source.

The engine (positions, transaction assembly, MERGE, schema history, checkpoints) only sees:

* :class:`Position` — an opaque, JSON-serialisable log position with an integer ``ordinal`` that
  orders commits (the engine builds the event sequence from it);
* :class:`TypeMapper` — how a source column travels: a *canonical* value (JSON-friendly, produced
  identically by the log decoder and by the snapshot ``SELECT``) and a Spark SQL expression that
  turns the canonical value into the Delta column's type;
* log records from :meth:`Source.mine`: ``Begin``, ``RowChange``, ``Commit``, ``Rollback``, ``Ddl``,
  in log order. The engine buffers by transaction and only emits committed work.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cdclake.errors import CdcError
from cdclake.schema import Column, TableSchema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Position(abc.ABC):
    """A point in the source's change log, between two transactions."""

    @property
    @abc.abstractmethod
    def ordinal(self) -> int:
        """Monotonic integer of this position in commit order (< 10**27)."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form stored in checkpoints and the run log."""

    @abc.abstractmethod
    def describe(self) -> str:
        """Short human form, e.g. ``mysql-bin.000003:4711``."""

    @property
    def read_from_ordinal(self) -> int:
        """Ordinal of the oldest log point that mining from here must read: below :attr:`ordinal` when
        transactions were open at this position (their earlier changes are needed)."""
        return self.ordinal

    def __str__(self) -> str:
        return self.describe()


# ---- log records -------------------------------------------------------------------------------


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


@dataclass
class WindowEnd:
    """Last record of :meth:`Source.mine`: where the next window starts."""

    position: Position


LogRecord = Begin | RowChange | Commit | Rollback | Ddl | WindowEnd


# ---- type mapping ------------------------------------------------------------------------------


class TypeMapper(abc.ABC):
    """How values of one source's columns reach Delta, the same way from snapshot and from log."""

    @abc.abstractmethod
    def canonical_type(self, column: Column) -> str:
        """Spark SQL type of the canonical value (what the log decoder emits into JSON and what the
        snapshot SELECT returns), e.g. ``STRING`` for DECIMAL, ``BIGINT`` for INT."""

    @abc.abstractmethod
    def to_delta_sql(self, column: Column, expr: str) -> str:
        """Spark SQL expression converting canonical ``expr`` to ``column.spark_type``."""

    def initial_value_sql(self, column: Column) -> str | None:
        """Spark SQL value that rows existing before ``column`` was added hold (None: NULL)."""
        return None

    def filter_literal_kind(self, column: Column) -> str | None:
        """How a Delta value of ``column`` is written in a filter that the source's SQL and Spark SQL
        read the same way (``cdclake reconcile --repair`` selects keys with it): ``"number"`` (bare
        digits), ``"string"`` (single-quoted, no quote or backslash inside) or ``"date"``
        (``DATE 'YYYY-MM-DD'``); ``None`` when no such literal is known (the repair is refused).

        Only say so when the source column compared with that literal selects exactly the rows whose
        Delta value it is: a wrong literal makes a repair delete the lake row and read nothing back.
        """
        return None


# ---- the source --------------------------------------------------------------------------------


@dataclass
class SnapshotStart:
    """What a snapshot needs before reading rows: the low-watermark and each table's schema there."""

    position: Position
    schemas: dict[str, TableSchema]
    ddl: dict[str, str]  # table -> the DDL text the schema was taken from


class Source(abc.ABC):
    """A database whose changes cdclake captures."""

    connector: str  # "mysql", "mariadb", "oracle", "db2"
    types: TypeMapper

    @abc.abstractmethod
    def preflight(self) -> None:
        """Raise :class:`cdclake.errors.PreflightError` naming the first problem and its fix."""

    @abc.abstractmethod
    def captured_tables(self) -> list[str]:
        """Tables on the server that the include/exclude lists select, as ``database.table``."""

    @abc.abstractmethod
    def snapshot_start(self, tables: list[str]) -> SnapshotStart:
        """Fix the low-watermark position and read the tables' schemas consistently with it."""

    @abc.abstractmethod
    def snapshot_read(self, spark: SparkSession, schema: TableSchema, where: str | None = None) -> DataFrame:
        """Read the table's rows (those matching the SQL filter ``where``, if given) as canonical
        columns (named as the source columns), at the position of the last :meth:`snapshot_start`
        or :meth:`prepare_snapshot_read`."""

    def prepare_snapshot_read(self, position: Position) -> None:  # noqa: B027 - optional hook
        """Make :meth:`snapshot_read` read at ``position`` (from an earlier :meth:`snapshot_start`,
        e.g. when a killed backfill is resumed in a new process)."""

    @abc.abstractmethod
    def current_position(self) -> Position:
        """The end of the log now (where a run that starts now stops)."""

    @abc.abstractmethod
    def position_from_dict(self, data: Mapping[str, Any]) -> Position:
        """Inverse of :meth:`Position.to_dict`."""

    @abc.abstractmethod
    def check_available(self, start: Position) -> None:
        """Raise :class:`cdclake.errors.PositionLostError` if the log from ``start`` is gone."""

    @abc.abstractmethod
    def mine(
        self,
        start: Position,
        end: Position,
        schemas: dict[str, TableSchema],
        next_schema_version: int,
        max_events: int | None = None,
        floors: dict[str, int] | None = None,
    ) -> Iterator[LogRecord]:
        """Yield records from ``start`` to ``end`` (whole transactions only) in log order, then
        a :class:`WindowEnd`.

        ``schemas`` is the registry valid at ``start`` (from the schema history); the miner decodes
        rows with it and evolves it with each DDL it meets, numbering new schema versions from
        ``next_schema_version``. With ``max_events`` it stops at the first commit after that many
        row events. ``floors`` maps tables to an ordinal at or before which their changes and DDL
        are already in the lake (a table snapshotted after ``start``): skip those.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def explain_error(self, exc: BaseException) -> CdcError | None:
        """A :class:`CdcError` saying what to do about a failure of a snapshot read, if known."""
        return None

    def filter_identifier(self, name: str) -> str | None:
        """Column ``name`` as written in a filter both the source's SQL and Spark SQL read (see
        :meth:`TypeMapper.filter_literal_kind`); ``None`` if there is no such spelling. Default: the
        bare name when it is a plain identifier."""
        return name if _PLAIN_IDENTIFIER.fullmatch(name) else None


@dataclass
class MinedWindow:
    """One window mined by a :class:`FrameSource`.

    ``rows`` has the engine's log-row schema (:data:`cdclake.engine.events.LOG_ROWS_DDL`): row
    changes with their transaction id, commits and rollbacks, in log order (``idx``). Transactions
    need not end inside the window: the engine carries open ones over in Delta.
    """

    end: Position
    rows: DataFrame
    ddl: list[Ddl]
    stats: dict[str, Any] = field(default_factory=dict)


class FrameSource(Source):
    """A source whose log is decoded in Spark, window by window (large logs, parallel parsing)."""

    def release(self) -> None:
        """Drop what :meth:`mine_frame` cached, once the engine has consumed the window."""

    def assemble_pieces(self, rows: DataFrame) -> DataFrame:
        """Fold ``piece`` rows of committed transactions into their changes (default: none exist)."""
        return rows

    def mine(self, *args: Any, **kwargs: Any) -> Iterator[LogRecord]:
        raise NotImplementedError(f"{type(self).__name__} mines with mine_frame()")

    @abc.abstractmethod
    def mine_frame(
        self,
        spark: SparkSession,
        window_id: int,
        start: Position,
        end_limit: Position,
        schemas: dict[str, TableSchema],
        versions: dict[str, int],
        next_schema_version: int,
        max_events: int | None,
        staging: str,
        floors: dict[str, int] | None = None,
    ) -> MinedWindow:
        """Mine from ``start`` to at most ``end_limit`` (any log position, not only between
        transactions); stage what is needed under ``staging`` (a Hadoop-FS path the engine clears).

        ``schemas`` / ``versions`` are the registry valid at ``start`` and its schema versions; DDL
        met in the window evolves it (new versions from ``next_schema_version``) and is returned in
        ``ddl``, in log order. ``floors`` (table -> position ordinal, as :meth:`Source.mine` gets):
        DDL at or below a table's floor is in its snapshot already and is dropped.
        """
