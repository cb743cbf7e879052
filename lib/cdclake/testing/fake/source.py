"""The fake source: :mod:`.store`'s log as cdclake's source interface sees it (the one module of the fake that
knows :mod:`cdclake.spi`; ``plugin.py`` registers it).

The pipeline file's ``source.shape`` picks how a window is handed over, so that the engine's three ways in are
all driven by the same database:

* ``records`` — a :class:`~cdclake.spi.RecordLogReader`: log records decoded on the driver, each transaction at
  its commit (as a binlog has them), a truncate as its own transaction, rolled-back ones ending in a
  ``Rollback``; windows end between transactions;
* ``frame`` — a :class:`~cdclake.spi.FrameLogReader`: log rows in log order (changes interleaved, partial
  rollbacks as ``undo`` rows), windows ending wherever the log or ``max_events`` stops them, inside
  transactions too; a snapshot taken while transactions are open starts mining at the oldest one's first change;
* ``committed`` — ``WindowSink.committed``: the committed changes already sequenced, with the window's DDL.

Positions are log entry numbers (``fake:<n>``). Rows are decoded with the schemas the engine's history gives
(``WindowRequest.schemas``), evolved by the window's schema changes as a DDL parser would: a table renamed from,
or made like, one it does not hold is parked; a retype the lake's cast cannot follow, a value per row for an
added column and rows changed without row events are re-read; the value older rows get for an added column is
the column's ``FILL``; a ``generated`` column is ``UNLOGGED``; with ``partial_images``, an update leaves
unchanged ``toast`` columns out of its images (``UNAVAILABLE_KEY``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from pydantic import SecretStr

from cdclake.errors import PositionLostError, PreflightError, command
from cdclake.schema import Column, TableSchema
from cdclake.spi import (
    FILL,
    KIND_CHANGE,
    KIND_COMMIT,
    KIND_ROLLBACK,
    KIND_UNDO,
    LOG_ROWS_DDL,
    PENDING_SCAN_EVENTS,
    SEQ_SPAN,
    UNAVAILABLE_KEY,
    UNLOGGED,
    Begin,
    Commit,
    CommittedWindow,
    Ddl,
    FrameLogReader,
    LogReader,
    LogRecord,
    MinedWindow,
    PendingChanges,
    Position,
    RecordLogReader,
    Rollback,
    RowChange,
    SnapshotReader,
    SnapshotStart,
    Source,
    SourceConfigBase,
    SourceContext,
    TypeMapper,
    WindowEnd,
    WindowRequest,
    WindowSink,
)
from cdclake.testing.fake.store import FakeDatabase, evolve

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class FakeSourceConfig(SourceConfigBase):
    """The ``source:`` block of a pipeline on a :class:`~cdclake.testing.fake.store.FakeDatabase` (tests only)."""

    type: Literal["fake"]
    store: str  # the database's log file
    shape: Literal["records", "frame", "committed"] = "records"
    partial_images: bool = False  # updates leave unchanged toast columns out of their images
    password: SecretStr | None = None  # unused: a secret, as real sources have (tests check none is shown)


@dataclass(frozen=True)
class FakePosition(Position):
    """After log entry ``n``; ``read_from``: mining from here reads the log after that entry (transactions
    open at a snapshot began there).

    >>> FakePosition(9, 4).describe(), FakePosition.from_dict(FakePosition(9, 4).to_dict()).read_from_ordinal
    ('fake:9 (from 4)', 4)
    """

    n: int
    read_from: int | None = None

    @property
    def ordinal(self) -> int:
        return self.n

    @property
    def read_from_ordinal(self) -> int:
        return self.n if self.read_from is None else min(self.read_from, self.n)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "read_from": self.read_from}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FakePosition:
        return cls(int(data["n"]), None if data.get("read_from") is None else int(data["read_from"]))

    def describe(self) -> str:
        return f"fake:{self.n}" + ("" if self.read_from is None else f" (from {self.read_from})")


_CANONICAL = {"INT": "BIGINT", "BIGINT": "BIGINT", "DOUBLE": "DOUBLE", "BOOLEAN": "BOOLEAN"}


class FakeTypes(TypeMapper):
    """Ints travel as BIGINT, doubles and booleans as themselves, everything else as text."""

    def __init__(self, partial_images: bool = False) -> None:
        self.images_may_omit_columns = partial_images

    def canonical_type(self, column: Column) -> str:
        return _CANONICAL.get(column.spark_type.upper(), "STRING")

    def to_delta_sql(self, column: Column, expr: str) -> str:
        if column.spark_type.upper() in ("STRING", "DOUBLE", "BOOLEAN", "BIGINT"):
            return expr
        return f"CAST({expr} AS {column.spark_type})"

    def initial_value_sql(self, column: Column) -> str | None:
        fill = column.attrs.get(FILL)
        if fill is None:
            return None
        if self.canonical_type(column) == "STRING":
            return self.to_delta_sql(column, "'" + str(fill).replace("\\", "\\\\").replace("'", "\\'") + "'")
        return self.to_delta_sql(column, str(fill).lower() if isinstance(fill, bool) else str(fill))

    def filter_literal_kind(self, column: Column) -> str | None:
        spark = column.spark_type.upper()
        return "number" if spark in ("INT", "BIGINT") else "string" if spark == "STRING" else \
            "date" if spark == "DATE" else None


def engine_schema(schema: TableSchema) -> TableSchema:
    """A store schema as the engine gets it: generated columns are never logged."""
    if not any(c.attrs.get("generated") and not c.attrs.get(UNLOGGED) for c in schema.columns):
        return schema
    return schema.with_columns([replace(c, attrs={**c.attrs, UNLOGGED: True}) if c.attrs.get("generated") else c
                                for c in schema.columns])


def _ts(entry: Mapping[str, Any]) -> datetime:
    return datetime.fromisoformat(entry["ts"])


def _json(image: Mapping[str, Any] | None) -> str | None:
    return None if image is None else json.dumps(image)


class _Window:
    """One window of the log decoded against the engine's registry: what every shape is made of."""

    def __init__(self, source: FakeSource, request: WindowRequest) -> None:
        self.source = source
        self.db = source.db
        self.captures = source.config.captures
        self.partial = source.config.partial_images
        self.schemas = dict(request.schemas)
        self.versions = dict(request.versions)
        self.next_version = request.next_schema_version
        self.floors = request.floors
        self.start = request.start
        self.end_limit = request.end_limit
        self.max_events = request.max_events
        self.changes = 0  # row changes handed over

    # ---- schema changes, as a DDL parser applies them to the registry ----------------------------------------

    def ddl(self, entry: Mapping[str, Any]) -> tuple[Ddl | None, list[str]]:
        """The Ddl record of a schema change entry (None: nothing the engine needs), and the tables it truncates."""
        n = entry["n"]
        followed = {t: s for t, s in self.schemas.items() if self.floors.get(t, -1) < n}
        outcome = evolve(entry["action"], followed)
        for t, s in self.schemas.items():  # tables snapshotted after the statement hold it already
            if self.floors.get(t, -1) >= n:
                followed[t] = s
        truncated = [t for t in outcome.truncated if t in followed and self.floors.get(t, -1) < n]
        parked = {t: f"cdclake cannot follow the table: {why}" for t, why in outcome.unknown.items()
                  if self.captures(t) and self.floors.get(t, -1) < n}
        changes: dict[str, TableSchema | None] = {}
        for table, schema in outcome.changes.items():
            if table in parked or self.floors.get(table, -1) >= n:
                continue
            if not self.captures(table):
                followed.pop(table, None)
                continue
            if schema is not None:
                schema = engine_schema(schema)
                fills = {c: v for c, v in outcome.added.get(table, {}).items() if v is not None}
                if fills:
                    schema = schema.with_columns([replace(c, attrs={**c.attrs, FILL: fills[c.name]})
                                                  if c.name in fills else c for c in schema.columns])
            changes[table] = schema
        for table in parked:
            followed.pop(table, None)
        self.schemas = followed
        if not changes and not parked:
            return None, truncated
        position = FakePosition(n)
        reread = {t: why for t, why in outcome.reread.items() if changes.get(t) is not None}
        record = Ddl(position, entry["statement"], entry["action"].get("table", "").split(".")[0] or None, changes,
                     _ts(entry), {t: o for t, o in outcome.renamed_from.items() if t in changes},
                     {t: r for t, r in outcome.column_renames.items() if t in changes}, parked=parked, reread=reread,
                     created=[t for t in outcome.created if t in changes])
        version = self.next_version + len(parked)  # numbered as the engine's history numbers them
        for table, schema in changes.items():
            self.versions[table] = version
            version += 1 + (1 if schema is not None and table in reread else 0)
            if schema is None:
                self.versions.pop(table, None)
        self.next_version = version
        return record, truncated

    # ---- row changes -----------------------------------------------------------------------------------------

    def follows(self, table: str) -> bool:
        return table in self.schemas and self.captures(table)

    def version(self, table: str) -> int:
        return self.versions.get(table, self.next_version - 1)

    def images(self, entry: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The change's before and after images with the registry's columns (never a generated one)."""
        schema = self.schemas[entry["table"]]
        names = [c.name for c in schema.columns if not c.attrs.get(UNLOGGED) and not c.attrs.get("generated")]
        before = None if entry["before"] is None else {k: entry["before"].get(k) for k in names}
        after = None if entry["after"] is None else {k: entry["after"].get(k) for k in names}
        if self.partial and entry["kind"] == "u":
            unchanged = [c.name for c in schema.columns if c.attrs.get("toast") and c.name in names
                         and entry["before"].get(c.name) == entry["after"].get(c.name)]
            if unchanged:
                key = self.source.key_of(schema)
                assert before is not None and after is not None
                before = {k: before[k] for k in key}
                after = {k: v for k, v in after.items() if k not in unchanged}
                after[UNAVAILABLE_KEY] = unchanged
        return before, after

    def stop(self) -> bool:
        return self.max_events is not None and self.changes >= self.max_events

    # ---- the log in a binlog's order: each transaction at its end ------------------------------------------

    def transactions(self) -> Iterator[tuple[str, Mapping[str, Any], list[Mapping[str, Any]]]]:
        """``(kind, entry, changes)`` from the window's start to its end: ``ddl`` entries, and each transaction
        that ends in the window (``commit``/``rollback``) with its surviving changes; stops at the first end
        after ``max_events`` changes."""
        entries = self.db.entries
        undone = self.db._undone()  # noqa: SLF001 - the fake's own store
        by_tx: dict[str, list[Mapping[str, Any]]] = {}
        for e in entries[:self.end_limit.ordinal]:
            if e["op"] == "change" and e["n"] not in undone:
                by_tx.setdefault(e["tx"], []).append(e)
        for e in entries[self.start.ordinal:self.end_limit.ordinal]:
            if e["op"] == "ddl":
                yield "ddl", e, []
            elif e["op"] in ("commit", "rollback"):
                yield e["op"], e, by_tx.get(e["tx"], [])
            else:
                continue
            if self.stop():
                return


class FakeSource(Source):
    """The fake database as a source: its tables, its snapshot reader and the log reader of ``source.shape``."""

    connector = "fake"
    position_type = FakePosition

    def __init__(self, config: FakeSourceConfig, context: SourceContext) -> None:
        super().__init__(config, context, FakeTypes(config.partial_images))
        self.db = FakeDatabase(config.store)
        shapes = {"records": FakeRecordLog, "frame": FakeFrameLog, "committed": FakeCommittedLog}
        self.log: _FakeLog = shapes[config.shape](self)
        self.snapshot = _FakeSnapshot(self)

    def key_of(self, schema: TableSchema) -> list[str]:
        key = schema.row_key()
        if key.kind == "none":
            raise PreflightError(f"{schema.qualified_name}: toast columns need a row key", "give the table a key")
        return list(key.columns)

    def preflight(self) -> None:
        if not self.db.path.exists():
            raise PreflightError(f"no fake database at {self.db.path}", "set source.store to its log file")
        self.db.refresh()

    def captured_tables(self) -> list[str]:
        return [t for t in self.db.tables() if self.config.captures(t)]


class _FakeSnapshot(SnapshotReader):
    """The rows as of a log entry, as one local frame."""

    def __init__(self, source: FakeSource) -> None:
        self.source = source
        self.db = source.db
        self._snapshot_at: int | None = None

    def start(self, tables: list[str]) -> SnapshotStart:
        end = self.db.end
        open_at = self.db.open_transactions()
        carried = not self.source.log.windows_end_on_transaction_boundaries
        read_from = min(open_at.values()) - 1 if open_at and carried else None
        self._snapshot_at = end
        schemas = self.db.schemas(end)
        missing = [t for t in tables if t not in schemas]
        if missing:
            raise PreflightError(f"no table(s) {missing} in the fake database", "create them first")
        return SnapshotStart(FakePosition(end, read_from), {t: engine_schema(schemas[t]) for t in tables},
                             {t: f"-- fake: {t} at {end}" for t in tables})

    def prepare(self, position: Position) -> None:
        self._snapshot_at = position.ordinal

    def read(self, spark: SparkSession, schema: TableSchema, where: str | None = None) -> DataFrame:
        at = self.db.end if self._snapshot_at is None else self._snapshot_at
        rows = self.db.rows(schema.qualified_name, at)
        names = [c.name for c in schema.columns]
        ddl = ", ".join(f"`{n.replace('`', '``')}` {self.source.types.canonical_type(c)}"
                        for n, c in zip(names, schema.columns, strict=True))
        frame = local_frame(spark, [tuple(r.get(n) for n in names) for r in rows], ddl)
        return frame.where(where) if where else frame


class _FakeLog(LogReader):
    """What the three shapes share: positions, the log's availability, pending changes."""

    def __init__(self, source: FakeSource) -> None:
        self.source = source
        self.db = source.db
        self.config = source.config

    def current_position(self) -> FakePosition:
        return FakePosition(self.db.end)

    def check_available(self, start: Position) -> None:
        purged = max((e["through"] for e in self.db.entries if e["op"] == "purge"), default=0)
        if start.read_from_ordinal < purged:
            raise PositionLostError(
                f"the position {start.describe()} is no longer in the log: entries up to {purged} were purged",
                f"re-snapshot the pipeline's tables: {command('snapshot', '--force')}")

    def pending_changes(self, positions: Mapping[str, Position], carried: Mapping[str, frozenset[str]] | None = None,
                        max_events: int = PENDING_SCAN_EVENTS) -> PendingChanges:
        """Each table's oldest commit after its position (the whole log is read: it is small)."""
        end = self.db.end
        tables_of: dict[str, set[str]] = {}
        oldest: dict[str, datetime] = {}
        for e in self.db.entries:
            if e["op"] == "change":
                tables_of.setdefault(e["tx"], set()).add(e["table"])
            elif e["op"] == "commit":
                for table in tables_of.get(e["tx"], ()):
                    p = positions.get(table)
                    if p is not None and e["n"] > p.ordinal and table not in oldest:
                        oldest[table] = _ts(e)
        return PendingChanges(True, FakePosition(end), oldest, True, None,
                              {t: end - p.ordinal for t, p in positions.items()}, "log entries", end)

    # ---- the shapes' common decoding -------------------------------------------------------------------------

    def _committed(self, request: WindowRequest) -> tuple[Position, list[Any], dict[str, Any], list[Ddl]]:
        """Committed changes in commit order (bronze tuples but window_id), their counts and the window's DDL."""
        window = _Window(self.source, request)
        rows: list[Any] = []
        stats: dict[str, Any] = {"events": 0, "transactions": 0, "rolled_back": 0, "rows_by_table": {},
                                 "truncates": 0, "partial": False}
        ddl: list[Ddl] = []
        last = request.start.ordinal
        for kind, entry, changes in window.transactions():
            n, last = entry["n"], entry["n"]
            position = FakePosition(n).describe()
            if kind == "ddl":
                record, truncated = window.ddl(entry)
                if record is not None:
                    ddl.append(record)
                for table in truncated:
                    rows.append((table, "t", Decimal(n * SEQ_SPAN + 1), position, f"truncate:{n}", _ts(entry),
                                 window.version(table), None, None))
                    _count(stats, table, truncate=True)
                continue
            if kind == "rollback":
                stats["rolled_back"] += 1 if changes else 0
                continue
            kept = 0
            for index, change in enumerate(changes, start=1):
                table = change["table"]
                if not window.follows(table) or n <= request.floors.get(table, -1):
                    continue
                before, after = window.images(change)
                window.changes += 1
                kept += 1
                stats["partial"] = stats["partial"] or (after is not None and UNAVAILABLE_KEY in after)
                rows.append((table, change["kind"], Decimal(n * SEQ_SPAN + index), position, entry["tx"], _ts(entry),
                             window.version(table), _json(before), _json(after)))
                _count(stats, table)
            stats["transactions"] += 1 if kept else 0
        end = FakePosition(last if window.stop() else request.end_limit.ordinal)
        return end, rows, stats, ddl


def local_frame(spark: SparkSession, rows: list[tuple[Any, ...]], ddl: str) -> DataFrame:
    """A DataFrame of driver-side rows through Arrow: no Python worker starts (``createDataFrame`` over Python
    rows ships them pickled to one in every task)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    struct = StructType.fromDDL(ddl) if ddl else StructType([])
    records = [dict(zip(struct.names, r, strict=True)) for r in rows]
    table = pa.Table.from_pylist(records, schema=to_arrow_schema(struct))
    return spark.createDataFrame(table, schema=struct)


def _count(stats: dict[str, Any], table: str, truncate: bool = False) -> None:
    stats["events"] += 1
    stats["rows_by_table"][table] = stats["rows_by_table"].get(table, 0) + 1
    if truncate:
        stats["truncates"] += 1
        stats["transactions"] += 1


class FakeRecordLog(_FakeLog, RecordLogReader):
    """``shape: records``: log records on the driver."""

    def records(self, request: WindowRequest) -> Iterator[LogRecord]:
        window = _Window(self.source, request)
        last = request.start.ordinal
        for kind, entry, changes in window.transactions():
            n, last = entry["n"], entry["n"]
            here = FakePosition(n)
            if kind == "ddl":
                record, truncated = window.ddl(entry)
                for table in truncated:
                    txid = f"truncate:{n}"
                    yield Begin(txid, here)
                    yield RowChange(txid, table, "t", None, None, window.version(table))
                    yield Commit(txid, here, _ts(entry))
                if record is not None:
                    yield record
                continue
            yield Begin(entry["tx"], here)
            for change in changes:
                if window.follows(change["table"]):
                    before, after = window.images(change)
                    window.changes += 1
                    yield RowChange(entry["tx"], change["table"], change["kind"], before, after,
                                    window.version(change["table"]))
            yield Commit(entry["tx"], here, _ts(entry)) if kind == "commit" else Rollback(entry["tx"], here)
        yield WindowEnd(FakePosition(last if window.stop() else request.end_limit.ordinal))


class FakeCommittedLog(_FakeLog):
    """``shape: committed``: the committed changes, sequenced by the source (as Spark tasks would)."""

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        end, rows, stats, ddl = self._committed(request)
        frame = local_frame(spark, rows, _COMMITTED_DDL) if rows else None
        return sink.committed(CommittedWindow(end, frame, stats, ddl))


_COMMITTED_DDL = ("source_table STRING, op STRING, seq DECIMAL(38,0), position STRING, txid STRING, "
                  "commit_ts TIMESTAMP, schema_version BIGINT, before STRING, after STRING")


class FakeFrameLog(_FakeLog, FrameLogReader):
    """``shape: frame``: log rows in log order, decoded into a Spark frame; windows end anywhere."""

    def frame(self, spark: SparkSession, request: WindowRequest) -> MinedWindow:
        window = _Window(self.source, request)
        wid = request.window_id
        rows: list[tuple[Any, ...]] = []
        ddl: list[Ddl] = []
        entries = self.db.entries
        first, last = request.start.read_from_ordinal, request.end_limit.ordinal
        for e in entries[first:last]:
            n, op = e["n"], e["op"]
            position = FakePosition(n).describe()
            common = (wid, len(rows))
            if op == "ddl":
                if n <= request.start.ordinal:
                    continue  # in the snapshot already
                record, truncated = window.ddl(e)
                if record is not None:
                    ddl.append(record)
                for table in truncated:
                    txid = f"truncate:{n}"
                    rows.append((wid, len(rows), KIND_CHANGE, txid, table, "t", None, None, window.version(table),
                                 None, Decimal(n), position, _ts(e), None, None))
                    rows.append((wid, len(rows), KIND_COMMIT, txid, None, None, None, None, None, None, Decimal(n),
                                 position, _ts(e), None, None))
            elif op == "change" and window.follows(e["table"]):
                before, after = window.images(e)
                window.changes += 1
                rows.append((*common, KIND_CHANGE, e["tx"], e["table"], e["kind"], _json(before), _json(after),
                             window.version(e["table"]), f"row-{e['row']}", Decimal(n), position, _ts(e), None, None))
            elif op == "undo":
                for undone in e["changes"]:
                    change = entries[undone - 1]
                    if window.follows(change["table"]):
                        rows.append((*common, KIND_UNDO, e["tx"], change["table"], change["kind"], None, None, None,
                                     f"row-{change['row']}", Decimal(n), position, _ts(e), None, None))
                        common = (wid, len(rows))
            elif op in ("commit", "rollback"):
                rows.append((*common, KIND_COMMIT if op == "commit" else KIND_ROLLBACK, e["tx"], None, None, None,
                             None, None, None, Decimal(n), position, _ts(e), None, None))
            if window.stop():
                last = n
                break
        frame = local_frame(spark, rows, LOG_ROWS_DDL)
        return MinedWindow(FakePosition(last), frame, ddl, known_empty=not rows)


