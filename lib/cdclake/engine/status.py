"""``cdclake status``: per table its state, position, rows and lag; the pipeline's lag and last run.

**Lag** is what the source says it committed after the lake's positions and the lake does not hold
yet (:meth:`cdclake.spi.Source.pending_changes`, asked once for every streaming table, never per
table): a table's ``lag_s`` is 0 when no committed change of it lies after its position (the
position is the log end, or only tables that are not captured changed), else the age (now minus
the source commit time) of its oldest committed change not yet applied. The pipeline's ``lag_s`` is
the oldest of them, so it is 0 exactly when the lake holds everything the source committed to the
captured tables. ``distance`` is how far the position is from the log end, in the source's unit
(``distance_unit``); ``pending_since`` is the commit time of the oldest change waiting (UTC).

The source reads its log only up to a bound (``max_events``). A table whose first pending change
lies beyond it gets ``lag_s: null`` and ``lag_at_most_s`` (any change of it waiting committed after
the last one read, so its lag is at most that) with a ``lag_note`` saying so; the pipeline's
``lag_s`` stays exact when some table's oldest change was found (everything unread is newer). A
source that cannot tell (or cannot be reached) gives ``lag_s: null`` and the reason in ``lag_note``:
``status`` never fails because of it.

**Runs**: the pipeline's ``last_run`` (any command) and ``last_mine``; per table the newest run that
changed it. A pipeline is ``stopped`` when its newest mining run failed with an error only an operator can
cure (a data-quality gate, a gap in the source's log, an invalid file...: the run log's ``error_permanent``)
or a table is parked: ``stopped`` then says why, since when, and the fix. A newest mining run that failed
otherwise (the source unreachable, a kill...) is ``failing``: the next run may pass.

The clock is injectable (``clock``, epoch seconds), so tests show a lag growing without sleeping.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from cdclake.engine.lake import is_delta_table, read_delta
from cdclake.engine.lakeview import LakeView
from cdclake.engine.names import renamed_columns
from cdclake.engine.states import PARKED, PARKED_DETAIL, STREAMING
from cdclake.errors import CdcError
from cdclake.spi import PENDING_SCAN_EVENTS, PendingChanges
from cdclake.spi.logrows import KIND_CHANGE, KIND_PIECE

if TYPE_CHECKING:
    from cdclake.engine.context import PipelineContext
    from cdclake.engine.states import TableState
    from cdclake.schema import TableSchema

log = logging.getLogger(__name__)
Clock = Callable[[], float]
CARRIED_LIMIT = 100_000  # open transactions named to the source at most


def table_status(ctx: PipelineContext, clock: Clock = time.time,
                 max_events: int = PENDING_SCAN_EVENTS) -> list[dict[str, Any]]:
    """One dict per table of the pipeline (none before its first run); see :func:`status_report`."""
    return status_report(ctx, clock, max_events)["tables"]


def status_report(ctx: PipelineContext, clock: Clock = time.time, max_events: int = PENDING_SCAN_EVENTS,
                  rows: bool = True) -> dict[str, Any]:
    """``{"pipeline": {...lag of the pipeline}, "tables": [...one dict per table]}`` (``rows=False``:
    no row counts, which cost a Spark job per table)."""
    if not ctx.control.exists():
        return {"pipeline": _pipeline_entry({}, PendingChanges(note="the pipeline has not run yet"), clock()),
                "tables": []}
    states = ctx.control.table_states()
    runs = ctx.control.last_runs(RUNS_READ)
    lags, pipeline = lag_of(ctx, states, clock, max_events)
    pipeline.update(run_state(runs, states))
    schemas = {t: e.schema for t, e in ctx.control.latest_entries().items() if e.schema is not None}
    covered = covered_tables(ctx, [t for t, s in states.items() if s.status == STREAMING])
    out = []
    for table in sorted(states):
        s = states[table]
        path = ctx.layout.target(table)
        count = _target_rows(ctx, path) if rows else None
        out.append({
            "source_table": table,
            "delta_path": path,
            "state": s.status,
            "position": ctx.position(s.position).describe() if s.position else None,
            "position_ordinal": str(s.ordinal),
            "window_id": s.window_id,
            # what identifies a row: primary key, NOT NULL unique key, key_columns, or none (a multiset)
            "row_key": ctx.row_key(schemas[table]).describe() if table in schemas else None,
            # columns whose source name Delta cannot store in this lake: source name -> Delta column (names.py)
            "renamed_columns": _renamed_columns(ctx, schemas.get(table)),
            "rows": count,
            # a parked table: where and why its capture stopped, and the command that brings it back
            "parked": {k: s.detail.get(k) for k in PARKED_DETAIL}
            if s.status == PARKED else None,
            # source objects whose rows land in this table, not in tables of their own (a partitioned table's
            # partitions); None when the source could not be asked
            "covers": covered.get(table, []) if covered is not None else None,
            **lags.get(table, _unknown("the table is not streaming" if s.status != STREAMING
                                       else "the table is not captured by the source configuration")),
            # the newest run that changed the table (among the last RUNS_READ)
            "last_run": next((_run_entry(r) for r in runs if table in (r.rows_by_table or {})), None),
        })
    return {"pipeline": pipeline, "tables": out}


RUNS_READ = 50  # run-log rows status reads (newest first)
# Why a pipeline stopped, by the error's class (any other permanent error: "error").
STOP_REASONS = {"QualityGateError": ("quality_gate", "a data-quality gate failed"),
                "PositionLostError": ("gap", "a gap: the source no longer has the log the position needs"),
                "TablesParkedError": ("parked", "tables are parked")}


def run_state(runs: list[Any], states: Mapping[str, TableState]) -> dict[str, Any]:
    """The pipeline's ``last_run``, ``last_mine`` and, when it needs an operator, ``stopped``; when its newest
    mining run failed but a retry may pass, ``failing`` (see the module docstring).

    >>> from types import SimpleNamespace as Row
    >>> gate = Row(run_id="r2", command="mine", status="failed", window_id=6, started_at=None, ended_at=None,
    ...            error="gate on shop.t\\n  fix: repair the rows", error_kind="QualityGateError", error_permanent=True)
    >>> run_state([gate], {})["stopped"]["reason"], run_state([gate], {})["stopped"]["fix"]
    ('quality_gate', 'repair the rows')
    """
    last_mine = next((r for r in runs if r.command == "mine"), None)
    out: dict[str, Any] = {"last_run": _run_entry(runs[0]) if runs else None,
                           "last_mine": _run_entry(last_mine) if last_mine is not None else None,
                           "stopped": None, "failing": None}
    if last_mine is not None and last_mine.status == "failed":
        entry = out["last_mine"]
        kind, permanent = entry["error_kind"], getattr(last_mine, "error_permanent", None)
        reason, says = STOP_REASONS.get(kind or "", ("error", "an error only an operator can fix"))
        detail = {"reason": reason, "says": says, "since": entry["ended_at"], "run_id": entry["run_id"],
                  "window_id": entry["window_id"], "problem": entry["problem"], "fix": entry["fix"]}
        out["stopped" if permanent else "failing"] = detail
    parked = sorted(t for t, st in states.items() if st.status == PARKED)
    if parked and out["stopped"] is None:
        first = states[parked[0]].detail
        out["stopped"] = {"reason": "parked", "says": STOP_REASONS["TablesParkedError"][1],
                          "since": _iso(states[parked[0]].updated_at), "run_id": None, "window_id": None,
                          "problem": f"{', '.join(parked)}: {first.get('parked_reason')}",
                          "fix": first.get("remedy")}
    if out["stopped"] is not None:
        out["stopped"]["parked_tables"] = parked
    return out


def _run_entry(run: Any) -> dict[str, Any]:
    """A run-log row as ``status`` shows it; a failed run's error split into problem and fix."""
    problem, _, fix = (run.error or "").partition("\n  fix: ")
    return {"run_id": run.run_id, "command": run.command, "status": run.status, "window_id": run.window_id,
            "started_at": _iso(run.started_at), "ended_at": _iso(run.ended_at),
            "error_kind": getattr(run, "error_kind", None), "problem": problem or None, "fix": fix or None}


