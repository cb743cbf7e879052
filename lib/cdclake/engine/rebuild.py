"""Rebuild a target table (and its SCD type 2 history table) from the bronze change log
(``cdclake backfill --mode rebuild``): after a fix in how changes apply, or to start a history table
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
  the repair, not a rewrite), and the history table is replaced by the rebuilt one.

Not in the change log, so not replayed: resnapshot backfills made after the base (run ``cdclake
reconcile`` afterwards). A rebuild across a rename of the table is refused.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from cdclake.engine.backfill import APPLIED, PLANNED, Backfill, unfinished
from cdclake.engine.control import (
    SKIPPED,
    TABLE_STREAMING,
    WINDOW_APPLIED,
    WINDOW_CANCELLED,
    HistoryEntry,
    TableState,
    WindowState,
)
from cdclake.engine.events import META_DELETED, SEQ_SPAN, WINDOW_MARKER_OP, commit_ordinal_of
from cdclake.engine.lake import (
    commit_tag,
    commit_tags,
    delta_ref,
    hadoop_delete,
    history_path,
    idempotent_write,
    is_delta_table,
    quote,
    read_delta,
    sql_str,
)
from cdclake.engine.lock import pipeline_lock
from cdclake.errors import CdcError
from cdclake.schema import TableSchema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.pipeline import Pipeline, RunReport

BASED = "based"  # the staging copy holds the base; windows replay into it


def rebuild(pipeline: Pipeline, report: RunReport, table: str, from_window: int | None) -> Backfill:
    """Rebuild ``table``'s target from its last snapshot (or from window ``from_window``) and bronze."""
    from cdclake.engine.pipeline import crash_point

    b = unfinished(pipeline, table, mode="rebuild", from_window=from_window)
    if b is None:
        b = _plan(pipeline, table, from_window)
    staging = b.detail["staging"]
    report.start = f"target version {b.detail['base_version']}"
    if b.status == PLANNED:
        _write_base(pipeline, b, staging)
        b.record(pipeline, BASED)
        crash_point("rebuild_based")
    _replay(pipeline, b, staging)  # no lock: mining goes on
    with pipeline_lock(pipeline.spark, pipeline.layout.lock, report.run_id):
        last = pipeline.control.last_window()
        if last is not None and last.status not in (WINDOW_APPLIED, WINDOW_CANCELLED):
            raise CdcError(f"window {last.window_id} is not finished, so {table} cannot be swapped now",
                           "run 'cdclake mine' until it completes, then run the same rebuild again (it resumes)")
        through = _replay(pipeline, b, staging)
        crash_point("rebuild_replayed")
        _swap(pipeline, b, staging, through)
        crash_point("rebuild_swapped")
        b.record(pipeline, APPLIED, through=through)
    report.window_id = through
    report.end = f"window {through}"
    report.tables = [table]
    report.rows_by_table = {table: read_delta(pipeline.spark, pipeline.layout.target(table)).count()}
    for path in (staging, history_path(staging)):
        hadoop_delete(pipeline.spark, path)
    return b


# ---- plan ------------------------------------------------------------------------------------------


def _plan(pipeline: Pipeline, table: str, from_window: int | None) -> Backfill:
    state = pipeline.control.table_states().get(table)
    path = pipeline.layout.target(table)
    if state is None or state.status != TABLE_STREAMING or not is_delta_table(pipeline.spark, path):
        raise CdcError(f"{table} is not a streaming table of pipeline {pipeline.config.pipeline} "
                       f"(state: {state.status if state else 'never snapshotted'})",
                       "rebuild a table that has been snapshotted; a new table needs 'cdclake snapshot'")
    snapshots = [e for e in pipeline.control.history() if e.table == table and e.kind == "snapshot"]
    if not snapshots:
        raise CdcError(f"the schema history has no snapshot of {table}", "re-snapshot it: "
                       f"'cdclake snapshot --config <file> --tables '{table}' --force'")
    floor = commit_ordinal_of(max(e.seq for e in snapshots))
    base = base_version(commit_tags(pipeline.spark, path), from_window)
    if base is None:
        raise CdcError(
            f"the Delta log of {path} no longer shows " + (
                f"the commits of window {from_window}" if from_window else "the table's last snapshot"),
            "rebuild from a later window (--from-window), or re-snapshot the table with 'cdclake snapshot "
            f"--tables '{table}' --force' (the log keeps delta.logRetentionDuration, 30 days by default)")
    history_base = None
    hist = history_path(path)
    if pipeline.targets.keep_history and is_delta_table(pipeline.spark, hist):
        history_base = base_version(commit_tags(pipeline.spark, hist), from_window)
    b = Backfill(uuid.uuid4().hex[:12], table, PLANNED, {
        "mode": "rebuild", "from_window": from_window, "base_version": base, "history_base": history_base,
        "floor": floor, "staging": f"{pipeline.layout.control}/staging/rebuild={uuid.uuid4().hex[:12]}",
        "replayed": 0,
    })
    _windows(pipeline, b)  # refuse now what cannot be replayed
    b.record(pipeline, PLANNED)
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
                       f"rebuild from the beginning, or from a window after {reset_tag['through']}")
    later = [v for v, _, tag in tags if v > reset and tag and int(tag.get("window", 0)) >= from_window]
    return (min(later) - 1) if later else tags[-1][0]


