"""Compare source tables with their lake tables and repair what differs (``cdclake reconcile``).

Like GoldenGate Veridata, in three steps, all in Spark (only small results reach the driver):

1. **Chunk summaries.** Both sides are read once (the source through its plug-in's parallel
   ``source.snapshot.read`` and the lake's type conversion, the lake from the target Delta table without
   tombstones and ``__*`` columns) and cut to a narrow, persisted frame: the key columns and one
   ``xxhash64`` over every column (with a null flag per column, in schema order, both sides cast to
   the same types). Rows fall into chunks — key ranges of a single-column key (boundaries sampled
   from the lake's keys), else ``pmod(xxhash64(keys), chunks)`` — and per chunk each side gives
   ``count(*)`` and the sum of the row hashes (``DECIMAL(38,0)``: no overflow, order-free). Only
   the per-chunk summaries are collected.
2. **Drill-down** into the chunks whose summaries differ: per key the row count and hash of each
   side, full outer join on the key: ``only_in_source`` (lost in the lake), ``only_in_lake``
   (resurrected or invented), ``different`` (stale). Every difference is counted; the first
   ``max_keys`` (by key) are listed.
3. **Confirm pass** (the source keeps changing while the lake lags by a mining interval): after
   waiting up to ``confirm_wait_s`` for mining to apply what the source had committed when it was
   read, the listed keys are read again from both sides (the source with a key filter). A key whose
   source row changed between the reads is *in flight* (not judged, not repaired: the next run
   sees it settled); one that now agrees was a change mining applied meanwhile; the rest differ.
   If mining still had not reached the source's read position (``lake_behind``), a difference may
   be a change not mined yet: mine, then reconcile again (a repair is safe either way).

``repair`` then backfills the differing keys (:func:`~.backfill.run_backfill` with ``key IN (...)``
filters, 500 keys each: sequenced at the read position, so newer mined changes win and deleted
rows stay deleted) and compares those keys again. Key values are written as literals the source's
SQL and Spark SQL read alike (:meth:`TypeMapper.filter_literal_kind`,
:meth:`Source.filter_identifier`); a key that has none refuses the repair before anything changes.

Reconcile only reads: it takes no pipeline lock (each backfill of a repair takes its own). Each run
is recorded in the run log (command ``reconcile``) and, per table, in ``_cdclake/reconcile``.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdclake.engine.control import utcnow
from cdclake.engine.lake import ensure_table, quote
from cdclake.engine.names import lake_names
from cdclake.engine.repair.backfill import run_backfill
from cdclake.engine.repair.common import read_start, streaming_state
from cdclake.engine.states import STREAMING, TableState
from cdclake.engine.target.changes import typed_select
from cdclake.errors import CdcError, command
from cdclake.schema import TableSchema

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

    from cdclake.engine.context import PipelineContext
    from cdclake.spi import Position

ONLY_IN_SOURCE, ONLY_IN_LAKE, DIFFERENT = "only_in_source", "only_in_lake", "different"
KINDS = (ONLY_IN_SOURCE, ONLY_IN_LAKE, DIFFERENT)
DEFAULT_CHUNKS = 64
DEFAULT_MAX_KEYS = 1000
REPAIR_BATCH = 500  # keys per backfill filter: short enough for any SQL parser, few MERGEs
SAMPLE_PER_CHUNK = 100  # sampled lake keys per chunk when placing range boundaries
SAMPLE_KEYS_KEPT = 100  # listed keys per kind kept in the _cdclake/reconcile table
RECONCILE_DDL = (
    "run_id STRING, source_table STRING, checked_at TIMESTAMP, chunks BIGINT, chunks_mismatched BIGINT, "
    "source_rows BIGINT, lake_rows BIGINT, only_in_source BIGINT, only_in_lake BIGINT, different BIGINT, "
    "repaired BOOLEAN, sample_keys STRING"
)
# Internal column names of the narrow frames: keys by position, so no source name can clash.
_HASH = "__h"


def _k(i: int) -> str:
    return f"__k{i}"


# ---- key filters (no Spark: unit-tested) ---------------------------------------------------------


@dataclass(frozen=True)
class KeyColumn:
    """A key column as a filter writes it: ``ident`` and literal ``kind`` from the source plug-in
    (``None``: not writable)."""

    name: str
    ident: str | None
    kind: str | None


def sql_literal(kind: str | None, value: Any) -> str | None:
    """``value`` as a literal the source's SQL and Spark SQL read alike, or ``None`` if it has none.

    >>> sql_literal("number", Decimal("12.50")), sql_literal("string", "o'k"), sql_literal("date", dt.date(2024, 2, 29))
    ('12.50', None, "DATE '2024-02-29'")
    """
    if kind == "number":
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, Decimal) and value.is_finite():
            return format(value, "f")  # never an exponent: 1E+3 is a double in Spark SQL
        return None
    if kind == "string":
        # A quote or backslash has no escape both read alike (Spark: \' ; ANSI SQL: '').
        if isinstance(value, str) and "'" not in value and "\\" not in value:
            return f"'{value}'"
        return None
    if kind == "date":
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return f"DATE '{value.isoformat()}'"
        return None
    return None


def _refuse(table: str, column: KeyColumn, why: str) -> CdcError:
    return CdcError(
        f"cannot repair {table} key by key: key column {column.name} {why}, so no filter selects the same "
        "rows in the source's SQL and in Spark SQL",
        f"repair the whole table: {command('backfill', '--table', table)}, or a key range of it with --where on "
        "another column", permanent=True,
    )


def check_writable(table: str, columns: Sequence[KeyColumn]) -> None:
    """Raise a :class:`CdcError` naming the first key column a repair filter cannot name or write."""
    for c in columns:
        if c.ident is None:
            raise _refuse(table, c, "has a name the source's SQL and Spark SQL do not spell alike")
        if c.kind is None:
            raise _refuse(table, c, "has a type without a literal both read alike (e.g. TIME, BINARY, FLOAT, "
                                    "TIMESTAMP)")


def key_filters(table: str, columns: Sequence[KeyColumn], keys: Sequence[Sequence[Any]],
                batch_size: int = REPAIR_BATCH) -> list[str]:
    """SQL filters selecting exactly ``keys`` (tuples in ``columns`` order), ``batch_size`` keys each:
    ``k IN (1, 2)`` for one column, ``(a = 1 AND b = 'x') OR (...)`` for several; a null is ``IS NULL``.
    Raises a :class:`CdcError` (column and fix named) if any key cannot be written.

    >>> key_filters("db.t", [KeyColumn("id", "`id`", "number")], [(1,), (2,), (3,)], batch_size=2)
    ['`id` IN (1, 2)', '`id` IN (3)']
    """
    check_writable(table, columns)
    literals: list[list[str | None]] = []  # per key, per column: the literal, None for a null
    for key in keys:
        row: list[str | None] = []
        for c, value in zip(columns, key, strict=True):
            lit = None if value is None else sql_literal(c.kind, value)
            if value is not None and lit is None:
                raise _refuse(table, c, f"holds the value {value!r}, which has no literal both read alike")
            row.append(lit)
        literals.append(row)
    filters: list[str] = []
    for start in range(0, len(literals), batch_size):
        batch = literals[start:start + batch_size]
        if len(columns) == 1:
            ident = columns[0].ident
            values = [lit[0] for lit in batch if lit[0] is not None]
            parts = [f"{ident} IN ({', '.join(values)})"] if values else []
            if len(values) < len(batch):
                parts.append(f"{ident} IS NULL")
            filters.append(" OR ".join(parts))
        else:
            filters.append(" OR ".join(
                "(" + " AND ".join(f"{c.ident} IS NULL" if lit is None else f"{c.ident} = {lit}"
                                   for c, lit in zip(columns, row, strict=True)) + ")"
                for row in batch))
    return filters


# ---- results -------------------------------------------------------------------------------------


@dataclass
class TableReconcile:
    """What reconcile found in one table (counts cover every difference; keys are the listed ones)."""

    table: str
    key_columns: list[str]
    chunking: str = ""
    chunks: int = 0
    chunks_mismatched: int = 0
    source_rows: int = 0
    lake_rows: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    keys: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {k: [] for k in KINDS})
    in_flight: list[dict[str, Any]] = field(default_factory=list)  # changed at the source during the compare
    caught_up: int = 0  # differed at first, equal at the confirm pass (mining applied them meanwhile)
    confirmed: bool = False
    truncated: bool = False  # more keys differ than max_keys: only the listed ones were confirmed
    lake_behind: bool = False  # mining had not reached the source's read position when confirmed
    source_position: str | None = None
    lake_position: str | None = None
    repaired: bool = False
    remaining: dict[str, int] | None = None  # differences left after the repair, by kind
    remaining_keys: dict[str, list[dict[str, Any]]] | None = None
    note: str | None = None

    @property
    def differing(self) -> int:
        return sum(self.counts.values())

    @property
    def ok(self) -> bool:
        """Equal, or repaired with nothing left."""
        return self.differing == 0 or (self.repaired and not any((self.remaining or {}).values()))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "differing": self.differing, "ok": self.ok}


@dataclass
class ReconcileReport:
    run_id: str
    tables: list[TableReconcile]
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "ok": self.ok, "duration_s": round(self.duration_s, 3),
                "tables": [t.to_dict() for t in self.tables]}


# ---- the run -------------------------------------------------------------------------------------


def reconcile(ctx: PipelineContext, tables: Sequence[str] | None = None, chunks: int = DEFAULT_CHUNKS,
              max_keys: int = DEFAULT_MAX_KEYS, repair: bool = False, confirm: bool = True,
              confirm_wait_s: float = 0.0) -> ReconcileReport:
    """Reconcile ``tables`` (default: every streaming table) of ``ctx``'s pipeline; see the module doc."""
    if chunks < 1 or max_keys < 1:
        raise CdcError("--chunks and --max-keys must be at least 1", "pass positive numbers", permanent=True)
    results: list[TableReconcile] = []
    with ctx.runs.run("reconcile", locked=False) as run:
        states = ctx.control.table_states()
        names = list(tables) if tables else sorted(t for t, s in states.items() if s.status == STREAMING)
        for table in names:
            streaming_state(ctx, table, "reconcile", states)
        run.tables = names
        for table in names:
            result = _reconcile_table(ctx, table, chunks, max_keys, repair, confirm, confirm_wait_s)
            results.append(result)
            run.rows_by_table[table] = result.source_rows
        _record(ctx, run.run_id, results)
    return ReconcileReport(run.run_id, results, run.duration_s)