def covered_tables(ctx: PipelineContext, tables: list[str]) -> dict[str, list[str]] | None:
    """Per streaming table, the source objects whose rows it holds (:meth:`cdclake.spi.Source.covered_tables`);
    None when the source cannot be asked now (``status`` shows what it can)."""
    if not tables:
        return {}
    try:
        return {t: list(names) for t, names in ctx.source.covered_tables(sorted(tables)).items()}
    except Exception:  # the source unreachable: the lag says why
        log.warning("could not ask the source which objects the tables cover", exc_info=True)
        return None


def lag_of(ctx: PipelineContext, states: Mapping[str, TableState], clock: Clock = time.time,
           max_events: int = PENDING_SCAN_EVENTS) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per streaming captured table its lag fields, and the pipeline's (one question to the source)."""
    captures = ctx.config.source.captures
    positions = {t: ctx.position(s.position) for t, s in states.items()
                 if s.status == STREAMING and s.position and captures(t)}
    pending = PendingChanges(note="no table is streaming yet")
    if positions:
        carried = _carried(ctx, set(positions))
        try:
            pending = ctx.source.log.pending_changes(positions, carried, max_events)
        except CdcError as exc:
            pending = PendingChanges(note=exc.problem)
        except Exception as exc:  # status shows what it can; the lag is then unknown, with the reason
            log.warning("could not ask the source what it committed after the positions", exc_info=True)
            pending = PendingChanges(note=f"the source could not be asked: {exc}")
    now = clock()
    tables = {t: _table_entry(t, pending, now) for t in positions}
    return tables, _pipeline_entry(tables, pending, now)


