"""``cdclake backfill``: one command over the three repair modes, each recorded in the run log.

>>> check_backfill_args("rebuild", "db.t", "id < 5", None, None)
Traceback (most recent call last):
...
cdclake.errors.UsageError: --where only applies to --mode resnapshot, not rebuild
  fix: drop --where
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from cdclake.engine.apply import first_line, is_infrastructure_error
from cdclake.engine.quality import QualityChecks
from cdclake.engine.repair.rebuild import rebuild
from cdclake.engine.repair.remine import remine
from cdclake.engine.repair.resnapshot import resnapshot
from cdclake.engine.snapshot import snapshot
from cdclake.engine.states import PARKED, STREAMING, move, parked_detail, rereads
from cdclake.errors import CdcError, UsageError, command
from cdclake.progress import step as progress_step

if TYPE_CHECKING:
    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport
    from cdclake.engine.states import TableState

MODES = ("resnapshot", "rebuild", "remine")
log = logging.getLogger(__name__)


def run_backfill(ctx: PipelineContext, table: str | None, where: str | None = None, mode: str = "resnapshot",
                 from_window: int | None = None, windows: tuple[int, int] | None = None) -> RunReport:
    """Repairs that run beside mining; each resumes when run again after a kill.

    * ``resnapshot``: re-read ``table`` (the rows matching ``where``) from the source (:mod:`.resnapshot`);
    * ``rebuild``: rebuild ``table``'s target (and type-2 table) from bronze, from its last snapshot
      or from window ``from_window`` (:mod:`.rebuild`);
    * ``remine``: mine the applied ``windows`` (first, last) into bronze again where bronze no longer
      has them (:mod:`.remine`).
    """
    check_backfill_args(mode, table, where, from_window, windows)
    if table is not None and not ctx.config.source.captures(table):
        raise CdcError(f"{table} is not captured by pipeline {ctx.name}",
                       "name a table selected by source.include_tables/exclude_tables ('database.table')",
                       permanent=True)
    state = ctx.control.table_states().get(table) if table is not None and mode == "resnapshot" else None
    if state is not None and state.status == PARKED:
        return _unpark(ctx, table, where)  # type: ignore[arg-type]
    with ctx.runs.run("backfill" if mode == "resnapshot" else f"backfill:{mode}", locked=False) as report:
        if mode == "resnapshot":
            resnapshot(ctx, report, table, where)  # type: ignore[arg-type]
        elif mode == "rebuild":
            rebuild(ctx, report, table, from_window)  # type: ignore[arg-type]
        else:
            remine(ctx, report, *windows)  # type: ignore[misc]
        if mode != "remine":  # remine writes bronze only; only resnapshot takes --where
            QualityChecks(ctx).check_backfill(report, table, where)  # type: ignore[arg-type]
    return report


def reread_marked(ctx: PipelineContext, states: dict[str, TableState]) -> list[str]:
    """Re-read the tables a schema change marked (:data:`~cdclake.engine.history.REREAD`) among
    ``states``: each a backfill of the whole table, resumed if a kill stopped one. One that cannot run
    now (a DDL after the mark is not mined yet) waits for the next mining run. The tables re-read."""
    done = []
    for table, state in sorted(states.items()):
        if state.status == STREAMING and rereads(state):
            progress_step(f"re-read {table}: {state.detail.get('reread_reason')}")
            try:
                run_backfill(ctx, table)
            except CdcError as exc:
                if exc.permanent:
                    _park(ctx, states, table, state, exc.problem)
                else:
                    log.warning("the re-read of %s waits for the next mining run: %s", table, exc.problem)
                continue
            except Exception as exc:  # the re-read of this table failed: it stops alone, the others go on
                if is_infrastructure_error(exc):
                    raise
                _park(ctx, states, table, state, first_line(exc))
                continue
            done.append(table)
    return done


def _park(ctx: PipelineContext, states: dict[str, TableState], table: str, state: TableState, why: str) -> None:
    """Park ``table`` after its re-read failed (``states`` updated, so the run ends saying so)."""
    log.error("the re-read of %s failed; it is parked: %s", table, why)
    at = str(state.detail.get("reread_at") or state.position)
    parked = move(table, state, PARKED, state.position, state.ordinal, state.window_id, {
        **state.detail, **parked_detail(table, at, f"its re-read after {state.detail.get('reread_reason')} failed: "
                                                   f"{why}")})
    ctx.control.set_tables([parked], "")
    states[table] = parked


def _unpark(ctx: PipelineContext, table: str, where: str | None) -> RunReport:
    """A parked table's schema history stops where its capture did: it comes back by a snapshot of its
    own (schema and rows at the log end now), then streams from there with the others."""
    if where:
        raise UsageError(f"{table} is parked, so it is re-read whole, not a --where range",
                         f"drop --where: {command('backfill', '--table', table)}")
    with ctx.runs.run("backfill") as report:
        snapshot(ctx, report, re.escape(table))
    return report


def check_backfill_args(mode: str, table: str | None, where: str | None, from_window: int | None,
                        windows: tuple[int, int] | None) -> None:
    """Each backfill mode takes its own options: name the one given in vain and what to do instead."""
    wrong = None
    if mode not in MODES:
        wrong = (f"unknown backfill mode {mode!r}", "use resnapshot, rebuild or remine")
    elif mode in ("resnapshot", "rebuild") and not table:
        wrong = (f"backfill --mode {mode} needs --table", "name the table, 'database.table'")
    elif mode != "resnapshot" and where:
        wrong = (f"--where only applies to --mode resnapshot, not {mode}", "drop --where")
    elif mode != "rebuild" and from_window is not None:
        wrong = (f"--from-window only applies to --mode rebuild, not {mode}", "drop --from-window")
    elif mode == "remine" and (windows is None or table):
        wrong = ("backfill --mode remine re-mines whole windows (every table): it needs --window and no --table",
                 "give --window N or --window FIRST-LAST (the window ids of 'cdclake status' / the run log)")
    elif mode != "remine" and windows is not None:
        wrong = (f"--window only applies to --mode remine, not {mode}", "drop --window")
    if wrong:
        raise UsageError(*wrong)
