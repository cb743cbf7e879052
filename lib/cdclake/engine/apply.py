"""Apply a window from bronze to the target tables: MERGE in sequence order, cut at barriers.

Per table, the window's changes are cut at *barriers* — its DDL and truncates, in log order — and
each segment is MERGEd with the schema valid there (:mod:`.target.merge` holds the apply rules). Every data
commit carries a Delta idempotency id (pipeline/table, window, step), and every barrier done records
itself on the table, so a re-run after a kill skips what already committed.
"""

from __future__ import annotations

import json
import logging
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdclake.engine.control import WindowState
from cdclake.engine.events import META_SEQ, SEQ_SPAN
from cdclake.engine.faults import crash_point
from cdclake.engine.history import CREATED, REREAD, HistoryEntry, before_window, latest_per_table, window_ddl
from cdclake.engine.history import PARKED as HISTORY_PARKED  # a schema-history entry's kind, not a state
from cdclake.engine.lake import commit_tag, delta_ref, is_delta_table, sql_str
from cdclake.engine.names import UnstorableNames
from cdclake.engine.states import DROPPED, PARKED, PARKED_DETAIL, STREAMING, TableState, move, parked_detail
from cdclake.engine.target.changes import is_undecodable_error
from cdclake.engine.target.marks import applied_marker, set_marker
from cdclake.errors import CdcError, command, table_regex
from cdclake.hadoopfs import hadoop_delete, hadoop_read_text, hadoop_write_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport
    from cdclake.engine.target.changes import ParsedChanges
    from cdclake.schema import TableSchema
    from cdclake.spi import Position

MAX_STEPS_PER_WINDOW = 1000  # idempotency version = window * 1000 + step
log = logging.getLogger(__name__)


@dataclass
class RenameStep:
    """A table waiting at its part of the rename statement at ``seq`` (its ``entry`` there)."""

    table: str
    path: str
    entry: HistoryEntry
    seq: int


class SchemaChangeRefused(Exception):
    """A schema change the target table could not take (the table is parked at ``position``)."""

    def __init__(self, position: str, reason: str) -> None:
        super().__init__(reason)
        self.position, self.reason = position, reason


def rename_seqs(ddl: list[HistoryEntry]) -> set[int]:
    """The sequences of the window's statements that rename tables: there the tables a statement names
    trade their rows all at once (:meth:`WindowApplier.apply_window` brings each of them to the statement
    first), so swaps and cycles through a spare name keep every row.

    >>> e = HistoryEntry(9, "db.a", 50, "p", "RENAME TABLE z TO a", "ddl", None, "db.z", {}, 2)
    >>> rename_seqs([e])
    {50}
    """
    return {e.seq for e in ddl if e.renamed_from}


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


