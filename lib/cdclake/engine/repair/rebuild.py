"""Rebuild a target table (and its SCD type-2 table) from the bronze change log
(``cdclake backfill --mode rebuild``): after a fix in how changes apply, or to start a type-2 table
(``lake.history_tables``) for a pipeline that ran without one.

A rebuild is a **base** plus a **replay**:

* the base is the target as it stood before the first replayed window, read by Delta time travel:
  the table's last snapshot (from the beginning) or, with ``--from-window W``, the version before the
  first commit of window ``W``. Every commit the engine makes to a target carries a tag saying what
  wrote it (:func:`~cdclake.engine.lake.commit_tag`), which is how that version is found;
* the replay applies every applied window since, read from bronze, through the same code that applies
  mining windows, to a staging copy (with its own commit ids, so a killed rebuild resumes where it
  stopped). Mining goes on meanwhile; the pipeline lock is taken only at the end, to replay the windows
  mined in the meantime and to swap the result in;
* the swap is one MERGE that changes only the rows that differ (so readers of the change data feed see
  the repair, not a rewrite), and the type-2 table is replaced by the rebuilt one.

Not in the change log, so not replayed: resnapshot backfills made after the base (run ``cdclake
reconcile`` afterwards). A rebuild across a rename of the table is refused.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from cdclake.engine.apply import WindowApplier
from cdclake.engine.control import WindowState
from cdclake.engine.events import META_DELETED, SEQ_SPAN, commit_ordinal_of
from cdclake.engine.faults import crash_point
from cdclake.engine.history import schema_at, window_ddl
from cdclake.engine.lake import (
    commit_tag,
    commit_tags,
    delta_ref,
    idempotent_write,
    is_delta_table,
    quote,
    read_delta,
    type2_path,
)
from cdclake.engine.mining import window_open
from cdclake.engine.names import lake_keys
from cdclake.engine.repair.common import Backfill, streaming_state, unfinished
from cdclake.engine.states import BACKFILL_APPLIED, BACKFILL_BASED, BACKFILL_PLANNED, STREAMING, TableState
from cdclake.engine.target.type2 import APP_SUFFIX as TYPE2_APP_SUFFIX
from cdclake.errors import CdcError, command, table_regex
from cdclake.hadoopfs import hadoop_delete
from cdclake.schema import TableSchema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport


def rebuild(ctx: PipelineContext, report: RunReport, table: str, from_window: int | None) -> Backfill:
    """Rebuild ``table``'s target from its last snapshot (or from window ``from_window``) and bronze."""
    b = unfinished(ctx, table, mode="rebuild", from_window=from_window)
    if b is None:
        b = _plan(ctx, table, from_window)
    staging = b.detail["staging"]
    report.start = f"target version {b.detail['base_version']}"
    if b.status == BACKFILL_PLANNED:
        _write_base(ctx, b, staging)
        b.record(ctx, BACKFILL_BASED)
        crash_point("rebuild_based")
    _replay(ctx, b, staging)  # no lock: mining goes on
    with ctx.runs.lock(report):
        last = ctx.control.last_window()
        if window_open(last):
            assert last is not None
            raise CdcError(f"window {last.window_id} is not finished, so {table} cannot be swapped now",
                           "run 'cdclake mine' until it completes, then run the same rebuild again (it resumes)")
        through = _replay(ctx, b, staging)
        crash_point("rebuild_replayed")
        _swap(ctx, b, staging, through)
        crash_point("rebuild_swapped")
        b.record(ctx, BACKFILL_APPLIED, through=through)
    report.window_id = through
    report.end = f"window {through}"
    report.tables = [table]
    report.rows_by_table = {table: read_delta(ctx.spark, ctx.layout.target(table)).count()}
    for path in (staging, type2_path(staging)):
        hadoop_delete(ctx.spark, path)
    return b


# ---- plan ------------------------------------------------------------------------------------------


