"""A binlog window as splits that Spark tasks decode on executors (MariaDB).

The driver plans: the window's byte range (from ``SHOW BINARY LOGS``) is cut into splits of whole
transactions, whole files or pieces of a file that start at a GTID event (found by ``SHOW BINLOG EVENTS
... LIMIT k, n`` probes, which cost the server a scan of the skipped bytes and no network). Each split is
decoded by the JVM reader ``cdclake.mysql.BinlogSplits`` (``jvm/src``) in a task of its own, over its own
replication connection, into committed changes with their final ``seq`` and canonical images: the rows go to
bronze without passing through the driver.

What decides the shape of the window is still the driver's: a task reports every statement that is not
transaction control (``query`` rows) and every table map that does not fit the schema history
(``mismatch`` rows). The first one that matters to the captured tables ends the window just before its
transaction; a window that starts with one is mined by the driver path for that one transaction. So rows
are always decoded with the schema valid at their position, and DDL is handled by one code path.

>>> column_kind(Column("n", "int(10) unsigned", "BIGINT", attrs={"base": "int", "unsigned": True}))
{'name': 'n', 'kind': 'uint32'}
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cdclake.errors import ConfigError, DdlParseError
from cdclake.schema import Column, TableSchema
from cdclake.sources.mysql.ddl import apply_ddl
from cdclake.sources.mysql.lag import binlog_sizes
from cdclake.sources.mysql.position import OFFSET_SPAN, BinlogPosition, file_sequence
from cdclake.sources.mysql.types import _BINARIES, _INTEGERS, _SPATIAL, _TEXTS, _charset_encoding
from cdclake.spi import Position, WindowRequest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class MySqlSource(Protocol):
    """What planning needs of :class:`cdclake.sources.mysql.source.MySqlSource`."""

    config: Any
    flavor: str

    def connect(self) -> Any: ...

    def connection_settings(self) -> dict[str, Any]: ...

    def split_server_id_base(self) -> int: ...

READER = "cdclake.mysql.BinlogSplits"
SPLIT_ROWS_DDL = (
    "kind STRING, source_table STRING, op STRING, seq DECIMAL(38,0), position STRING, txid STRING, "
    "commit_ts TIMESTAMP, schema_version BIGINT, before STRING, after STRING, raw STRING"
)
_UNSIGNED = {"tinyint": "uint8", "smallint": "uint16", "mediumint": "uint24", "int": "uint32", "bigint": "uint64"}
# Python codec names the JVM reader knows by the same name (others: the driver path decodes the table)
_JAVA_CHARSETS = {"utf-8": "UTF-8", "cp1252": "windows-1252", "latin-1": "ISO-8859-1", "iso8859-1": "ISO-8859-1",
                  "ascii": "US-ASCII", "utf-16-be": "UTF-16BE", "utf-16": "UTF-16", "utf-32-be": "UTF-32BE"}
_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "XA ", "SAVEPOINT", "RELEASE SAVEPOINT")


class NotSplittable(Exception):
    """The window cannot be decoded on executors (the reason says why); the driver path can."""


def column_kind(column: Column) -> dict[str, Any]:
    """How the JVM reader turns this column's binlog value into its canonical value (as
    :meth:`MySqlTypeMapper.canonical_from_binlog` does); :class:`NotSplittable` if it cannot."""
    a = column.attrs
    base = str(a.get("base") or "")
    spec: dict[str, Any] = {"name": column.name}
    if base in _INTEGERS:
        spec["kind"] = _UNSIGNED[base] if a.get("unsigned") else "int"
    elif base in ("year", "decimal", "date", "datetime", "timestamp", "time", "enum", "set"):
        spec["kind"] = base
        if base == "enum":
            spec["values"] = list(a["enum_values"])
        elif base == "set":
            spec["values"] = list(a["set_values"])
    elif base in ("float", "double"):
        spec["kind"] = "real"
    elif base == "bit":
        spec["kind"] = "bit1" if int(a.get("length", 1)) == 1 else "bytes"
    elif base in _BINARIES or base in _SPATIAL:
        spec["kind"] = "binary" if base == "binary" else "bytes"
        if base == "binary" and a.get("length"):
            spec["pad"] = int(a["length"])  # the binlog drops BINARY(n)'s trailing zero bytes
    elif base in _TEXTS or base == "json":
        encoding = codecs.lookup(_charset_encoding(a.get("charset"))).name
        if encoding not in _JAVA_CHARSETS:
            raise NotSplittable(f"column {column.name} has character set {a.get('charset')}")
        spec["kind"] = "text"
        spec["charset"] = _JAVA_CHARSETS[encoding]
    else:
        raise NotSplittable(f"column {column.name} has type {column.source_type}")
    return spec


def table_specs(schemas: Mapping[str, TableSchema], versions: Mapping[str, int], next_version: int,
                floors: Mapping[str, int]) -> dict[str, Any]:
    """The reader's ``tables`` option: per captured table its schema version, floor and column kinds."""
    return {
        table: {"version": versions.get(table, next_version - 1), "floor": floors.get(table, -1),
                "columns": [column_kind(c) for c in schema.columns]}
        for table, schema in schemas.items()
    }


