"""Transaction assembly in Spark with a persistent in-flight buffer (frame-mining sources).

A window's log rows (:data:`~cdclake.engine.events.LOG_ROWS_DDL`) hold changes of transactions
that may have started windows ago and may end windows later. Per window ``k``:

* **pending** = ``inflight`` rows of windows ``< k`` whose transaction did not end before ``k``;
* a transaction that **commits** in ``k`` is its pending rows plus its rows of ``k``; partial
  rollbacks (``undo`` rows) remove the newest earlier change with the same locator; the survivors
  get ``seq = commit ordinal * SEQ_SPAN + n`` (``n``: the row's place in the window, ``idx + 1``; for a
  transaction with buffered rows its index across windows) and go to bronze, except changes a table
  already holds (commit ordinal at or below the table's floor);
* a **rollback** discards the transaction; a transaction open longer than the retention is
  **abandoned**: discarded, recorded in ``transactions`` with its first position and row count,
  and reported — a later commit of it is ignored and reported too;
* changes of transactions still open after ``k`` are appended to ``inflight``; a transaction the
  buffer held is recorded in ``transactions`` once it ended (which keeps its buffered rows out of
  later windows until they are purged).

Nothing is held in driver memory: a transaction of any size spans any number of windows. Writes
are idempotent per window (Delta ``txnAppId``/``txnVersion``), and pending is read as of windows
``< k``, so a window killed half-way is assembled identically when re-run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdclake.engine.events import BRONZE_COLUMNS, SEQ_SPAN
from cdclake.engine.lake import LakeLayout, delta_ref, ensure_table, is_delta_table, local_frame
from cdclake.spi.logrows import (
    KIND_CHANGE,
    KIND_COMMIT,
    KIND_DEFERRED,
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
_BROADCAST_ENDS = 500_000  # more transaction ends in a window than this are joined by shuffle


@dataclass
class WindowCounts:
    """What a pass over a window's log rows (or the pending buffer) found: enough to leave out every step a
    window without that kind of row does not need. ``partial``/``truncates`` count rows of any transaction
    (an upper bound for the committed ones)."""

    rows: int = 0
    undo: int = 0
    pieces: int = 0
    errors: int = 0  # 'error' rows, and change rows that did not decode
    ends: int = 0
    truncates: int = 0
    partial: int = 0
    deferred: int = 0  # rows left to the source's second decoder
    max_ts: datetime | None = None
    min_window: int | None = None
    first_commit: int | None = None  # the lowest commit ordinal

    def plus(self, other: WindowCounts) -> WindowCounts:
        """These counts less the deferred rows, plus ``other`` (what their second decoding gave)."""
        def pick(a: Any, b: Any, f: Callable[..., Any]) -> Any:
            return b if a is None else a if b is None else f(a, b)

        return WindowCounts(
            self.rows - self.deferred + other.rows, self.undo + other.undo, self.pieces + other.pieces,
            self.errors + other.errors, self.ends + other.ends, self.truncates + other.truncates,
            self.partial + other.partial, other.deferred, pick(self.max_ts, other.max_ts, max),
            pick(self.min_window, other.min_window, min), pick(self.first_commit, other.first_commit, min))

    @staticmethod
    def metrics(may_be_partial: Any = None) -> list[Any]:
        """The aggregate columns that measure a frame of log rows (for ``observe`` or ``agg``)."""
        from pyspark.sql import functions as F

        kind = F.col("kind")
        change = kind.isin(KIND_CHANGE, KIND_PIECE)
        partial = F.lit(False) if may_be_partial is None else change & may_be_partial
        return [
            F.count(F.lit(1)).alias("rows"), F.count_if(kind == KIND_UNDO).alias("undo"),
            F.count_if(kind == KIND_PIECE).alias("pieces"),
            F.count_if((kind == KIND_ERROR) | F.col("error").isNotNull()).alias("errors"),
            F.count_if(kind.isin(KIND_COMMIT, KIND_ROLLBACK)).alias("ends"),
            F.count_if(change & (F.col("op") == "t")).alias("truncates"),
            F.count_if(F.coalesce(partial, F.lit(False))).alias("partial"),
            F.count_if(kind == KIND_DEFERRED).alias("deferred"), F.max("event_ts").alias("max_ts"),
            F.min("window_id").alias("min_window"),
            F.min(F.when(kind == KIND_COMMIT, F.col("ordinal"))).alias("first_commit"),
        ]

    @classmethod
    def of(cls, values: Any) -> WindowCounts:
        """From an observation's dict or an aggregate's row."""
        get = values.get if isinstance(values, dict) else values.asDict().get
        names = [f.name for f in fields(cls)]
        optional = ("max_ts", "min_window", "first_commit")
        return cls(**{f: (int(get(f) or 0) if f not in optional else get(f)) for f in names})


@dataclass
class Assembly:
    """A window's assembly, as lazy frames over the decoded window and the buffer (nothing is cached but
    the per-transaction summary, one row per transaction).

    ``committed``: bronze columns + error, raw (a committed change that did not decode); ``survivors``: the
    same rows before numbering (thin reads for statistics); ``exact``: the committed rows need no staging
    to be checked (no row of the window or the buffer carries an error, no partial rollback)."""

    committed: DataFrame
    survivors: DataFrame
    new_inflight: DataFrame  # log-row columns of this window's rows of transactions still open
    ended: DataFrame  # transactions columns
    errors: DataFrame  # 'error' rows of the window: they stop the run whatever their transaction
    window: WindowCounts
    pending: WindowCounts
    stats: dict[str, Any] = field(default_factory=dict)
    cached: list[DataFrame] = field(default_factory=list)

    def ended_by_kind(self) -> dict[str, int]:
        """Transactions with changes that ended in this window: ``commit``/``rollback`` → how many."""
        return self._ended()[0]

    def committed_by_table(self, written: DataFrame) -> dict[str, tuple[int, int, bool]]:
        """Per table, the committed changes ``written`` (the window's bronze rows): rows, truncates, and whether
        an after image may be partial. Counted with the ended transactions (no job of its own) unless a partial
        rollback, a row that did not decode, a LOB piece or a table's floor inside the window can drop rows
        between the two; then ``written`` is counted."""
        if self.exact and self.stats["counted_with_ends"]:
            return self._ended()[1]
        from pyspark.sql import functions as F

        return {r.source_table: (int(r.n), int(r.t), bool(r.partial)) for r in written.groupBy("source_table").agg(
            F.count(F.lit(1)).alias("n"), F.count_if(F.col("op") == "t").alias("t"),
            F.max(self.stats["partial_after"]).alias("partial")).collect()}

    def _ended(self) -> tuple[dict[str, int], dict[str, tuple[int, int, bool]]]:
        if "ended_rows" not in self.stats:  # one job: transactions are distinct per kind, rows per table
            rows = self.stats["ended_stats"].collect()
            by_kind = {r.end_kind: int(r.n) for r in rows if r.level == 1}
            by_table = {r.source_table: (int(r.rows), int(r.truncates), bool(r.partial))
                        for r in rows if r.level == 0 and r.end_kind == KIND_COMMIT and r.source_table is not None}
            self.stats["ended_rows"] = (by_kind, by_table)
        return self.stats["ended_rows"]

    def open_after(self) -> Any:
        """Transactions open after this window, not abandoned: ``n``, ``oldest`` first ordinal, and ``carried``
        (those with rows in this window: their rows go to the buffer). At most one small job, once: none when no
        transaction was buffered and the job that counts the ended ones saw no row of an open one."""
        if "open_after_row" not in self.stats:
            if not self.stats["spanning"]:
                self._ended()  # its job observes the rows of transactions with no end here
                if not self.stats["open_rows"].get["rows"]:
                    from pyspark.sql import Row

                    self.stats["open_after_row"] = Row(n=0, oldest=None, carried=0, abandoned=0, ended=0)
                    return self.stats["open_after_row"]
            self.stats["open_after_row"] = self.stats["open_after"].first()
        return self.stats["open_after_row"]

    @property
    def exact(self) -> bool:
        return not (self.window.errors or self.pending.errors or self.window.undo or self.pending.undo)

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

    def assemble(
        self,
        window_id: int,
        rows: DataFrame,
        floors: dict[str, int],
        retention: timedelta | None = None,
        window_end_ts: datetime | None = None,
        assemble_pieces: Callable[[DataFrame], DataFrame] | None = None,
        counts: WindowCounts | None = None,
        may_be_partial: Callable[[Any], Any] | None = None,
    ) -> Assembly:
        """Assemble window ``window_id`` from its log rows ``rows`` (best read from a staged file: each
        output reads only the columns it needs) and the buffer. ``counts``: what the pass that staged
        ``rows`` observed of them (measured here when not given); ``may_be_partial``: the test of an after
        image's JSON that may list unavailable columns (buffered rows are counted with it)."""
        from pyspark import StorageLevel
        from pyspark.sql import Observation, Window
        from pyspark.sql import functions as F

        k = int(window_id)
        rows = rows.select(*LOG_ROWS_COLUMNS)
        partial = None if may_be_partial is None else may_be_partial(F.col("after"))
        window = counts if counts is not None else WindowCounts.of(rows.agg(*WindowCounts.metrics(partial)).first())
        buffered = self.spark.read.format("delta").load(self.layout.inflight).where(f"window_id < {k}")
        pending_counts = WindowCounts.of(buffered.agg(*WindowCounts.metrics(partial)).first())
        transactions = self.spark.read.format("delta").load(self.layout.transactions).where(f"window_id < {k}")
        # Abandoned transactions are rare: their later rows are dropped only when there are any.
        any_abandoned = transactions.where(f"status = '{ABANDONED}'").limit(1).count() > 0
        abandoned_before = transactions.where(f"status = '{ABANDONED}'").select("txid") if any_abandoned else None
        change_kinds = f"kind IN ('{KIND_CHANGE}', '{KIND_UNDO}', '{KIND_PIECE}')"
        window_changes = rows.where(change_kinds)
        if abandoned_before is not None:
            window_changes = window_changes.join(abandoned_before, "txid", "left_anti")
        if pending_counts.rows:
            # rows of transactions that ended in an earlier window stay until purged: only windows since the
            # oldest buffered one can hold their end
            ended_before = transactions.where(f"window_id >= {int(pending_counts.min_window or 0)}").select("txid")
            pending = buffered.select(*LOG_ROWS_COLUMNS).join(ended_before, "txid", "left_anti")
            changes = pending.unionByName(window_changes)
            # transactions with buffered rows: numbered across windows, and recorded once they end
            spanning = pending.select("txid").distinct().withColumn("__spans", F.lit(True))
            if pending_counts.rows <= _BROADCAST_ENDS:
                spanning = F.broadcast(spanning)
        else:
            changes = window_changes
            spanning = None
        ends = rows.where(f"kind IN ('{KIND_COMMIT}', '{KIND_ROLLBACK}')").select(
            "txid", F.col("kind").alias("end_kind"), F.col("ordinal").alias("end_ordinal"),
            F.col("position").alias("end_position"), F.col("event_ts").alias("end_ts"))
        cached: list[DataFrame] = []
        if window.ends <= _BROADCAST_ENDS:  # read by every step: kept, not read from the window again per step
            ends = ends.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(ends)
            ends = F.broadcast(ends)
        commits = ends.where(f"end_kind = '{KIND_COMMIT}'")
        committed_rows = changes.join(commits, "txid")

        # Partial rollbacks: only (txid, locator) groups that hold an undo row need the stack walk.
        undo_rows = window.undo + pending_counts.undo
        if undo_rows == 0:
            survivors = committed_rows
        else:
            group = ["txid", "__loc"]
            committed_rows = committed_rows.withColumn("__loc", F.coalesce("locator", "source_table"))
            undo_keys = committed_rows.where(f"kind = '{KIND_UNDO}'").select(*group).distinct()
            if undo_rows <= _BROADCAST_UNDO_KEYS:
                undo_keys = F.broadcast(undo_keys)
            plain = committed_rows.join(undo_keys, group, "left_anti")
            undone = committed_rows.join(undo_keys, group, "left_semi")
            undone = undone.groupBy(*group).applyInPandas(_apply_undo, schema=undone.schema)
            survivors = plain.unionByName(undone).drop("__loc")
        survivors = survivors.where(f"kind IN ('{KIND_CHANGE}', '{KIND_PIECE}')")
        if assemble_pieces is not None and (window.pieces or pending_counts.pieces):
            survivors = assemble_pieces(survivors)
        survivors = survivors.where(f"kind = '{KIND_CHANGE}'")
        # Every committed row ends at or after the window's first commit: a floor below it drops nothing.
        first_commit = window.first_commit
        floor_rows = [(t, Decimal(int(o))) for t, o in floors.items()
                      if first_commit is None or int(o) >= int(first_commit)]
        if floor_rows:
            floors_df = local_frame(self.spark, floor_rows, "source_table STRING, floor DECIMAL(38,0)")
            survivors = survivors.join(F.broadcast(floors_df), "source_table", "left").where(
                "floor IS NULL OR end_ordinal > floor").drop("floor")

        # Rows that stop the run: 'error' rows wherever they are (committed or not, the window is suspect).
        errors = rows.where(f"kind = '{KIND_ERROR}'").selectExpr(
            "window_id", "source_table", "ordinal", "position", "op", "error", "raw")
        # A change's place in its transaction: its row's place in the window (rows come in log order, so no
        # shuffle is needed); a transaction with rows of earlier windows is numbered across them.
        numbered = survivors.withColumn("__n", F.col("idx") + 1)
        if spanning is not None:
            in_txn = Window.partitionBy("txid").orderBy("window_id", "idx")
            numbered = numbered.join(spanning, "txid", "left_anti").unionByName(
                survivors.join(spanning, "txid", "left_semi").withColumn("__n", F.row_number().over(in_txn)))
        committed = numbered.selectExpr(
            f"CAST({k} AS BIGINT) AS window_id", "source_table", "op",
            f"CAST(end_ordinal * CAST({SEQ_SPAN} AS DECIMAL(11,0)) + __n AS DECIMAL(38,0)) AS seq",
            "end_position AS position", "txid", "end_ts AS commit_ts", "schema_version", "before", "after",
            "error", "raw",
        ).select(*BRONZE_COLUMNS, "error", "raw")

        # Transactions that end here, by how, and the committed changes per table: counted on the thin columns
        # (no per-transaction record; the images are read only when one may be partial).
        tagged = changes.join(ends, "txid", "left")
        change = F.col("kind") == KIND_CHANGE
        # The same job sees whether any row belongs to a transaction still open: without buffered transactions,
        # none means nothing is open after this window, and the job that summarises open ones is not needed.
        open_rows = Observation(f"cdclake_open_{k}_{uuid.uuid4().hex}")
        partial_after = F.col("op").isin("c", "u", "r") & partial if partial is not None and (
            window.partial or pending_counts.partial) else F.lit(False)
        ended_stats = tagged.observe(open_rows, F.count_if(F.col("end_kind").isNull()).alias("rows")).where(
            "end_kind IS NOT NULL").groupingSets(
            [["end_kind", "source_table"], ["end_kind"]], "end_kind", "source_table").agg(
            F.count_distinct("txid").alias("n"), F.count_if(change).alias("rows"),
            F.count_if(change & (F.col("op") == "t")).alias("truncates"),
            F.max(change & F.coalesce(partial_after, F.lit(False))).alias("partial"),
            F.grouping_id().alias("level"))
        # Those counts are the bronze rows' unless something drops committed changes in between.
        floor_inside = first_commit is not None and bool(floor_rows)
        counted_with_ends = not (window.pieces or pending_counts.pieces or floor_inside)
        # One row per transaction still open, or with buffered rows: how it ends here (null: open).
        if spanning is not None:
            tagged = tagged.join(spanning, "txid", "left").where("end_kind IS NULL OR __spans")
        else:
            tagged = tagged.where("end_kind IS NULL")
        summary = tagged.groupBy("txid").agg(
            F.first("end_kind", ignorenulls=True).alias("end_kind"),
            F.first("end_ordinal", ignorenulls=True).alias("ordinal"),
            F.first("end_position", ignorenulls=True).alias("position"),
            F.first("end_ts", ignorenulls=True).alias("commit_ts"),
            F.min("window_id").alias("first_window"), F.max("window_id").alias("last_window"),
            F.min("ordinal").alias("first_ordinal"),
            F.min_by("position", F.struct("window_id", "idx")).alias("first_position"),
            F.min("event_ts").alias("first_ts"),
            F.sum(F.when(F.col("kind") == KIND_CHANGE, 1).otherwise(0)).cast("bigint").alias("rows"),
            F.array_sort(F.collect_set("source_table")).alias("tables"),
        ).persist(StorageLevel.MEMORY_AND_DISK)
        if retention is not None and window_end_ts is not None:
            is_abandoned = F.col("end_kind").isNull() & (F.col("first_ts") < F.lit(window_end_ts - retention))
        else:
            is_abandoned = F.lit(False)
        abandoned = summary.where(is_abandoned)
        still_open = F.col("end_kind").isNull() & ~is_abandoned
        # Open after this window (not abandoned): how many, the oldest one's first change, and those with rows
        # here (``carried``: their rows go to the buffer); how many were abandoned, and how many ended rows
        # there are to record.
        open_after = summary.agg(
            F.count_if(still_open).alias("n"), F.min(F.when(still_open, F.col("first_ordinal"))).alias("oldest"),
            F.count_if(still_open & (F.col("last_window") == k)).alias("carried"),
            F.count_if(is_abandoned).alias("abandoned"), F.count_if(F.col("end_kind").isNotNull()).alias("ended"))
        carried = summary.where(still_open & (F.col("last_window") == k)).select("txid")
        new_inflight = window_changes.join(F.broadcast(carried) if window.ends <= _BROADCAST_ENDS else carried,
                                           "txid", "left_semi").select(*LOG_ROWS_COLUMNS)

        ended_rows = summary.where("end_kind IS NOT NULL").selectExpr(
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
        late = rows.where(f"kind = '{KIND_COMMIT}'").join(abandoned_before, "txid") if abandoned_before is not None \
            else rows.limit(0)
        return Assembly(committed, survivors, new_inflight, ended_rows, errors, window, pending_counts,
                        {"open_after": open_after, "abandoned": abandoned, "late_commits": late,
                         "any_abandoned_before": any_abandoned, "ended_stats": ended_stats,
                         "open_rows": open_rows, "spanning": spanning is not None,
                         "partial_after": partial_after, "counted_with_ends": counted_with_ends}, [*cached, summary])

    def record(self, window_id: int, assembly: Assembly) -> dict[str, int]:
        """Append the window's open changes and the transactions to record (each idempotent per window): those
        that had rows in the buffer and ended, and those abandoned; the transactions that ended here by status.
        An append with no rows is not made: a re-run of the window finds it empty again (pending is read as of
        earlier windows), so there is nothing to repeat or to skip."""
        summary = assembly.open_after()
        ended = {COMMITTED if kind == KIND_COMMIT else ROLLED_BACK: n for kind, n in assembly.ended_by_kind().items()}
        if summary.abandoned:
            ended[ABANDONED] = int(summary.abandoned)
        if summary.carried:
            (
                assembly.new_inflight.write.format("delta").mode("append")
                .option("txnAppId", f"{self.app}:inflight").option("txnVersion", int(window_id))
                .save(self.layout.inflight)
            )
        if summary.ended or summary.abandoned:
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