def _schema(ctx: PipelineContext, table: str) -> tuple[TableSchema, Any]:
    """The table's schema (source now, checked against the lake's) and the source position the
    next ``source.snapshot.read`` reads at."""
    _, start = read_start(ctx, table, "reconcile")
    if start.held:
        ctx.source.snapshot.end()  # reconcile only reads: writers to the table need not wait
    return start.schemas[table], start.position


def _key_columns(ctx: PipelineContext, schema: TableSchema) -> list[KeyColumn]:
    keys = ctx.key_columns(schema)
    rules = ctx.columns.rules(schema.qualified_name)
    # a masked key's lake value is not the source's: no filter selects its rows (a repair is refused)
    return [KeyColumn(k, ctx.source.snapshot.filter_identifier(schema.column(k).name),
                      None if rules and rules.mask(k) else ctx.source.types.filter_literal_kind(schema.column(k)))
            for k in keys]


def _reconcile_table(ctx: PipelineContext, table: str, chunks: int, max_keys: int, repair: bool, confirm: bool,
                     confirm_wait_s: float) -> TableReconcile:
    from pyspark import StorageLevel

    schema, read_at = _schema(ctx, table)
    key_cols = _key_columns(ctx, schema)
    schema = ctx.lake_schema(schema)  # the row key comes from the source's schema, the columns from the lake's
    if repair:
        check_writable(table, key_cols)  # refuse before the long compare, not after
    keys = [c.name for c in key_cols]
    result = TableReconcile(table, keys, source_position=read_at.describe())
    if not keys:
        return _reconcile_multiset(ctx, table, schema, read_at, repair, result)
    src_full = _source_rows(ctx, schema, None)
    types = {f.name: f.dataType for f in src_full.schema.fields}
    src = _narrow(src_full, schema, keys).persist(StorageLevel.MEMORY_AND_DISK)
    state = ctx.control.table_states()[table]
    lake = _narrow(_lake_rows(ctx, table, schema, types), schema, keys).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # Counting fills both caches: the source is read once, whatever follows.
        n_src, n_lake = src.count(), lake.count()
        chunk, result.chunks, result.chunking = _chunker(lake if n_lake else src, n_lake or n_src, len(keys), chunks)
        s_sum, l_sum = _summaries(src, lake, chunk)
        result.source_rows = sum(n for n, _ in s_sum.values())
        result.lake_rows = sum(n for n, _ in l_sum.values())
        mismatched = sorted(c for c in set(s_sum) | set(l_sum) if s_sum.get(c) != l_sum.get(c))
        result.chunks_mismatched = len(mismatched)
        if not mismatched:
            result.lake_behind = state.ordinal < read_at.ordinal
            result.lake_position = ctx.position(state.position).describe()
            return result
        diff = _compare(src.where(chunk.isin(mismatched)), lake.where(chunk.isin(mismatched)), len(keys))
        diff = diff.where("kind IS NOT NULL").persist(StorageLevel.MEMORY_AND_DISK)
        try:
            counts = {r["kind"]: int(r["count"]) for r in diff.groupBy("kind").count().collect()}
            listed = diff.orderBy(*[_k(i) for i in range(len(keys))]).limit(max_keys).collect()
        finally:
            diff.unpersist()
    finally:
        src.unpersist()
        lake.unpersist()
    result.counts = {k: counts.get(k, 0) for k in KINDS}
    result.truncated = sum(counts.values()) > len(listed)
    found = {_key_of(r, len(keys)): r for r in listed}
    if confirm:
        state = _wait_for_lake(ctx, table, read_at.ordinal, confirm_wait_s) or state
        now = _recheck(ctx, table, key_cols, list(found))
        kinds: dict[tuple[Any, ...], str] = {}
        for key, first in found.items():
            again = now.get(key)
            source_then = (first["__sn"], first["__sh"])
            source_now = (again[0], again[1]) if again else (None, None)
            result.counts[first["kind"]] -= 1  # replaced by what the confirm pass finds
            if source_now != source_then:
                result.in_flight.append(_key_dict(keys, key))
            elif again is None or again[4] is None:
                result.caught_up += 1
            else:
                kinds[key] = again[4]
                result.counts[again[4]] += 1
        result.confirmed = True
    else:
        kinds = {key: r["kind"] for key, r in found.items()}
    result.lake_behind = state.ordinal < read_at.ordinal
    result.lake_position = ctx.position(state.position).describe()
    for key, kind in kinds.items():
        result.keys[kind].append(_key_dict(keys, key))
    if result.lake_behind and result.differing:
        result.note = ("mining had not reached the source's read position: a difference may be a change not "
                       "mined yet; run 'cdclake mine', then reconcile again (a repair is safe either way)")
    if repair and result.differing:
        if result.truncated:
            result.note = (f"not repaired: {result.differing} keys differ, more than --max-keys {max_keys}; "
                           f"backfill the table ({command('backfill', '--table', table)}, or a key range with --where) "
                           "or reconcile again with a larger --max-keys")
        else:
            _repair(ctx, table, key_cols, list(kinds), result)
    return result


