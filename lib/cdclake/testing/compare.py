"""Compare a target Delta table with its source table row by row (tests, demo, benchmarks).

The source side is read now through JDBC and converted with the same type mapping as the lake, so
any difference is a lost, doubled, stale or resurrected row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdclake.engine.lake import quote
from cdclake.engine.names import lake_names
from cdclake.engine.target.changes import typed_select

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.engine.pipeline import Pipeline


@dataclass
class Comparison:
    table: str
    lake_rows: int
    source_rows: int
    only_in_lake: list[dict[str, Any]] = field(default_factory=list)
    only_in_source: list[dict[str, Any]] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.only_in_lake and not self.only_in_source and self.lake_rows == self.source_rows

    def summary(self) -> str:
        if self.equal:
            return f"equal ({self.lake_rows} rows)"
        return (
            f"DIFFERENT: lake {self.lake_rows} rows, source {self.source_rows} rows; "
            f"only in lake (first 5): {self.only_in_lake[:5]}; only in source (first 5): {self.only_in_source[:5]}"
        )


def compare_table(spark: SparkSession, pipeline: Pipeline, table: str, limit: int = 20) -> Comparison:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    source = pipeline.source
    schema = source.snapshot.start([table]).schemas[table]
    src = pipeline.ctx.read_source(schema)
    schema = pipeline.ctx.columns.lake_schema(schema)
    src = src.selectExpr(*typed_select(source.types, schema))
    lake = spark.read.format("delta").load(pipeline.layout.target(table))
    if "__deleted" in lake.columns:
        lake = lake.where("NOT `__deleted`")
    delta = lake_names(pipeline.ctx.targets.options.lake_schema(schema))  # a column Delta cannot name: names.py
    lake = lake.select(*[F.col(quote(delta[c])).alias(c) for c in schema.column_names])
    names = [quote(c) for c in schema.column_names]
    # One pass over both sides: each distinct row with how often each side has it (a multiset compare,
    # null-safe like EXCEPT ALL); the source is read once.
    tagged = lake.select(*names, F.lit(True).alias("__in_lake")).unionByName(
        src.select(*names, F.lit(False).alias("__in_lake")))
    grouped = tagged.groupBy(*names).agg(
        F.count_if(F.col("__in_lake")).alias("__lake"), F.count_if(~F.col("__in_lake")).alias("__source"),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        totals = grouped.agg(F.sum("__lake"), F.sum("__source")).first()
        differing = grouped.where("__lake <> __source").limit(2 * limit).collect()
    finally:
        grouped.unpersist()
        source.snapshot.end()  # a table without a row key is held still while it is read
    only_lake, only_src = [], []
    for row in differing:
        values = {k: v for k, v in row.asDict().items() if k not in ("__lake", "__source")}
        extra = int(row["__lake"]) - int(row["__source"])
        (only_lake if extra > 0 else only_src).extend([values] * min(abs(extra), limit))
    return Comparison(table, int(totals[0] or 0), int(totals[1] or 0), only_lake[:limit], only_src[:limit])
