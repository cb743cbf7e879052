"""Spark JDBC reads of a source's rows, with the session settings that keep every value as the database returns it.

Every source's snapshot read (and so backfills and reconcile's source side) goes through :func:`read_jdbc`,
so the settings are right whoever built the session (a notebook's or a cluster's as well as
:func:`cdclake.spark.build_spark`'s). They matter at load time, when Spark turns the driver's column types
into the relation's schema: see :data:`cdclake.spark.JDBC_READ_SETTINGS`.

>>> sorted(JDBC_READ_SETTINGS)
['spark.sql.legacy.charVarcharAsString', 'spark.sql.readSideCharPadding']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdclake.spark import JDBC_READ_SETTINGS, session_conf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["JDBC_READ_SETTINGS", "JdbcEndpoint", "read_jdbc"]


@dataclass(frozen=True)
class JdbcEndpoint:
    """Where Spark's JDBC reads of a source go: the URL and the connection properties (driver class,
    credentials, the source's session settings, then ``source.jdbc_options``)."""

    url: str
    properties: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # never the password
        return f"JdbcEndpoint({self.url!r}, {sorted(k for k in self.properties if k != 'password')})"


def read_jdbc(spark: SparkSession, url: str, table: str, properties: Mapping[str, str], *,
              column: str | None = None, lower_bound: int | None = None, upper_bound: int | None = None,
              num_partitions: int | None = None, predicates: Sequence[str] | None = None) -> DataFrame:
    """``spark.read.jdbc(...)`` (one partition, key ranges of ``column``, or one partition per
    predicate) loaded with :data:`JDBC_READ_SETTINGS`: a CHAR value comes back as the database sends
    it, whatever the session's own settings."""
    kw: dict[str, Any] = {"properties": dict(properties)}
    if predicates is not None:
        kw["predicates"] = list(predicates)
    elif column is not None:
        kw.update(column=column, lowerBound=lower_bound, upperBound=upper_bound, numPartitions=num_partitions)
    with session_conf(spark, JDBC_READ_SETTINGS):
        return spark.read.jdbc(url, table, **kw)
