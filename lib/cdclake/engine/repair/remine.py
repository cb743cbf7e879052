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

from cdclake.engine.control import WINDOW_MINED, WindowState
from cdclake.engine.mining import WindowMiner
from cdclake.engine.states import DROPPED, STREAMING
from cdclake.errors import CdcError

if TYPE_CHECKING:
    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport


def remine(ctx: PipelineContext, report: RunReport, first: int, last: int) -> list[int]:
    """Re-mine the applied windows ``first..last`` that bronze no longer has; the ones re-mined."""
    if not ctx.source.log.windows_end_on_transaction_boundaries:
        raise CdcError(
            f"re-mining is not supported for {ctx.config.source.type} sources yet: their windows continue "
            "transactions from the in-flight buffer, which no longer holds what it held then",
            "to audit an old window, mine its log range with the database's own tools; to rebuild a table, "
            "rebuild from a window bronze still has (--from-window) or re-snapshot it", permanent=True)
    if first > last:
        raise CdcError(f"--window {first}-{last} is empty", "give FIRST-LAST with FIRST <= LAST", permanent=True)
    applied = {w.window_id: w for w, _ in ctx.control.applied_windows()}
    unknown = [w for w in range(first, last + 1) if w not in applied]
    if unknown:
        raise CdcError(f"window(s) {unknown[:10]} of pipeline {ctx.name} were never applied",
                       f"re-mine applied windows only: 1..{max(applied, default=0)} (the run log lists them)",
                       permanent=True)
    present = ctx.bronze.windows_present(first, last)
    todo = [w for w in range(first, last + 1) if w not in present]
    report.start, report.end = str(first), str(last)
    report.tables = []
    report.windows = len(todo)
    kept = [w for w in range(first, last + 1) if w in present]
    if kept:
        report.note = (f"window(s) {_listed(kept)} still in bronze (retention has not deleted them): left as they "
                       "are" + ("; nothing to re-mine" if not todo else ""))
    with ctx.runs.lock(report):
        for wid in todo:
            _remine_window(ctx, report, applied[wid])
    report.window_id = last
    return todo


def _remine_window(ctx: PipelineContext, report: RunReport, window: WindowState) -> None:
    wid = window.window_id
    states = {t: s for t, s in ctx.control.table_states(ctx.control.window_planned_rev(wid)).items()
              if s.status in (STREAMING, DROPPED)}
    start = ctx.position(window.start)
    recorded_end = ctx.position(window.end)  # type: ignore[arg-type]
    ctx.source.log.check_available(start)
    # The recorded end is the limit: the source stops on the same transaction boundary as the first time.
    bounded = WindowState(wid, WINDOW_MINED, window.start, window.end, None, None)  # type: ignore[arg-type]
    events, transactions, rows = report.events, report.transactions, dict(report.rows_by_table)
    end = WindowMiner(ctx, bounded, states, report, bronze_app="remine").mine()
    if end.ordinal != recorded_end.ordinal:
        raise CdcError(f"window {wid} re-mined to {end.describe()}, not to its recorded end "
                       f"{recorded_end.describe()}",
                       "this is a bug in the source plug-in: report it with both positions", permanent=True)
    report.events += events
    report.transactions += transactions
    for table, n in rows.items():
        report.rows_by_table[table] = report.rows_by_table.get(table, 0) + n


def _listed(ids: list[int]) -> str:
    """Window ids as spans.

    >>> _listed([2, 3, 4, 7])
    '2-4, 7'
    """
    spans: list[list[int]] = []
    for i in ids:
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