# ---- planning ---------------------------------------------------------------------------------------


@dataclass
class _Range:
    file: str
    start: int
    end: int
    head: bool  # starts at the file's first event (header events before its first transaction)


def _ranges(logs: list[tuple[str, int]], start: BinlogPosition, end: BinlogPosition) -> list[_Range]:
    out = []
    first, last = file_sequence(start.file), file_sequence(end.file)
    for name, size in logs:
        seq = file_sequence(name)
        if seq < first or seq > last:
            continue
        a = start.pos if seq == first else 4
        b = end.pos if seq == last else size
        if b > a:
            out.append(_Range(name, a, b, a <= 4))
    return out


def _gtid_event_after(cur: Any, file: str, pos: int, skip: int, limit: int) -> int | None:
    """The position of the first GTID event at least ``skip`` events after ``pos`` and before ``limit``."""
    window = 20
    while True:
        cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {int(skip)}, {int(window)}", (file,))
        rows = cur.fetchall()
        if not rows:
            return None
        for row in rows:
            if int(row[1]) >= limit:
                return None
            if row[2] == "Gtid" and int(row[1]) > pos:
                return int(row[1])
        skip += len(rows)
        window = min(window * 4, 5000)


def _first_group_has_statement(cur: Any, start: BinlogPosition) -> bool:
    """Whether the transaction at ``start`` holds a statement that is not transaction control (a DDL...)."""
    cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {int(start.pos)} LIMIT 0, 8", (start.file,))
    seen_gtid = False
    for row in cur.fetchall():
        kind, info = row[2], str(row[5] or "")
        if kind == "Gtid":
            if seen_gtid:
                return False
            seen_gtid = True
            continue
        if kind == "Query":
            statement = info.split("; ", 1)[1] if info.startswith("use ") and "; " in info else info
            return not statement.lstrip().upper().startswith(_CONTROL)
        if kind in ("Xid", "Rotate", "Stop"):
            return False
    return False


@dataclass(frozen=True)
class Split:
    """A piece of a window's log that one Spark task decodes: whole transactions, from ``start`` to ``end``.
    ``detail`` is what the reader needs of it (JSON-serialisable)."""

    index: int
    start: Position
    end: Position
    detail: Mapping[str, Any]


@dataclass(frozen=True)
class SplitPlan:
    """A window planned as splits: ``reader`` (a Spark data source) decodes each split in a task of its own,
    given ``options``; ``end`` is where the window ends unless something in it stops it earlier."""

    splits: list[Split]
    end: Position
    reader: str
    options: Mapping[str, str]
    total_bytes: int = 0


@dataclass
class Planned:
    """The outcome of planning: a split plan, or the driver path (``driver_first``: for one transaction)."""

    plan: SplitPlan | None = None
    driver_first: bool = False
    reason: str = ""


