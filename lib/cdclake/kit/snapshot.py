"""The chunked JDBC snapshot read, written once: a source supplies a few queries, the kit splits and reads.

In the spirit of Flink CDC's ``JdbcSourceChunkSplitter``: :meth:`JdbcSnapshotReader.read` picks a table's
chunk key (by default its single-column integer primary key), asks the source for the key's range and an
approximate row count (:meth:`~JdbcSnapshotReader.key_range`), sizes the read from ``source.snapshot``
(``partitions``, ``min_rows_per_partition``) and reads the chunks in parallel through Spark's JDBC source,
each a key range of the source's SELECT (:meth:`~JdbcSnapshotReader.select_sql`) at the snapshot's position.
A table without such a key is read in one query, or in the slices a source can name without a key
(:meth:`~JdbcSnapshotReader.slice_predicates`, e.g. Oracle's ``ORA_HASH(ROWID, n)``).

A source subclasses it and supplies:

* :meth:`~JdbcSnapshotReader.start` (the consistent-read set-up: the position and the schemas there) and, if
  it holds tables, :meth:`~JdbcSnapshotReader.end`;
* :meth:`~JdbcSnapshotReader.endpoint`: the JDBC URL and properties (its connection settings);
* :meth:`~JdbcSnapshotReader.select_sql`: the table's SELECT at the snapshot's position;
* :meth:`~JdbcSnapshotReader.key_range`: bounds of the chunk key, and an approximate row count;
* :meth:`~JdbcSnapshotReader.canonical`: the read columns as canonical values.

>>> plan_chunks(KeyRange(1, 1_000_000, 900_000), partitions=4, min_rows_per_partition=50_000).parts
4
>>> plan_chunks(KeyRange(1, 1_000_000, 60_000), partitions=4, min_rows_per_partition=50_000).parts
1
>>> plan_chunks(KeyRange(1, 9, None), partitions=4, min_rows_per_partition=50_000).parts  # no count: as configured
4
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.kit.config import SnapshotOptions
from cdclake.kit.jdbc import JdbcEndpoint, read_jdbc
from cdclake.spi.source import SnapshotReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdclake.schema import TableSchema

#: Spark types of a column the kit splits key ranges of
INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"})


@dataclass(frozen=True)
class KeyRange:
    """The chunk key's lowest and highest value among the rows to read, and about how many rows there are
    (``None``: the source cannot tell cheaply; the read is split as ``partitions`` says)."""

    low: int
    high: int
    rows: int | None = None


@dataclass(frozen=True)
class ChunkPlan:
    """How one table's read is split: ``parts`` key ranges of ``key`` from ``low`` to ``high`` (inclusive), or
    one query (``parts == 1``, ``key`` None), or ``slices`` (predicates over what :meth:`select_sql` reads)."""

    parts: int = 1
    key: str | None = None
    low: int = 0
    high: int = 0
    slices: tuple[str, ...] = ()

    @property
    def by_key(self) -> bool:
        return self.key is not None and self.parts > 1


def plan_chunks(key_range: KeyRange | None, partitions: int, min_rows_per_partition: int) -> ChunkPlan:
    """The key-range split of a table (``key`` is filled in by the caller)."""
    if key_range is None or partitions < 2:
        return ChunkPlan()
    parts = partitions if key_range.rows is None else min(partitions, max(1, key_range.rows // min_rows_per_partition))
    parts = min(parts, key_range.high - key_range.low + 1)
    return ChunkPlan(parts, None, key_range.low, key_range.high) if parts > 1 else ChunkPlan()


class HeldTables:
    """Tables a snapshot holds still (under locks a connection of their own keeps) until the engine has written
    what it read of them (:meth:`SnapshotReader.end`): then ``release`` lets the locks go and the connection
    closes."""

    def __init__(self, release: Callable[[Any], None]) -> None:
        self._release = release
        self.conn: Any = None
        self.tables: set[str] = set()

    def hold(self, conn: Any, tables: Iterable[str]) -> None:
        """``tables`` are held by ``conn``'s locks (more may join those already held)."""
        self.conn = conn
        self.tables.update(tables)

    def let_go(self, table: str | None = None) -> None:
        """``table`` is written (``None``: all are, or the snapshot failed); once none is held, release."""
        if table is None:
            self.tables.clear()
        else:
            self.tables.discard(table)
        if not self.tables and self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                self._release(conn)
            finally:
                conn.close()