def _reconcile_multiset(ctx: PipelineContext, table: str, schema: TableSchema, read_at: Position, repair: bool,
                       result: TableReconcile) -> TableReconcile:
    """A table without a row key: the source's and the lake's rows compared as multisets (copies of
    each distinct row counted on both sides). No key names a row, so differences are counted, not
    listed; ``repair`` backfills the whole table."""
    from pyspark.sql import functions as F

    def compare() -> tuple[int, int, int, int]:
        src = _source_rows(ctx, schema, None)
        types = {f.name: f.dataType for f in src.schema.fields}
        lake = _lake_rows(ctx, table, schema, types)
        s = _narrow(src, schema, []).groupBy(_HASH).agg(F.count(F.lit(1)).alias("s"))
        l_ = _narrow(lake, schema, []).groupBy(_HASH).agg(F.count(F.lit(1)).alias("l"))
        d = s.join(l_, _HASH, "full").select(F.coalesce("s", F.lit(0)).alias("s"), F.coalesce("l", F.lit(0)).alias("l"))
        row = d.agg(F.sum("s"), F.sum("l"), F.sum(F.greatest(F.col("s") - F.col("l"), F.lit(0))),
                    F.sum(F.greatest(F.col("l") - F.col("s"), F.lit(0)))).first()
        return tuple(int(v or 0) for v in row)  # type: ignore[return-value]

    result.chunking, result.chunks = "whole rows (no row key)", 1
    result.source_rows, result.lake_rows, lost, invented = compare()
    result.counts[ONLY_IN_SOURCE], result.counts[ONLY_IN_LAKE] = lost, invented
    result.chunks_mismatched = int(bool(lost or invented))
    state = ctx.control.table_states()[table]
    result.lake_behind = state.ordinal < read_at.ordinal
    result.lake_position = ctx.position(state.position).describe()
    if result.differing and result.lake_behind:
        result.note = ("mining had not reached the source's read position: a difference may be a change not "
                       "mined yet; run 'cdclake mine', then reconcile again (a repair is safe either way)")
    if repair and result.differing:
        run_backfill(ctx, table, None)
        _schema(ctx, table)  # the source read of the comparison: at a new position, after the backfill
        _, _, lost, invented = compare()
        result.remaining = {ONLY_IN_SOURCE: lost, ONLY_IN_LAKE: invented, DIFFERENT: 0}
        result.remaining_keys = {k: [] for k in KINDS}
        result.repaired = True
    return result