def _plan(ctx: PipelineContext, table: str, from_window: int | None) -> Backfill:
    streaming_state(ctx, table, "rebuild")
    path = ctx.layout.target(table)
    if not is_delta_table(ctx.spark, path):
        raise CdcError(f"{table} has no target table at {path}", f"re-snapshot it: {_resnapshot(table)}",
                       permanent=True)
    snapshots = [e for e in ctx.control.history() if e.table == table and e.kind == "snapshot"]
    if not snapshots:
        raise CdcError(f"the schema history has no snapshot of {table}", f"re-snapshot it: {_resnapshot(table)}",
                       permanent=True)
    floor = commit_ordinal_of(max(e.seq for e in snapshots))
    base = base_version(commit_tags(ctx.spark, path), from_window)
    if base is None:
        raise CdcError(
            f"the Delta log of {path} no longer shows " + (
                f"the commits of window {from_window}" if from_window else "the table's last snapshot"),
            f"rebuild from a later window (--from-window), or re-snapshot the table with {_resnapshot(table)} "
            "(the log keeps delta.logRetentionDuration, 30 days by default)",
            permanent=True)
    history_base = None
    type2 = type2_path(path)
    if ctx.targets.type2.enabled and is_delta_table(ctx.spark, type2):
        history_base = base_version(commit_tags(ctx.spark, type2), from_window)
    b = Backfill(uuid.uuid4().hex[:12], table, None, {
        "mode": "rebuild", "from_window": from_window, "base_version": base, "history_base": history_base,
        "floor": floor, "staging": f"{ctx.layout.control}/staging/rebuild={uuid.uuid4().hex[:12]}",
        "replayed": 0,
    })
    _windows(ctx, b)  # refuse now what cannot be replayed
    b.record(ctx, BACKFILL_PLANNED)
    return b


def base_version(tags: list[tuple[int, str, dict[str, Any] | None]], from_window: int | None) -> int | None:
    """The table version a rebuild starts from, given the table's ``(version, operation, tag)`` log.

    From the beginning: the last snapshot's commit (tables snapshotted before commits were tagged: the
    write after the last ``CREATE OR REPLACE TABLE``). From window ``W``: the version before the first
    commit of a window ``>= W`` after the last snapshot or rebuild, or the latest version if none.

    >>> log = [(0, "CREATE OR REPLACE TABLE", {"snapshot": True}), (1, "WRITE", {"snapshot": True}),
    ...        (2, "MERGE", {"window": 1}), (3, "OPTIMIZE", None), (4, "MERGE", {"window": 2})]
    >>> base_version(log, None), base_version(log, 2), base_version(log, 3)
    (1, 3, 4)
    """
    snapshots = [v for v, _, tag in tags if tag and tag.get("snapshot")]
    if from_window is None:
        if snapshots:
            return max(snapshots)
        replaced = [i for i, (_, op, _) in enumerate(tags) if op == "CREATE OR REPLACE TABLE"]
        if not replaced or any(tag for _, _, tag in tags[replaced[-1]:]):
            return None
        i = replaced[-1]
        return tags[i + 1][0] if i + 1 < len(tags) and tags[i + 1][1] == "WRITE" else tags[i][0]
    resets = [(v, tag) for v, _, tag in tags if tag and (tag.get("snapshot") or tag.get("rebuild"))]
    if not resets:
        return None
    reset, reset_tag = resets[-1]
    if reset_tag.get("rebuild") and int(reset_tag.get("through", 0)) >= from_window:
        raise CdcError(f"the table was rebuilt through window {reset_tag['through']} (version {reset}), so its "
                       f"history before window {from_window} is not the lake's any more",
                       f"rebuild from the beginning, or from a window after {reset_tag['through']}", permanent=True)
    later = [v for v, _, tag in tags if v > reset and tag and int(tag.get("window", 0)) >= from_window]
    return (min(later) - 1) if later else tags[-1][0]