def plan(source: MySqlSource, request: WindowRequest) -> Planned:
    """Splits of ``request``'s window, or why the driver path mines it."""
    options = request.splits
    start, end_limit = request.start, request.end_limit
    assert isinstance(start, BinlogPosition) and isinstance(end_limit, BinlogPosition)
    forced = options.decoder == "executors"

    def driver(reason: str) -> Planned:
        if forced:
            raise ConfigError(f"mining.decoder is 'executors' but this window cannot be decoded on executors: {reason}",
                              "set mining.decoder: auto (the driver decodes such windows)")
        return Planned(reason=reason)

    if options.decoder == "driver":
        return Planned(reason="mining.decoder: driver")
    if request.max_events is not None:
        return Planned(reason="a window bounded by events (--max-events) is decoded on the driver")
    if source.flavor != "mariadb":
        return driver("executor decoding is built for MariaDB; MySQL windows are decoded on the driver")
    try:
        tables = table_specs(request.schemas, request.versions, request.next_schema_version, request.floors)
    except NotSplittable as exc:
        return driver(str(exc))
    conn = source.connect()
    try:
        with conn.cursor() as cur:
            logs = binlog_sizes(conn)
            ranges = _ranges(logs, start, end_limit)
            total = sum(r.end - r.start for r in ranges)
            if not ranges:
                return driver("the window is empty")
            if not forced and total < options.min_bytes:
                return Planned(reason=f"{total} bytes of binlog (< mining.parallel_min_bytes)")
            if _first_group_has_statement(cur, start):
                return Planned(driver_first=True, reason="the window starts with a statement (DDL)")
            splits = _cut(cur, ranges, options, min(total, options.window_bytes))
            gtids = [start.gtid or ""]
            for s in splits[1:]:
                cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (s.file, s.start))
                gtids.append(str(cur.fetchone()[0] or ""))
    finally:
        conn.close()
    last = splits[-1]
    at_limit = last.file == end_limit.file and last.end == end_limit.pos
    end = end_limit if at_limit else BinlogPosition(last.file, last.end)
    later = [name for name, _ in logs if file_sequence(name) > file_sequence(last.file)]
    if not at_limit and later and last.end == dict(logs)[last.file]:
        end = BinlogPosition(later[0], 4)  # the next file's start: where the driver path resumes too
    detail = [{"index": i, "file": s.file, "start": s.start, "end": s.end, "head": s.head, "gtid": g}
              for i, (s, g) in enumerate(zip(splits, gtids))]
    login = source.connection_settings()  # the same settings as every connection of the source
    reader_options = {
        "host": login["host"], "port": str(login["port"]), "user": login["user"], "password": login["password"],
        "server_id_base": str(source.split_server_id_base()), "tables": json.dumps(tables),
    }
    split_list = [Split(i, BinlogPosition(s.file, s.start), BinlogPosition(s.file, s.end), d)
                  for i, (s, d) in enumerate(zip(splits, detail))]
    return Planned(plan=SplitPlan(split_list, end, READER, reader_options, sum(s.end - s.start for s in splits)))


def _cut(cur: Any, ranges: list[_Range], options: Any, budget: int) -> list[_Range]:
    """Ranges cut into splits of about ``options.split_bytes`` at GTID events, up to ``budget`` bytes."""
    total = sum(r.end - r.start for r in ranges)
    target = options.split_bytes or max(8 << 20, math.ceil(total / max(1, options.target_splits)))
    out: list[_Range] = []
    taken = 0
    avg_event = 0.0
    for r in ranges:
        a = r.start
        head = r.head
        while a < r.end and taken < budget and len(out) < options.max_splits:
            want = min(target, budget - taken)
            if r.end - a <= want * 1.25 or len(out) == options.max_splits - 1:
                b = r.end
            else:
                if not avg_event:
                    cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {int(a)} LIMIT 1000, 1", (r.file,))
                    row = cur.fetchone()
                    avg_event = max(16.0, (int(row[1]) - a) / 1000) if row else 200.0
                found = _gtid_event_after(cur, r.file, a, int(want / avg_event), r.end)
                b = found if found is not None else r.end
            out.append(_Range(r.file, a, b, head))
            taken += b - a
            a, head = b, False
        if taken >= budget or len(out) >= options.max_splits:
            break
    return out


# ---- decoding and closing ---------------------------------------------------------------------------


def split_failure(exc: BaseException) -> str | None:
    """The reader's own message in a failed Spark job's error (``cdclake binlog split N (...): why``), if any.

    >>> split_failure(RuntimeError("Job aborted: java.lang.IllegalStateException: cdclake binlog split 2 "
    ...                            "(mysql-bin.000001 [4, 9)): the binlog ended at 7\\n\\tat cdclake..."))
    'cdclake binlog split 2 (mysql-bin.000001 [4, 9)): the binlog ended at 7'
    """
    text = str(exc)
    at = text.find("cdclake binlog split ")
    if at < 0:
        return None
    return text[at:].split("\n", 1)[0].split("\\n", 1)[0].strip()


