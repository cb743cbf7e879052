"""Re-snapshot one table, or a key range of it, while mining goes on (``cdclake backfill``, the default mode).

A backfill reads the source at a log position ``P`` and merges the rows into the target as snapshot
rows sequenced at ``P`` (``__op = 'r'``, ``__seq =`` :func:`~cdclake.engine.events.backfill_seq`: after
every change committed up to ``P``, before every later one), under the same rule as every change: a
row only replaces a target row with a lower sequence. So, whether mining stands behind ``P`` or ahead
of it when the rows land:

* a change mined after ``P`` is never overwritten (its sequence is higher);
* a row deleted after ``P`` is never resurrected: keys the bronze change log deletes after ``P``
  (deletes, key-changing updates, truncates) are dropped from the snapshot rows;
* a target row in the range that the source no longer has is deleted only if its sequence is
  below ``P`` (it was deleted before ``P``); one written after ``P`` stays;
* changes between the table's position and ``P`` that mining applies later carry lower sequences
  than the snapshot rows and leave them alone;
* with type-2 tables (``lake.history_tables``), the rows that really change get a version at ``P``. A
  type-2 table takes versions in commit order, so the apply step first mines up to ``P`` if mining is behind it.

Three steps, each recorded as a ``backfill`` row of the checkpoints table so a killed backfill is
resumed by running the same command again:

1. **planned** (under the pipeline lock, short): ``P`` is taken and the source schema is checked
   against the lake's (a DDL mining has not applied yet must be mined first);
2. **read** (no lock: mining goes on): the source rows of the range go to a staging folder;
3. **applied** (under the lock, one MERGE, idempotent): the rows land.

``--where`` is a filter on the source table's columns that both the source and Spark SQL read the
same way (e.g. ``id BETWEEN 1000 AND 1999``): the source reads the range with it, and the target's
rows in the range are found with it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from cdclake.engine.events import backfill_seq, event_seq
from cdclake.engine.faults import crash_point
from cdclake.engine.mining import mine, window_open
from cdclake.engine.repair.common import Backfill, read_start, streaming_state, unfinished
from cdclake.engine.states import BACKFILL_APPLIED, BACKFILL_PLANNED, BACKFILL_READ, REREAD_DETAIL, move, rereads
from cdclake.errors import CdcError
from cdclake.hadoopfs import hadoop_delete
from cdclake.progress import step as progress_step

if TYPE_CHECKING:
    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport
    from cdclake.schema import TableSchema
    from cdclake.spi import Position

MAX_CATCH_UP_RUNS = 20


def resnapshot(ctx: PipelineContext, report: RunReport, table: str, where: str | None) -> Backfill:
    """Re-read ``table`` (rows matching ``where``) from the source and merge them into its target."""
    b = unfinished(ctx, table, where=where, mode=None)
    entry = ctx.control.latest_entries().get(table)
    multiset = entry is not None and entry.schema is not None and not ctx.key_columns(entry.schema)
    if b is None or (multiset and b.status == BACKFILL_PLANNED):
        # Without a row key the rows must be read exactly at P (the source may hold the table still
        # meanwhile), so planning and reading are one step: a killed one starts again at a new P.
        with ctx.runs.lock(report):
            try:
                b = _plan(ctx, table, where)
                if multiset:
                    _read(ctx, b, where, entry.schema)  # type: ignore[union-attr]
            finally:
                ctx.source.snapshot.end()
        crash_point("backfill_planned")
    assert entry is not None and entry.schema is not None  # _plan refuses a table never snapshotted
    schema = entry.schema
    staging = _staging(ctx, b)
    position = ctx.position(b.position)
    report.start = report.end = position.describe()
    if b.status == BACKFILL_PLANNED:
        ctx.source.snapshot.prepare(position)
        _read(ctx, b, where, schema)
    if ctx.targets.type2.enabled or multiset:
        _mine_past(ctx, table, position)
    progress_step(f"backfill {table}: merge")
    with ctx.runs.lock(report):
        _apply(ctx, b, schema, staging)
        crash_point("backfill_applied")
        b.record(ctx, BACKFILL_APPLIED)
        if where is None:
            _clear_reread(ctx, table, backfill_seq(position.ordinal), report.run_id)
    report.tables = [table]
    report.rows_by_table = {table: ctx.spark.read.parquet(staging).count()}
    hadoop_delete(ctx.spark, staging)
    return b


def _clear_reread(ctx: PipelineContext, table: str, seq: int, run_id: str) -> None:
    """A whole re-read at ``seq`` settles a re-read a schema change before ``seq`` asked for."""
    state = ctx.control.table_states().get(table)
    if state is not None and rereads(state) and int(state.detail["reread_seq"]) < seq:
        detail = {k: v for k, v in state.detail.items() if k not in REREAD_DETAIL}
        ctx.control.set_tables([move(table, state, state.status, state.position, state.ordinal, state.window_id,
                                     detail)], run_id)


def _plan(ctx: PipelineContext, table: str, where: str | None) -> Backfill:
    streaming_state(ctx, table, "backfill")
    _, start = read_start(ctx, table, "backfill")
    b = Backfill(uuid.uuid4().hex[:12], table, None, {"where": where, "position": start.position.to_dict()})
    b.record(ctx, BACKFILL_PLANNED)
    return b


def _staging(ctx: PipelineContext, b: Backfill) -> str:
    return f"{ctx.layout.control}/staging/backfill={b.backfill_id}"


def _read(ctx: PipelineContext, b: Backfill, where: str | None, schema: TableSchema) -> None:
    ctx.read_source(schema, where).write.mode("overwrite").parquet(_staging(ctx, b))
    b.record(ctx, BACKFILL_READ)
    crash_point("backfill_read")


def _mine_past(ctx: PipelineContext, table: str, position: Position) -> None:
    """With type-2 tables, mine up to ``P`` first: a type-2 table takes its versions in commit order,
    so every change committed before the re-read must be in it before the re-read's version is."""
    for _ in range(MAX_CATCH_UP_RUNS):
        state = ctx.control.table_states().get(table)
        if state is None or state.ordinal >= position.ordinal:
            return
        progress_step(f"backfill {table}: mining up to {position.describe()} first (history table)")
        with ctx.runs.run("mine") as report:
            mine(ctx, report, ctx.config.mining.max_events)
    raise CdcError(f"mining did not reach {position.describe()} for {table} in {MAX_CATCH_UP_RUNS} runs, so the "
                   "re-read rows cannot be versioned in its history table yet",
                   "run 'cdclake mine' until the lag is small, then run the same backfill again (it resumes)")


