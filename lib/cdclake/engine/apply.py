"""Apply a window from bronze to the target tables: MERGE in sequence order, cut at barriers.

Per table, the window's changes are cut at *barriers* — its DDL and truncates, in log order — and
each segment is MERGEd with the schema valid there (:mod:`.target` holds the apply rules). Every data
commit carries a Delta idempotency id (pipeline/table, window, step), and every barrier done records
itself on the table, so a re-run after a kill skips what already committed.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdclake.engine.control import TABLE_DROPPED, TABLE_PARKED, TABLE_STREAMING, TableState, WindowState
from cdclake.engine.events import SEQ_SPAN
from cdclake.engine.faults import crash_point
from cdclake.engine.history import PARKED, REREAD, HistoryEntry, before_window, latest_per_table, window_ddl
from cdclake.engine.lake import commit_tag, is_delta_table, sql_str
from cdclake.engine.names import UnstorableNames
from cdclake.engine.target import is_undecodable_error
from cdclake.errors import CdcError, command, table_regex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport
    from cdclake.engine.target import ParsedChanges
    from cdclake.schema import TableSchema
    from cdclake.spi import Position

MAX_STEPS_PER_WINDOW = 1000  # idempotency version = window * 1000 + step
log = logging.getLogger(__name__)


def _refusals() -> tuple[type[Exception], ...]:
    """The errors by which Delta refuses a change (pyspark loads only once one happens)."""
    from pyspark.errors import AnalysisException, IllegalArgumentException, UnsupportedOperationException

    return (AnalysisException, IllegalArgumentException, UnsupportedOperationException)



class SchemaChangeRefused(Exception):
    """A schema change the target table could not take (the table is parked at ``position``)."""

    def __init__(self, position: str, reason: str) -> None:
        super().__init__(reason)
        self.position, self.reason = position, reason


def apply_order(tables: set[str], ddl: list[HistoryEntry]) -> list[str]:
    """Tables in name order, except that a renamed table's old name comes before its new one: the
    old table's changes up to the rename must be in its target when the new table copies the rows.

    >>> e = HistoryEntry(9, "db.a", 50, "p", "RENAME TABLE z TO a", "ddl", None, "db.z", {}, 2)
    >>> apply_order({"db.a", "db.b", "db.z"}, [e])
    ['db.b', 'db.z', 'db.a']
    """
    from graphlib import TopologicalSorter

    graph: dict[str, set[str]] = {t: set() for t in sorted(tables)}
    for e in ddl:
        if e.renamed_from and e.renamed_from in tables and e.table in tables:
            graph[e.table].add(e.renamed_from)
    sorter = TopologicalSorter(graph)
    sorter.prepare()
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order.extend(ready)
        sorter.done(*ready)
    return order


def barriers(truncates: list[int], ddl: list[HistoryEntry], low: int) -> list[tuple[int, str, HistoryEntry | None]]:
    """A table's barriers at or after sequence ``low``, in log order; a DDL goes before a truncate at
    the same sequence.

    >>> e = HistoryEntry(3, "db.t", 20, "p", "ALTER", "ddl", None, None, {}, 1)
    >>> [(s, k) for s, k, _ in barriers([20, 5], [e], 10)]
    [(20, 'ddl'), (20, 'truncate')]
    """
    out: list[tuple[int, str, HistoryEntry | None]] = [(s, "truncate", None) for s in truncates if s >= low]
    out += [(e.seq, "ddl", e) for e in ddl if e.seq >= low]
    out.sort(key=lambda b: (b[0], 0 if b[1] == "ddl" else 1))
    return out


@dataclass
class SegmentRows:
    """A table's change rows of a window per stretch between its DDL entries (stretch ``i``: after ``i``
    of ``ddl_seqs``), counted in the window's one pass over bronze, with whether an after image there
    may list unavailable columns. A stretch may also hold rows at or below the table's position, or be
    cut by a truncate: counts are an upper bound, so a zero is sure."""

    ddl_seqs: list[int] = field(default_factory=list)
    rows: dict[int, int] = field(default_factory=dict)
    partial: dict[int, bool] = field(default_factory=dict)

    def after(self, lo: int) -> tuple[int, bool]:
        """``(rows, partial)`` of the segment that starts after sequence ``lo``.

        >>> s = SegmentRows([20, 30], {0: 2, 2: 1}, {2: True})
        >>> s.after(9), s.after(20), s.after(30)
        ((2, False), (0, False), (1, True))
        """
        i = bisect_right(self.ddl_seqs, lo)
        return self.rows.get(i, 0), self.partial.get(i, False)


def ddl_seqs_by_table(ddl: list[HistoryEntry]) -> dict[str, list[int]]:
    """Each table's DDL sequences in ``ddl``, sorted."""
    seqs: dict[str, list[int]] = {}
    for e in ddl:
        seqs.setdefault(e.table, []).append(e.seq)
    return {t: sorted(v) for t, v in seqs.items()}