def read(spark: SparkSession, split_plan: SplitPlan, mode: str) -> DataFrame:
    """The splits decoded by Spark tasks (:data:`SPLIT_ROWS_DDL`): ``controls`` (statements, misfits,
    one summary per split: no image is built) or ``changes`` (committed changes only; anything that
    would be a control row fails the task)."""
    options = {**split_plan.options, "splits": json.dumps([dict(s.detail) for s in split_plan.splits]), "mode": mode}
    return spark.read.format(split_plan.reader).options(**options).load()


def until(split_plan: SplitPlan, end: BinlogPosition) -> SplitPlan:
    """``split_plan`` up to ``end`` (a transaction's start inside it): the splits before it, the one it
    cuts shortened."""
    kept = []
    for split in split_plan.splits:
        if split.start.ordinal >= end.ordinal:
            break
        if split.end.ordinal > end.ordinal:
            assert isinstance(split.start, BinlogPosition) and split.start.file == end.file
            split = Split(split.index, split.start, end, {**split.detail, "end": end.pos})
        kept.append(split)
    return SplitPlan(kept, end, split_plan.reader, split_plan.options,
                     sum(s.end.ordinal - s.start.ordinal for s in kept))


@dataclass
class Closing:
    """How a decoded window ends: at ``end`` (the plan's end, or before what ``reason`` names: ``cut``),
    with the changes' counts when it was not cut."""

    end: BinlogPosition | None  # None: the window starts with what stops it: the driver mines that transaction
    cut: bool = False
    stats: dict[str, Any] | None = None
    reason: str = ""


def _matters(source: MySqlSource, sql: str, database: str | None, schemas: Mapping[str, TableSchema]) -> bool:
    """Whether a statement may change what the window's captured tables hold or how their rows decode."""
    try:
        outcome = apply_ddl(sql, dict(schemas), database)
    except DdlParseError:
        return True  # the driver path decides (park, skip, ignore)
    if outcome.ignored:
        return False
    if any(t in schemas for t in outcome.truncated):
        return True
    return any(t in schemas or source.config.captures(t) for t in outcome.changes)


def close(source: MySqlSource, split_plan: SplitPlan, request: WindowRequest, controls: list[Any]) -> Closing:
    """The window's end from the tasks' control rows (``kind`` query/mismatch/split), in log order."""
    start = request.start
    assert isinstance(start, BinlogPosition)
    summaries = sorted((json.loads(r.raw) for r in controls if r.kind == "split"), key=lambda s: s["index"])
    if len(summaries) != len(split_plan.splits):
        raise RuntimeError(f"{len(summaries)} of {len(split_plan.splits)} binlog splits reported their end")
    for row in sorted((r for r in controls if r.kind != "split"), key=lambda r: r.seq):
        raw = json.loads(row.raw)
        if row.kind == "query" and not _matters(source, row.after, row.before, request.schemas):
            continue
        file = row.position.rsplit(":", 1)[0]
        group = BinlogPosition(file, int(raw["group_start"]), raw["gtid_before"] or None)
        what = f"a statement at {row.position}" if row.kind == "query" else \
            f"rows of {row.source_table} at {row.position} that do not fit its schema"
        if group.ordinal <= start.ordinal:
            return Closing(None, reason=what)
        return Closing(group, cut=True, reason=what)
    stats = {"events": sum(s["rows"] for s in summaries), "transactions": sum(s["transactions"] for s in summaries),
             "rolled_back": sum(s["rolled_back"] for s in summaries), "rows_by_table": {},
             "truncates": 0, "partial": False}  # a TRUNCATE is a statement: it ends the window before it
    for s in summaries:
        for table, n in s["rows_by_table"].items():
            stats["rows_by_table"][table] = stats["rows_by_table"].get(table, 0) + n
    end = split_plan.end
    assert isinstance(end, BinlogPosition)
    if end.gtid is None and end != request.end_limit:
        end = BinlogPosition(end.file, end.pos, summaries[-1]["gtid_after"] or None)
    return Closing(end, stats=stats)


__all__ = ["OFFSET_SPAN", "READER", "SPLIT_ROWS_DDL", "Closing", "NotSplittable", "Planned", "close", "column_kind",
           "plan", "read", "split_failure", "table_specs", "until"]
