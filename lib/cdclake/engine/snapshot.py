"""Snapshots: the per-table state machine's first steps (:mod:`.states`), (absent) → ``snapshotting`` →
``streaming`` (or ``parked``, a table Delta refused).

A snapshot asks the source for a low-watermark and the tables' schemas there
(:meth:`~cdclake.spi.SnapshotReader.start`), records them in the schema history, reads each table
(:meth:`~cdclake.spi.SnapshotReader.read`) into its target with the snapshot's sequence, and marks it
``streaming`` at the low-watermark: mining starts there. ``force`` re-snapshots streaming tables too
(the way out after the source lost the log a table's position needs).
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

from cdclake.engine.events import snapshot_seq
from cdclake.engine.history import HistoryEntry
from cdclake.engine.lake import commit_tag, delta_refusals, is_delta_table
from cdclake.engine.mining import window_open
from cdclake.engine.names import UnstorableNames
from cdclake.engine.quality import QualityChecks, gate_error
from cdclake.engine.states import PARKED, SNAPSHOTTING, STREAMING, TableState, move, parked_detail
from cdclake.errors import CdcError, SnapshotDeferredError, TablesParkedError
from cdclake.progress import step as progress_step

if TYPE_CHECKING:
    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport
    from cdclake.schema import TableSchema
    from cdclake.spi import SnapshotStart


log = logging.getLogger(__name__)

# Tables written by a snapshot are recorded streaming at least this often: a snapshot killed half-way
# reads again the tables still ``snapshotting``, at a new position (their targets are replaced whole).
RECORD_WRITTEN_EVERY_S = 60.0


def snapshot(ctx: PipelineContext, report: RunReport, tables_regex: str | None, force: bool = False) -> None:
    """Snapshot the selected tables that have no position yet (with ``force``: streaming ones too)."""
    source, control = ctx.source, ctx.control
    source.preflight()
    quality = QualityChecks(ctx)
    quality.check_config()
    states = control.table_states()
    wanted = [t for t in source.captured_tables() if tables_regex is None or re.fullmatch(tables_regex, t)]
    todo = [t for t in wanted if force or t not in states or states[t].status != STREAMING]
    if not wanted:
        raise CdcError(
            "no table to snapshot: source.include_tables/exclude_tables"
            + (f" and --tables {tables_regex!r}" if tables_regex else "")
            + " select no existing table",
            "check the regexes (anchored, on 'database.table') against the server's tables", permanent=True
        )
    if not todo:
        return  # every selected table is streaming already
    if force and any(t in states and states[t].status == STREAMING for t in todo):
        _cancel_unwritten_window(ctx, report.run_id)
    ctx.tell_positions(states)
    start = source.snapshot.start(todo)
    try:
        _snapshot_tables(ctx, report, start, todo, states, quality)
    finally:
        source.snapshot.end()


def _snapshot_tables(ctx: PipelineContext, report: RunReport, start: SnapshotStart, todo: list[str],
                     states: dict[str, TableState], quality: QualityChecks) -> None:
    source, control = ctx.source, ctx.control
    pos = start.position
    streaming = [s for s in states.values() if s.status == STREAMING and s.table not in todo]
    if streaming and pos.read_from_ordinal < min(s.ordinal for s in streaming):
        # A transaction open at this snapshot began before where the stream stands: its earlier
        # changes to the new tables were read (and left out) by windows already mined.
        stream_at = ctx.position(min(streaming, key=lambda s: s.ordinal).position)
        raise SnapshotDeferredError(
            f"cannot add {', '.join(todo)} now: a transaction open at the snapshot ({pos.describe()}) started "
            f"before the position the other tables stream from ({stream_at.describe()}), "
            "so its earlier changes to the new tables are no longer in any window",
            source.snapshot.deferred_hint(),
        )
    seq = snapshot_seq(pos.ordinal)
    reading = {t: move(t, states.get(t), SNAPSHOTTING, pos.to_dict(), pos.ordinal) for t in todo}
    control.set_tables(list(reading.values()), report.run_id)
    version = control.next_schema_version()
    control.append_history([
        ctx.columns.redact(HistoryEntry(version + i, t, seq, pos.describe(), start.ddl.get(t, ""), "snapshot",
                                        start.schemas[t], None, {}, None))
        for i, t in enumerate(todo)
    ])
    quality_failures: list[Any] = []
    parked: list[TableState] = []  # tables Delta refused (recorded parked: the remedy re-reads them alone)
    written: list[TableState] = []  # streaming from here on; recorded together (each record is a Delta commit)
    recorded_at = time.monotonic()
    try:
        # tables the source holds still for their read (e.g. under a lock) first, each let go once written
        for t in sorted(todo, key=lambda t: t not in start.held):
            progress_step(f"snapshot {t}")  # names the terminal progress bar's step (no-op without one)
            schema = start.schemas[t]
            try:
                report.rows_by_table[t] = _write_target(ctx, t, schema, seq, pos.describe(), replaces=t in states)
            except (*delta_refusals(), UnstorableNames) as exc:  # only this table stops; the others are read
                source.snapshot.end(t)
                reason = f"the snapshot could not be written: {_first_line(exc)}"
                log.error("snapshot: %s is parked: %s", t, reason)
                parked.append(move(t, reading[t], PARKED, pos.to_dict(), pos.ordinal, None,
                                   parked_detail(t, pos.describe(), reason)))
                continue
            source.snapshot.end(t)
            written.append(move(t, reading[t], STREAMING, pos.to_dict(), pos.ordinal, None,
                                {"snapshot_position": pos.describe(), "as_of": time.time(),
                                 "row_key": ctx.row_key(schema).describe()}))
            if time.monotonic() - recorded_at >= RECORD_WRITTEN_EVERY_S:  # a kill reads again at most this much
                control.set_tables(written, report.run_id)
                written, recorded_at = [], time.monotonic()
            if ctx.config.quality.after_snapshot:
                quality_failures += quality.check_table(report.run_id, schema, None, "snapshot")
    except Exception:
        if written or parked:  # the tables written before the error are not read again
            control.set_tables(written + parked, report.run_id)
        raise
    if written or parked:
        control.set_tables(written + parked, report.run_id)
    report.tables = todo
    report.start = report.end = pos.describe()
    if quality_failures:
        raise gate_error(quality_failures, "after the snapshot", ctx.layout.quality, after="snapshot")
    if parked:
        raise TablesParkedError(
            "; ".join(f"{s.table} is parked: {s.detail['parked_reason']}" for s in parked)
            + " (the other tables were snapshotted and stream on)",
            "; ".join(str(s.detail["remedy"]) for s in parked))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def _write_target(ctx: PipelineContext, table: str, schema: TableSchema, seq: int, position: str,
                  replaces: bool) -> int:
    """Read ``table`` from the source into its target; the rows written."""
    path = ctx.layout.target(table)
    try:
        with commit_tag(ctx.spark, snapshot=True, seq=seq):
            if replaces and is_delta_table(ctx.spark, path):
                ctx.targets.type2.close(path, seq)  # the re-snapshot's rows follow
            return ctx.targets.bulk.write_snapshot(path, schema, ctx.read_source(schema), seq, position)
    except CdcError:
        raise
    except Exception as exc:
        explained = ctx.source.snapshot.explain_error(exc)
        if explained is None:
            raise
        raise explained from exc


def _cancel_unwritten_window(ctx: PipelineContext, run_id: str) -> None:
    """A forced re-snapshot moves positions: a window planned from the old ones (a run that failed,
    e.g. on a purged log) must not be resumed. Only one that wrote nothing can be given up."""
    window = ctx.control.last_window()
    if not window_open(window):
        return
    assert window is not None
    if ctx.control.window_written(window.window_id):
        raise CdcError(
            f"window {window.window_id} is partly applied, so the tables cannot be re-snapshotted now",
            "run 'cdclake mine' until it completes, then re-snapshot",
        )
    ctx.control.cancel_window(window, run_id)