def states_after(states: dict[str, TableState], ddl: list[HistoryEntry], end: Position, window_id: int,
                 now: float, parked: dict[str, tuple[str, str]] | None = None,
                 reread_auto: bool = True) -> dict[str, TableState]:
    """Every table's state once window ``window_id`` is applied: at the window's end; created tables
    streaming, dropped ones dropped, a renamed table's old name dropped where it stood; parked ones
    (by a ``parked`` entry, or in ``parked``: table -> (position, reason) of a change the apply could
    not make) parked where they stopped; one whose rows must be read again marked for the re-read after
    the run, or parked for an operator's backfill (``reread_auto`` false: ``schema_changes.reread: manual``).
    Each move is one :data:`~.states.TRANSITIONS` lists (:func:`~.states.move`)."""
    as_of = {"as_of": now}
    at, ordinal = end.to_dict(), end.ordinal
    own = {(e.table, e.seq) for e in ddl}  # a table renamed away has its own entry (dropped, or another's rows)
    out = {t: move(t, s, s.status, at, ordinal, window_id, {**s.detail, **as_of}) for t, s in states.items()}
    for e in ddl:
        old = out.get(e.table)
        detail = {k: v for k, v in (old.detail if old else {}).items() if k not in PARKED_DETAIL}
        if e.kind == HISTORY_PARKED or (e.kind == REREAD and not reread_auto):
            out[e.table] = move(e.table, old, PARKED, at, ordinal, window_id,
                                {**detail, **as_of, **parked_detail(e.table, e.position, (e.reason or "") + (
                                    " (schema_changes.reread: manual)" if e.kind == REREAD else ""))})
            continue
        if e.kind == REREAD:  # streams on; the rows before the change are read again after the run
            if old is not None:
                out[e.table] = move(e.table, old, old.status, old.position, old.ordinal, window_id,
                                    {**old.detail, "reread_at": e.position, "reread_seq": str(e.seq),
                                     "reread_reason": e.reason})
            continue
        out[e.table] = move(e.table, old, DROPPED if e.schema is None else STREAMING, at, ordinal, window_id,
                            {**detail, **as_of})
        if e.renamed_from and e.renamed_from in out and (e.renamed_from, e.seq) not in own:
            prev = out[e.renamed_from]
            out[e.renamed_from] = move(prev.table, prev, DROPPED, prev.position, prev.ordinal, window_id,
                                       prev.detail)
    for table, (position, reason) in (parked or {}).items():
        prev = out.get(table)
        if prev is not None:
            out[table] = move(table, prev, PARKED, prev.position, prev.ordinal, window_id,
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
            partial = change & self.targets.changes.may_be_partial(F.col("after"))
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
            renames = rename_seqs(ddl)
            paused: dict[str, tuple[Iterator[RenameStep], RenameStep]] = {}

            def advance(table: str, steps: Iterator[RenameStep]) -> None:
                """Run ``table``'s steps up to its next part in a rename statement (or to its end)."""
                try:
                    with commit_tag(self.spark, window=wid):  # what a rebuild looks for in the target's history
                        paused[table] = (steps, next(steps))
                except StopIteration:
                    pass
                except SchemaChangeRefused as exc:  # only this table stops; the others are applied
                    log.error("window %s: %s is parked: %s", wid, table, exc.reason)
                    parked[table] = (exc.position, exc.reason)

            for table in sorted(set(counts) | {e.table for e in ddl}):
                advance(table, self.table_steps(window, table, bronze, truncates.get(table, []),
                                                [e for e in ddl if e.table == table], before.get(table),
                                                states.get(table), report.resumed, renames,
                                                stretches=stretches.get(table, SegmentRows())))
            # Every table a rename statement names waits there until all of them have their changes before it;
            # then their rows trade places at once (read as of that instant), and each goes on.
            while paused:
                at = min(step.seq for _, step in paused.values())
                group = {t: p for t, p in paused.items() if p[1].seq == at}
                versions = self._versions_before_rename(wid, at, [step for _, step in group.values()])
                for table, (steps, step) in group.items():
                    del paused[table]
                    try:
                        with commit_tag(self.spark, window=wid):
                            self._refused_parks(step.entry, lambda s=step, v=versions: self._rename_step(s, v))
                    except SchemaChangeRefused as exc:
                        log.error("window %s: %s is parked: %s", wid, table, exc.reason)
                        parked[table] = (exc.position, exc.reason)
                        continue
                    advance(table, steps)
                hadoop_delete(self.spark, self._rename_versions_file(wid, at))  # every table is past the statement
            if not report.rows_by_table:
                report.rows_by_table = counts
            return states_after(states, ddl, end, wid, time.time(), parked,
                                reread_auto=self.ctx.config.schema_changes.reread == "auto")
        finally:
            bronze.unpersist()

    def apply_table(self, window: WindowState, table: str, bronze: DataFrame, truncates: list[int],
                    ddl: list[HistoryEntry], start_entry: HistoryEntry | None, state: TableState | None,
                    resumed: bool, path: str | None = None, app_id: str | None = None) -> None:
        """Apply one table's changes of ``window`` alone (a rebuild's staging copy at ``path``, with its
        commit ids ``app_id``): a rename into it takes the old name's rows as its target holds them now."""
        renames = rename_seqs(ddl)
        for step in self.table_steps(window, table, bronze, truncates, ddl, start_entry, state, resumed, renames,
                                     path=path, app_id=app_id):
            origin = step.entry.renamed_from
            origin_path = self.ctx.layout.target(origin) if origin else None
            version = self.targets.bulk.version(origin_path) if origin_path else None
            self._rename_step(step, {origin: version} if origin else {})

    def table_steps(
        self,
        window: WindowState,
        table: str,
        bronze: DataFrame,
        truncates: list[int],
        ddl: list[HistoryEntry],
        start_entry: HistoryEntry | None,
        state: TableState | None,
        resumed: bool,
        renames: set[int],
        path: str | None = None,
        app_id: str | None = None,
        stretches: SegmentRows | None = None,
    ) -> Iterator[RenameStep]:
        """Apply ``table``'s changes of ``window`` from ``bronze``, segment by segment between barriers,
        pausing before its part of each rename statement (at a sequence in ``renames``): the caller does that
        part (:meth:`_rename_step`) and resumes it.

        ``start_entry``: the table's schema entry at the window's start; ``path``/``app_id``: another table to
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
        marker = applied_marker(self.spark, path) if resumable else None
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
                    self.targets.bulk.truncate(path, seq, app_id, wid * MAX_STEPS_PER_WINDOW + step)
                    crash_point("truncate")
            elif not done:
                assert entry is not None and seq is not None
                if is_delta_table(self.spark, path):
                    # the rows before it are in: a run killed half-way through the change (which may take
                    # several commits) resumes with the change, never with those rows in the old shape
                    set_marker(self.spark, path, wid, step - 1)
                if seq in renames:
                    yield RenameStep(table, path, entry, seq)
                else:
                    self._refused_parks(entry, lambda e=entry, q=seq: self.apply_ddl(path, e, q, resumed))
                crash_point("ddl")
                if is_delta_table(self.spark, path):
                    set_marker(self.spark, path, wid, step)
            if kind == "ddl":
                assert entry is not None
                schema = entry.schema
            lo = seq

    @staticmethod
    def _refused_parks(entry: HistoryEntry, change: Callable[[], None]) -> None:
        """Make a schema change; any error doing it parks the table (with the error's words) rather than
        stopping the pipeline: the change is the table's own, the others' windows go on."""
        try:
            change()
        except UnstorableNames as exc:  # names no Delta table can hold side by side: this table only
            raise SchemaChangeRefused(entry.position, exc.problem) from exc
        except (CdcError, OSError):
            raise  # cdclake's own problem and fix, or storage gone: a retry, not a park
        except Exception as exc:
            if is_infrastructure_error(exc):
                raise  # the JVM gone, a failed job or I/O (a lost executor, storage): a retry finishes the change
            first = first_line(exc)
            raise SchemaChangeRefused(entry.position, f"the lake could not take the change {entry.ddl[:300]!r}: "
                                                      f"{first}") from exc

    def _rename_versions_file(self, wid: int, seq: int) -> str:
        return f"{self.ctx.layout.control}/renames/{wid}-{seq}.json"

    def _versions_before_rename(self, wid: int, seq: int, steps: list[RenameStep]) -> dict[str, int | None]:
        """The Delta version of each table a rename statement takes rows from, as it stood before the statement:
        kept in a file before any of the statement's steps, so that a run killed half-way reads the same ones."""
        path = self._rename_versions_file(wid, seq)
        kept = hadoop_read_text(self.spark, path)
        if kept is not None:
            return dict(json.loads(kept))
        origins = {s.entry.renamed_from for s in steps if s.entry.renamed_from}
        versions = {o: self.targets.bulk.version(self.ctx.layout.target(o)) for o in sorted(origins)}
        hadoop_write_text(self.spark, path, json.dumps(versions))
        return versions

    def _rename_step(self, step: RenameStep, versions: dict[str, int | None]) -> None:
        """A table's part in a rename statement: renamed away, it empties (its rows went with its name); renamed
        onto, it holds what the old name held before the statement (``versions``), in the new shape. Done
        again from the start after a kill (the version read does not move)."""
        entry, path, seq = step.entry, step.path, step.seq
        targets = self.targets
        if entry.schema is None or entry.renamed_from is None:
            self.apply_ddl(path, entry, seq)  # renamed away (it empties) or parked (it keeps its rows)
            return
        if is_delta_table(self.spark, path):
            targets.type2.close(path, seq)
        targets.shapes.create(path, entry.schema, replace=True)
        origin = entry.renamed_from
        version = versions.get(origin)
        if version is not None:
            targets.bulk.insert_version(self.ctx.layout.target(origin), version, path)

    def _merge_segment(self, table: str, path: str, segment: DataFrame, schema: TableSchema, app_id: str,
                       version: int, known: tuple[int, bool] | None) -> None:
        """MERGE one segment; ``known``: its (upper-bound) row count and whether an image may be partial,
        from the window's pass over bronze (then no job counts it first)."""
        if known is not None and known[0] == 0:
            return
        keys = self.ctx.key_columns(schema)
        parsed = self.targets.changes.parse(segment, schema, keys, measure=known is None,
                                            partial=None if known is None else known[1])
        try:
            if parsed.rows == 0:
                return
            if parsed.undecodable:
                self._reject_undecodable(table, parsed, schema, version)
            if not is_delta_table(self.spark, path):
                self.targets.shapes.create(path, schema)
            try:
                self.targets.merge.changes(path, schema, keys, parsed, app_id, version)
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
        bad = self.targets.changes.undecodable(parsed, schema, ctx.key_columns(schema)).persist()
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

    def apply_ddl(self, path: str, entry: HistoryEntry, seq: int, resumed: bool = True) -> None:
        """Bring the target at ``path`` to ``entry``'s schema (``resumed``: an earlier run may have done part
        of it). Renames are done by :meth:`_rename_step`."""
        spark = self.spark
        if entry.kind in (HISTORY_PARKED, REREAD):
            return  # marks for the table's state: parked until re-snapshotted / re-read after the run
        if entry.schema is None:  # dropped: the mirror empties, history stays in Delta time travel
            if is_delta_table(spark, path):
                self.targets.type2.close(path, seq)
                spark.sql(f"DELETE FROM {delta_ref(path)} WHERE `{META_SEQ}` < {seq}")
            return
        self.targets.shapes.evolve(path, entry.schema, entry.column_renames, seq, resumed)
        if entry.kind == CREATED:  # made anew (after a drop, or replacing a table): it starts empty
            spark.sql(f"DELETE FROM {delta_ref(path)} WHERE `{META_SEQ}` < {seq}")


def first_line(exc: Exception) -> str:
    """The first line of what an error says (a JVM error's own message, not py4j's "error calling o12.save")."""
    text = str(exc).strip()
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            text = str(java.toString()).strip()
        except Exception:  # the JVM may be gone: py4j's words then
            pass
    return text.splitlines()[0][:500] if text else type(exc).__name__


def is_infrastructure_error(exc: Exception) -> bool:
    """An error of the machinery (the JVM gone, a failed Spark job, I/O), not a refusal of the change itself."""
    from py4j.protocol import Py4JError, Py4JJavaError

    if isinstance(exc, OSError) or (isinstance(exc, Py4JError) and not isinstance(exc, Py4JJavaError)):
        return True
    name = exc.java_exception.getClass().getName() if isinstance(exc, Py4JJavaError) else ""
    return name == "org.apache.spark.SparkException" or name.startswith("java.io.")


__all__ = ["MAX_STEPS_PER_WINDOW", "RenameStep", "SchemaChangeRefused", "WindowApplier", "barriers", "first_line",
           "is_infrastructure_error", "rename_seqs", "states_after"]
