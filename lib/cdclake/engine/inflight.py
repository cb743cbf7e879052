"""Transaction assembly in Spark with a persistent in-flight buffer (frame-mining sources).

A window's log rows (:data:`~cdclake.engine.events.LOG_ROWS_DDL`) hold changes of transactions
that may have started windows ago and may end windows later. Per window ``k``:

* **pending** = ``inflight`` rows of windows ``< k`` whose transaction did not end before ``k``;
* a transaction that **commits** in ``k`` is its pending rows plus its rows of ``k``; partial
  rollbacks (``undo`` rows) remove the newest earlier change with the same locator; the survivors
  get ``seq = commit ordinal * SEQ_SPAN + index in the transaction`` and go to bronze, except
  changes a table already holds (commit ordinal at or below the table's floor);
* a **rollback** discards the transaction; a transaction open longer than the retention is
  **abandoned**: discarded, recorded in ``transactions`` with its first position and row count,
  and reported — a later commit of it is ignored and reported too;
* changes of transactions still open after ``k`` are appended to ``inflight``.

Nothing is held in driver memory: a transaction of any size spans any number of windows. Writes
are idempotent per window (Delta ``txnAppId``/``txnVersion``), and pending is read as of windows
``< k``, so a window killed half-way is assembled identically when re-run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdclake.engine.events import BRONZE_COLUMNS, SEQ_SPAN
from cdclake.engine.lake import LakeLayout, delta_ref, ensure_table, is_delta_table
from cdclake.spi.logrows import (
    KIND_CHANGE,
    KIND_COMMIT,
    KIND_ERROR,
    KIND_PIECE,
    KIND_ROLLBACK,
    KIND_UNDO,
    LOG_ROWS_COLUMNS,
    LOG_ROWS_DDL,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TRANSACTIONS_DDL = (
    "txid STRING, status STRING, window_id BIGINT, ordinal DECIMAL(38,0), position STRING, commit_ts TIMESTAMP, "
    "first_window BIGINT, first_ordinal DECIMAL(38,0), first_position STRING, first_ts TIMESTAMP, rows BIGINT, "
    "tables ARRAY<STRING>, recorded_at TIMESTAMP"
)
COMMITTED, ROLLED_BACK, ABANDONED = "committed", "rolled_back", "abandoned"
_BROADCAST_UNDO_KEYS = 1_000_000  # more partial-rollback groups than this are joined by shuffle


@dataclass
class Assembly:
    committed: DataFrame  # bronze columns + error, raw (a committed change that did not decode)
    new_inflight: DataFrame  # log-row columns
    ended: DataFrame  # transactions columns
    errors: DataFrame  # 'error' rows of the window: they stop the run whatever their transaction
    stats: dict[str, Any] = field(default_factory=dict)
    cached: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        """Drop the cached intermediate frames (after the window's rows are written)."""
        for frame in self.cached:
            frame.unpersist()
        self.cached.clear()


class InflightBuffer:
    def __init__(self, spark: SparkSession, layout: LakeLayout, pipeline: str) -> None:
        self.spark = spark
        self.layout = layout
        self.app = f"cdclake:{pipeline}"

    def ensure(self) -> None:
        ensure_table(self.spark, self.layout.inflight, LOG_ROWS_DDL, stats_columns=("window_id",))
        ensure_table(self.spark, self.layout.transactions, TRANSACTIONS_DDL, stats_columns=("window_id",))

    def _ended_before(self, window_id: int) -> DataFrame:
        return self.spark.read.format("delta").load(self.layout.transactions).where(f"window_id < {int(window_id)}")

    def assemble(
        self,
        window_id: int,
        rows: DataFrame,
        floors: dict[str, int],
        retention: timedelta | None = None,
        window_end_ts: datetime | None = None,
        assemble_pieces: Callable[[DataFrame], DataFrame] | None = None,
    ) -> Assembly:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        k = int(window_id)
        ended_before = self._ended_before(k).select("txid", "status")
        abandoned_before = ended_before.where(f"status = '{ABANDONED}'").select("txid")
        pending = (
            self.spark.read.format("delta").load(self.layout.inflight)
            .where(f"window_id < {k}")
            .join(ended_before.select("txid"), "txid", "left_anti")
            .select(*LOG_ROWS_COLUMNS)
        )
        rows = rows.select(*LOG_ROWS_COLUMNS)
        window_changes = rows.where(f"kind IN ('{KIND_CHANGE}', '{KIND_UNDO}', '{KIND_PIECE}')").join(
            abandoned_before, "txid", "left_anti")
        ends = rows.where(f"kind IN ('{KIND_COMMIT}', '{KIND_ROLLBACK}')").select(
            "txid", F.col("kind").alias("end_kind"), F.col("ordinal").alias("end_ordinal"),
            F.col("position").alias("end_position"), F.col("event_ts").alias("end_ts"))
        # Every change row, tagged with how its transaction ends in this window (null: still open).
        # Cached: the committed rows, the transactions table, the in-flight buffer and the window's
        # statistics all read it, and recomputing it means re-reading the window and the buffer.
        from pyspark import StorageLevel

        tagged = pending.unionByName(window_changes).join(ends, "txid", "left").persist(
            StorageLevel.MEMORY_AND_DISK)
        ended = tagged.where("end_kind IS NOT NULL")  # rows of transactions that end in this window
        committed_rows = ended.where(f"end_kind = '{KIND_COMMIT}'")

        # Partial rollbacks: only (txid, locator) groups that hold an undo row need the stack walk.
        # They are rare: counted first (on the cached rows), so a window without any costs no shuffle.
        group = ["txid", "__loc"]
        committed_rows = committed_rows.withColumn("__loc", F.coalesce("locator", "source_table"))
        undo_rows = committed_rows.where(f"kind = '{KIND_UNDO}'").count()
        if undo_rows == 0:
            survivors = committed_rows
        else:
            undo_keys = committed_rows.where(f"kind = '{KIND_UNDO}'").select(*group).distinct()
            if undo_rows <= _BROADCAST_UNDO_KEYS:
                undo_keys = F.broadcast(undo_keys)
            plain = committed_rows.join(undo_keys, group, "left_anti")
            undone = committed_rows.join(undo_keys, group, "left_semi")
            undone = undone.groupBy(*group).applyInPandas(_apply_undo, schema=undone.schema)
            survivors = plain.unionByName(undone)
        survivors = survivors.where(f"kind IN ('{KIND_CHANGE}', '{KIND_PIECE}')").drop("__loc")
        if assemble_pieces is not None:
            survivors = assemble_pieces(survivors)
        survivors = survivors.where(f"kind = '{KIND_CHANGE}'")

        # Rows that stop the run: 'error' rows wherever they are (committed or not, the window is suspect).
        errors = rows.where(f"kind = '{KIND_ERROR}'").selectExpr(
            "window_id", "source_table", "ordinal", "position", "op", "error", "raw")
        in_txn = Window.partitionBy("txid").orderBy("window_id", "idx")
        numbered = survivors.withColumn("__n", F.row_number().over(in_txn))
        floor_rows = [(t, Decimal(int(o))) for t, o in floors.items()]
        floors_df = self.spark.createDataFrame(floor_rows, "source_table STRING, floor DECIMAL(38,0)") if floor_rows \
            else self.spark.createDataFrame([], "source_table STRING, floor DECIMAL(38,0)")
        numbered = numbered.join(F.broadcast(floors_df), "source_table", "left").where(
            "floor IS NULL OR end_ordinal > floor")
        committed = numbered.selectExpr(
            f"CAST({k} AS BIGINT) AS window_id", "source_table", "op",
            f"CAST(end_ordinal * CAST({SEQ_SPAN} AS DECIMAL(11,0)) + __n AS DECIMAL(38,0)) AS seq",
            "end_position AS position", "txid", "end_ts AS commit_ts", "schema_version", "before", "after",
            "error", "raw",
        ).select(*BRONZE_COLUMNS, "error", "raw")

        # Transactions still open after this window, and which of them outlived the retention.
        open_all = tagged.where("end_kind IS NULL").select(*LOG_ROWS_COLUMNS)
        new_open = open_all.where(f"window_id = {k}")
        summary = open_all.groupBy("txid").agg(
            F.min("window_id").alias("first_window"), F.min("ordinal").alias("first_ordinal"),
            F.min_by("position", F.struct("window_id", "idx")).alias("first_position"),
            F.min("event_ts").alias("first_ts"), F.count(F.lit(1)).alias("rows"),
            F.array_sort(F.collect_set("source_table")).alias("tables"),
        )
        if retention is not None and window_end_ts is not None:
            cutoff = window_end_ts - retention
            abandoned = summary.where(F.col("first_ts") < F.lit(cutoff))
            still_open = summary.join(abandoned.select("txid"), "txid", "left_anti")
        else:
            abandoned = summary.limit(0)
            still_open = summary
        # Open after this window (not abandoned): how many, and the oldest one's first change.
        open_after = still_open.agg(F.count(F.lit(1)).alias("n"), F.min("first_ordinal").alias("oldest"))
        new_inflight = new_open.join(abandoned.select("txid"), "txid", "left_anti").select(*LOG_ROWS_COLUMNS)

        done = ended.groupBy("txid").agg(
            F.first("end_kind").alias("end_kind"), F.first("end_ordinal").alias("ordinal"),
            F.first("end_position").alias("position"), F.first("end_ts").alias("commit_ts"),
            F.min("window_id").alias("first_window"), F.min("ordinal").alias("first_ordinal"),
            F.min_by("position", F.struct("window_id", "idx")).alias("first_position"),
            F.min("event_ts").alias("first_ts"),
            F.sum(F.when(F.col("kind") == KIND_CHANGE, 1).otherwise(0)).cast("bigint").alias("rows"),
            F.array_sort(F.collect_set("source_table")).alias("tables"),
        )
        ended_rows = done.selectExpr(
            "txid", f"CASE end_kind WHEN '{KIND_COMMIT}' THEN '{COMMITTED}' ELSE '{ROLLED_BACK}' END AS status",
            f"CAST({k} AS BIGINT) AS window_id", "ordinal", "position", "commit_ts", "first_window",
            "first_ordinal", "first_position", "first_ts", "rows", "tables", "current_timestamp() AS recorded_at",
        ).unionByName(abandoned.selectExpr(
            "txid", f"'{ABANDONED}' AS status", f"CAST({k} AS BIGINT) AS window_id",
            "CAST(NULL AS DECIMAL(38,0)) AS ordinal", "CAST(NULL AS STRING) AS position",
            "CAST(NULL AS TIMESTAMP) AS commit_ts", "first_window", "first_ordinal", "first_position", "first_ts",
            "rows", "tables", "current_timestamp() AS recorded_at",
        ))
        # A commit of a transaction abandoned earlier: its changes are lost; report it loudly.
        late = rows.where(f"kind = '{KIND_COMMIT}'").join(abandoned_before, "txid")
        return Assembly(committed, new_inflight, ended_rows, errors,
                        {"open_after": open_after, "abandoned": abandoned, "late_commits": late}, [tagged])

    def record(self, window_id: int, assembly: Assembly) -> dict[str, int]:
        """Append the window's open changes and ended transactions (each idempotent per window); the ended
        transactions by status. An append with no rows is not made: a re-run of the window finds it empty again
        (pending is read as of earlier windows), so there is nothing to repeat or to skip."""
        from pyspark.sql import functions as F

        ended = {r.status: int(r.n) for r in
                 assembly.ended.groupBy("status").agg(F.count(F.lit(1)).alias("n")).collect()}
        if not assembly.new_inflight.isEmpty():
            (
                assembly.new_inflight.write.format("delta").mode("append")
                .option("txnAppId", f"{self.app}:inflight").option("txnVersion", int(window_id))
                .save(self.layout.inflight)
            )
        if ended:
            (
                assembly.ended.write.format("delta").mode("append")
                .option("txnAppId", f"{self.app}:transactions").option("txnVersion", int(window_id))
                .save(self.layout.transactions)
            )
        return ended

    def purge(self, window_id: int) -> None:
        """Drop buffered rows of transactions that ended at or before ``window_id`` (state-idempotent)."""
        if not is_delta_table(self.spark, self.layout.inflight):
            return
        ended = (self.spark.read.format("delta").load(self.layout.transactions)
                 .where(f"window_id <= {int(window_id)}").select("txid").distinct())
        view = f"cdclake_ended_{abs(hash((self.layout.inflight, window_id)))}"
        ended.createOrReplaceTempView(view)
        self.spark.sql(f"MERGE INTO {delta_ref(self.layout.inflight)} i USING {view} t ON i.txid = t.txid "
                       "WHEN MATCHED THEN DELETE")
        self.spark.catalog.dropTempView(view)


def _apply_undo(frame: Any) -> Any:
    """One (transaction, locator) group: each undo row removes the newest surviving earlier change."""
    frame = frame.sort_values(["window_id", "idx"], kind="stable")
    keep = [True] * len(frame)
    stack: list[int] = []
    for pos, kind in enumerate(frame["kind"].tolist()):
        if kind == KIND_UNDO:
            keep[pos] = False
            if stack:
                keep[stack.pop()] = False
        elif kind in (KIND_CHANGE, KIND_PIECE):
            stack.append(pos)
    return frame[keep]
