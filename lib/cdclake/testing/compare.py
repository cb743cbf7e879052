"""Compare a target Delta table with its source table row by row (tests, demo, benchmarks).

The source side is read now through JDBC and converted with the same type mapping as the lake, so
any difference is a lost, doubled, stale or resurrected row.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdclake.engine.lake import quote
from cdclake.engine.names import lake_names
from cdclake.engine.target.changes import typed_select

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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


Counts = tuple[int, int, list[dict[str, Any]], list[dict[str, Any]]]  # lake rows, source rows, only in each


def _on_the_driver(lake: DataFrame, src: DataFrame, limit: int) -> Counts | None:
    """The multiset compare of two frames of the same column types on the driver; None when the types differ
    (Spark's compare widens them)."""
    if [f.dataType for f in lake.schema.fields] != [f.dataType for f in src.schema.fields]:
        return None
    lake_rows, source_rows = lake.collect(), src.collect()
    lake_keys, source_keys = [_hashable(tuple(r)) for r in lake_rows], [_hashable(tuple(r)) for r in source_rows]
    keyed = dict(zip([*lake_keys, *source_keys], [*lake_rows, *source_rows], strict=True))
    in_lake, in_source = Counter(lake_keys), Counter(source_keys)

    def listed(extra: Counter) -> list[dict[str, Any]]:
        return [keyed[k].asDict() for k, n in extra.items() for _ in range(min(n, limit))][:limit]

    return len(lake_rows), len(source_rows), listed(in_lake - in_source), listed(in_source - in_lake)


def _in_spark(lake: DataFrame, src: DataFrame, limit: int) -> Counts:
    """The same compare in one pass over both sides: each distinct row with how often each side has it
    (null-safe like EXCEPT ALL); the source is read once."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    names = [quote(c) for c in lake.columns]
    tagged = lake.withColumn("__in_lake", F.lit(True)).unionByName(src.withColumn("__in_lake", F.lit(False)))
    grouped = tagged.groupBy(*names).agg(
        F.count_if(F.col("__in_lake")).alias("__lake"), F.count_if(~F.col("__in_lake")).alias("__source"),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        totals = grouped.agg(F.sum("__lake"), F.sum("__source")).first()
        differing = grouped.where("__lake <> __source").limit(2 * limit).collect()
    finally:
        grouped.unpersist()
    only_lake: list[dict[str, Any]] = []
    only_src: list[dict[str, Any]] = []
    for row in differing:
        values = {k: v for k, v in row.asDict().items() if k not in ("__lake", "__source")}
        extra = int(row["__lake"]) - int(row["__source"])
        (only_lake if extra > 0 else only_src).extend([values] * min(abs(extra), limit))
    return int(totals[0] or 0), int(totals[1] or 0), only_lake[:limit], only_src[:limit]


_NAN = object()  # Spark groups every NaN as one value; Python's NaN equals nothing


def _hashable(value: Any) -> Any:
    """A value as a key that is equal where Spark's grouping finds values equal (NaN, -0.0; arrays, structs).

    >>> _hashable(float("nan")) == _hashable(float("nan")), _hashable(-0.0) == _hashable(0.0)
    (True, True)
    >>> _hashable([1, (2, bytearray(b"x"))]) == _hashable((1, [2, b"x"]))
    True
    """
    if isinstance(value, float):
        return _NAN if math.isnan(value) else value
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return frozenset((_hashable(k), _hashable(v)) for k, v in value.items())
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def compare_table(spark: SparkSession, pipeline: Pipeline, table: str, limit: int = 20,
                  on_driver: bool = True) -> Comparison:
    """``table``'s target against the source's rows now, as multisets. ``on_driver``: both sides are collected
    and compared on the driver (two plain reads: a test compares small tables hundreds of times); otherwise
    (a large table) one grouping job over their union."""
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
    try:  # a table without a row key is held still while it is read
        counts = _on_the_driver(lake, src, limit) if on_driver else None
        return Comparison(table, *(counts or _in_spark(lake, src, limit)))
    finally:
        source.snapshot.end()
