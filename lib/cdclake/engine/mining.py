"""Mining runs: plan a window, mine it into bronze, apply it, checkpoint.

A mining run handles one window:

1. **plan** — start = the lowest table position, end limit = the log end now (or the resumed plan
   of a window a killed run left unfinished); recorded before anything is read;
2. **mine** — the source hands the window to a :class:`WindowMiner` (the engine's
   :class:`~cdclake.spi.WindowSink`): log records are assembled by transaction on the driver
   (:mod:`.assembler`), log rows in Spark with the in-flight buffer (:mod:`.inflight`); only
   committed work is kept; DDL goes to the schema history; then the window's rows plus a marker
   row holding the end position are committed to bronze in one idempotent Delta write;
3. **apply** — per table, MERGE in sequence order, cut at barriers (:mod:`.apply`);
4. **checkpoint** — the window and every table's position advance in one commit, after the data.

A kill at any instant leaves a window that the next run finishes with the same bounds.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdclake.engine.apply import WindowApplier
from cdclake.engine.assembler import EventRow, TransactionAssembler
from cdclake.engine.control import WINDOW_APPLIED, WINDOW_CANCELLED, WINDOW_PLANNED, WindowState
from cdclake.engine.events import BRONZE_COLUMNS, BRONZE_DDL, SEQ_SPAN
from cdclake.engine.faults import crash_point
from cdclake.engine.history import HistoryEntry, entries_for_ddl, registry_before
from cdclake.engine.inflight import ABANDONED, InflightBuffer, WindowCounts
from cdclake.engine.lake import is_delta_table, local_frame
from cdclake.engine.quality import QualityChecks
from cdclake.engine.states import DROPPED, PARKED, STREAMING, TableState, rereads
from cdclake.errors import CdcError, TablesParkedError, command, table_regex
from cdclake.hadoopfs import hadoop_delete
from cdclake.spi import (
    KIND_CHANGE,
    KIND_DEFERRED,
    LOG_ROWS_COLUMNS,
    CommittedWindow,
    Ddl,
    LogRecord,
    MinedWindow,
    Position,
    RowChange,
    SplitOptions,
    WindowEnd,
    WindowRequest,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport

log = logging.getLogger(__name__)


# ---- planning ---------------------------------------------------------------------------------------


def live_states(states: dict[str, TableState], pipeline: str) -> dict[str, TableState]:
    """The tables a window mines for (streaming, and dropped ones a rename may bring back).

    >>> s = TableState("db.t", STREAMING, {}, 7, None, None)
    >>> list(live_states({"db.t": s}, "p"))
    ['db.t']
    """
    live = {t: s for t, s in states.items() if s.status in (STREAMING, DROPPED)}
    if not any(s.status == STREAMING for s in live.values()):
        raise CdcError(
            "no table of this pipeline has a snapshot yet, so there is no position to mine from",
            f"run 'cdclake snapshot' first (pipeline {pipeline}), or mine with --snapshot-missing",
        )
    return live


def next_window(last: WindowState | None, states: dict[str, TableState], end_limit: dict[str, Any],
                max_events: int | None) -> WindowState:
    """The window after ``last``: from the lowest streaming table's position up to ``end_limit``.

    >>> a = TableState("db.a", STREAMING, {"p": 9}, 9, 3, None)
    >>> b = TableState("db.b", STREAMING, {"p": 5}, 5, 3, None)
    >>> w = next_window(None, {"db.a": a, "db.b": b}, {"p": 20}, None)
    >>> w.window_id, w.start, w.end_limit
    (1, {'p': 5}, {'p': 20})
    """
    lowest = min((s for s in states.values() if s.status == STREAMING), key=lambda s: s.ordinal)
    return WindowState(window_id=(last.window_id + 1) if last else 1, status=WINDOW_PLANNED, start=lowest.position,
                       end_limit=end_limit, max_events=max_events, end=None)


def window_open(window: WindowState | None) -> bool:
    """Whether ``window`` was planned and not finished (a run must finish it first)."""
    return window is not None and window.status not in (WINDOW_APPLIED, WINDOW_CANCELLED)


def nothing_to_mine(ctx: PipelineContext, snapshot_missing: bool = False) -> RunReport | None:
    """The report of a mining run with nothing to do, or None when there may be something.

    Nothing to do: no window is open, every streaming table stands at the source's log end now, none is
    parked or waits for a re-read (and, with ``snapshot_missing``, no captured table lacks a snapshot).
    Such a run writes nothing: no window, no run-log row, no lock. It only reads (the control tables
    through the lake view: no Spark needed where the lake allows it), so it holds no lock either: a run
    that starts meanwhile opens a window, which the next check sees.
    """
    from cdclake.engine.runs import RunReport

    if not ctx.control.exists():
        return None
    window = ctx.control.last_window()
    if window is None or window_open(window):
        return None
    states = ctx.control.table_states()
    streaming = [s for s in states.values() if s.status == STREAMING]
    if not streaming or any(s.status == PARKED for s in states.values()) \
            or any(rereads(s) for s in streaming):
        return None
    ctx.source.preflight()
    ctx.tell_positions(states)
    if snapshot_missing and any(states.get(t) is None or states[t].status != STREAMING
                                for t in ctx.source.captured_tables()):
        return None
    end = ctx.source.log.current_position()
    if any(ctx.position(s.position).ordinal != end.ordinal for s in streaming):
        return None
    report = RunReport("", "mine", window_id=window.window_id, start=end.describe(), end=end.describe())
    report.idle = True
    report.duration_s = time.time() - report.started_at
    return report


# ---- the run ----------------------------------------------------------------------------------------


def mine(ctx: PipelineContext, report: RunReport, max_events: int | None,
         end_limit: dict[str, Any] | None = None) -> dict[str, TableState]:
    """One mining window under the pipeline lock: plan (or resume), mine, apply, check, checkpoint. Every
    table's state afterwards. ``end_limit``: where a new window stops at most (default: the log end now);
    ``report.short_of`` is set when the window ended before its planned end for another reason than
    ``max_events``."""
    ctx.source.preflight()
    quality = QualityChecks(ctx)
    quality.check_config()
    all_states = ctx.control.table_states()
    states = live_states(all_states, ctx.name)
    check_moved_targets(ctx, states)
    ctx.tell_positions(all_states)
    window = ctx.control.last_window()
    if window_open(window):
        report.resumed = True
    else:
        window = ctx.control.plan_window(
            next_window(window, states, end_limit or ctx.source.log.current_position().to_dict(), max_events),
            report.run_id)
        crash_point("planned")
    assert window is not None
    report.window_id = window.window_id
    start = ctx.position(window.start)
    report.start = start.describe()

    marker = ctx.bronze.marker(window.window_id) if report.resumed else None  # a window planned now is not mined
    if marker is None:
        ctx.source.log.check_available(start)
        parked = {t for t, s in all_states.items() if s.status == PARKED}
        miner = WindowMiner(ctx, window, states, report, parked=parked)
        end = miner.mine()
        marker = miner.marker
        no_rows = report.events == 0
    else:  # mined into bronze by a run that stopped before the checkpoint: applied (again) from there
        end = ctx.position(marker["end"])
        no_rows = marker.get("events") == 0
        report.events, report.transactions = int(marker.get("events") or 0), int(marker.get("transactions") or 0)
    report.end = end.describe()
    report.phase("mine")
    new_states = WindowApplier(ctx).apply_window(window, end, states, report, rows_known_none=no_rows,
                                                 rows_known=known_rows(marker))
    report.phase("apply")
    quality.check_window(window.window_id, report)  # a failed gate stops before the checkpoint
    crash_point("applied")
    ctx.control.complete_window(window, end.to_dict(), end.ordinal, new_states, report.run_id)
    report.phase("checkpoint")
    # A source whose windows end on transactions reaches its planned end unless it split the window (a
    # statement, the planner's size): the run goes on to that end.
    if ctx.source.log.windows_end_on_transaction_boundaries and window.max_events is None \
            and end.ordinal < ctx.position(window.end_limit).ordinal:
        report.short_of = window.end_limit
    return {**all_states, **new_states}


def known_rows(marker: dict[str, Any] | None) -> dict[str, int] | None:
    """Change rows per table of a window whose marker says it has no truncate and no partial image: the
    apply needs no pass over bronze to learn them. None when the marker does not say (a log-row window).

    >>> known_rows({"rows_by_table": {"db.t": 3}, "truncates": 0, "partial": False})
    {'db.t': 3}
    >>> known_rows({"rows_by_table": {"db.t": 3}}) is None
    True
    """
    if not marker or marker.get("truncates") != 0 or marker.get("partial") is not False:
        return None
    return {str(t): int(n) for t, n in (marker.get("rows_by_table") or {}).items()}


def check_moved_targets(ctx: PipelineContext, states: dict[str, TableState]) -> None:
    """Refuse to mine into a new, empty target while the rows of a table with an odd name are still in the
    directory a lake made before the naming rule (docs/schema-changes.md, "Names") kept them in."""
    for table, state in sorted(states.items()):
        old = ctx.layout.legacy_target(table)
        if state.status != STREAMING or old is None:
            continue
        new = ctx.layout.target(table)
        if is_delta_table(ctx.spark, old) and not is_delta_table(ctx.spark, new):
            raise CdcError(
                f"the target of {table} is in {old}, where earlier versions kept it; its directory is {new} now "
                "(a name with a character replaced gets a hash of the source name, so no two tables share one)",
                f"re-snapshot the table ({command('snapshot', '--tables', table_regex(table), '--force')}), or "
                f"move {old} (and its __history table, if any) to {new} when no other table of the lake was "
                "mapped to the same directory", permanent=True)


def stop_on_parked(states: dict[str, TableState]) -> None:
    """End a run that did its work with an error while a table is parked, so that the operator (and the
    Airflow task) sees it; the other tables are mined and checkpointed already."""
    parked = {t: s.detail for t, s in sorted(states.items()) if s.status == PARKED}
    if parked:
        raise TablesParkedError(
            "; ".join(f"{t} is parked since {d.get('parked_at')}: {d.get('parked_reason')}" for t, d in parked.items())
            + " (the other tables were mined and checkpointed)",
            "; ".join(str(d.get("remedy")) for d in parked.values()),
        )


# ---- one window into bronze -------------------------------------------------------------------------


class WindowMiner:
    """Mines one window into bronze: the :class:`~cdclake.spi.WindowSink` a source hands it to.

    ``bronze_app`` names the bronze commit's idempotency id (a window mined again has its own).
    """

    def __init__(self, ctx: PipelineContext, window: WindowState, states: dict[str, TableState],
                 report: RunReport, bronze_app: str = "bronze", parked: set[str] | None = None) -> None:
        self.ctx = ctx
        self.spark = ctx.spark
        self.window = window
        self.wid = window.window_id
        self.report = report
        self.bronze_app = bronze_app
        self.staging = ctx.layout.staging(self.wid)
        self.floors = {t: s.ordinal for t, s in states.items()}
        self.history: list[HistoryEntry] = []
        self.parked = parked or set()  # tables whose capture stopped: the source is not asked for them
        self.marker: dict[str, Any] | None = None  # the bronze marker, once committed

    def mine(self) -> Position:
        hadoop_delete(self.spark, self.staging)  # rows of a killed attempt
        registry = registry_before(self.ctx.control.history_through_window(self.wid), self.wid)
        self.next_version = registry.next_version
        schemas = {t: s for t, s in registry.schemas.items() if t not in self.parked}
        request = WindowRequest(
            window_id=self.wid, start=self.ctx.position(self.window.start),
            end_limit=self.ctx.position(self.window.end_limit), schemas=schemas,
            versions=registry.versions, next_schema_version=registry.next_version,
            max_events=self.window.max_events, floors=self.floors, staging=f"{self.staging}/source",
            splits=self._split_options(),
        )
        return self.ctx.source.log.mine_window(self.spark, request, self)

    def _split_options(self) -> SplitOptions:
        m = self.ctx.config.mining
        return SplitOptions(decoder=m.decoder, min_bytes=m.parallel_min_bytes, window_bytes=m.window_bytes,
                            split_bytes=m.split_bytes, target_splits=m.target_splits, max_splits=m.max_splits)

    def _on_ddl(self, ddl: Ddl) -> None:
        self.ctx.columns.check_ddl(ddl, self.ctx.row_key)  # before any row after it is written
        self.history.extend(entries_for_ddl(ddl, self.next_version + len(self.history), self.wid))

    def _record_history(self) -> None:
        entries = [self.ctx.columns.redact(e) for e in self.history]
        self.ctx.control.append_history(entries, (self.ctx.app_id("history"), self.wid))

    # ---- log records, assembled on the driver ------------------------------------------------------

    def records(self, records: Iterable[LogRecord]) -> Position:
        import pyarrow as pa

        ctx, wid = self.ctx, self.wid
        staged = f"{self.staging}/committed"
        arrow_schema = pa.schema([
            ("window_id", pa.int64()), ("source_table", pa.string()), ("op", pa.string()),
            ("seq", pa.decimal128(38, 0)), ("position", pa.string()), ("txid", pa.string()),
            ("commit_ts", pa.timestamp("us")), ("schema_version", pa.int64()),
            ("before", pa.string()), ("after", pa.string()),
        ])

        # The first flush is held: a window of one flush goes to bronze without the staging round trip.
        first: pa.Table | None = None
        flushes = 0

        def write_staged(table: pa.Table) -> None:
            self.spark.createDataFrame(table, schema=BRONZE_DDL).write.mode("append").parquet(staged)

        def stage(rows: list[EventRow]) -> None:
            nonlocal first, flushes
            table = pa.table({
                "window_id": [wid] * len(rows), "source_table": [r.source_table for r in rows],
                "op": [r.op for r in rows], "seq": [Decimal(r.seq) for r in rows],
                "position": [r.position for r in rows], "txid": [r.txid for r in rows],
                "commit_ts": [r.commit_ts for r in rows], "schema_version": [r.schema_version for r in rows],
                "before": [r.before for r in rows], "after": [r.after for r in rows],
            }, schema=arrow_schema)
            flushes += 1
            if flushes == 1:
                first = table
                return
            if first is not None:  # a second flush: both go to staging (at most two flushes held at once)
                write_staged(first)
                first = None
            write_staged(table)

        mining = ctx.config.mining
        assembler = TransactionAssembler(stage, self._on_ddl, mining.flush_rows, mining.spill_rows, self.floors)
        end: Position | None = None
        columns = ctx.columns
        for record in records:
            if isinstance(record, WindowEnd):
                end = record.position
                break
            if columns and isinstance(record, RowChange) and columns.rules(record.table):
                # before the transaction buffer: no raw value of a ruled column reaches any file
                record.before = columns.mask_image(record.table, record.before)
                record.after = columns.mask_image(record.table, record.after)
            assembler.feed(record)
        open_txns = assembler.finish()
        if end is None or open_txns:
            raise CdcError(
                f"mining window {wid} ended inside transaction(s) {open_txns[:5]} or without an end position",
                "this is a bug in the source plug-in: windows must end on a transaction boundary", permanent=True
            )
        crash_point("staged")
        self._record_history()
        crash_point("history")
        stats = assembler.stats
        marker = {"end": end.to_dict(), "events": stats.events, "transactions": stats.transactions,
                  "rolled_back": stats.rolled_back, "rows_by_table": stats.rows_by_table,
                  "truncates": stats.truncates, "partial": stats.partial}
        if first is not None:
            rows = self.spark.createDataFrame(first, schema=BRONZE_DDL)
        else:
            rows = self.spark.read.schema(BRONZE_DDL).parquet(staged) if flushes else None
        ctx.bronze.commit(wid, rows, end, marker, self.bronze_app)
        self.marker = marker
        crash_point("bronze")
        hadoop_delete(self.spark, self.staging)
        self.report.events, self.report.transactions = stats.events, stats.transactions
        self.report.rows_by_table = dict(stats.rows_by_table)
        return end

    # ---- changes a source assembled in Spark tasks (decoded straight into the bronze commit) -------

    def committed(self, window: CommittedWindow) -> Position:
        from pyspark.sql import functions as F

        ctx, wid = self.ctx, self.wid
        for ddl in window.ddl:
            self._on_ddl(ddl)
        crash_point("staged")
        self._record_history()
        crash_point("history")
        rows = None
        if window.rows is not None:  # the column rules apply in the same job: no raw value reaches a file
            as_log_rows = window.rows.withColumn("kind", F.lit(KIND_CHANGE)).withColumn(
                "raw", F.lit(None).cast("string"))
            rows = ctx.columns.mask_log_rows(as_log_rows).select(
                F.lit(wid).cast("bigint").alias("window_id"), *BRONZE_COLUMNS[1:])
        stats = window.stats
        marker = {"end": window.end.to_dict(), **stats}
        ctx.bronze.commit(wid, rows if stats["events"] else None, window.end, marker, self.bronze_app)
        self.marker = marker
        self.report.phase("decode_bronze")  # a lazy read: decoded by this commit
        crash_point("bronze")
        self.report.events = int(stats["events"])
        self.report.transactions = int(stats["transactions"])
        self.report.rows_by_table = dict(stats["rows_by_table"])
        return window.end

    # ---- log rows, assembled in Spark with the in-flight buffer ------------------------------------

    def frame(self, mined: MinedWindow) -> Position:

        ctx, wid, report, spark, staging = self.ctx, self.wid, self.report, self.spark, self.staging
        # Decoding runs once, into a staged file that later steps read back (each only the columns it needs);
        # the same pass counts what kinds of rows the window holds, so steps it needs not are left out.
        report.phase("fetch")
        for ddl in mined.ddl:
            self._on_ddl(ddl)
        buffer = InflightBuffer(spark, ctx.layout, ctx.name)
        buffer.ensure()
        if mined.known_empty and not mined.ddl:
            return self._empty_frame(mined, buffer)
        counts = self._stage_decoded(mined.rows, mined.ddl, f"{staging}/decoded")
        rows = spark.read.parquet(f"{staging}/decoded")
        if counts.deferred and mined.decode_deferred is not None:  # the source's second decoder, on its rows only
            later = self._stage_decoded(mined.decode_deferred(rows), mined.ddl, f"{staging}/decoded_later")
            rows = rows.where(f"kind <> '{KIND_DEFERRED}'").select(*LOG_ROWS_COLUMNS).unionByName(
                spark.read.parquet(f"{staging}/decoded_later").select(*LOG_ROWS_COLUMNS))
            counts = counts.plus(later)
        elif counts.deferred:
            raise CdcError(f"window {wid}: the source left {counts.deferred} rows to a second decoder it does not have",
                           "this is a bug in the source plug-in: set MinedWindow.decode_deferred", permanent=True)
        else:
            rows = rows.select(*LOG_ROWS_COLUMNS)
        report.phase("decode")

        retention = ctx.config.mining.transaction_retention_s
        assembly = buffer.assemble(wid, rows, self.floors, None if retention is None else timedelta(seconds=retention),
                                   counts.max_ts if retention is not None else None, mined.assemble_pieces, counts,
                                   ctx.targets.changes.may_be_partial)
        if assembly.exact:
            committed = assembly.committed.select(*BRONZE_COLUMNS)
            survivors = assembly.survivors
        else:  # rows that did not decode, or partial rollbacks: staged once, checked, then written from the stage
            assembly.committed.write.mode("overwrite").parquet(f"{staging}/committed")
            staged = spark.read.parquet(f"{staging}/committed")
            bad = staged.where("error IS NOT NULL").selectExpr(
                "window_id", "source_table", f"seq - seq % {SEQ_SPAN} AS seq", "position", "op", "error", "raw",
            ).unionByName(assembly.errors.selectExpr(
                "window_id", "source_table",
                f"CAST(ordinal * CAST({SEQ_SPAN} AS DECIMAL(11,0)) AS DECIMAL(38,0)) AS seq",
                "position", "op", "error", "raw"))
            self._stop_on_bad_rows(bad)
            committed = survivors = staged.where("error IS NULL").select(*BRONZE_COLUMNS)
        report.phase("assemble")
        crash_point("staged")
        self._record_history()
        crash_point("history")
        ended = buffer.record(wid, assembly)  # this window's ended transactions by status
        report.phase("inflight")
        crash_point("inflight")

        # Per table: committed changes, truncates, and whether an after image may list unavailable columns.
        by_table = assembly.committed_by_table(survivors)
        rows_by_table = {t: n for t, (n, _, _) in by_table.items() if n}
        open_summary = assembly.open_after()
        abandoned: list[dict[str, Any]] = []
        if ended.get(ABANDONED):
            abandoned = [r.asDict() for r in spark.read.format("delta").load(ctx.layout.transactions).where(
                f"window_id = {wid} AND status = '{ABANDONED}'").select("txid", "first_position", "rows", "tables")
                .limit(20).collect()]
        late = [r.txid for r in assembly.stats["late_commits"].select("txid").limit(20).collect()] \
            if assembly.stats["any_abandoned_before"] else []
        for item in abandoned:
            log.warning("window %s: abandoned transaction %s (first change %s, %s rows, tables %s): its changes "
                        "are NOT applied", wid, item["txid"], item["first_position"], item["rows"], item["tables"])
        for txid in late:
            log.warning("window %s: transaction %s committed after it was abandoned: its changes are lost", wid, txid)
        marker = _frame_marker(mined, rows_by_table, ended, abandoned, late, open_summary,
                               sum(t for _, t, _ in by_table.values()), any(p for _, _, p in by_table.values()))
        ctx.bronze.commit(wid, committed if rows_by_table else None, mined.end, marker, self.bronze_app)
        self.marker = marker
        report.phase("bronze")
        crash_point("bronze")
        assembly.release()
        ctx.source.log.release()
        hadoop_delete(spark, staging)
        report.events, report.transactions = marker["events"], marker["transactions"]
        report.rows_by_table = rows_by_table
        return mined.end

    def _empty_frame(self, mined: MinedWindow, buffer: InflightBuffer) -> Position:
        """A window the log had nothing for (no rows, no DDL): nothing to decode, assemble, check or record. Its
        marker still counts the transactions the in-flight buffer holds open."""
        from cdclake.spi.logrows import LOG_ROWS_DDL

        ctx, wid, spark = self.ctx, self.wid, self.spark
        assembly = buffer.assemble(wid, local_frame(spark, [], LOG_ROWS_DDL), self.floors,
                                   assemble_pieces=mined.assemble_pieces, counts=WindowCounts(),
                                   may_be_partial=ctx.targets.changes.may_be_partial)
        open_summary = assembly.open_after()
        for point in ("staged", "history", "inflight"):  # the steps a window with rows passes
            crash_point(point)
        marker = _frame_marker(mined, {}, {}, [], [], open_summary)
        ctx.bronze.commit(wid, None, mined.end, marker, self.bronze_app)
        self.marker = marker
        self.report.phase("bronze")
        crash_point("bronze")
        assembly.release()
        ctx.source.log.release()
        hadoop_delete(spark, self.staging)
        self.report.events, self.report.transactions, self.report.rows_by_table = 0, 0, {}
        return mined.end

    def _stage_decoded(self, rows: DataFrame, ddl: list[Ddl], path: str) -> WindowCounts:
        """Write decoded log rows (less parked tables' rows, column rules applied) to ``path``; what they hold,
        counted by the same pass."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        seen = Observation(f"cdclake_window_{self.wid}_{uuid.uuid4().hex}")  # a name is used once per session
        self.ctx.columns.mask_log_rows(self._without_parked(rows, ddl)).observe(
            seen, *WindowCounts.metrics(self.ctx.targets.changes.may_be_partial(F.col("after")))
        ).write.mode("overwrite").parquet(path)
        return WindowCounts.of(seen.get)

    def _without_parked(self, rows: DataFrame, ddl_list: list[Ddl]) -> DataFrame:
        """The window's log rows less those of parked tables: all of a table parked before the window,
        and from its parking position on for one parked in it."""
        from cdclake.engine.lake import sql_str

        stop = dict.fromkeys(self.parked, -1)
        for ddl in ddl_list:
            for table in ddl.parked:
                stop[table] = min(stop.get(table, ddl.position.ordinal), ddl.position.ordinal)
        for table, ordinal in stop.items():
            rows = rows.where(f"NOT (source_table <=> '{sql_str(table)}' AND ordinal >= {ordinal})")
        return rows

    def _stop_on_bad_rows(self, errors: DataFrame) -> None:
        """Rows of committed work that did not decode: dead letters, then stop or go on per policy."""
        ctx = self.ctx
        bad = errors.selectExpr(
            "window_id", "source_table", "CAST(seq AS DECIMAL(38,0)) AS seq", "position", "op", "error AS reason",
            "raw AS before", "CAST(NULL AS STRING) AS after", "current_timestamp() AS recorded_at",
        )
        first = bad.orderBy("seq").first()
        if first is None:
            return
        ctx.control.dead_letter_write(bad, ctx.app_id("undecodable"), self.wid)
        if ctx.config.mining.unparsable_rows == "dead_letter" and first.source_table:
            log.warning("window %s: undecodable rows recorded in %s (first at %s: %s)", self.wid,
                        ctx.layout.dead_letters, first.position, first.reason)
            return
        raise CdcError(
            f"a change of {first.source_table or 'the log'} at {first.position} cannot be decoded: {first.reason}; "
            f"it is recorded with the others in {ctx.layout.dead_letters} (statement: {(first.before or '')[:300]})",
            "fix the cause (schema history out of step, unsupported statement) and run again; to record such rows "
            "and go on without them set 'mining.unparsable_rows: dead_letter'", permanent=True
        )


def _frame_marker(mined: MinedWindow, rows_by_table: dict[str, int], ended: dict[str, int], abandoned: list[Any],
                  late: list[str], open_summary: Any, truncates: int = 0, partial: bool = False) -> dict[str, Any]:
    """The bronze marker of a frame window: its end, counts, samples, the transactions left open, and what the
    apply needs to skip its pass over bronze (:func:`known_rows`)."""
    return {
        "end": mined.end.to_dict(), "events": sum(rows_by_table.values()),
        "transactions": ended.get("committed", 0), "rolled_back": ended.get("rolled_back", 0),
        "abandoned": ended.get("abandoned", 0), "abandoned_sample": abandoned, "late_commits": late,
        "open_transactions": int(open_summary.n or 0),
        "oldest_open_ordinal": None if open_summary.oldest is None else str(open_summary.oldest),
        "rows_by_table": rows_by_table, "truncates": truncates, "partial": partial, **mined.stats,
    }