def stretch_expr(seqs: dict[str, list[int]]) -> str:
    """SQL for a bronze row's stretch index (:class:`SegmentRows`): how many of its table's DDL entries
    in the window (``seqs``: :func:`ddl_seqs_by_table`) come before it.

    >>> stretch_expr({"db.t": [20]})
    "CASE source_table WHEN 'db.t' THEN CASE WHEN seq <= 20 THEN 0 ELSE 1 END ELSE 0 END"
    """
    if not seqs:
        return "0"
    branches = []
    for table, ordered in sorted(seqs.items()):
        inner = " ".join(f"WHEN seq <= {v} THEN {i}" for i, v in enumerate(ordered))
        branches.append(f"WHEN '{sql_str(table)}' THEN CASE {inner} ELSE {len(ordered)} END")
    return f"CASE source_table {' '.join(branches)} ELSE 0 END"


def parked_detail(table: str, position: str, reason: str) -> dict[str, str]:
    """What ``status``, the run report and the run's error say of a parked table.

    >>> parked_detail("db.t", "bin.000001:99", "x")["remedy"].split(" (")[0]
    'cdclake backfill --table db.t'
    """
    # no backticks: ``cdclake status`` prints it as the command itself (the command line adds --config)
    return {"parked_at": position, "parked_reason": reason,
            "remedy": f"{command('backfill', '--table', table).strip('`')} (re-snapshots it; the other tables go on "
                      "meanwhile)"}


def states_after(states: dict[str, TableState], ddl: list[HistoryEntry], end: Position, window_id: int,
                 now: float, parked: dict[str, tuple[str, str]] | None = None) -> dict[str, TableState]:
    """Every table's state once window ``window_id`` is applied: at the window's end; created tables
    streaming, dropped ones dropped, a renamed table's old name dropped where it stood; parked ones
    (by a ``parked`` entry, or in ``parked``: table -> (position, reason) of a change the apply could
    not make) parked where they stopped."""
    as_of = {"as_of": now}
    out = {t: TableState(t, s.status, end.to_dict(), end.ordinal, window_id, None, {**s.detail, **as_of})
           for t, s in states.items()}
    for e in ddl:
        old = out.get(e.table)
        detail = {k: v for k, v in (old.detail if old else {}).items() if k not in ("parked_at", "parked_reason",
                                                                                      "remedy")}
        if e.kind == PARKED:
            out[e.table] = TableState(e.table, TABLE_PARKED, end.to_dict(), end.ordinal, window_id, None,
                                      {**detail, **as_of, **parked_detail(e.table, e.position, e.reason or "")})
            continue
        if e.kind == REREAD:  # streams on; the rows before the change are read again after the run
            if old is not None:
                out[e.table] = TableState(e.table, old.status, old.position, old.ordinal, window_id, None,
                                          {**old.detail, "reread_at": e.position, "reread_seq": str(e.seq),
                                           "reread_reason": e.reason})
            continue
        out[e.table] = TableState(e.table, TABLE_DROPPED if e.schema is None else TABLE_STREAMING, end.to_dict(),
                                  end.ordinal, window_id, None, {**detail, **as_of})
        if e.renamed_from and e.renamed_from in out:
            prev = out[e.renamed_from]
            out[e.renamed_from] = TableState(prev.table, TABLE_DROPPED, prev.position, prev.ordinal, window_id,
                                             None, prev.detail)
    for table, (position, reason) in (parked or {}).items():
        prev = out.get(table)
        if prev is not None:
            out[table] = TableState(table, TABLE_PARKED, prev.position, prev.ordinal, window_id, None,
                                    {**prev.detail, **parked_detail(table, position, reason)})
    return out


