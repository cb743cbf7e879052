"""Compare a target Delta table with its source table row by row (tests, demo, benchmarks).

The source side is read now through JDBC and converted with the same type mapping as the lake, so
any difference is a lost, doubled, stale or resurrected row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdclake.engine.target import typed_select

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
    source = pipeline.source
    schema = source.snapshot_start([table]).schemas[table]
    src = pipeline.ctx.read_source(schema)
    schema = pipeline.ctx.columns.lake_schema(schema)
    src = src.selectExpr(*typed_select(source.types, schema))
    lake = spark.read.format("delta").load(pipeline.layout.target(table))
    if "__deleted" in lake.columns:
        lake = lake.where("NOT `__deleted`")
    names = ["`" + c.replace("`", "``") + "`" for c in schema.column_names]
    lake, src = lake.select(*names), src.select(*names)
    try:
        only_lake = lake.exceptAll(src).limit(limit).collect()
        only_src = src.exceptAll(lake).limit(limit).collect()
        counts = lake.count(), src.count()
    finally:
        source.end_snapshot_read()  # a table without a row key is held still while it is read
    return Comparison(table, *counts, [r.asDict() for r in only_lake], [r.asDict() for r in only_src])