def _source_rows(ctx: PipelineContext, schema: TableSchema, where: str | None) -> DataFrame:
    """Source rows (read at the last ``source.snapshot.start``) converted exactly as the lake converts them."""
    return ctx.read_source(schema, where).selectExpr(*typed_select(ctx.source.types, schema))


def _lake_rows(ctx: PipelineContext, table: str, schema: TableSchema, types: dict[str, Any]) -> DataFrame:
    """The target's live rows, columns as the source frame has them: under their source names, and cast
    back where a widened Delta type would hash differently."""
    from pyspark.sql import functions as F

    lake = ctx.spark.read.format("delta").load(ctx.layout.target(table))
    if ctx.targets.options.soft:
        lake = lake.where("NOT `__deleted`")
    dtypes = {f.name: f.dataType for f in lake.schema.fields}
    delta = lake_names(ctx.targets.options.lake_schema(schema))  # source name -> Delta name (names.py)
    return lake.select(*[
        (F.col(quote(d)) if dtypes[d] == types[c] else F.col(quote(d)).cast(types[c])).alias(c)
        for c, d in ((c, delta.get(c, c)) for c in schema.column_names)])


def _narrow(rows: DataFrame, schema: TableSchema, keys: list[str]) -> DataFrame:
    """Keys (``__k0``..) and one hash of the whole row: a null flag before each value, because
    ``xxhash64`` skips nulls (``(1, null)`` and ``(null, 1)`` would collide)."""
    from pyspark.sql import functions as F

    parts: list[SparkColumn] = []
    for c in schema.column_names:
        parts += [F.isnull(F.col(quote(c))), F.col(quote(c))]
    return rows.select(*[F.col(quote(k)).alias(_k(i)) for i, k in enumerate(keys)], F.xxhash64(*parts).alias(_HASH))


