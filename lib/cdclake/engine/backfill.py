"""Re-snapshot one table, or a key range of it, while mining goes on (``cdclake backfill``).

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
* with history tables (SCD2), the rows that really change get a version at ``P``. History takes
  versions in commit order, so the apply step first mines up to ``P`` if mining is behind it.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.engine.control import TABLE_STREAMING
from cdclake.engine.events import WINDOW_MARKER_OP, backfill_seq
from cdclake.engine.lake import hadoop_delete, read_delta, sql_str
from cdclake.engine.lock import pipeline_lock
from cdclake.errors import CdcError
from cdclake.schema import TableSchema

if TYPE_CHECKING:
    from cdclake.engine.pipeline import Pipeline, RunReport
    from cdclake.sources.base import Position

PLANNED, READ, APPLIED = "planned", "read", "applied"
MAX_CATCH_UP_RUNS = 20


@dataclass
class Backfill:
    """One backfill's record: its steps are ``backfill`` rows of the checkpoints table."""

    backfill_id: str
    table: str
    status: str
    detail: dict[str, Any]

    @property
    def where(self) -> str | None:
        return self.detail.get("where")

    @property
    def position(self) -> dict[str, Any]:
        return self.detail["position"]

    def record(self, pipeline: Pipeline, status: str, **changes: Any) -> None:
        self.status = status
        self.detail.update(changes)
        pipeline.control.record_backfill(self.backfill_id, self.table, status, self.detail)


def unfinished(pipeline: Pipeline, table: str, **match: Any) -> Backfill | None:
    """The newest backfill of ``table`` whose detail has ``match`` that a kill left unfinished."""
    for backfill_id, status, detail in pipeline.control.backfills(table):
        if status != APPLIED and all(detail.get(k) == v for k, v in match.items()):
            return Backfill(backfill_id, table, status, detail)
    return None


def resnapshot(pipeline: Pipeline, report: RunReport, table: str, where: str | None) -> Backfill:
    """Re-read ``table`` (rows matching ``where``) from the source and merge them into its target."""
    from cdclake import progress
    from cdclake.engine.pipeline import crash_point

    entry = pipeline.control.latest_per_table(pipeline.control.history()).get(table)
    schema = entry.schema if entry is not None else None
    b = unfinished(pipeline, table, where=where, mode=None)
    if b is None:
        with pipeline_lock(pipeline.spark, pipeline.layout.lock, report.run_id):
            b = _plan(pipeline, table, where, schema)
        crash_point("backfill_planned")
    assert schema is not None
    staging = f"{pipeline.layout.control}/staging/backfill={b.backfill_id}"
    position = pipeline.source.position_from_dict(b.position)
    report.start = report.end = position.describe()
    if b.status == PLANNED:
        pipeline.source.prepare_snapshot_read(position)
        pipeline.source.snapshot_read(pipeline.spark, schema, where).write.mode("overwrite").parquet(staging)
        b.record(pipeline, READ)
        crash_point("backfill_read")
    if pipeline.targets.keep_history:
        _mine_past(pipeline, table, position)
    progress.step(f"backfill {table}: merge")
    with pipeline_lock(pipeline.spark, pipeline.layout.lock, report.run_id):
        _apply(pipeline, b, schema, staging)
        crash_point("backfill_applied")
        b.record(pipeline, APPLIED)
    report.tables = [table]
    report.rows_by_table = {table: pipeline.spark.read.parquet(staging).count()}
    hadoop_delete(pipeline.spark, staging)
    return b


def _plan(pipeline: Pipeline, table: str, where: str | None, schema: TableSchema | None) -> Backfill:
    state = pipeline.control.table_states().get(table)
    if state is None or state.status != TABLE_STREAMING:
        raise CdcError(f"{table} is not a streaming table of pipeline {pipeline.config.pipeline} "
                       f"(state: {state.status if state else 'never snapshotted'})",
                       "backfill a table that has been snapshotted; a new table needs 'cdclake snapshot'")
    start = pipeline.source.snapshot_start([table])
    current = start.schemas[table]
    if schema is None or [(c.name, c.spark_type) for c in schema.columns] != [
            (c.name, c.spark_type) for c in current.columns]:
        raise CdcError(f"the source's definition of {table} differs from the lake's (a DDL mining has not "
                       "applied yet)", "run 'cdclake mine' until the table is caught up, then backfill")
    b = Backfill(uuid.uuid4().hex[:12], table, PLANNED, {"where": where, "position": start.position.to_dict()})
    b.record(pipeline, PLANNED)
    return b


def _mine_past(pipeline: Pipeline, table: str, position: Position) -> None:
    """With SCD2 history tables, mine up to ``P`` first: a history takes its versions in commit order,
    so every change committed before the re-read must be in it before the re-read's version is."""
    from cdclake import progress

    for _ in range(MAX_CATCH_UP_RUNS):
        state = pipeline.control.table_states().get(table)
        if state is None or state.ordinal >= position.ordinal:
            return
        progress.step(f"backfill {table}: mining up to {position.describe()} first (history table)")
        pipeline.mine()
    raise CdcError(f"mining did not reach {position.describe()} for {table} in {MAX_CATCH_UP_RUNS} runs, so the "
                   "re-read rows cannot be versioned in its history table yet",
                   "run 'cdclake mine' until the lag is small, then run the same backfill again (it resumes)")


def _apply(pipeline: Pipeline, b: Backfill, schema: TableSchema, staging: str) -> None:
    position = pipeline.source.position_from_dict(b.position)
    seq = backfill_seq(position.ordinal)
    keys = pipeline._key_columns(schema)
    # What the change log removes after P: those rows must not come back.
    later = read_delta(pipeline.spark, pipeline.layout.bronze).where(
        f"source_table = '{sql_str(b.table)}' AND op <> '{WINDOW_MARKER_OP}' AND seq > {seq}")
    pipeline.targets.merge_reread(
        pipeline.layout.target(b.table), schema, keys, pipeline.spark.read.parquet(staging), seq,
        position.describe(), b.where, pipeline.targets.removed_keys(later, schema, keys),
        truncated_later=not later.where("op = 't'").limit(1).isEmpty(),
        app_id=f"cdclake:{pipeline.config.pipeline}:backfill:{b.backfill_id}")
