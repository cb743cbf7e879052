"""Images the log left columns out of (listed under ``__unavailable``: e.g. unchanged large values):
a value left out takes the key's newest value before it, in the batch or in the target, so the MERGE
never writes a value the source did not give."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdclake.engine.events import META_DELETED, META_OP, META_SEQ
from cdclake.engine.lake import is_delta_table, quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def flags(names: list[str], partial: bool) -> list[str]:
    """The ``__ua<i>`` columns (column ``i`` left out) of a batch's actions, when the batch is ``partial``."""
    return [f"__ua{i}" for i in range(len(names))] if partial else []


def fill_unavailable(spark: SparkSession, soft: bool, path: str, actions: DataFrame, names: list[str],
                     key_columns: list[str]) -> DataFrame:
    """Values the log left out of an image: the key's newest earlier value in the batch, else, for a
    row whose key changed, the old key's value, else the target's at ``path`` (the flag stays set for
    the MERGE). ``soft``: the target keeps deleted rows (``__deleted``), which hold no value.

    A key changed again and again in one batch (A to B to C) is a chain: each pass fills one more link,
    and passes repeat while some moved row waits on a link that the pass before filled.
    """
    blocked: int | None = None
    while True:
        actions = _carry_unavailable(actions, names, key_columns)
        actions, waiting = _fill_moved_rows(spark, soft, path, actions, names, key_columns)
        if not waiting or (blocked is not None and waiting >= blocked):  # done, or a chain with no start
            break
        blocked = waiting
    actions = _carry_unavailable(actions, names, key_columns)  # on from the moved rows' filled values
    return actions.drop("__moved", *[f"__old{j}" for j in range(len(key_columns))])


def _fill_moved_rows(spark: SparkSession, soft: bool, path: str, actions: DataFrame, names: list[str],
                     key_columns: list[str]) -> tuple[DataFrame, int]:
    """A key change whose image lacks values: take them from the old key's state earlier in the batch,
    or, if the batch had none, from the target's row of the old key. Also returns how many moved rows
    still lack a value that the old key's earlier state lacks too (it may be filled by another pass).
    """
    old_cols = [f"__old{j}" for j in range(len(key_columns))]
    ua = [f"__ua{i}" for i in range(len(names))]
    still = " OR ".join(f"`{f}`" for f in ua) or "false"
    moved = actions.where(f"__moved AND ({still})")
    rest = actions.where(f"NOT (__moved AND ({still}))")
    # 1. the old key's state earlier in this batch (e.g. inserted, or moved in, then its key changed)
    prior = actions.select(
        *[F.col(quote(k)).alias(o) for k, o in zip(key_columns, old_cols, strict=True)],
        F.col(META_SEQ).alias("__pseq"), (F.col("__action") == "d").alias("__pdel"),
        ((F.col("__action") == "d") | (F.col(f"`{META_OP}`") == "c") | F.col("__moved")).alias("__pnew"),
        *[F.col(quote(n)).alias(f"__p{i}") for i, n in enumerate(names)],
        *[F.col(f).alias(f"__pua{i}") for i, f in enumerate(ua)])
    m = moved.withColumn("__mid", F.monotonically_increasing_id())
    # only earlier changes of the old key count; in the join, so a key without one keeps its row
    on = [m[o] == prior[o] for o in old_cols] + [prior["__pseq"] < m[META_SEQ]]
    cand = m.join(prior, on, "left").drop(*[prior[o] for o in old_cols])
    newest = Window.partitionBy("__mid").orderBy(F.col("__pseq").desc_nulls_last())
    out = cand.withColumn("__r", F.row_number().over(newest)).where("__r = 1").drop("__r")
    known = F.col("__pseq").isNotNull() & ~F.col("__pdel")
    waits = [F.col(f"__ua{i}") & F.col(f"__pua{i}") for i in range(len(names))]
    out = out.withColumn("__waits", known & reduce(lambda x, y: x | y, waits, F.lit(False)))
    for i, n in enumerate(names):
        fill = F.col(f"__ua{i}") & known & ~F.col(f"__pua{i}")
        out = out.withColumn(n, F.when(fill, F.col(f"__p{i}")).otherwise(F.col(quote(n))))
        out = out.withColumn(f"__ua{i}", F.col(f"__ua{i}") & ~fill)
    # the target's row is the old key's row unless the batch deleted, (re-)created or moved in that key first
    out = out.withColumn("__seen", F.coalesce(F.col("__pnew"), F.lit(False))).drop(
        "__mid", "__pseq", "__pdel", "__pnew", *[f"__p{i}" for i in range(len(names))],
        *[f"__pua{i}" for i in range(len(names))])
    # 2. otherwise the target's row of the old key
    if is_delta_table(spark, path):
        current = spark.read.format("delta").load(path)
        if soft:
            current = current.where(f"NOT `{META_DELETED}`")
        target = current.select(
            *[F.col(quote(k)).alias(o) for k, o in zip(key_columns, old_cols, strict=True)],
            *[F.col(quote(n)).alias(f"__t{i}") for i, n in enumerate(names)], F.lit(True).alias("__found"))
        out = out.join(target, old_cols, "left")
        for i, n in enumerate(names):
            fill = F.col(f"__ua{i}") & ~F.col("__seen") & F.col("__found").isNotNull()
            out = out.withColumn(n, F.when(fill, F.col(f"__t{i}")).otherwise(F.col(quote(n))))
            out = out.withColumn(f"__ua{i}", F.col(f"__ua{i}") & ~fill)
        out = out.drop("__found", *[f"__t{i}" for i in range(len(names))])
    # materialised: per-column projections make a plan deep enough to overflow Delta's MERGE planning
    filled = out.drop("__seen").localCheckpoint()
    waiting = filled.where("__waits").count()
    return rest.unionByName(filled.drop("__waits")).localCheckpoint(), waiting


def _carry_unavailable(actions: DataFrame, names: list[str], key_columns: list[str]) -> DataFrame:
    """A value the log left out takes the key's newest earlier value of the batch (none after a
    delete: then NULL); with no earlier value the flag stays set and the MERGE keeps the target's.
    A row moved in by a key change starts the key afresh: until its own gap is filled from the old key,
    neither it nor the key's later rows take a value from before it."""
    order = Window.partitionBy(*[F.col(quote(k)) for k in key_columns]).orderBy(
        F.col(META_SEQ), F.col("__sub")).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    out = actions
    for i, n in enumerate(names):
        col, flag = F.col(quote(n)), F.col(f"__ua{i}")
        nothing = F.lit(None).cast(actions.schema[n].dataType)
        known = (F.when(F.col("__action") == "d", F.struct(nothing.alias("v"), F.lit(True).alias("ok")))
                 .when(~flag, F.struct(col.alias("v"), F.lit(True).alias("ok")))
                 .when(F.col("__moved"), F.struct(nothing.alias("v"), F.lit(False).alias("ok"))))
        carried = F.last(known, ignorenulls=True).over(order)
        out = out.withColumn(f"__c{i}", carried)
        usable = flag & F.coalesce(F.col(f"__c{i}.ok"), F.lit(False))
        out = out.withColumn(n, F.when(usable, F.col(f"__c{i}.v")).otherwise(col))
        out = out.withColumn(f"__ua{i}", flag & ~usable).drop(f"__c{i}")
    return out.localCheckpoint()  # a shallow plan for the MERGE (see _fill_moved_rows)