def _windows(ctx: PipelineContext, b: Backfill) -> list[WindowState]:
    """The applied windows still to replay, checked to be in bronze and free of renames of the table."""
    floor = int(b.detail["floor"])
    first = b.detail["from_window"] or 1
    done = int(b.detail.get("replayed") or 0)
    windows = [w for w, _ in ctx.control.applied_windows()
               if w.window_id >= first and w.window_id > done and ctx.position(
                   w.end).ordinal > floor]  # type: ignore[arg-type]
    if not windows:
        return []
    ids = [w.window_id for w in windows]
    present = ctx.bronze.windows_present(min(ids), max(ids))
    missing = [w for w in ids if w not in present]
    if missing:
        later = command("backfill", "--table", b.table, "--mode", "rebuild", "--from-window", str(missing[-1] + 1))
        raise CdcError(
            f"bronze no longer has window(s) {_ranges(missing)} that the rebuild of {b.table} needs "
            "(maintenance.bronze_retention_days deleted them)",
            f"re-mine them into bronze first if the source still has the logs "
            f"({command('backfill', '--mode', 'remine', '--window', f'{missing[0]}-{missing[-1]}')}), or rebuild "
            f"from a later window ({later})", permanent=True)
    renames = [e for e in ctx.control.history(f"window_id >= {min(ids)}")
               if e.renamed_from and b.table in (e.table, e.renamed_from)]
    if renames:
        e = renames[0]
        after = command("backfill", "--table", b.table, "--mode", "rebuild", "--from-window",
                        str(max(int(r.window_id or 0) for r in renames) + 1))
        raise CdcError(f"{b.table} was renamed in window {e.window_id} ({e.ddl[:200]}); its rows before the "
                       "rename are in another table's change log", f"rebuild from a window after the rename ({after}), "
                       f"or repair with {command('backfill', '--table', b.table)} (resnapshot)", permanent=True)
    return windows


def _ranges(ids: list[int]) -> str:
    return f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}..{ids[-1]} ({len(ids)})"


# ---- base, replay, swap -------------------------------------------------------------------------------


def _write_base(ctx: PipelineContext, b: Backfill, staging: str) -> None:
    spark = ctx.spark
    path = ctx.layout.target(b.table)
    entries = ctx.control.history()
    floor_seq = (int(b.detail["floor"]) + 1) * SEQ_SPAN - 1
    entry = schema_at(entries, b.table, floor_seq, b.detail["from_window"] or 1)
    if entry is None or entry.schema is None:
        raise CdcError(f"no schema of {b.table} is recorded before the rebuild's first window",
                       "rebuild from the beginning (without --from-window): "
                       f"{command('backfill', '--table', b.table, '--mode', 'rebuild')}", permanent=True)
    base = _time_travel(ctx, path, int(b.detail["base_version"]), b.table)
    ctx.targets.shapes.create(staging, entry.schema, replace=True)
    columns = read_delta(spark, staging).columns
    base.select(*[quote(c) for c in columns]).write.format("delta").mode("append").save(staging)
    if not ctx.targets.type2.enabled:
        return
    type2 = type2_path(staging)
    if b.detail.get("history_base") is not None:  # (a key of backfill records in lakes: its name stays)
        first = _time_travel(ctx, type2_path(path), int(b.detail["history_base"]), b.table)
    else:  # a new type-2 table: the base rows are the first versions
        first = base.where(f"NOT `{META_DELETED}`") if ctx.targets.options.soft else base
    type2_columns = read_delta(spark, type2).columns
    first = first.selectExpr(*[quote(c) if c in first.columns else
                               (f"false AS {quote(c)}" if c == META_DELETED else f"NULL AS {quote(c)}")
                               for c in type2_columns])
    first.write.format("delta").mode("append").save(type2)


def _resnapshot(table: str) -> str:
    return command("snapshot", "--tables", table_regex(table), "--force")


