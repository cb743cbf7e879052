"""Snapshot and mining runs: the per-table state machine and the window lifecycle.

Table states: (absent) → ``snapshotting`` → ``streaming`` (→ ``dropped``).

A mining run handles one window:

1. **plan** — start = the lowest table position, end limit = the log end now (or the resumed plan
   of a window a killed run left unfinished); recorded before anything is read;
2. **mine** — the source yields log records; the assembler keeps committed transactions only and
   stages them; DDL goes to the schema history; then the window's rows plus a marker row holding
   the end position are committed to bronze in one idempotent Delta write;
3. **apply** — per table, bronze rows are cut at barriers (DDL, truncate) and MERGEd in sequence
   order; every data commit carries a Delta idempotency id (pipeline/table, window, step) and every
   barrier records itself on the table, so a re-run skips what already committed;
4. **checkpoint** — the window and every table's position advance in one commit, after the data.

A kill at any instant leaves a window that the next run finishes with the same bounds.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdclake.config import PipelineConfig
from cdclake.engine.assembler import EventRow, TransactionAssembler
from cdclake.engine.control import (
    SKIPPED,
    TABLE_DROPPED,
    TABLE_SNAPSHOTTING,
    TABLE_STREAMING,
    WINDOW_APPLIED,
    WINDOW_CANCELLED,
    WINDOW_PLANNED,
    ControlTables,
    HistoryEntry,
    TableState,
    WindowState,
    utcnow,
)
from cdclake.engine.events import (
    BRONZE_COLUMNS,
    BRONZE_DDL,
    SEQ_SPAN,
    WINDOW_MARKER_OP,
    event_seq,
    snapshot_seq,
)
from cdclake.engine.inflight import InflightBuffer
from cdclake.engine.lake import (
    LakeLayout,
    commit_tag,
    ensure_table,
    hadoop_delete,
    hadoop_path_exists,
    is_delta_table,
    read_delta,
    sql_str,
)
from cdclake.engine.lock import pipeline_lock
from cdclake.engine.maintenance import MaintenanceReport, maintain
from cdclake.engine.target import ParsedChanges, TargetTables
from cdclake.errors import CdcError, SnapshotDeferredError, UsageError
from cdclake.progress import step as progress_step
from cdclake.schema import TableSchema
from cdclake.sources.base import Ddl, FrameSource, Position, Source, WindowEnd

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
MAX_STEPS_PER_WINDOW = 1000  # idempotency version = window * 1000 + step
CRASH_ENV = "CDCLAKE_CRASH_AT"  # fault injection for the kill tests: "<point>[:<nth>]"
CRASH_MODE_ENV = "CDCLAKE_CRASH_MODE"  # "kill" (default: SIGKILL) or "raise" (in-process tests)
_crash_hits: dict[str, int] = {}


class SimulatedKill(BaseException):
    """Raised at a crash point in "raise" mode: nothing below catches it, like a kill."""


def crash_point(name: str) -> None:
    """Die like ``kill -9`` when ``$CDCLAKE_CRASH_AT`` names this point (tests prove exactly-once)."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _crash_hits[name] = _crash_hits.get(name, 0) + 1
    if _crash_hits[name] >= int(nth or 1):
        _crash_hits.pop(name, None)
        if os.environ.get(CRASH_MODE_ENV) == "raise":
            raise SimulatedKill(name)
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class RunReport:
    run_id: str
    command: str
    window_id: int | None = None
    start: str | None = None
    end: str | None = None
    events: int = 0
    transactions: int = 0
    rows_by_table: dict[str, int] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    resumed: bool = False
    started_at: float = field(default_factory=time.time)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step (metrics, benchmarks)
    _mark: float = field(default_factory=time.time)

    def phase(self, name: str) -> None:
        """Close the current step under ``name`` (time since the previous call)."""
        now = time.time()
        self.phases[name] = round(self.phases.get(name, 0.0) + now - self._mark, 3)
        self._mark = now