def _windows(pipeline: Pipeline, b: Backfill) -> list[WindowState]:
    """The applied windows still to replay, checked to be in bronze and free of renames of the table."""
    floor = int(b.detail["floor"])
    first = b.detail["from_window"] or 1
    done = int(b.detail.get("replayed") or 0)
    windows = [w for w, _ in pipeline.control.applied_windows()
               if w.window_id >= first and w.window_id > done and pipeline.source.position_from_dict(
                   w.end).ordinal > floor]  # type: ignore[arg-type]
    if not windows:
        return []
    ids = [w.window_id for w in windows]
    present = {r.window_id for r in read_delta(pipeline.spark, pipeline.layout.bronze).where(
        f"op = '{WINDOW_MARKER_OP}' AND window_id BETWEEN {min(ids)} AND {max(ids)}").select("window_id").collect()}
    missing = [w for w in ids if w not in present]
    if missing:
        raise CdcError(
            f"bronze no longer has window(s) {_ranges(missing)} that the rebuild of {b.table} needs "
            "(maintenance.bronze_retention_days deleted them)",
            f"re-mine them into bronze first if the source still has the logs ('cdclake backfill --mode remine "
            f"--window {missing[0]}-{missing[-1]}'), or rebuild from a later window (--from-window "
            f"{missing[-1] + 1})")
    renames = [e for e in pipeline.control.history(f"window_id >= {min(ids)}")
               if e.renamed_from and b.table in (e.table, e.renamed_from)]
    if renames:
        e = renames[0]
        raise CdcError(f"{b.table} was renamed in window {e.window_id} ({e.ddl[:200]}); its rows before the "
                       "rename are in another table's change log", "rebuild from a window after the rename, or "
                       f"repair with 'cdclake backfill --table {b.table}' (resnapshot)")
    return windows


def _ranges(ids: list[int]) -> str:
    return f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}..{ids[-1]} ({len(ids)})"


# ---- base, replay, swap -------------------------------------------------------------------------------


def _schema_at(entries: list[HistoryEntry], table: str, floor_seq: int, window_id: int) -> HistoryEntry | None:
    """The table's schema entry in force when window ``window_id`` starts (snapshots after the floor are not)."""
    valid = [e for e in entries if e.table == table and e.kind != SKIPPED and (
        (e.window_id is None and e.seq <= floor_seq) or (e.window_id is not None and e.window_id < window_id))]
    return max(valid, key=lambda e: (e.seq, e.version), default=None)


def _write_base(pipeline: Pipeline, b: Backfill, staging: str) -> None:
    spark = pipeline.spark
    path = pipeline.layout.target(b.table)
    entries = pipeline.control.history()
    floor_seq = (int(b.detail["floor"]) + 1) * SEQ_SPAN - 1
    entry = _schema_at(entries, b.table, floor_seq, b.detail["from_window"] or 1)
    if entry is None or entry.schema is None:
        raise CdcError(f"no schema of {b.table} is recorded before the rebuild's first window",
                       "rebuild from the beginning (without --from-window)")
    base = _time_travel(pipeline, path, int(b.detail["base_version"]))
    pipeline.targets.create(staging, entry.schema, replace=True)
    columns = read_delta(spark, staging).columns
    base.select(*[quote(c) for c in columns]).write.format("delta").mode("append").save(staging)
    if not pipeline.targets.keep_history:
        return
    hist = history_path(staging)
    if b.detail.get("history_base") is not None:
        first = _time_travel(pipeline, history_path(path), int(b.detail["history_base"]))
    else:  # a new history table: the base rows are the first versions
        first = base.where(f"NOT `{META_DELETED}`") if pipeline.targets.soft else base
    hist_columns = read_delta(spark, hist).columns
    first = first.selectExpr(*[quote(c) if c in first.columns else
                               (f"false AS {quote(c)}" if c == META_DELETED else f"NULL AS {quote(c)}")
                               for c in hist_columns])
    first.write.format("delta").mode("append").save(hist)


