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
  than the snapshot rows and leave them alone.

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

import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.engine.control import TABLE_STREAMING
from cdclake.engine.events import META_DELETED, META_SEQ, WINDOW_MARKER_OP, backfill_seq
from cdclake.engine.lake import delta_ref, hadoop_delete, idempotent_write, quote, read_delta
from cdclake.engine.lock import pipeline_lock
from cdclake.engine.target import typed_select
from cdclake.errors import CdcError

if TYPE_CHECKING:
    from cdclake.engine.pipeline import Pipeline, RunReport

PLANNED, READ, APPLIED = "planned", "read", "applied"


@dataclass
class Backfill:
    backfill_id: str
    table: str
    where: str | None
    status: str
    position: dict[str, Any]

    @property
    def detail(self) -> str:
        return json.dumps({"where": self.where, "position": self.position})


def _state(pipeline: Pipeline, table: str, where: str | None) -> Backfill | None:
    """The unfinished backfill of ``table`` with this filter, if one was killed."""
    rows = (read_delta(pipeline.spark, pipeline.layout.checkpoints)
            .where(f"kind = 'backfill' AND table_name = '{table.replace(chr(39), chr(39) * 2)}'")
            .orderBy("rev", ascending=False).collect())
    latest: dict[str, Any] = {}
    for r in rows:
        latest.setdefault(r.run_id, r)
    for r in sorted(latest.values(), key=lambda r: -r.rev):
        detail = json.loads(r.detail)
        if r.status != APPLIED and detail.get("where") == where:
            return Backfill(r.run_id, table, where, r.status, detail["position"])
    return None


def _record(pipeline: Pipeline, b: Backfill) -> None:
    pipeline.control._append_checkpoints([{
        "kind": "backfill", "window_id": None, "status": b.status, "table_name": b.table, "position": None,
        "position_ordinal": None, "start_position": None, "end_limit": None, "max_events": None,
        "run_id": b.backfill_id, "detail": b.detail,
    }])


def resnapshot(pipeline: Pipeline, report: RunReport, table: str, where: str | None) -> Backfill:
    """Re-read ``table`` (rows matching ``where``) from the source and merge them into its target."""
    b = _state(pipeline, table, where)
    from cdclake.engine.pipeline import crash_point

    if b is None:
        with pipeline_lock(pipeline.spark, pipeline.layout.lock, report.run_id):
            b = _plan(pipeline, table, where)
        crash_point("backfill_planned")
    schema = pipeline.control.latest_per_table(pipeline.control.history())[table].schema
    assert schema is not None
    staging = f"{pipeline.layout.control}/staging/backfill={b.backfill_id}"
    position = pipeline.source.position_from_dict(b.position)
    report.start = report.end = position.describe()
    if b.status == PLANNED:
        pipeline.source.prepare_snapshot_read(position)
        frame = pipeline.source.snapshot_read(pipeline.spark, schema, where)
        frame.write.mode("overwrite").parquet(staging)
        b.status = READ
        _record(pipeline, b)
        crash_point("backfill_read")
    with pipeline_lock(pipeline.spark, pipeline.layout.lock, report.run_id):
        rows = _apply(pipeline, b, schema, staging)
        crash_point("backfill_applied")
        b.status = APPLIED
        _record(pipeline, b)
    hadoop_delete(pipeline.spark, staging)
    report.tables = [table]
    report.rows_by_table = {table: rows}
    return b


def _plan(pipeline: Pipeline, table: str, where: str | None) -> Backfill:
    states = pipeline.control.table_states()
    state = states.get(table)
    if state is None or state.status != TABLE_STREAMING:
        raise CdcError(f"{table} is not a streaming table of pipeline {pipeline.config.pipeline} "
                       f"(state: {state.status if state else 'never snapshotted'})",
                       "backfill a table that has been snapshotted; a new table needs 'cdclake snapshot'")
    entry = pipeline.control.latest_per_table(pipeline.control.history()).get(table)
    start = pipeline.source.snapshot_start([table])
    current = start.schemas[table]
    if entry is None or entry.schema is None or [(c.name, c.spark_type) for c in entry.schema.columns] != [
            (c.name, c.spark_type) for c in current.columns]:
        raise CdcError(f"the source's definition of {table} differs from the lake's (a DDL mining has not "
                       "applied yet)", "run 'cdclake mine' until the table is caught up, then backfill")
    b = Backfill(uuid.uuid4().hex[:12], table, where, PLANNED, start.position.to_dict())
    _record(pipeline, b)
    return b