def lag_summary(ctx: PipelineContext, clock: Clock = time.time) -> dict[str, Any]:
    """The pipeline's lag fields plus ``summary``, one line for people (e.g. a failed run's message)."""
    entry = status_report(ctx, clock, rows=False)["pipeline"]
    return {**entry, "summary": describe(entry)}


def describe(entry: Mapping[str, Any]) -> str:
    """One line on a lag entry (a table's or the pipeline's).

    >>> describe({"lag_s": 0.0, "distance": 0, "distance_unit": "bytes"})
    '0 s: the lake holds every committed change of the captured tables'
    >>> describe({"lag_s": 75.5, "pending_since": "2030-01-02T03:04:05Z", "distance": 4096, "distance_unit": "bytes"})
    '75.5 s: the oldest change not applied was committed at 2030-01-02T03:04:05Z (4096 bytes to the log end)'
    >>> describe({"lag_s": None, "lag_at_most_s": 12.0, "lag_note": "the read stopped"})
    'at most 12.0 s (the read stopped)'
    """
    lag, note = entry.get("lag_s"), entry.get("lag_note")
    far = (f" ({entry['distance']} {entry['distance_unit']} to the log end)"
           if entry.get("distance") is not None and entry.get("distance_unit") else "")
    if lag == 0:
        return "0 s: the lake holds every committed change of the captured tables"
    if lag is not None:
        return f"{lag} s: the oldest change not applied was committed at {entry.get('pending_since')}{far}"
    if entry.get("lag_at_most_s") is not None:
        return f"at most {entry['lag_at_most_s']} s{f' ({note})' if note else ''}"
    return f"unknown{f' ({note})' if note else ''}"


def _renamed_columns(ctx: PipelineContext, schema: TableSchema | None) -> dict[str, str] | None:
    """Source name -> Delta name of the columns that land under another name (none: None)."""
    if schema is None:
        return None
    try:
        return renamed_columns(ctx.targets.options.lake_schema(schema)) or None
    except CdcError:  # no Delta names at all (columns differing only by case): the table is parked
        return None


def _target_rows(ctx: PipelineContext, path: str) -> int | None:
    """Rows of the target at ``path`` (live rows with soft deletes), None if it does not exist."""
    soft = ctx.targets.options.soft

    def through_spark() -> int | None:
        if not is_delta_table(ctx.spark, path):
            return None
        df = read_delta(ctx.spark, path)
        return (df.where("NOT `__deleted`") if soft else df).count()

    return ctx.control.read(lambda view: view.rows(path, "__deleted" if soft else None), through_spark)


def _carried(ctx: PipelineContext, tables: set[str]) -> dict[str, frozenset[str]]:
    """Transactions open at the positions whose changes the lake holds in flight: txid -> tables."""
    if ctx.source.log.windows_end_on_transaction_boundaries:
        return {}
    return ctx.control.read(lambda view: _carried_of_view(ctx, view, tables), lambda: _carried_of_spark(ctx, tables))


def _carried_of_spark(ctx: PipelineContext, tables: set[str]) -> dict[str, frozenset[str]]:
    if not is_delta_table(ctx.spark, ctx.layout.inflight):
        return {}
    rows = read_delta(ctx.spark, ctx.layout.inflight).where(
        f"kind IN ('{KIND_CHANGE}', '{KIND_PIECE}') AND source_table IS NOT NULL").select("txid", "source_table")
    if is_delta_table(ctx.spark, ctx.layout.transactions):
        rows = rows.join(read_delta(ctx.spark, ctx.layout.transactions).select("txid"), "txid", "left_anti")
    out: dict[str, set[str]] = {}
    for r in rows.distinct().limit(CARRIED_LIMIT).collect():
        if r.source_table in tables:
            out.setdefault(r.txid, set()).add(r.source_table)
    return {txid: frozenset(ts) for txid, ts in out.items()}