def _chunker(rows: DataFrame, n: int, n_keys: int, chunks: int) -> tuple[SparkColumn, int, str]:
    """The chunk of a row: a key range of a one-column key (boundaries from a sample of ``rows``,
    ``n`` of them), else a hash bucket of the key."""
    from pyspark.sql import functions as F

    if n_keys > 1 or chunks == 1:
        return F.pmod(F.xxhash64(*[F.col(_k(i)) for i in range(n_keys)]), F.lit(chunks)), chunks, "key hash"
    fraction = min(1.0, chunks * SAMPLE_PER_CHUNK / max(n, 1))
    sample = rows.select(_k(0)).where(F.col(_k(0)).isNotNull())
    if fraction < 1.0:
        sample = sample.sample(fraction=fraction, seed=17)
    values = [r[0] for r in sample.distinct().orderBy(_k(0)).collect()]  # ~chunks * 100 values at most
    bounds: list[Any] = []
    for i in range(1, chunks):
        b = values[i * len(values) // chunks] if values else None
        if b is not None and (not bounds or b > bounds[-1]):
            bounds.append(b)
    key = F.col(_k(0))

    def tree(lo: int, hi: int) -> SparkColumn:  # chunk i holds bounds[i-1] <= key < bounds[i]
        if hi - lo == 1:
            return F.lit(lo)
        mid = (lo + hi) // 2
        return F.when(key < F.lit(bounds[mid - 1]), tree(lo, mid)).otherwise(tree(mid, hi))

    return tree(0, len(bounds) + 1), len(bounds) + 1, "key range"


def _summaries(src: DataFrame, lake: DataFrame, chunk: SparkColumn
               ) -> tuple[dict[int, tuple[int, Decimal]], dict[int, tuple[int, Decimal]]]:
    """Per chunk and side: (rows, sum of row hashes), in one Spark job."""
    from pyspark.sql import functions as F

    both = src.withColumn("side", F.lit(0)).unionByName(lake.withColumn("side", F.lit(1)))
    out = both.groupBy("side", chunk.alias("chunk")).agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col(_HASH).cast("DECIMAL(38,0)")).alias("h")).collect()
    sides: tuple[dict[int, tuple[int, Decimal]], dict[int, tuple[int, Decimal]]] = ({}, {})
    for r in out:
        sides[int(r.side)][int(r.chunk)] = (int(r.n), r.h)
    return sides