class JdbcSnapshotReader(SnapshotReader):
    """A :class:`~cdclake.spi.SnapshotReader` that reads over Spark JDBC in key-range chunks."""

    def __init__(self, options: SnapshotOptions) -> None:
        self.options = options

    # ---- what a source supplies ------------------------------------------------------------------------------

    @abc.abstractmethod
    def endpoint(self) -> JdbcEndpoint:
        """The JDBC URL and properties of the reads (the kit adds ``fetchsize`` unless the source set it)."""

    @abc.abstractmethod
    def select_sql(self, schema: TableSchema, where: str | None, chunks: ChunkPlan) -> str:
        """The table's rows at the snapshot's position as a ``dbtable`` expression (a parenthesised, aliased
        SELECT): the columns :meth:`canonical` turns into canonical values, filtered by ``where``; with
        ``chunks.by_key`` also the chunk key as :meth:`chunk_column` names it."""

    @abc.abstractmethod
    def key_range(self, spark: SparkSession, schema: TableSchema, key: str, where: str | None) -> KeyRange | None:
        """The chunk key's bounds among the rows ``where`` selects, at the snapshot's position, and an
        approximate row count; ``None`` when there are no rows or the table is better read in one query."""

    @abc.abstractmethod
    def canonical(self, frame: DataFrame, schema: TableSchema) -> DataFrame:
        """The read's columns as canonical values, named as the source columns (extra columns dropped)."""

    # ---- what a source may change ------------------------------------------------------------------------------

    def chunk_key(self, schema: TableSchema) -> str | None:
        """The column key ranges split on: the single-column integer primary key, if there is one."""
        if len(schema.primary_key) != 1:
            return None
        column = schema.column(schema.primary_key[0])
        return column.name if column.spark_type.upper() in INTEGER_TYPES and self.integer_key(schema, column.name) \
            else None

    def integer_key(self, schema: TableSchema, key: str) -> bool:
        """Whether the source's values of ``key`` fit a signed 64-bit range (default: yes)."""
        return True

    def chunk_column(self, key: str) -> str:
        """How Spark's JDBC ``partitionColumn`` names the chunk key in :meth:`select_sql`'s output."""
        return key

    def slice_predicates(self, schema: TableSchema, parts: int) -> tuple[str, ...]:
        """Predicates that cut a table without a chunk key into ``parts`` slices (over :meth:`select_sql`'s
        columns); empty: such a table is read in one query."""
        return ()

    def properties(self, schema: TableSchema) -> dict[str, str]:
        """JDBC properties of this table's read on top of the endpoint's (e.g. ``customSchema``)."""
        return {}

    # ---- the read, written once ---------------------------------------------------------------------------------

    def plan(self, spark: SparkSession, schema: TableSchema, where: str | None) -> ChunkPlan:
        """How the table's read is split."""
        key = self.chunk_key(schema)
        if self.options.partitions < 2:
            return ChunkPlan()
        if key is not None:
            planned = plan_chunks(self.key_range(spark, schema, key, where), self.options.partitions,
                                  self.options.min_rows_per_partition)
            return ChunkPlan(planned.parts, key, planned.low, planned.high) if planned.parts > 1 else planned
        slices = self.slice_predicates(schema, self.options.partitions)
        return ChunkPlan(len(slices), slices=slices) if slices else ChunkPlan()

    def read(self, spark: SparkSession, schema: TableSchema, where: str | None = None) -> DataFrame:
        chunks = self.plan(spark, schema, where)
        endpoint = self.endpoint()
        props = {"fetchsize": str(self.options.fetch_size), **endpoint.properties, **self.properties(schema)}
        table = self.select_sql(schema, where, chunks)
        if chunks.by_key:
            assert chunks.key is not None
            frame = read_jdbc(spark, endpoint.url, table, props, column=self.chunk_column(chunks.key),
                              lower_bound=chunks.low, upper_bound=chunks.high + 1, num_partitions=chunks.parts)
        elif chunks.slices:
            frame = read_jdbc(spark, endpoint.url, table, props, predicates=chunks.slices)
        else:
            frame = read_jdbc(spark, endpoint.url, table, props)
        return self.canonical(frame, schema)
