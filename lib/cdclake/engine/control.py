"""Control tables in Delta: checkpoints, schema history, run log and dead letters.

All are small, append-only tables; the current state is the newest row per key. One writer per
pipeline holds the lock (:mod:`cdclake.engine.lock`), so a revision counter orders rows.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from cdclake.engine.events import BRONZE_DDL
from cdclake.engine.history import HistoryEntry, latest_per_table
from cdclake.engine.lake import (
    COMPATIBLE,
    FEATURES_PROPERTY,
    SPARK,
    LakeLayout,
    delta_ref,
    ensure_table,
    idempotent_write,
    is_delta_table,
    local_frame,
    read_delta,
    sql_str,
    table_version,
)
from cdclake.engine.lakeview import LakeView, NotReadable, rows_of
from cdclake.engine.states import TableState, check_state
from cdclake.errors import CdcError
from cdclake.hadoopfs import hadoop_delete, hadoop_list, hadoop_read_text, hadoop_write_text
from cdclake.schema import TableSchema

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHECKPOINTS_DDL = (
    "rev BIGINT, kind STRING, window_id BIGINT, status STRING, table_name STRING, position STRING, "
    "position_ordinal DECIMAL(38,0), start_position STRING, end_limit STRING, max_events BIGINT, "
    "run_id STRING, updated_at TIMESTAMP, detail STRING"
)
HISTORY_DDL = (
    "version BIGINT, source_table STRING, seq DECIMAL(38,0), position STRING, ddl STRING, kind STRING, "
    "schema STRING, renamed_from STRING, column_renames STRING, window_id BIGINT, recorded_at TIMESTAMP"
)
RUNS_DDL = (
    "run_id STRING, command STRING, window_id BIGINT, status STRING, started_at TIMESTAMP, ended_at TIMESTAMP, "
    "duration_s DOUBLE, events BIGINT, transactions BIGINT, rows_by_table MAP<STRING,BIGINT>, lag_s DOUBLE, "
    "start_position STRING, end_position STRING, error STRING, error_kind STRING, error_permanent BOOLEAN"
)
DEAD_LETTERS_DDL = (
    "window_id BIGINT, source_table STRING, seq DECIMAL(38,0), position STRING, op STRING, reason STRING, "
    "before STRING, after STRING, recorded_at TIMESTAMP"
)

WINDOW_PLANNED, WINDOW_MINED, WINDOW_APPLIED = "planned", "mined", "applied"
WINDOW_CANCELLED = "cancelled"  # planned, nothing of it written, then given up (a forced re-snapshot)
PLAN_PREFIX = "window-"
# A table's states (and the moves between them) are :mod:`.states`'.


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass
class WindowState:
    window_id: int
    status: str
    start: dict[str, Any]
    end_limit: dict[str, Any]
    max_events: int | None
    end: dict[str, Any] | None
    planned_rev: int | None = None  # the checkpoints ``rev`` the plan came after (floors: table rows before it)


class ControlTables:
    """Reads and writes the pipeline's control tables."""

    def __init__(self, spark: SparkSession | None, layout: LakeLayout, table_features: str | None = None) -> None:
        self.spark = spark
        self.layout = layout
        self.configured_features = table_features  # lake.table_features; None: the lake's own
        self._features: str | None = None
        self._cache: dict[str, Any] | None = None  # reads kept within a locked run (run_cache)
        # what the last run that ended well had read, by the (table id, version) it is valid for
        self._kept: dict[str, tuple[tuple[str, int], Any]] = {}
        self.view = LakeView.for_root(layout.root)  # reads without Spark where the lake allows them

    def read(self, through_view: Callable[[LakeView], Any], through_spark: Callable[[], Any]) -> Any:
        """``through_view(view)``, or ``through_spark()`` where there is no view or it cannot read the table."""
        if self.view is not None:
            try:
                return through_view(self.view)
            except NotReadable:
                if self.spark is None:
                    raise
        if self.spark is None:
            raise NotReadable(f"the lake at {self.layout.root} is read through Spark and this context has none")
        return through_spark()

    def _version(self, path: str) -> tuple[str, int] | None:
        return self.read(lambda view: view.version(path), lambda: table_version(self.spark, path))

    def _kept_table(self, key: str) -> str:
        return {"latest": self.layout.checkpoints, "history": self.layout.schema_history}[key]

    @contextlib.contextmanager
    def run_cache(self) -> Iterator[None]:
        """Within the block the latest table states and window and the schema history are read from Delta once
        and then kept until this object writes them again. Only for a run that holds the pipeline lock: no
        other writer can change them meanwhile (each read is a Spark job; a window needs them often).

        What a run had read when it ended is kept for the next run of this object, which takes it only if
        its Delta table is still at the version it was then (a look at the table's log, no Spark job):
        a process that runs windows one after another reads its control tables once."""
        if self._cache is not None:  # a run inside a run keeps the outer one's reads
            yield
            return
        self._cache = {}
        kept, self._kept = self._kept, {}
        for key, (at, value) in kept.items():
            if self._version(self._kept_table(key)) == at:
                self._cache[key] = value
        try:
            yield
            for key in ("latest", "history"):
                at = self._version(self._kept_table(key)) if key in self._cache else None
                if at is not None:
                    self._kept[key] = (at, self._cache[key])
        finally:
            self._cache = None

    def _cached(self, key: str, read: Any) -> Any:
        if self._cache is None:
            return read()
        if key not in self._cache:
            self._cache[key] = read()
        return copy.deepcopy(self._cache[key])  # a copy: callers may change what they get

    def _forget(self, key: str) -> None:
        if self._cache is not None:
            self._cache.pop(key, None)

    def ensure(self) -> None:
        """Create the bronze log and the control tables if missing (idempotent); an existing lake's
        table-features mode is checked against the pipeline file's."""
        if self.exists():
            self.table_features()
            return
        self._make()
        if self._cache is not None:  # a run holding the lock made them: nothing to read back
            self._cache.update({"latest": ({}, None), "history": [], "plan": None})

    def _make(self) -> None:
        # bronze is read by window and by sequence; the others are small and read whole
        ensure_table(self.spark, self.layout.bronze, BRONZE_DDL, stats_columns=("window_id", "seq"))
        ensure_table(self.spark, self.layout.schema_history, HISTORY_DDL)
        ensure_table(self.spark, self.layout.runs, RUNS_DDL)
        ensure_table(self.spark, self.layout.dead_letters, DEAD_LETTERS_DDL, stats_columns=("window_id",))
        # last: marks the set complete, and records the lake's mode (lake.table_features)
        ensure_table(self.spark, self.layout.checkpoints, CHECKPOINTS_DDL,
                     {FEATURES_PROPERTY: self.configured_features or COMPATIBLE})

    def exists(self) -> bool:
        path = self.layout.checkpoints
        return bool(self.read(lambda view: view.exists(path), lambda: is_delta_table(self.spark, path)))

    def table_features(self) -> str:
        """The mode new target tables are made in: the lake's (recorded when it was made; a lake made
        before the option existed is a spark lake), else the pipeline file's, else compatible.

        A pipeline file naming the other mode than an existing lake's is refused: tables are never
        converted behind the user's back.
        """
        if self._features is not None:
            return self._features
        lake: str | None = None
        if self.exists():
            path = self.layout.checkpoints
            props = self.read(lambda view: view.configuration(path), lambda: {
                r.key: r.value for r in self.spark.sql(f"SHOW TBLPROPERTIES {delta_ref(path)}").collect()})
            lake = props.get(FEATURES_PROPERTY) or SPARK
        configured = self.configured_features
        if lake is not None and configured is not None and configured != lake:
            raise CdcError(
                f"the lake at {self.layout.root} was made with lake.table_features: {lake}, but the pipeline "
                f"file says {configured}; cdclake does not convert existing tables",
                f"set lake.table_features: {lake} (or remove the key), or start a new lake in {configured} mode "
                "(another lake.root or pipeline name) and snapshot into it", permanent=True
            )
        if lake is None and configured is None:
            return COMPATIBLE  # not recorded until the lake is made (ensure)
        self._features = lake or configured
        return self._features

    # ---- checkpoints ---------------------------------------------------------------------------

    @staticmethod
    def _next_rev() -> int:
        # One writer at a time holds the pipeline lock; wall-clock nanoseconds order its commits
        # without reading the table first.
        return time.time_ns()

    def _append_checkpoints(self, rows: list[dict[str, Any]]) -> None:
        rev = self._next_rev()
        now = utcnow()
        full = [{**r, "rev": rev, "updated_at": now} for r in rows]
        df = local_frame(self.spark, full, CHECKPOINTS_DDL)
        try:
            df.write.format("delta").mode("append").save(self.layout.checkpoints)
        except BaseException:
            self._forget("latest")  # whether it committed is unknown
            raise
        self._note_latest(full)

    def _note_latest(self, rows: list[dict[str, Any]]) -> None:
        """Bring a run's cached latest states up to ``rows``, just committed: the newest row of each table and
        window is what a read would return, so the run never reads back what it wrote."""
        if self._cache is None or "latest" not in self._cache:
            return
        tables, window = self._cache["latest"]
        for row in rows:
            r = SimpleNamespace(**{"detail": None, **row})
            if r.kind == "table":
                tables[r.table_name] = self._table_state(r)
            elif r.kind == "window":
                window = self._window_state(r)
        self._cache["latest"] = (tables, window)

    def last_window(self) -> WindowState | None:
        """The newest window: the open one if a plan follows the newest window row, else that row (applied or
        cancelled; planned in a lake written before plans were files); None before the first plan."""
        newest = self._cached("latest", self._read_latest)[1]
        if newest is not None and newest.status == WINDOW_PLANNED:
            return newest
        return self._cached("plan", lambda: self._read_plan((newest.window_id if newest else 0) + 1)) or newest

    def _plan_path(self, window_id: int) -> str:
        return f"{self.layout.plans}/{PLAN_PREFIX}{int(window_id)}.json"

    def _read_plan(self, window_id: int) -> WindowState | None:
        path = self._plan_path(window_id)
        text = self.read(lambda view: view.read_text(path), lambda: hadoop_read_text(self.spark, path))
        if text is None:
            return None
        plan = json.loads(text)
        return WindowState(window_id=int(plan["window_id"]), status=WINDOW_PLANNED, start=plan["start"],
                           end_limit=plan["end_limit"], max_events=plan["max_events"], end=None,
                           planned_rev=int(plan["rev"]))

    def _read_latest(self) -> tuple[dict[str, TableState], WindowState | None]:
        """Each table's latest state and the latest window, in one read of the checkpoints table."""
        rows = self.read(self._latest_rows_of_view, self._latest_rows_of_spark)
        window = next((self._window_state(r) for r in rows if r.kind == "window"), None)
        return {r.table_name: self._table_state(r) for r in rows if r.kind == "table"}, window

    def _latest_rows_of_view(self, view: LakeView) -> list[Any]:
        table = view.read(self.layout.checkpoints)
        newest: dict[tuple[str, str | None], Any] = {}
        for r in rows_of(table) if table is not None else []:
            key = (r.kind, r.table_name)
            if r.kind in ("table", "window") and (key not in newest or r.rev > newest[key].rev):
                newest[key] = r
        return list(newest.values())

    def _latest_rows_of_spark(self) -> list[Any]:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        w = Window.partitionBy("kind", "table_name").orderBy(F.col("rev").desc())
        return (read_delta(self.spark, self.layout.checkpoints).where("kind IN ('table', 'window')")
                .withColumn("_rn", F.row_number().over(w)).where("_rn = 1").collect())

    @staticmethod
    def _window_state(r: Any) -> WindowState:
        planned_rev = json.loads(r.detail or "{}").get("planned_rev")
        return WindowState(
            window_id=int(r.window_id),
            status=r.status,
            start=json.loads(r.start_position),
            end_limit=json.loads(r.end_limit),
            max_events=r.max_events,
            end=json.loads(r.position) if r.position else None,
            planned_rev=int(r.rev) if r.status == WINDOW_PLANNED else planned_rev,
        )

    @staticmethod
    def _table_state(r: Any) -> TableState:
        return TableState(
            table=r.table_name,
            status=r.status,
            position=json.loads(r.position),
            ordinal=int(r.position_ordinal),
            window_id=r.window_id,
            updated_at=r.updated_at,
            detail=json.loads(r.detail or "{}"),
        )

    def plan_window(self, window: WindowState, run_id: str) -> WindowState:
        """Record the plan of ``window`` before anything of it is read: the run that finishes it (this one or,
        after a kill, the next) keeps its bounds. A file, not a Delta commit: a plan is written once per window
        and read back only while the window is open (a Delta append costs a Spark job and a commit)."""
        rev = self._next_rev()
        planned = WindowState(window.window_id, WINDOW_PLANNED, window.start, window.end_limit, window.max_events,
                              None, rev)
        hadoop_write_text(self.spark, self._plan_path(window.window_id), json.dumps({
            "window_id": window.window_id, "start": window.start, "end_limit": window.end_limit,
            "max_events": window.max_events, "run_id": run_id, "rev": rev, "planned_at": utcnow().isoformat(),
        }))
        for name in hadoop_list(self.spark, self.layout.plans):  # plans of closed windows a kill left behind
            if name != f"{PLAN_PREFIX}{window.window_id}.json":
                hadoop_delete(self.spark, f"{self.layout.plans}/{name}")
        if self._cache is not None:
            self._cache["plan"] = planned
        return copy.deepcopy(planned)

    def _close_window(self, window: WindowState, row: dict[str, Any], tables: list[dict[str, Any]]) -> None:
        """Commit the window's closing row (with ``tables``), then drop its plan."""
        self._append_checkpoints([{**row, "detail": json.dumps({"planned_rev": window.planned_rev})}, *tables])
        self._forget("plan")
        hadoop_delete(self.spark, self._plan_path(window.window_id))

    def cancel_window(self, window: WindowState, run_id: str) -> None:
        self._close_window(window, {
            "kind": "window", "window_id": window.window_id, "status": WINDOW_CANCELLED, "table_name": None,
            "position": None, "position_ordinal": None, "start_position": json.dumps(window.start),
            "end_limit": json.dumps(window.end_limit), "max_events": window.max_events, "run_id": run_id,
        }, [])

    def record_backfill(self, backfill_id: str, table: str, status: str, detail: dict[str, Any]) -> None:
        self._append_checkpoints([{
            "kind": "backfill", "window_id": None, "status": status, "table_name": table, "position": None,
            "position_ordinal": None, "start_position": None, "end_limit": None, "max_events": None,
            "run_id": backfill_id, "detail": json.dumps(detail),
        }])

    def backfills(self, table: str) -> list[tuple[str, str, dict[str, Any]]]:
        """``(backfill id, latest status, detail)`` of each backfill of ``table``, newest first."""
        rows = (read_delta(self.spark, self.layout.checkpoints)
                .where(f"kind = 'backfill' AND table_name = '{sql_str(table)}'")
                .orderBy("rev", ascending=False).collect())
        latest: dict[str, Any] = {}
        for r in rows:
            latest.setdefault(r.run_id, r)
        return [(r.run_id, r.status, json.loads(r.detail)) for r in latest.values()]

    def applied_windows(self) -> list[tuple[WindowState, int]]:
        """Every applied window (with its end) and the ``rev`` of the commit that applied it, in order."""
        rows = (read_delta(self.spark, self.layout.checkpoints)
                .where(f"kind = 'window' AND status = '{WINDOW_APPLIED}'").orderBy("window_id").collect())
        return [(WindowState(int(r.window_id), r.status, json.loads(r.start_position), json.loads(r.end_limit),
                             r.max_events, json.loads(r.position)), int(r.rev)) for r in rows]

    def window_planned_rev(self, window_id: int) -> int:
        """``rev`` at which ``window_id`` was planned (table positions before it were the window's floors): kept
        in the row that closed the window (a lake written before plans were files has a planned row)."""
        rows = read_delta(self.spark, self.layout.checkpoints).where(
            f"kind = 'window' AND window_id = {int(window_id)}").collect()
        revs = [w.planned_rev for w in map(self._window_state, rows) if w.planned_rev is not None]
        if not revs:
            raise CdcError(f"the checkpoints table has no plan of window {window_id}",
                           "remine only windows that were applied", permanent=True)
        return max(revs)

    def window_written(self, window_id: int) -> bool:
        """Whether any table holds rows of window ``window_id`` (bronze, schema history, in-flight buffer)."""
        w = int(window_id)
        for path, column in ((self.layout.bronze, "window_id"), (self.layout.schema_history, "window_id"),
                             (self.layout.inflight, "window_id"), (self.layout.transactions, "window_id")):
            if is_delta_table(self.spark, path) and not read_delta(self.spark, path).where(
                    f"{column} = {w}").limit(1).isEmpty():
                return True
        return False

    def complete_window(
        self,
        window: WindowState,
        end: dict,
        end_ordinal: int,
        tables: dict[str, TableState],
        run_id: str,
    ) -> None:
        """Mark the window applied and move every table's position, in one Delta commit."""
        self._close_window(window, {
            "kind": "window", "window_id": window.window_id, "status": WINDOW_APPLIED, "table_name": None,
            "position": json.dumps(end), "position_ordinal": Decimal(end_ordinal),
            "start_position": json.dumps(window.start), "end_limit": json.dumps(window.end_limit),
            "max_events": window.max_events, "run_id": run_id,
        }, [self._table_row(name, state.status, state.position, state.ordinal, window.window_id, run_id, state.detail)
            for name, state in tables.items()])

    @staticmethod
    def _table_row(name: str, status: str, position: dict, ordinal: int, window_id: int | None, run_id: str,
                   detail: dict | None = None) -> dict[str, Any]:
        check_state(name, status)  # the moves were checked by states.move; no other string is ever written
        return {
            "kind": "table", "window_id": window_id, "status": status, "table_name": name,
            "position": json.dumps(position), "position_ordinal": Decimal(ordinal), "start_position": None,
            "end_limit": None, "max_events": None, "run_id": run_id, "detail": json.dumps(detail or {}),
        }

    def set_tables(self, states: list[TableState], run_id: str) -> None:
        self._append_checkpoints([
            self._table_row(s.table, s.status, s.position, s.ordinal, s.window_id, run_id, s.detail) for s in states
        ])

    def table_states(self, before_rev: int | None = None) -> dict[str, TableState]:
        """Each table's latest state (as it stood before the commit ``before_rev``, if given)."""
        if before_rev is None:
            return self._cached("latest", self._read_latest)[0]
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        df = read_delta(self.spark, self.layout.checkpoints).where(f"kind = 'table' AND rev < {int(before_rev)}")
        w = Window.partitionBy("table_name").orderBy(F.col("rev").desc())
        rows = df.withColumn("_rn", F.row_number().over(w)).where("_rn = 1").collect()
        return {r.table_name: self._table_state(r) for r in rows}

    # ---- schema history ------------------------------------------------------------------------

    def next_schema_version(self) -> int:
        return max((e.version for e in self.history()), default=0) + 1

    def append_history(self, entries: list[HistoryEntry], idempotency: tuple[str, int] | None = None) -> None:
        if not entries:
            return
        now = utcnow()
        rows = [
            {
                "version": e.version, "source_table": e.table, "seq": Decimal(e.seq), "position": e.position,
                "ddl": e.ddl, "kind": e.kind, "schema": e.schema.to_json() if e.schema else None,
                "renamed_from": e.renamed_from, "column_renames": json.dumps(e.column_renames),
                "window_id": e.window_id, "recorded_at": now,
            }
            for e in entries
        ]
        df = local_frame(self.spark, rows, HISTORY_DDL)
        writer = df.write.format("delta").mode("append")
        if idempotency:
            writer = writer.option("txnAppId", idempotency[0]).option("txnVersion", idempotency[1])
        try:
            writer.save(self.layout.schema_history)
        except BaseException:
            self._forget("history")
            raise
        if idempotency or self._cache is None or "history" not in self._cache:
            self._forget("history")  # an idempotent append may have been skipped: what is there is read again
            return
        # a run's cached history takes the rows just committed, as a read would return them
        cached = self._cache["history"] + [self._history_entry(SimpleNamespace(**r)) for r in rows]
        self._cache["history"] = sorted(cached, key=lambda e: (e.seq, e.version))

    def history(self, where: str | None = None) -> list[HistoryEntry]:
        """The schema history in (seq, version) order; ``where``: only the entries that match it (SQL)."""
        if where is None:
            return self._cached("history", lambda: self._read_history(None))
        return self._read_history(where)

    def _read_history(self, where: str | None) -> list[HistoryEntry]:
        def through_view(view: LakeView) -> list[HistoryEntry]:
            if where is not None:
                raise NotReadable("a filtered history read goes through Spark")
            table = view.read(self.layout.schema_history)
            entries = [self._history_entry(r) for r in rows_of(table)] if table is not None else []
            return sorted(entries, key=lambda e: (e.seq, e.version))

        def through_spark() -> list[HistoryEntry]:
            df = read_delta(self.spark, self.layout.schema_history)
            if where:
                df = df.where(where)
            return [self._history_entry(r) for r in df.orderBy("seq", "version").collect()]

        return self.read(through_view, through_spark)

    @staticmethod
    def _history_entry(r: Any) -> HistoryEntry:
        return HistoryEntry(
            version=int(r.version), table=r.source_table, seq=int(r.seq), position=r.position, ddl=r.ddl,
            kind=r.kind, schema=TableSchema.from_json(r.schema) if r.schema else None,
            renamed_from=r.renamed_from, column_renames=json.loads(r.column_renames or "{}"),
            window_id=r.window_id,
        )

    def history_through_window(self, window_id: int) -> list[HistoryEntry]:
        """Snapshot entries and the entries of windows up to and including ``window_id``."""
        return [e for e in self.history() if e.window_id is None or e.window_id <= window_id]

    def latest_entries(self, through_window: int | None = None) -> dict[str, HistoryEntry]:
        """Each table's newest schema-history entry (of snapshots and windows up to ``through_window``)."""
        entries = self.history() if through_window is None else self.history_through_window(through_window)
        return latest_per_table(entries)

    def schema_version(self, version: int) -> HistoryEntry:
        found = [e for e in self.history() if e.version == version]
        if not found:
            raise KeyError(f"schema history has no version {version}")
        return found[0]

    # ---- run log and dead letters --------------------------------------------------------------

    def log_run(self, row: dict[str, Any]) -> None:
        df = local_frame(self.spark, [row], RUNS_DDL)
        # mergeSchema: a run log made before error_kind/error_permanent gains them (older rows: null)
        df.write.format("delta").mode("append").option("mergeSchema", "true").save(self.layout.runs)

    def last_runs(self, limit: int = 20) -> list[Any]:
        """The newest ``limit`` rows of the run log, newest first."""
        def through_view(view: LakeView) -> list[Any]:
            table = view.read(self.layout.runs)
            rows = rows_of(table) if table is not None else []
            return sorted(rows, key=lambda r: r.started_at, reverse=True)[:limit]

        return self.read(through_view, lambda: read_delta(self.spark, self.layout.runs).orderBy(
            "started_at", ascending=False).limit(limit).collect())

    def dead_letter_write(self, df: Any, app_id: str, version: int) -> None:
        with idempotent_write(self.spark, app_id, version):
            df.write.format("delta").mode("append").save(self.layout.dead_letters)