def _time_travel(ctx: PipelineContext, path: str, version: int, table: str) -> DataFrame:
    try:
        df = ctx.spark.read.format("delta").option("versionAsOf", version).load(path)
        df.limit(1).collect()  # missing files show here, not half-way through the write
        return df
    except Exception as exc:
        raise CdcError(f"version {version} of {path} can no longer be read ({str(exc).splitlines()[0][:300]})",
                       "VACUUM has removed its files (maintenance.vacuum_retain_hours): rebuild from a later window "
                       f"(--from-window), or re-snapshot the table with {_resnapshot(table)}",
                       permanent=True
                       ) from exc


def _replay(ctx: PipelineContext, b: Backfill, staging: str) -> int:
    """Apply the windows not replayed yet to the staging copy; the last window replayed."""
    windows = _windows(ctx, b)
    entries = ctx.control.history()
    floor = int(b.detail["floor"])
    floor_seq = (floor + 1) * SEQ_SPAN - 1
    state = TableState(b.table, STREAMING, {}, floor, None, None)  # the replay's floor; never recorded
    app_id = ctx.app_id("rebuild", b.backfill_id)
    applier = WindowApplier(ctx)
    for w in windows:
        wid = w.window_id
        rows = ctx.bronze.changes(wid, b.table)
        truncates = sorted(int(r.seq) for r in rows.where("op = 't'").select("seq").collect())
        applier.apply_table(w, b.table, rows, truncates, window_ddl(entries, wid, b.table),
                            schema_at(entries, b.table, floor_seq, wid), state, True, path=staging,
                            app_id=app_id)
        b.record(ctx, BACKFILL_BASED, replayed=wid)
    return int(b.detail.get("replayed") or 0)


def _swap(ctx: PipelineContext, b: Backfill, staging: str, through: int) -> None:
    """Make the target equal the staging copy with one MERGE of the differences; replace the type-2 table."""
    spark = ctx.spark
    path = ctx.layout.target(b.table)
    app_id = ctx.app_id("rebuild", b.backfill_id, "swap")
    staged = read_delta(spark, staging)
    current = read_delta(spark, path).columns
    if sorted(staged.columns) != sorted(current):
        raise CdcError(f"the rebuilt {b.table} has columns {sorted(staged.columns)} but its target has "
                       f"{sorted(current)}", "the schema history and the target disagree: re-snapshot the table "
                       f"with {_resnapshot(b.table)}", permanent=True)
    latest = _latest_schema(ctx, b.table)
    keys = [c for c in lake_keys(ctx.targets.options.lake_schema(latest), ctx.key_columns(latest)) if c in current]
    view = f"cdclake_rebuild_{b.backfill_id}"
    staged.createOrReplaceTempView(view)
    on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)
    same = " AND ".join(f"t.{quote(c)} <=> s.{quote(c)}" for c in current)
    with commit_tag(spark, rebuild=b.backfill_id, through=through):
        if ctx.targets.type2.enabled:
            staged_type2 = read_delta(spark, type2_path(staging))
            ctx.targets.shapes.create(path, _latest_schema(ctx, b.table))  # a new type-2 table, if none
            (staged_type2.write.format("delta").mode("overwrite").option("txnAppId", app_id + TYPE2_APP_SUFFIX)
             .option("txnVersion", 1).save(type2_path(path)))
        with idempotent_write(spark, app_id, 1):
            spark.sql(f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
                      f"WHEN MATCHED AND NOT ({same}) THEN UPDATE SET * "
                      "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE")
    spark.catalog.dropTempView(view)


def _latest_schema(ctx: PipelineContext, table: str) -> TableSchema:
    entry = ctx.control.latest_entries().get(table)
    if entry is None or entry.schema is None:
        raise CdcError(f"{table} has no schema in the schema history", f"re-snapshot the table: {_resnapshot(table)}",
                       permanent=True)
    return entry.schema