def _compare(src: DataFrame, lake: DataFrame, n_keys: int) -> DataFrame:
    """Per key of either side: ``__sn``/``__sh`` and ``__ln``/``__lh`` (rows and hash sum per side)
    and ``kind`` (null when equal). Keys are matched null-safely."""
    from pyspark.sql import functions as F

    kc = [_k(i) for i in range(n_keys)]

    def per_key(rows: DataFrame, n: str, h: str) -> DataFrame:
        return rows.groupBy(*kc).agg(F.count(F.lit(1)).alias(n), F.sum(F.col(_HASH).cast("DECIMAL(38,0)")).alias(h))

    s = per_key(src, "__sn", "__sh")
    lk = per_key(lake, "__ln", "__lh").select(*[F.col(k).alias(f"__j{i}") for i, k in enumerate(kc)], "__ln", "__lh")
    joined = s.join(lk, [F.col(k).eqNullSafe(F.col(f"__j{i}")) for i, k in enumerate(kc)], "full_outer")
    kind = (F.when(F.col("__ln").isNull(), F.lit(ONLY_IN_SOURCE)).when(F.col("__sn").isNull(), F.lit(ONLY_IN_LAKE))
            .when((F.col("__sn") != F.col("__ln")) | (F.col("__sh") != F.col("__lh")), F.lit(DIFFERENT)))
    return joined.select(*[F.coalesce(F.col(k), F.col(f"__j{i}")).alias(k) for i, k in enumerate(kc)],
                         "__sn", "__sh", "__ln", "__lh", kind.alias("kind"))


def _key_of(row: Any, n_keys: int) -> tuple[Any, ...]:
    return tuple(row[_k(i)] for i in range(n_keys))


def _key_dict(names: list[str], key: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(names, key, strict=True))


def _wait_for_lake(ctx: PipelineContext, table: str, ordinal: int, timeout_s: float) -> TableState | None:
    """Wait up to ``timeout_s`` for mining (another process) to move ``table`` to ``ordinal``."""
    deadline = time.time() + timeout_s
    while True:
        state = ctx.control.table_states().get(table)
        if state is None or state.ordinal >= ordinal or time.time() >= deadline:
            return state
        time.sleep(min(10.0, max(0.5, deadline - time.time())))