class WindowApplier:
    """Applies bronze windows to target tables (or, for a rebuild, to a staging copy)."""

    def __init__(self, ctx: PipelineContext) -> None:
        self.ctx = ctx
        self.spark = ctx.spark
        self.targets = ctx.targets

    def apply_window(self, window: WindowState, end: Position, states: dict[str, TableState],
                     report: RunReport, rows_known_none: bool = False,
                     rows_known: dict[str, int] | None = None) -> dict[str, TableState]:
        """Apply window ``window`` (in bronze already) to every table it touches; the tables' new states.
        ``rows_known_none``: the window's bronze holds no change rows (its marker says so), so no pass
        over it is made; its DDL is still applied. ``rows_known``: change rows per table, from a marker
        that says the window has no truncate and no partial image: with no DDL in the window either, no
        pass over bronze is made before the MERGEs."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        wid = window.window_id
        entries = self.ctx.control.history_through_window(wid)
        ddl = window_ddl(entries, wid)
        if rows_known is not None and not ddl:
            rows_known_none = rows_known_none or not any(rows_known.values())
        else:
            rows_known = None
        bronze = self.ctx.bronze.changes(wid)
        if not rows_known_none and (rows_known is None or len(rows_known) > 1):  # read by more than one MERGE
            bronze = bronze.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            before = latest_per_table(before_window(entries, wid))
            truncates: dict[str, list[int]] = {}
            counts: dict[str, int] = {}
            stretches: dict[str, SegmentRows] = {}
            change = F.col("op").isin("c", "u", "d")
            partial = change & self.targets.may_be_partial(F.col("after"))
            seqs = ddl_seqs_by_table(ddl)
            # one pass for every table: counts, truncates, and which stretches between DDL have changes
            per_stretch = bronze.groupBy("source_table", F.expr(stretch_expr(seqs)).alias("stretch")).agg(
                F.count(F.lit(1)).alias("n"), F.count_if(change).alias("changes"),
                F.max(partial).alias("partial"),
                F.collect_list(F.when(F.col("op") == "t", F.col("seq"))).alias("t"))
            for table, n in (rows_known or {}).items():
                counts[table] = n
                stretches[table] = SegmentRows([], {0: n}, {0: False})
            for r in [] if rows_known_none or rows_known is not None else per_stretch.collect():
                table = r.source_table
                counts[table] = counts.get(table, 0) + int(r.n)
                if r.t:
                    truncates.setdefault(table, []).extend(int(seq) for seq in r.t)
                rows = stretches.setdefault(table, SegmentRows(seqs.get(table, [])))
                rows.rows[int(r.stretch)] = int(r.changes)
                rows.partial[int(r.stretch)] = bool(r.partial)
            truncates = {t: sorted(seqs) for t, seqs in truncates.items()}
            parked: dict[str, tuple[str, str]] = {}
            for table in apply_order(set(counts) | {e.table for e in ddl}, ddl):
                renamed_to = {e.seq: e for e in ddl if e.renamed_from == table}
                try:
                    with commit_tag(self.spark, window=wid):  # what a rebuild looks for in the target's history
                        self.apply_table(window, table, bronze, truncates.get(table, []),
                                         [e for e in ddl if e.table == table], before.get(table),
                                         states.get(table), report.resumed, renamed_to,
                                         stretches=stretches.get(table, SegmentRows()))
                except SchemaChangeRefused as exc:  # only this table stops; the others are applied
                    log.error("window %s: %s is parked: %s", wid, table, exc.reason)
                    parked[table] = (exc.position, exc.reason)
            if not report.rows_by_table:
                report.rows_by_table = counts
            return states_after(states, ddl, end, wid, time.time(), parked)
        finally:
            bronze.unpersist()

    def apply_table(
        self,
        window: WindowState,
        table: str,
        bronze: DataFrame,
        truncates: list[int],
        ddl: list[HistoryEntry],
        start_entry: HistoryEntry | None,
        state: TableState | None,
        resumed: bool,
        renamed_to: dict[int, HistoryEntry] | None = None,
        path: str | None = None,
        app_id: str | None = None,
        stretches: SegmentRows | None = None,
    ) -> None:
        """Apply ``table``'s changes of ``window`` from ``bronze``, segment by segment between barriers.

        ``start_entry``: the table's schema entry at the window's start; ``renamed_to``: the new name's
        entry of each rename of ``table`` in this window, by seq; ``path``/``app_id``: another table to
        apply to (a rebuild's staging copy) and its commit ids; ``stretches``: what a pass over bronze
        found of the table's rows (unknown: each segment is counted before its MERGE).
        """
        wid = window.window_id
        path = path or self.ctx.layout.target(table)
        floor = state.ordinal if state else -1
        low = (floor + 1) * SEQ_SPAN  # changes committed at or before the table's position are in already
        steps = barriers(truncates, ddl, low)
        schema = start_entry.schema if start_entry else None
        # Only a resumed window can have barrier steps done already (the marker costs a Delta read).
        resumable = resumed and any(kind == "ddl" for _, kind, _ in steps) and is_delta_table(self.spark, path)
        marker = self.targets.applied_marker(path) if resumable else None
        rows = bronze.where(f"source_table = '{sql_str(table)}' AND op IN ('c', 'u', 'd') AND seq >= {low}")
        step = 0
        lo = low - 1
        app_id = app_id or self.ctx.app_id(table)
        for seq, kind, entry in [*steps, (None, "end", None)]:
            segment = rows.where(f"seq > {lo}" + (f" AND seq < {seq}" if seq is not None else ""))
            step += 1
            # A segment the marker says is done (a resumed run) is not merged again: its MERGE would be skipped by
            # its commit id, but its plan, in the shape before a later change, may not read the target now.
            if schema is not None and not (marker is not None and marker >= (wid, step)):
                self._merge_segment(table, path, segment, schema, app_id, wid * MAX_STEPS_PER_WINDOW + step,
                                    None if stretches is None else stretches.after(lo))
            if kind == "end":
                break
            step += 1
            if step >= MAX_STEPS_PER_WINDOW:
                raise CdcError(f"window {wid} has too many schema changes/truncates for {table}",
                               "mine with a smaller --max-events", permanent=True)
            done = marker is not None and marker >= (wid, step)
            if kind == "truncate":
                if is_delta_table(self.spark, path):
                    self.targets.truncate(path, seq, app_id, wid * MAX_STEPS_PER_WINDOW + step)
                    crash_point("truncate")
            elif not done:
                assert entry is not None and seq is not None
                if is_delta_table(self.spark, path):
                    # the rows before it are in: a run killed half-way through the change (which may take
                    # several commits) resumes with the change, never with those rows in the old shape
                    self.targets.set_marker(path, wid, step - 1)
                moved_to = (renamed_to or {}).get(entry.seq) if entry.schema is None else None
                try:
                    self.apply_ddl(path, entry, seq, moved_to, resumed)
                except (*_refusals(), UnstorableNames) as exc:
                    # Delta refused the change (e.g. a column name it cannot store in this mode): the table
                    # stops here, with Delta's words, rather than the whole pipeline. Other errors (I/O,
                    # a lost executor) fail the run, which a retry finishes.
                    first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
                    raise SchemaChangeRefused(entry.position, f"Delta refused the change {entry.ddl[:300]!r}: "
                                                              f"{first}") from exc
                crash_point("ddl")
                self.targets.set_marker(path, wid, step)
            if kind == "ddl":
                assert entry is not None
                schema = entry.schema
            lo = seq

    def _merge_segment(self, table: str, path: str, segment: DataFrame, schema: TableSchema, app_id: str,
                       version: int, known: tuple[int, bool] | None) -> None:
        """MERGE one segment; ``known``: its (upper-bound) row count and whether an image may be partial,
        from the window's pass over bronze (then no job counts it first)."""
        if known is not None and known[0] == 0:
            return
        keys = self.ctx.key_columns(schema)
        parsed = self.targets.parse_changes(segment, schema, keys, measure=known is None,
                                            partial=None if known is None else known[1])
        try:
            if parsed.rows == 0:
                return
            if parsed.undecodable:
                self._reject_undecodable(table, parsed, schema, version)
            if not is_delta_table(self.spark, path):
                self.targets.create(path, schema)
            try:
                self.targets.merge_changes(path, schema, keys, parsed, app_id, version)
            except Exception as exc:  # the MERGE's source met an image that does not decode: nothing committed
                if not is_undecodable_error(exc):
                    raise
                self._reject_undecodable(table, parsed, schema, version)
                raise
            crash_point("merge")
        finally:
            parsed.release()

    def _reject_undecodable(self, table: str, parsed: ParsedChanges, schema: TableSchema, version: int) -> None:
        """Never merge what does not decode: record it as dead letters and stop the run."""
        ctx = self.ctx
        bad = self.targets.undecodable(parsed, schema, ctx.key_columns(schema)).persist()
        try:
            first = bad.orderBy("seq").select("position").first()
            if first is None:
                return
            ctx.control.dead_letter_write(bad, ctx.app_id(table, "dead"), version)
        finally:
            bad.unpersist()
        raise CdcError(
            f"changes of {table} at {first.position} do not decode with the schema history's schema "
            f"(version for that position); they are recorded in {ctx.layout.dead_letters}",
            "the schema history is out of step with the log (a skipped or misparsed DDL): re-snapshot the "
            f"table with {command('snapshot', '--tables', table_regex(table), '--force')}", permanent=True
        )

    def apply_ddl(self, path: str, entry: HistoryEntry, seq: int, moved_to: HistoryEntry | None = None,
                  resumed: bool = True) -> None:
        """Bring the target at ``path`` to ``entry``'s schema (``moved_to``: for a drop that is a rename,
        the new name's entry; ``resumed``: an earlier run may have done part of it)."""
        ctx, spark = self.ctx, self.spark
        if entry.kind in (PARKED, REREAD):
            return  # marks for the table's state: parked until re-snapshotted / re-read after the run
        if entry.schema is None:  # dropped: the mirror empties, history stays in Delta time travel
            if is_delta_table(spark, path):
                self.targets.close_history(path, seq)
                if moved_to is None:
                    spark.sql(f"DELETE FROM delta.`{path}` WHERE `__seq` < {seq}")
                else:
                    # Renamed away: the rows move now, before a table created under the old name later in
                    # the window empties this target. The new name's step moves again: nothing is left.
                    assert moved_to.schema is not None
                    dest = ctx.layout.target(moved_to.table)
                    if not is_delta_table(spark, dest):
                        self.targets.create(dest, moved_to.schema)
                    self.targets.copy_rows(path, dest, seq, ctx.key_columns(moved_to.schema))
            return
        self.targets.evolve(path, entry.schema, entry.column_renames, seq, resumed)
        if entry.renamed_from:
            old_path = ctx.layout.target(entry.renamed_from)
            if is_delta_table(spark, old_path):
                self.targets.copy_rows(old_path, path, seq, ctx.key_columns(entry.schema))
        elif entry.ddl.lstrip().upper().startswith("CREATE"):
            # A table created again after a drop starts empty.
            spark.sql(f"DELETE FROM delta.`{path}` WHERE `__seq` < {seq}")


__all__ = ["MAX_STEPS_PER_WINDOW", "SchemaChangeRefused", "WindowApplier", "apply_order", "barriers",
           "parked_detail", "states_after"]