def _time_travel(pipeline: Pipeline, path: str, version: int) -> DataFrame:
    try:
        df = pipeline.spark.read.format("delta").option("versionAsOf", version).load(path)
        df.limit(1).collect()  # missing files show here, not half-way through the write
        return df
    except Exception as exc:
        raise CdcError(f"version {version} of {path} can no longer be read ({str(exc).splitlines()[0][:300]})",
                       "VACUUM has removed its files (maintenance.vacuum_retain_hours): rebuild from a later window "
                       "(--from-window), or re-snapshot the table with 'cdclake snapshot --tables <regex> --force'"
                       ) from exc


def _replay(pipeline: Pipeline, b: Backfill, staging: str) -> int:
    """Apply the windows not replayed yet to the staging copy; the last window replayed."""
    windows = _windows(pipeline, b)
    entries = pipeline.control.history()
    floor = int(b.detail["floor"])
    floor_seq = (floor + 1) * SEQ_SPAN - 1
    state = TableState(b.table, TABLE_STREAMING, {}, floor, None, None)
    app_id = f"cdclake:{pipeline.config.pipeline}:rebuild:{b.backfill_id}"
    bronze = read_delta(pipeline.spark, pipeline.layout.bronze)
    for w in windows:
        wid = w.window_id
        rows = bronze.where(f"window_id = {wid} AND source_table = '{sql_str(b.table)}' "
                            f"AND op <> '{WINDOW_MARKER_OP}'")
        truncates = sorted(int(r.seq) for r in rows.where("op = 't'").select("seq").collect())
        ddl = [e for e in entries if e.window_id == wid and e.table == b.table and e.kind != SKIPPED]
        pipeline._apply_table(w, b.table, rows, truncates, ddl, _schema_at(entries, b.table, floor_seq, wid),
                              state, True, None, path=staging, app_id=app_id)
        b.record(pipeline, BASED, replayed=wid)
    return int(b.detail.get("replayed") or 0)


def _swap(pipeline: Pipeline, b: Backfill, staging: str, through: int) -> None:
    """Make the target equal the staging copy with one MERGE of the differences; replace the history."""
    spark = pipeline.spark
    path = pipeline.layout.target(b.table)
    app_id = f"cdclake:{pipeline.config.pipeline}:rebuild:{b.backfill_id}:swap"
    staged = read_delta(spark, staging)
    current = read_delta(spark, path).columns
    if sorted(staged.columns) != sorted(current):
        raise CdcError(f"the rebuilt {b.table} has columns {sorted(staged.columns)} but its target has "
                       f"{sorted(current)}", "the schema history and the target disagree: re-snapshot the table "
                       "with 'cdclake snapshot --tables <regex> --force'")
    keys = [c for c in pipeline._key_columns(_latest_schema(pipeline, b.table)) if c in current]
    view = f"cdclake_rebuild_{b.backfill_id}"
    staged.createOrReplaceTempView(view)
    on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)
    same = " AND ".join(f"t.{quote(c)} <=> s.{quote(c)}" for c in current)
    with commit_tag(spark, rebuild=b.backfill_id, through=through):
        if pipeline.targets.keep_history:
            staged_history = read_delta(spark, history_path(staging))
            pipeline.targets.create(path, _latest_schema(pipeline, b.table))  # a new history table, if none
            (staged_history.write.format("delta").mode("overwrite").option("txnAppId", app_id + ":history")
             .option("txnVersion", 1).save(history_path(path)))
        with idempotent_write(spark, app_id, 1):
            spark.sql(f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
                      f"WHEN MATCHED AND NOT ({same}) THEN UPDATE SET * "
                      "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE")
    spark.catalog.dropTempView(view)


def _latest_schema(pipeline: Pipeline, table: str) -> TableSchema:
    entry = pipeline.control.latest_per_table(pipeline.control.history()).get(table)
    if entry is None or entry.schema is None:
        raise CdcError(f"{table} has no schema in the schema history", "re-snapshot the table")
    return entry.schema