class Pipeline:
    """Runs snapshots and mining windows of one pipeline."""

    def __init__(self, config: PipelineConfig, source: Source, spark: SparkSession) -> None:
        self.config = config
        self.source = source
        self.spark = spark
        self.layout = LakeLayout(config.lake.root, config.pipeline)
        self.control = ControlTables(spark, self.layout)
        self.targets = TargetTables(spark, source.types, config.lake.delete_mode, config.lake.table_properties,
                                    config.lake.history_tables)

    # ---- helpers ---------------------------------------------------------------------------------

    def _key_columns(self, schema: TableSchema) -> list[str]:
        override = self.config.tables.get(schema.qualified_name)
        if override and override.key_columns:
            return override.key_columns
        return schema.key_columns()

    def _app_id(self, table: str) -> str:
        return f"cdclake:{self.config.pipeline}:{table}"

    def _ensure_control(self) -> None:
        if not self.control.exists():
            ensure_table(self.spark, self.layout.bronze, BRONZE_DDL)
            self.control.ensure()

    def _locked_run(self, command: str, body: Callable[[RunReport], None]) -> RunReport:
        """Run ``body`` under the pipeline lock and record it in the run log, failed or not."""
        report = RunReport(uuid.uuid4().hex[:12], command)
        self._ensure_control()
        with pipeline_lock(self.spark, self.layout.lock, report.run_id):
            try:
                body(report)
            except Exception as exc:
                self._log_run(report, "failed", str(exc)[:4000])
                raise
            self._log_run(report, "ok", None)
        return report

    # ---- snapshot --------------------------------------------------------------------------------

    def snapshot(self, tables_regex: str | None = None, force: bool = False) -> RunReport:
        """Snapshot the selected tables that have no position yet; with ``force``, streaming ones too
        (their targets are replaced and their positions move to the new snapshot: the way out after
        the source lost the log a table's position needs)."""
        return self._locked_run("snapshot", lambda report: self._snapshot_locked(report, tables_regex, force))

    def _snapshot_locked(self, report: RunReport, tables_regex: str | None, force: bool = False) -> None:
        self.source.preflight()
        self._check_quality_config()
        states = self.control.table_states()
        wanted = [t for t in self.source.captured_tables() if tables_regex is None or re.fullmatch(tables_regex, t)]
        todo = [t for t in wanted if force or t not in states or states[t].status != TABLE_STREAMING]
        if not wanted:
            raise CdcError(
                "no table to snapshot: source.include_tables/exclude_tables"
                + (f" and --tables {tables_regex!r}" if tables_regex else "")
                + " select no existing table",
                "check the regexes (anchored, on 'database.table') against the server's tables",
            )
        if not todo:
            return  # every selected table is streaming already
        if force and any(t in states and states[t].status == TABLE_STREAMING for t in todo):
            self._cancel_unwritten_window(report.run_id)
        start = self.source.snapshot_start(todo)
        pos = start.position
        streaming = [s for s in states.values() if s.status == TABLE_STREAMING and s.table not in todo]
        if streaming and pos.read_from_ordinal < min(s.ordinal for s in streaming):
            # A transaction open at this snapshot began before where the stream stands: its earlier
            # changes to the new tables were read (and left out) by windows already mined.
            stream_at = self.source.position_from_dict(min(streaming, key=lambda s: s.ordinal).position)
            raise SnapshotDeferredError(
                f"cannot add {', '.join(todo)} now: a transaction open at the snapshot ({pos.describe()}) started "
                f"before the position the other tables stream from ({stream_at.describe()}), "
                "so its earlier changes to the new tables are no longer in any window",
                "run the snapshot again once that transaction has ended (Oracle: GV$TRANSACTION shows it)",
            )
        seq = snapshot_seq(pos.ordinal)
        self.control.set_tables(
            [TableState(t, TABLE_SNAPSHOTTING, pos.to_dict(), pos.ordinal, None, None) for t in todo], report.run_id
        )
        version = self.control.next_schema_version()
        self.control.append_history([
            HistoryEntry(version + i, t, seq, pos.describe(), start.ddl.get(t, ""), "snapshot", start.schemas[t],
                         None, {}, None)
            for i, t in enumerate(todo)
        ])
        quality_failures: list[Any] = []
        for t in todo:
            progress_step(f"snapshot {t}")  # names the terminal progress bar's step (no-op without one)
            schema = start.schemas[t]
            try:
                with commit_tag(self.spark, snapshot=True, seq=seq):
                    if t in states and is_delta_table(self.spark, self.layout.target(t)):
                        self.targets.close_history(self.layout.target(t), seq)  # the re-snapshot's rows follow
                    frame = self.source.snapshot_read(self.spark, schema)
                    self.targets.write_snapshot(self.layout.target(t), schema, frame, seq, pos.describe())
            except CdcError:
                raise
            except Exception as exc:
                explained = self.source.explain_error(exc)
                if explained is None:
                    raise
                raise explained from exc
            self.control.set_tables(
                [TableState(t, TABLE_STREAMING, pos.to_dict(), pos.ordinal, None, None,
                            {"snapshot_position": pos.describe(), "as_of": time.time()})], report.run_id)
            report.rows_by_table[t] = self.spark.read.format("delta").load(self.layout.target(t)).count()
            if self.config.quality.after_snapshot:
                quality_failures += self._check_table_quality(report.run_id, schema, None, "snapshot")
        report.tables = todo
        report.start = report.end = pos.describe()
        if quality_failures:
            from cdclake.engine.quality import gate_error

            raise gate_error(quality_failures, "after the snapshot", self.layout.quality, after="snapshot")

    def _cancel_unwritten_window(self, run_id: str) -> None:
        """A forced re-snapshot moves positions: a window planned from the old ones (a run that failed,
        e.g. on a purged log) must not be resumed. Only one that wrote nothing can be given up."""
        window = self.control.last_window()
        if window is None or window.status in (WINDOW_APPLIED, WINDOW_CANCELLED):
            return
        if self.control.window_written(window.window_id):
            raise CdcError(
                f"window {window.window_id} is partly applied, so the tables cannot be re-snapshotted now",
                "run 'cdclake mine' until it completes, then re-snapshot",
            )
        self.control.cancel_window(window, run_id)

    # ---- mining ----------------------------------------------------------------------------------

    def mine(self, max_events: int | None = None) -> RunReport:
        return self._locked_run("mine", lambda report: self._mine_locked(report, max_events or
                                                                         self.config.mining.max_events))

    def _streaming_states(self) -> dict[str, TableState]:
        states = self.control.table_states()
        live = {t: s for t, s in states.items() if s.status in (TABLE_STREAMING, TABLE_DROPPED)}
        if not any(s.status == TABLE_STREAMING for s in live.values()):
            raise CdcError(
                "no table of this pipeline has a snapshot yet, so there is no position to mine from",
                f"run 'cdclake snapshot --config <file>' first (pipeline {self.config.pipeline})",
            )
        return live

    def _mine_locked(self, report: RunReport, max_events: int | None) -> None:
        self.source.preflight()
        self._check_quality_config()
        states = self._streaming_states()
        window = self.control.last_window()
        if window is not None and window.status not in (WINDOW_APPLIED, WINDOW_CANCELLED):
            report.resumed = True
        else:
            lowest = min((s for s in states.values() if s.status == TABLE_STREAMING), key=lambda s: s.ordinal)
            end_limit = self.source.current_position()
            window = WindowState(
                window_id=(window.window_id + 1) if window else 1,
                status=WINDOW_PLANNED,
                start=lowest.position,
                end_limit=end_limit.to_dict(),
                max_events=max_events,
                end=None,
            )
            self.control.plan_window(window.window_id, window.start, window.end_limit, max_events, report.run_id)
            crash_point("planned")
        report.window_id = window.window_id
        start = self.source.position_from_dict(window.start)
        report.start = start.describe()

        end = self._bronze_window_end(window.window_id)
        if end is None:
            self.source.check_available(start)
            if isinstance(self.source, FrameSource):
                end = self._mine_frame_window(window, start, states, report)
            else:
                end = self._mine_window(window, start, states, report)
        report.end = end.describe()
        report.phase("mine")
        new_states = self._apply_window(window, end, states, report)
        report.phase("apply")
        self._check_window_quality(window.window_id, report)  # a failed gate stops before the checkpoint
        crash_point("applied")
        self.control.complete_window(window, end.to_dict(), end.ordinal, new_states, report.run_id)
        report.phase("checkpoint")

    def _bronze_window_end(self, window_id: int) -> Position | None:
        rows = (
            read_delta(self.spark, self.layout.bronze)
            .where(f"window_id = {int(window_id)} AND op = '{WINDOW_MARKER_OP}'")
            .select("after")
            .collect()
        )
        if not rows:
            return None
        return self.source.position_from_dict(json.loads(rows[0].after)["end"])

    def _mine_window(
        self, window: WindowState, start: Position, states: dict[str, TableState], report: RunReport,
        bronze_app: str | None = None,
    ) -> Position:
        """``bronze_app``: the bronze commit's idempotency id (a re-mined window has its own)."""
        import pyarrow as pa

        wid = window.window_id
        staging = self.layout.staging(wid)
        hadoop_delete(self.spark, staging)  # rows of a killed attempt
        schemas, _, next_version = self._registry_before(wid)
        floors = {t: s.ordinal for t, s in states.items()}
        arrow_schema = pa.schema([
            ("window_id", pa.int64()), ("source_table", pa.string()), ("op", pa.string()),
            ("seq", pa.decimal128(38, 0)), ("position", pa.string()), ("txid", pa.string()),
            ("commit_ts", pa.timestamp("us")), ("schema_version", pa.int64()),
            ("before", pa.string()), ("after", pa.string()),
        ])
        spark_schema = BRONZE_DDL

        def stage(rows: list[EventRow]) -> None:
            table = pa.table(
                {
                    "window_id": [wid] * len(rows),
                    "source_table": [r.source_table for r in rows],
                    "op": [r.op for r in rows],
                    "seq": [Decimal(r.seq) for r in rows],
                    "position": [r.position for r in rows],
                    "txid": [r.txid for r in rows],
                    "commit_ts": [r.commit_ts for r in rows],
                    "schema_version": [r.schema_version for r in rows],
                    "before": [r.before for r in rows],
                    "after": [r.after for r in rows],
                },
                schema=arrow_schema,
            )
            self.spark.createDataFrame(table, schema=spark_schema).write.mode("append").parquet(staging)

        history: list[HistoryEntry] = []

        def on_ddl(ddl: Ddl) -> None:
            history.extend(_history_entries(ddl, next_version + len(history), wid))

        assembler = TransactionAssembler(
            stage, on_ddl, self.config.mining.flush_rows, self.config.mining.spill_rows, floors
        )
        end: Position | None = None
        end_limit = self.source.position_from_dict(window.end_limit)
        for record in self.source.mine(start, end_limit, schemas, next_version, window.max_events, floors):
            if isinstance(record, WindowEnd):
                end = record.position
                break
            assembler.feed(record)
        open_txns = assembler.finish()
        if end is None or open_txns:
            raise CdcError(
                f"mining window {wid} ended inside transaction(s) {open_txns[:5]} or without an end position",
                "this is a bug in the source plug-in: windows must end on a transaction boundary",
            )
        crash_point("staged")
        self.control.append_history(history, (f"cdclake:{self.config.pipeline}:history", wid))
        crash_point("history")
        stats = assembler.stats
        marker = {
            "end": end.to_dict(), "events": stats.events, "transactions": stats.transactions,
            "rolled_back": stats.rolled_back, "rows_by_table": stats.rows_by_table,
        }
        marker_df = self.spark.createDataFrame(
            [(wid, "", WINDOW_MARKER_OP, Decimal(event_seq(end.ordinal, 0)), end.describe(), None, None, None, None,
              json.dumps(marker))],
            schema=BRONZE_DDL,
        )
        frame = marker_df
        if hadoop_path_exists(self.spark, staging):
            frame = self.spark.read.schema(BRONZE_DDL).parquet(staging).select(*BRONZE_COLUMNS).unionByName(marker_df)
        (
            frame.write.format("delta").mode("append")
            .option("txnAppId", bronze_app or f"cdclake:{self.config.pipeline}:bronze").option("txnVersion", wid)
            .save(self.layout.bronze)
        )
        crash_point("bronze")
        hadoop_delete(self.spark, staging)
        report.events, report.transactions = stats.events, stats.transactions
        report.rows_by_table = dict(stats.rows_by_table)
        return end

    def _registry_before(self, wid: int) -> tuple[dict[str, TableSchema], dict[str, int], int]:
        """Table schemas (and their versions) valid at the start of window ``wid``, and the next version.

        Versions continue from the entries before this window, so a re-mined window numbers alike.
        """
        earlier = self.control.before_window(self.control.history_through_window(wid), wid)
        registry = self.control.latest_per_table(earlier)
        live = {t: e for t, e in registry.items() if e.schema is not None}
        return ({t: e.schema for t, e in live.items()}, {t: e.version for t, e in live.items()},  # type: ignore[misc]
                max((e.version for e in earlier), default=0) + 1)

    def _mine_frame_window(
        self, window: WindowState, start: Position, states: dict[str, TableState], report: RunReport
    ) -> Position:
        """Mine a window decoded in Spark; assemble transactions with the persistent in-flight buffer."""
        from pyspark.sql import functions as F

        assert isinstance(self.source, FrameSource)
        wid = window.window_id
        staging = self.layout.staging(wid)
        hadoop_delete(self.spark, staging)  # rows of a killed attempt
        schemas, versions, next_version = self._registry_before(wid)
        floors = {t: s.ordinal for t, s in states.items()}
        mined = self.source.mine_frame(
            self.spark, wid, start, self.source.position_from_dict(window.end_limit), schemas, versions,
            next_version, window.max_events, f"{staging}/source", floors,
        )
        # Decoding runs once: later steps read the decoded rows back.
        report.phase("fetch")
        mined.rows.write.mode("overwrite").parquet(f"{staging}/decoded")
        report.phase("decode")
        rows = self.spark.read.parquet(f"{staging}/decoded")
        history: list[HistoryEntry] = []
        for ddl in mined.ddl:
            history.extend(_history_entries(ddl, next_version + len(history), wid))

        buffer = InflightBuffer(self.spark, self.layout, self.config.pipeline)
        buffer.ensure()
        retention = self.config.mining.transaction_retention_s
        end_ts = rows.agg(F.max("event_ts")).first()[0] if retention is not None else None
        assembly = buffer.assemble(wid, rows, floors, None if retention is None else timedelta(seconds=retention),
                                   end_ts, self.source.assemble_pieces)
        assembly.committed.write.mode("overwrite").parquet(f"{staging}/committed")
        report.phase("assemble")
        staged = self.spark.read.parquet(f"{staging}/committed")
        bad = staged.where("error IS NOT NULL").selectExpr(
            "window_id", "source_table", f"seq - seq % {SEQ_SPAN} AS seq", "position", "op", "error", "raw",
        ).unionByName(assembly.errors.selectExpr(
            "window_id", "source_table", f"CAST(ordinal * CAST({SEQ_SPAN} AS DECIMAL(11,0)) AS DECIMAL(38,0)) AS seq",
            "position", "op", "error", "raw"))
        self._stop_on_bad_rows(wid, bad)
        report.phase("check_errors")
        committed = staged.where("error IS NULL").select(*BRONZE_COLUMNS)
        crash_point("staged")
        self.control.append_history(history, (f"cdclake:{self.config.pipeline}:history", wid))
        crash_point("history")
        buffer.record(wid, assembly)
        report.phase("inflight")
        crash_point("inflight")

        stats = committed.groupBy("source_table").agg(F.count(F.lit(1)).alias("n")).collect()
        rows_by_table = {r.source_table: int(r.n) for r in stats}
        ended = self.spark.read.format("delta").load(self.layout.transactions).where(f"window_id = {wid}")
        counts = {r.status: int(r["count"]) for r in ended.groupBy("status").count().collect()}
        open_summary = assembly.stats["open_after"].first()
        abandoned = [r.asDict() for r in ended.where("status = 'abandoned'").select(
            "txid", "first_position", "rows", "tables").limit(20).collect()]
        late = [r.txid for r in assembly.stats["late_commits"].select("txid").limit(20).collect()]
        for item in abandoned:
            log.warning("window %s: abandoned transaction %s (first change %s, %s rows, tables %s): its changes "
                        "are NOT applied", wid, item["txid"], item["first_position"], item["rows"], item["tables"])
        for txid in late:
            log.warning("window %s: transaction %s committed after it was abandoned: its changes are lost", wid, txid)
        marker = {
            "end": mined.end.to_dict(), "events": sum(rows_by_table.values()),
            "transactions": counts.get("committed", 0), "rolled_back": counts.get("rolled_back", 0),
            "abandoned": counts.get("abandoned", 0), "abandoned_sample": abandoned, "late_commits": late,
            "open_transactions": int(open_summary.n or 0),
            "oldest_open_ordinal": None if open_summary.oldest is None else str(open_summary.oldest),
            "rows_by_table": rows_by_table, **mined.stats,
        }
        marker_df = self.spark.createDataFrame(
            [(wid, "", WINDOW_MARKER_OP, Decimal(event_seq(mined.end.ordinal, 0)), mined.end.describe(), None, None,
              None, None, json.dumps(marker, default=str))],
            schema=BRONZE_DDL,
        )
        (
            committed.select(*BRONZE_COLUMNS).unionByName(marker_df)
            .write.format("delta").mode("append")
            .option("txnAppId", f"cdclake:{self.config.pipeline}:bronze").option("txnVersion", wid)
            .save(self.layout.bronze)
        )
        report.phase("bronze")
        crash_point("bronze")
        assembly.release()
        self.source.release()
        hadoop_delete(self.spark, staging)
        report.events, report.transactions = marker["events"], marker["transactions"]
        report.rows_by_table = rows_by_table
        return mined.end

    def _stop_on_bad_rows(self, wid: int, errors: Any) -> None:
        """Rows of committed work that did not decode: dead letters, then stop or go on per policy."""
        bad = errors.selectExpr(
            "window_id", "source_table", "CAST(seq AS DECIMAL(38,0)) AS seq", "position", "op", "error AS reason",
            "raw AS before", "CAST(NULL AS STRING) AS after", "current_timestamp() AS recorded_at",
        )
        first = bad.orderBy("seq").first()
        if first is None:
            return
        self.control.dead_letter_write(bad, f"cdclake:{self.config.pipeline}:undecodable", wid)
        if self.config.mining.unparsable_rows == "dead_letter" and first.source_table:
            log.warning("window %s: undecodable rows recorded in %s (first at %s: %s)", wid,
                        self.layout.dead_letters, first.position, first.reason)
            return
        raise CdcError(
            f"a change of {first.source_table or 'the log'} at {first.position} cannot be decoded: {first.reason}; "
            f"it is recorded with the others in {self.layout.dead_letters} (statement: {(first.before or '')[:300]})",
            "fix the cause (schema history out of step, unsupported statement) and run again; to record such rows "
            "and go on without them set 'mining.unparsable_rows: dead_letter'",
        )

    # ---- apply -----------------------------------------------------------------------------------

    def _apply_window(
        self, window: WindowState, end: Position, states: dict[str, TableState], report: RunReport
    ) -> dict[str, TableState]:
        from pyspark import StorageLevel

        wid = window.window_id
        bronze = read_delta(self.spark, self.layout.bronze).where(
            f"window_id = {wid} AND op <> '{WINDOW_MARKER_OP}'")
        bronze = bronze.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            truncates: dict[str, list[int]] = {}
            counts: dict[str, int] = {}
            from pyspark.sql import functions as F

            per_table = bronze.groupBy("source_table").agg(
                F.count(F.lit(1)).alias("n"), F.collect_list(F.when(F.col("op") == "t", F.col("seq"))).alias("t"))
            for r in per_table.collect():
                counts[r.source_table] = int(r.n)
                if r.t:
                    truncates[r.source_table] = sorted(int(seq) for seq in r.t)
            entries = self.control.history_through_window(wid)
            ddl = [e for e in entries if e.window_id == wid and e.kind != SKIPPED]
            before = self.control.latest_per_table(self.control.before_window(entries, wid))
            tables = _apply_order(set(counts) | {e.table for e in ddl}, ddl)
            new_states = dict(states)
            for table in tables:
                renamed_to = {e.seq: e for e in ddl if e.renamed_from == table}
                with commit_tag(self.spark, window=wid):  # what a rebuild looks for in the target's history
                    self._apply_table(window, table, bronze, truncates.get(table, []),
                                      [e for e in ddl if e.table == table], before.get(table), states.get(table),
                                      report.resumed, renamed_to)
            if not report.rows_by_table:
                report.rows_by_table = counts
            as_of = {"as_of": time.time()}
            for table, state in list(new_states.items()):
                new_states[table] = TableState(table, state.status, end.to_dict(), end.ordinal, wid, None,
                                               {**state.detail, **as_of})
            for e in ddl:
                status = TABLE_DROPPED if e.schema is None else TABLE_STREAMING
                old = new_states.get(e.table)
                new_states[e.table] = TableState(e.table, status, end.to_dict(), end.ordinal, wid, None,
                                                 {**(old.detail if old else {}), **as_of})
                if e.renamed_from and e.renamed_from in new_states:
                    prev = new_states[e.renamed_from]
                    new_states[e.renamed_from] = TableState(prev.table, TABLE_DROPPED, prev.position, prev.ordinal,
                                                            wid, None, prev.detail)
            return new_states
        finally:
            bronze.unpersist()

    def _apply_table(
        self,
        window: WindowState,
        table: str,
        bronze: Any,
        truncates: list[int],
        ddl: list[HistoryEntry],
        start_entry: HistoryEntry | None,
        state: TableState | None,
        resumed: bool,
        renamed_to: dict[int, HistoryEntry] | None = None,
        path: str | None = None,
        app_id: str | None = None,
    ) -> None:
        """``renamed_to``: the new name's entry of each rename of ``table`` in this window, by seq;
        ``path``/``app_id``: another table to apply to (a rebuild's staging copy) and its commit ids."""
        wid = window.window_id
        path = path or self.layout.target(table)
        floor = state.ordinal if state else -1
        low = (floor + 1) * SEQ_SPAN  # changes committed at or before the table's position are in already
        barriers: list[tuple[int, str, Any]] = [(s, "truncate", None) for s in truncates if s >= low]
        barriers += [(e.seq, "ddl", e) for e in ddl if e.seq >= low]
        barriers.sort(key=lambda b: (b[0], 0 if b[1] == "ddl" else 1))
        schema = start_entry.schema if start_entry else None
        # Only a resumed window can have barrier steps done already (the marker costs a Delta read).
        resumable = resumed and any(kind == "ddl" for _, kind, _ in barriers) and is_delta_table(self.spark, path)
        marker = self.targets.applied_marker(path) if resumable else None
        rows = bronze.where(f"source_table = '{sql_str(table)}' AND op IN ('c', 'u', 'd') AND seq >= {low}")
        step = 0
        lo = low - 1
        app_id = app_id or self._app_id(table)
        for seq, kind, entry in [*barriers, (None, "end", None)]:
            segment = rows.where(f"seq > {lo}" + (f" AND seq < {seq}" if seq is not None else ""))
            step += 1
            if schema is not None:
                parsed = self.targets.parse_changes(segment, schema, self._key_columns(schema))
                try:
                    if parsed.rows:
                        self._reject_undecodable(table, parsed, schema, wid * MAX_STEPS_PER_WINDOW + step)
                        if not is_delta_table(self.spark, path):
                            self.targets.create(path, schema)
                        self.targets.merge_changes(path, schema, self._key_columns(schema), parsed, app_id,
                                                   wid * MAX_STEPS_PER_WINDOW + step)
                        crash_point("merge")
                finally:
                    parsed.release()
            if kind == "end":
                break
            step += 1
            if step >= MAX_STEPS_PER_WINDOW:
                raise CdcError(f"window {wid} has too many schema changes/truncates for {table}",
                               "mine with a smaller --max-events")
            done = marker is not None and marker >= (wid, step)
            if kind == "truncate":
                if is_delta_table(self.spark, path):
                    self.targets.truncate(path, seq, app_id, wid * MAX_STEPS_PER_WINDOW + step)
                    crash_point("truncate")
            elif not done:
                moved_to = (renamed_to or {}).get(entry.seq) if entry.schema is None else None
                self._apply_ddl(path, entry, seq, moved_to)
                crash_point("ddl")
                self.targets.set_marker(path, wid, step)
            if kind == "ddl":
                schema = entry.schema
            lo = seq

    def _reject_undecodable(self, table: str, parsed: ParsedChanges, schema: TableSchema, version: int) -> None:
        """Never merge what does not decode: record it as dead letters and stop the run."""
        if not parsed.undecodable:
            return
        bad = self.targets.undecodable(parsed, schema, self._key_columns(schema))
        self.control.dead_letter_write(bad, f"{self._app_id(table)}:dead", version)
        first = bad.orderBy("seq").select("position").first()
        raise CdcError(
            f"changes of {table} at {first.position} do not decode with the schema history's schema "
            f"(version for that position); they are recorded in {self.layout.dead_letters}",
            "the schema history is out of step with the log (a skipped or misparsed DDL): re-snapshot the "
            "table with 'cdclake snapshot --config <file> --tables <regex> --force'",
        )

    def _apply_ddl(self, path: str, entry: HistoryEntry, seq: int, moved_to: HistoryEntry | None = None) -> None:
        """``moved_to``: for a drop that is a rename, the new name's entry."""
        if entry.schema is None:  # dropped: the mirror empties, history stays in Delta time travel
            if is_delta_table(self.spark, path):
                self.targets.close_history(path, seq)
                if moved_to is None:
                    self.spark.sql(f"DELETE FROM delta.`{path}` WHERE `__seq` < {seq}")
                else:
                    # Renamed away: the rows move now, before a table created under the old name later in
                    # the window empties this target. The new name's step moves again: nothing is left.
                    dest = self.layout.target(moved_to.table)
                    if not is_delta_table(self.spark, dest):
                        self.targets.create(dest, moved_to.schema)  # type: ignore[arg-type]
                    self.targets.copy_rows(path, dest, seq, self._key_columns(moved_to.schema))  # type: ignore[arg-type]
            return
        self.targets.evolve(path, entry.schema, entry.column_renames, seq)
        if entry.renamed_from:
            old_path = self.layout.target(entry.renamed_from)
            if is_delta_table(self.spark, old_path):
                self.targets.copy_rows(old_path, path, seq, self._key_columns(entry.schema))
        elif entry.ddl.lstrip().upper().startswith("CREATE"):
            # A table created again after a drop starts empty.
            self.spark.sql(f"DELETE FROM delta.`{path}` WHERE `__seq` < {seq}")

    # ---- data quality ----------------------------------------------------------------------------

    def _quality_gate(self) -> Any:
        """The data-quality gate (:mod:`cdclake.engine.quality`), or None when ``quality.enabled`` is off."""
        if not self.config.quality.enabled:
            return None
        from cdclake.engine.quality import QualityGate

        return QualityGate(self.spark, self.layout, self.config, self._key_columns, self.targets.soft)

    def _check_quality_config(self) -> None:
        """An unknown declared expectation or bad kwargs fails the run before any data moves."""
        if self.config.quality.enabled:
            from cdclake.engine.quality import check_declared

            check_declared(self.config)

    def _check_window_quality(self, window_id: int, report: RunReport) -> None:
        """Check and record what the window changed; a failure of severity ``fail`` raises, so the window
        is not checkpointed and the next run checks it again (docs/operations.md)."""
        gate = self._quality_gate()
        if gate is None:
            return
        from cdclake.engine.quality import gate_error, gate_failures, warn_failures

        latest = self.control.latest_per_table(self.control.history_through_window(window_id))
        schemas = {t: e.schema for t, e in latest.items() if t in report.rows_by_table and e.schema is not None}
        results = gate.check_window(window_id, schemas, report.rows_by_table)
        gate.record(report.run_id, window_id, results, report.resumed)
        report.phase("quality")
        warn_failures(results, f"window {window_id}")
        failed = gate_failures(results)
        if failed:
            raise gate_error(failed, f"in window {window_id}", self.layout.quality)

    def _check_table_quality(self, run_id: str, schema: TableSchema, where: str | None, label: str) -> list[Any]:
        """Check and record a target table as a whole (after a snapshot or a rebuild), or its rows matching
        ``where`` (after a key-range backfill); returns the failures of severity ``fail``."""
        gate = self._quality_gate()
        if gate is None:
            return []
        from cdclake.engine.quality import gate_failures, warn_failures

        results = gate.check_table(schema, where)
        gate.record(run_id, None, results)
        warn_failures(results, label)
        return gate_failures(results)

    def _check_backfill_quality(self, report: RunReport, table: str, where: str | None) -> None:
        """A backfill's rows (``where``, or the whole table); a failure of severity ``fail`` raises."""
        if not self.config.quality.after_backfill:
            return
        entry = self.control.latest_per_table(self.control.history()).get(table)
        if entry is None or entry.schema is None:
            return
        failed = self._check_table_quality(report.run_id, entry.schema, where, "backfill")
        report.phase("quality")
        if failed:
            from cdclake.engine.quality import gate_error

            raise gate_error(failed, f"after the backfill of {table}", self.layout.quality, after="backfill")

    # ---- status ----------------------------------------------------------------------------------

    def backfill(self, table: str | None, where: str | None = None, mode: str = "resnapshot",
                 from_window: int | None = None, windows: tuple[int, int] | None = None) -> RunReport:
        """Repairs that run beside mining; each resumes when run again after a kill.

        * ``resnapshot``: re-read ``table`` (the rows matching ``where``) from the source
          (:mod:`cdclake.engine.backfill`);
        * ``rebuild``: rebuild ``table``'s target (and history table) from bronze, from its last snapshot
          or from window ``from_window`` (:mod:`cdclake.engine.rebuild`);
        * ``remine``: mine the applied ``windows`` (first, last) into bronze again where bronze no longer
          has them (:mod:`cdclake.engine.remine`).
        """
        from cdclake.engine.backfill import resnapshot
        from cdclake.engine.rebuild import rebuild
        from cdclake.engine.remine import remine

        _check_backfill_args(mode, table, where, from_window, windows)
        if table is not None and not self.config.source.captures(table):
            raise CdcError(f"{table} is not captured by pipeline {self.config.pipeline}",
                           "name a table selected by source.include_tables/exclude_tables ('database.table')")
        report = RunReport(uuid.uuid4().hex[:12], "backfill" if mode == "resnapshot" else f"backfill:{mode}")
        self._ensure_control()
        try:
            if mode == "resnapshot":
                resnapshot(self, report, table, where)  # type: ignore[arg-type]
            elif mode == "rebuild":
                rebuild(self, report, table, from_window)  # type: ignore[arg-type]
            else:
                remine(self, report, *windows)  # type: ignore[misc]
            if mode != "remine":  # remine writes bronze only; only resnapshot takes --where
                self._check_backfill_quality(report, table, where)  # type: ignore[arg-type]
        except Exception as exc:
            self._log_run(report, "failed", str(exc)[:4000])
            raise
        self._log_run(report, "ok", None)
        return report

    def maintain(self) -> tuple[RunReport, MaintenanceReport]:
        """Compaction, vacuum and retention (:mod:`cdclake.engine.maintenance`), under the pipeline lock."""
        result: list[MaintenanceReport] = []

        def body(report: RunReport) -> None:
            report.tables = sorted(self.control.table_states())
            targets = [self.layout.target(t) for t in report.tables]
            result.append(maintain(self.spark, self.layout, targets, self.config.maintenance, self.config.pipeline))

        report = self._locked_run("maintain", body)
        return report, result[0]

    def status(self) -> list[dict[str, Any]]:
        if not self.control.exists():
            return []
        states = self.control.table_states()
        runs = self.control.last_runs(1)
        last_run = runs[0] if runs else None
        out = []
        now = time.time()
        for table in sorted(states):
            s = states[table]
            path = self.layout.target(table)
            rows = None
            if is_delta_table(self.spark, path):
                df = self.spark.read.format("delta").load(path)
                if self.targets.soft:
                    df = df.where("NOT `__deleted`")
                rows = df.count()
            as_of = s.detail.get("as_of")
            out.append({
                "source_table": table,
                "delta_path": path,
                "state": s.status,
                "position": self.source.position_from_dict(s.position).describe() if s.position else None,
                "position_ordinal": str(s.ordinal),
                "window_id": s.window_id,
                "rows": rows,
                "lag_s": round(now - as_of, 3) if as_of else None,
                "last_run": None if last_run is None else {
                    "run_id": last_run.run_id, "command": last_run.command, "status": last_run.status,
                    "ended_at": last_run.ended_at.isoformat() if last_run.ended_at else None,
                },
            })
        return out

    def _log_run(self, report: RunReport, status: str, error: str | None) -> None:
        report.duration_s = time.time() - report.started_at
        started = datetime.fromtimestamp(report.started_at, timezone.utc).replace(tzinfo=None)
        self.control.log_run({
            "run_id": report.run_id, "command": report.command, "window_id": report.window_id, "status": status,
            "started_at": started, "ended_at": utcnow(), "duration_s": report.duration_s, "events": report.events,
            "transactions": report.transactions, "rows_by_table": report.rows_by_table, "lag_s": None,
            "start_position": report.start, "end_position": report.end, "error": error,
        })