def _apply(ctx: PipelineContext, b: Backfill, schema: TableSchema, staging: str) -> None:
    position = ctx.position(b.position)
    seq = backfill_seq(position.ordinal)
    keys = ctx.key_columns(schema)
    later = ctx.bronze.changes_after(b.table, seq)  # what the change log removes after P must not come back
    if not keys:
        if window_open(ctx.control.last_window()):
            raise CdcError(f"a mining window is unfinished, so which changes of {b.table} the lake holds is not "
                           "settled", "run 'cdclake mine' once, then the same backfill again (it resumes)")
        applied = event_seq(ctx.control.table_states()[b.table].ordinal + 1, 0)
        later = later.where(f"seq < {applied}")  # the changes the target holds already
        ctx.targets.keyless.replace(ctx.layout.target(b.table), schema, ctx.spark.read.parquet(staging), seq,
                                   position.describe(), b.where, later, ctx.app_id("backfill", b.backfill_id))
        return
    ctx.targets.merge.reread(
        ctx.layout.target(b.table), schema, keys, ctx.spark.read.parquet(staging), seq,
        position.describe(), b.where, ctx.targets.changes.removed_keys(later, schema, keys),
        truncated_later=not later.where("op = 't'").limit(1).isEmpty(),
        app_id=ctx.app_id("backfill", b.backfill_id))
