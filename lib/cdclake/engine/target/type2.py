"""SCD type-2 tables (``lake.history_tables``): beside each target, ``<target>__history`` holds one row
per version of a key, valid from its ``__seq`` until ``__valid_to_seq`` (null while current); a delete is
a version with ``__deleted = true``. A table without a row key has no versions to chain: each change is
a row of its own (a copy added, or a copy deleted), ``__valid_to_seq`` null.

In the code these are *type-2 tables*; "history" is the schema history (:mod:`..history`). What users
see keeps its names: the pipeline-file key, the ``__history`` directory, the ``__valid_to_seq`` column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdclake.engine.events import META_DELETED, META_OP, META_SEQ
from cdclake.engine.lake import delta_ref, idempotent_write, quote, type2_path
from cdclake.engine.target.changes import META_COLUMNS, read_meta

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.target.options import TargetOptions
    from cdclake.schema import TableSchema

VALID_TO = "__valid_to_seq"  # a column users read: its name stays
# the suffix of the Delta idempotency app ids of type-2 commits: ids already in lakes' logs, so it stays
APP_SUFFIX = ":history"


class Type2Tables:
    """The type-2 table of each target, when the lake keeps them (``enabled``)."""

    def __init__(self, options: TargetOptions) -> None:
        self.options = options
        self.spark = options.spark

    @property
    def enabled(self) -> bool:
        return self.options.type2_tables

    def start(self, path: str) -> None:
        """A snapshot's first versions: every row of the target just written at ``path``, current (read
        from the written target, so that the source is read once)."""
        if not self.enabled:
            return
        deleted = [] if self.options.soft else [f"false AS `{META_DELETED}`"]
        first = self.spark.read.format("delta").load(path).selectExpr(
            "*", *deleted, f"CAST(NULL AS DECIMAL(38,0)) AS `{VALID_TO}`")
        first.write.format("delta").mode("append").save(type2_path(path))

    def close(self, path: str, seq: int) -> None:
        """Truncate, drop, or replaced rows: every open version ends at ``seq`` (idempotent by state)."""
        if self.enabled:
            self.spark.sql(
                f"UPDATE {delta_ref(type2_path(path))} SET `{VALID_TO}` = {seq} "
                f"WHERE `{VALID_TO}` IS NULL AND `{META_SEQ}` < {seq}"
            )

    def record(self, path: str, schema: TableSchema, key_columns: list[str], actions: DataFrame,
               app_id: str, version: int) -> None:
        """Close each key's open version, append every version of this batch (``actions``: typed rows with
        ``__action`` 'u'/'d' and ``__sub``, the order of a key's actions at one sequence)."""
        keys = [F.col(quote(k)) for k in key_columns]
        order = Window.partitionBy(*keys).orderBy(F.col(META_SEQ), F.col("__sub"))
        versions = (
            actions.withColumn(VALID_TO, F.lead(META_SEQ).over(order))
            .withColumn(META_DELETED, F.col("__action") == "d")
            .drop("__action", "__sub")
        )
        firsts = actions.groupBy(*keys).agg(F.min(META_SEQ).alias("__first"))
        view = f"cdclake_hist_{abs(hash((path, version)))}"
        firsts.createOrReplaceTempView(view)
        on = " AND ".join(f"h.{quote(k)} <=> s.{quote(k)}" for k in key_columns)
        table = type2_path(path)
        # Two commits, each idempotent: (close, append) use versions 2v and 2v+1 of the type-2 app id.
        with idempotent_write(self.spark, f"{app_id}{APP_SUFFIX}", 2 * version):
            self.spark.sql(
                f"MERGE INTO {delta_ref(table)} h USING {view} s ON {on} AND h.`{VALID_TO}` IS NULL "
                f"AND h.`{META_SEQ}` < s.`__first` WHEN MATCHED THEN UPDATE SET h.`{VALID_TO}` = s.`__first`"
            )
        self.spark.catalog.dropTempView(view)
        cols = [*schema.column_names, *META_COLUMNS, META_DELETED, VALID_TO]
        (
            versions.select(*[quote(c) for c in cols]).write.format("delta").mode("append")
            .option("txnAppId", f"{app_id}{APP_SUFFIX}").option("txnVersion", 2 * version + 1).save(table)
        )

    def record_keyless(self, path: str, changes: DataFrame, cols: list[str], app_id: str, version: int) -> None:
        """A table without a row key: no key chains versions, so each change is a row of its own (a copy
        added, or a copy deleted with ``__deleted = true``); ``__valid_to_seq`` stays null. ``changes``:
        counted row copies (``__n``, :meth:`..keyless.KeylessTables.counted_images`)."""
        rows = changes.where(f"__n > 0 OR `{META_OP}` = 'd'").select(
            *[quote(c) for c in cols], (F.col("__n") < 0).alias(META_DELETED),
            F.lit(None).cast("decimal(38,0)").alias(VALID_TO))
        (rows.write.format("delta").mode("append").option("txnAppId", f"{app_id}{APP_SUFFIX}")
         .option("txnVersion", 2 * version + 1).save(type2_path(path)))

    def reread_versions(self, target: DataFrame, schema: TableSchema, key_columns: list[str], upserts: DataFrame,
                        gone: DataFrame, seq: int, position: str) -> DataFrame:
        """Versions at ``seq`` for what a re-read really changes (``target``: every target row, tombstones
        too): rows new to the target, rows whose values differ from an older target row, and deletes; a row
        re-read unchanged adds none. In :meth:`record`'s shape."""
        tcols = [F.col(quote(k)) for k in key_columns] + [F.col(META_SEQ).alias("__tseq")]
        tcols += [F.col(quote(n)).alias(f"__t{i}") for i, n in enumerate(schema.column_names)]
        tcols.append(F.col(f"`{META_DELETED}`").alias("__tdel") if self.options.soft else F.lit(False).alias("__tdel"))
        differs = " OR ".join(f"NOT ({quote(n)} <=> `__t{i}`)" for i, n in enumerate(schema.column_names))
        changed = (
            upserts.join(target.select(*tcols), key_columns, "left")
            .where(f"__tseq IS NULL OR (__tseq < {seq} AND (__tdel OR {differs}))")
            .selectExpr(*[quote(c) for c in schema.column_names + META_COLUMNS], "'u' AS `__action`")
        )
        deleted = gone.selectExpr(*[quote(c) for c in schema.column_names], *read_meta("d", seq, position),
                                  "'d' AS `__action`")
        return changed.unionByName(deleted).selectExpr("*", "1 AS `__sub`")