def _carried_of_view(ctx: PipelineContext, view: LakeView, tables: set[str]) -> dict[str, frozenset[str]]:
    """:func:`_carried` through the lake view: the in-flight rows' (txid, table) pairs, less ended transactions."""
    if not view.exists(ctx.layout.inflight):
        return {}
    paths = {"i": ctx.layout.inflight}
    ended = ""
    if view.exists(ctx.layout.transactions):
        paths["e"] = ctx.layout.transactions
        ended = ' AND NOT EXISTS (SELECT 1 FROM e WHERE e."txid" = i."txid")'
    rows = view.query(
        f'SELECT DISTINCT i."txid", i."source_table" FROM i WHERE i."kind" IN (\'{KIND_CHANGE}\', \'{KIND_PIECE}\') '
        f'AND i."source_table" IS NOT NULL{ended} LIMIT {CARRIED_LIMIT}', **paths)
    out: dict[str, set[str]] = {}
    for txid, table in zip(rows.column("txid").to_pylist(), rows.column("source_table").to_pylist(), strict=True):
        if table in tables:
            out.setdefault(txid, set()).add(table)
    return {txid: frozenset(ts) for txid, ts in out.items()}


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _age(now: float, commit: datetime) -> float:
    epoch = commit.replace(tzinfo=timezone.utc).timestamp() if commit.tzinfo is None else commit.timestamp()
    return round(max(now - epoch, 0.0), 3)


def _unknown(note: str | None) -> dict[str, Any]:
    return {"lag_s": None, "lag_at_most_s": None, "pending_since": None, "distance": None, "distance_unit": None,
            "lag_note": note}


def _table_entry(table: str, pending: PendingChanges, now: float) -> dict[str, Any]:
    out = _unknown(None)
    if table in pending.distance:
        out["distance"], out["distance_unit"] = pending.distance[table], pending.distance_unit
    if not pending.known:
        out["lag_note"] = pending.note or "the source cannot tell what it committed after the position"
        return out
    oldest = pending.oldest.get(table)
    if oldest is not None:
        out["lag_s"], out["pending_since"] = _age(now, oldest), _iso(oldest)
    elif pending.complete:
        out["lag_s"] = 0.0
    else:
        if pending.scanned_to is not None:
            out["lag_at_most_s"] = _age(now, pending.scanned_to)
        out["lag_note"] = pending.note or (
            f"no change of the table among the first {pending.scanned} log events read after the lowest position "
            "(the read stops there to stay cheap): a change waiting, if any, committed after "
            f"{_iso(pending.scanned_to) or 'the last one read'}")
    return out


def _pipeline_entry(tables: Mapping[str, Mapping[str, Any]], pending: PendingChanges, now: float) -> dict[str, Any]:
    exact = [e["lag_s"] for e in tables.values() if e["lag_s"] is not None]
    open_ = [e for e in tables.values() if e["lag_s"] is None]
    waiting = [e["pending_since"] for e in tables.values() if e["pending_since"]]
    distances = [e["distance"] for e in tables.values() if e["distance"] is not None]
    out = _unknown(pending.note)
    out.update({
        "as_of": _iso(datetime.fromtimestamp(now, timezone.utc)),
        "log_end": pending.log_end.describe() if pending.log_end is not None else None,
        "caught_up": None,
        "distance": max(distances) if distances else None,
        "distance_unit": pending.distance_unit if distances else None,
        "pending_since": min(waiting) if waiting else None,
        "events_read": pending.scanned,
    })
    if not tables:
        return out
    if any(lag > 0 for lag in exact) or (exact and not open_):
        # Changes not read yet are newer than any found: the oldest found is the pipeline's lag.
        out["lag_s"], out["lag_note"] = max(exact), None
    elif open_ and all(e["lag_at_most_s"] is not None for e in open_):
        out["lag_at_most_s"] = max(e["lag_at_most_s"] for e in open_)
        out["lag_note"] = open_[0]["lag_note"]
    else:
        out["lag_note"] = next((e["lag_note"] for e in open_ if e["lag_note"]), pending.note)
    out["caught_up"] = None if out["lag_s"] is None else out["lag_s"] == 0
    return out