def _check_backfill_args(mode: str, table: str | None, where: str | None, from_window: int | None,
                         windows: tuple[int, int] | None) -> None:
    """Each backfill mode takes its own options: name the one given in vain and what to do instead."""
    wrong = None
    if mode not in ("resnapshot", "rebuild", "remine"):
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


def _apply_order(tables: set[str], ddl: list[HistoryEntry]) -> list[str]:
    """Tables in name order, except that a renamed table's old name comes before its new one: the
    old table's changes up to the rename must be in its target when the new table copies the rows."""
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


def _history_entries(ddl: Ddl, first_version: int, wid: int) -> list[HistoryEntry]:
    seq = event_seq(ddl.position.ordinal, 0)
    out: list[HistoryEntry] = []
    if ddl.skipped_reason:  # recorded, never applied: the operator sees what was skipped and why
        out.append(HistoryEntry(
            version=first_version, table=ddl.database or "", seq=seq, position=ddl.position.describe(),
            ddl=ddl.statement, kind=SKIPPED, schema=None, renamed_from=None, column_renames={}, window_id=wid,
        ))
    for table, schema in ddl.changes.items():  # the source already dropped DDL at/below floors
        out.append(HistoryEntry(
            version=first_version + len(out), table=table, seq=seq, position=ddl.position.describe(),
            ddl=ddl.statement, kind="drop" if schema is None else "ddl", schema=schema,
            renamed_from=ddl.renamed_from.get(table), column_renames=ddl.column_renames.get(table, {}),
            window_id=wid,
        ))
    return out



__all__ = ["Pipeline", "RunReport"]