def _apply(pipeline: Pipeline, b: Backfill, schema: Any, staging: str) -> int:
    spark, layout = pipeline.spark, pipeline.layout
    position = pipeline.source.position_from_dict(b.position)
    seq = backfill_seq(position.ordinal)
    position_sql = position.describe().replace("\\", "\\\\").replace("'", "\\'")
    keys = pipeline._key_columns(schema)
    path = layout.target(b.table)
    # Keys the change log deletes after P: their snapshot rows must not come back.
    later = (read_delta(spark, layout.bronze)
             .where(f"source_table = '{b.table}' AND op <> '{WINDOW_MARKER_OP}' AND seq > {seq}"))
    parsed = pipeline.targets._parsed(later, schema, keys)
    key_of = ", ".join(f"{{img}}.{quote(k)} AS {quote(k)}" for k in keys)
    moved = " OR ".join(f"NOT (a.{quote(k)} <=> b.{quote(k)})" for k in keys)
    gone = parsed.where(f"op = 'd' OR (op = 'u' AND b IS NOT NULL AND ({moved}))").selectExpr(
        key_of.format(img="b"))
    truncated = later.where("op = 't'").limit(1).count() > 0
    metas = [
        "'r' AS `__op`", f"CAST({seq} AS DECIMAL(38,0)) AS `__seq`",
        f"'{position_sql}' AS `__position`", "CAST(NULL AS STRING) AS `__txid`",
        "current_timestamp() AS `__commit_ts`", "CAST(NULL AS BIGINT) AS `__window_id`",
    ]
    cols = [*schema.column_names, "__op", "__seq", "__position", "__txid", "__commit_ts", "__window_id"]
    read = spark.read.parquet(staging).selectExpr(*typed_select(pipeline.source.types, schema), *metas)
    upserts = read.limit(0) if truncated else read.join(gone, keys, "left_anti")
    # Target rows in the range the source no longer has, written before P: deleted before P.
    target = read_delta(spark, path)
    if pipeline.targets.soft:
        target = target.where(f"NOT `{META_DELETED}`")
    if b.where:
        target = target.where(b.where)
    doomed = (target.where(f"`{META_SEQ}` < {seq}").join(read.select(*keys), keys, "left_anti")
              .select(*[quote(c) for c in cols]))
    source = (upserts.selectExpr("*", "'u' AS `__action`")
              .unionByName(doomed.selectExpr("*", "'d' AS `__action`")))
    view = f"cdclake_backfill_{b.backfill_id}"
    source.createOrReplaceTempView(view)
    on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)
    set_all = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in cols)
    ins = ", ".join(quote(c) for c in cols)
    vals = ", ".join(f"s.{quote(c)}" for c in cols)
    newer = f"s.`__action` = 'u' AND s.`{META_SEQ}` > t.`{META_SEQ}`"
    older = f"s.`__action` = 'd' AND t.`{META_SEQ}` < {seq}"
    if pipeline.targets.soft:
        sql = (f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
               f"WHEN MATCHED AND {newer} THEN UPDATE SET {set_all}, t.`{META_DELETED}` = false "
               f"WHEN MATCHED AND {older} THEN UPDATE SET t.`{META_DELETED}` = true, t.`__op` = 'd', "
               f"t.`{META_SEQ}` = {seq}, t.`__position` = '{position_sql}' "
               f"WHEN NOT MATCHED AND s.`__action` = 'u' THEN INSERT ({ins}, `{META_DELETED}`) VALUES ({vals}, false)")
    else:
        sql = (f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
               f"WHEN MATCHED AND {newer} THEN UPDATE SET {set_all} "
               f"WHEN MATCHED AND {older} THEN DELETE "
               f"WHEN NOT MATCHED AND s.`__action` = 'u' THEN INSERT ({ins}) VALUES ({vals})")
    with idempotent_write(spark, f"cdclake:{pipeline.config.pipeline}:backfill:{b.backfill_id}", 1):
        spark.sql(sql)
    spark.catalog.dropTempView(view)
    return spark.read.parquet(staging).count()
