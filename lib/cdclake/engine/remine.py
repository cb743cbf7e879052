"""Mine applied windows into bronze again (``cdclake backfill --mode remine --window FIRST-LAST``).

Bronze retention (``maintenance.bronze_retention_days``) deletes old windows. While the source still
has the logs, a window can be read again with exactly its recorded bounds, the schema history valid at
its start and the table positions (floors) that held then: the same rows land in bronze under the same
window id, for an audit or for a rebuild that needs them. Targets are not touched (the window was
applied long ago), and windows bronze still has are left alone, so a killed re-mine resumes by running
it again. Each window's bronze commit is idempotent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.engine.control import TABLE_DROPPED, TABLE_STREAMING, WINDOW_MINED, WindowState
from cdclake.engine.events import WINDOW_MARKER_OP
from cdclake.engine.lake import read_delta
from cdclake.engine.lock import pipeline_lock
from cdclake.errors import CdcError
from cdclake.sources.base import FrameSource

if TYPE_CHECKING:
    from cdclake.engine.pipeline import Pipeline, RunReport


def remine(pipeline: Pipeline, report: RunReport, first: int, last: int) -> list[int]:
    """Re-mine the applied windows ``first..last`` that bronze no longer has; the ones re-mined."""
    if isinstance(pipeline.source, FrameSource):
        raise CdcError(
            f"re-mining is not supported for {pipeline.config.source.type} sources yet: their windows continue "
            "transactions from the in-flight buffer, which no longer holds what it held then",
            "to audit an old window, run LogMiner over its SCN range directly; to rebuild a table, "
            "rebuild from a window bronze still has (--from-window) or re-snapshot it")
    if first > last:
        raise CdcError(f"--window {first}-{last} is empty", "give FIRST-LAST with FIRST <= LAST")
    applied = {w.window_id: w for w, _ in pipeline.control.applied_windows()}
    unknown = [w for w in range(first, last + 1) if w not in applied]
    if unknown:
        raise CdcError(f"window(s) {unknown[:10]} of pipeline {pipeline.config.pipeline} were never applied",
                       f"re-mine applied windows only: 1..{max(applied, default=0)} (the run log lists them)")
    present = {r.window_id for r in read_delta(pipeline.spark, pipeline.layout.bronze).where(
        f"op = '{WINDOW_MARKER_OP}' AND window_id BETWEEN {first} AND {last}").select("window_id").collect()}
    todo = [w for w in range(first, last + 1) if w not in present]
    report.start, report.end = str(first), str(last)
    report.tables = []
    with pipeline_lock(pipeline.spark, pipeline.layout.lock, report.run_id):
        for wid in todo:
            _remine_window(pipeline, report, applied[wid])
    report.window_id = last
    return todo


def _remine_window(pipeline: Pipeline, report: RunReport, window: WindowState) -> None:
    wid = window.window_id
    source = pipeline.source
    states = {t: s for t, s in pipeline.control.table_states(pipeline.control.window_planned_rev(wid)).items()
              if s.status in (TABLE_STREAMING, TABLE_DROPPED)}
    start = source.position_from_dict(window.start)
    recorded_end = source.position_from_dict(window.end)  # type: ignore[arg-type]
    source.check_available(start)
    # The recorded end is the limit: the source stops on the same transaction boundary as the first time.
    bounded = WindowState(wid, WINDOW_MINED, window.start, window.end, None, None)  # type: ignore[arg-type]
    events, transactions, rows = report.events, report.transactions, dict(report.rows_by_table)
    end = pipeline._mine_window(bounded, start, states, report,
                                bronze_app=f"cdclake:{pipeline.config.pipeline}:remine")
    if end.ordinal != recorded_end.ordinal:
        raise CdcError(f"window {wid} re-mined to {end.describe()}, not to its recorded end "
                       f"{recorded_end.describe()}",
                       "this is a bug in the source plug-in: report it with both positions")
    report.events += events
    report.transactions += transactions
    for table, n in rows.items():
        report.rows_by_table[table] = report.rows_by_table.get(table, 0) + n