def _recheck(ctx: PipelineContext, table: str, key_cols: list[KeyColumn], keys: list[tuple[Any, ...]]
             ) -> dict[tuple[Any, ...], tuple[Any, Any, Any, Any, str | None]]:
    """Read ``keys`` again from both sides now: key -> (source rows, source hash, lake rows, lake
    hash, kind or None when equal); a key neither side has is absent."""
    from pyspark.sql import functions as F

    if not keys:
        return {}
    schema = ctx.lake_schema(_schema(ctx, table)[0])  # a new read position: the source as it is now
    names = [c.name for c in key_cols]
    try:
        where: str | None = " OR ".join(f"({f})" for f in key_filters(table, key_cols, keys))
    except CdcError:
        where = None  # no filter for some key: read the table, keep the keys by join
    src_full = _source_rows(ctx, schema, where)
    types = {f.name: f.dataType for f in src_full.schema.fields}
    src = _narrow(src_full, schema, names)
    lake = _narrow(_lake_rows(ctx, table, schema, types), schema, names)
    wanted = ctx.spark.createDataFrame(
        [list(k) for k in keys], schema=src.select(*[_k(i) for i in range(len(names))]).schema)
    wanted = F.broadcast(wanted.select(*[F.col(_k(i)).alias(f"__w{i}") for i in range(len(names))]))
    on = [F.col(_k(i)).eqNullSafe(F.col(f"__w{i}")) for i in range(len(names))]
    rows = _compare(src.join(wanted, on, "left_semi"), lake.join(wanted, on, "left_semi"), len(names)).collect()
    return {_key_of(r, len(names)): (r["__sn"], r["__sh"], r["__ln"], r["__lh"], r["kind"]) for r in rows}


def _repair(ctx: PipelineContext, table: str, key_cols: list[KeyColumn], keys: list[tuple[Any, ...]],
            result: TableReconcile) -> None:
    """Backfill ``keys`` (every filter is built first: a key that cannot be written changes nothing),
    then compare them again."""
    filters = key_filters(table, key_cols, keys)
    for where in filters:
        run_backfill(ctx, table, where)
    after = _recheck(ctx, table, key_cols, keys)
    names = [c.name for c in key_cols]
    result.remaining = dict.fromkeys(KINDS, 0)
    result.remaining_keys = {k: [] for k in KINDS}
    for key, (_, _, _, _, kind) in sorted(after.items(), key=lambda kv: repr(kv[0])):
        if kind is not None:
            result.remaining[kind] += 1
            result.remaining_keys[kind].append(_key_dict(names, key))
    result.repaired = True


def _record(ctx: PipelineContext, run_id: str, results: list[TableReconcile]) -> None:
    """Append the run's per-table results to ``_cdclake/reconcile`` (for reports), in one commit."""
    if not results:
        return
    ensure_table(ctx.spark, ctx.layout.reconcile, RECONCILE_DDL)
    rows = []
    for r in results:
        sample = {k: v[:SAMPLE_KEYS_KEPT] for k, v in r.keys.items()}
        if r.in_flight:
            sample["in_flight"] = r.in_flight[:SAMPLE_KEYS_KEPT]
        rows.append({"run_id": run_id, "source_table": r.table, "checked_at": utcnow(), "chunks": r.chunks,
                     "chunks_mismatched": r.chunks_mismatched, "source_rows": r.source_rows,
                     "lake_rows": r.lake_rows, "only_in_source": r.counts[ONLY_IN_SOURCE],
                     "only_in_lake": r.counts[ONLY_IN_LAKE], "different": r.counts[DIFFERENT],
                     "repaired": r.repaired and r.ok, "sample_keys": json.dumps(sample, default=str)})
    ctx.spark.createDataFrame(rows, schema=RECONCILE_DDL).write.format("delta").mode("append").save(
        ctx.layout.reconcile)


__all__ = ["KeyColumn", "ReconcileReport", "TableReconcile", "check_writable", "key_filters", "reconcile",
           "sql_literal"]
