"""The MySQL/MariaDB snapshot: exact although the JDBC chunks read at different moments.

Under ``LOCK TABLES ... READ`` (no DDL, no commits to those tables) the binlog end is recorded as the
low-watermark and each table's ``SHOW CREATE TABLE`` is parsed; the locks are released and the chunks are
read in parallel (:class:`cdclake.kit.JdbcSnapshotReader`). Mining then starts at the low-watermark. A change
committed after it may already be visible to a chunk's read, but it is re-applied from the binlog with a
higher sequence and full row images (``binlog_row_image=FULL``), so the apply rules (newest sequence wins,
deletes by key) converge on the source state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pymysql

from cdclake.kit import ChunkPlan, HeldTables, JdbcEndpoint, JdbcSnapshotReader, KeyRange
from cdclake.schema import TableSchema
from cdclake.sources.mysql import preflight
from cdclake.sources.mysql.connection import MySqlConnector
from cdclake.sources.mysql.ddl import apply_ddl
from cdclake.sources.mysql.types import MySqlTypeMapper
from cdclake.spi import SnapshotStart

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def quote(name: str) -> str:
    """A MySQL identifier in backquotes (Spark SQL reads it alike)."""
    return "`" + name.replace("`", "``") + "`"


def _table(schema: TableSchema) -> str:
    return f"{quote(schema.database)}.{quote(schema.table)}"


def _unlock(conn: pymysql.connections.Connection) -> None:
    with conn.cursor() as cur:
        cur.execute("UNLOCK TABLES")


class MySqlSnapshotReader(JdbcSnapshotReader):
    def __init__(self, connector: MySqlConnector, types: MySqlTypeMapper) -> None:
        super().__init__(connector.config.snapshot)
        self.connector = connector
        self.types = types
        self._held = HeldTables(_unlock)  # READ locks of a snapshot's tables without a row key

    def start(self, tables: list[str]) -> SnapshotStart:
        """Under ``LOCK TABLES ... READ``: the binlog end and each table's ``SHOW CREATE TABLE``.

        The locks are released at once, unless a table has no row key: a multiset cannot take the
        re-applied changes a keyed table converges with, so the locks stay (writers to these tables
        wait; readers do not) until the engine has read every such table (:meth:`end`).
        """
        self.end()
        conn = self.connector.connect()
        held: list[str] = []
        try:
            with conn.cursor() as cur:
                locks = ", ".join(f"{quote(t.split('.', 1)[0])}.{quote(t.split('.', 1)[1])} READ" for t in tables)
                cur.execute(f"LOCK TABLES {locks}")
                try:
                    position = preflight.binlog_end(conn)
                    schemas: dict[str, TableSchema] = {}
                    ddl: dict[str, str] = {}
                    for t in tables:
                        db, name = t.split(".", 1)
                        cur.execute(f"SHOW CREATE TABLE {quote(db)}.{quote(name)}")
                        text = cur.fetchone()[1]
                        outcome = apply_ddl(text, {}, db)
                        schema = next(s for s in outcome.changes.values() if s is not None)
                        schemas[t] = schema.renamed(db, name)
                        ddl[t] = text
                    held = [t for t in tables if schemas[t].row_key().kind == "none"]
                finally:
                    if not held:
                        cur.execute("UNLOCK TABLES")
        finally:
            if held:
                self._held.hold(conn, held)
            else:
                conn.close()
        return SnapshotStart(position, schemas, ddl, held)

    def end(self, table: str | None = None) -> None:
        self._held.let_go(table)

    def filter_identifier(self, name: str) -> str:
        return quote(name)  # backquotes: MySQL's and Spark SQL's identifier quotes alike

    # ---- the chunked read's queries -----------------------------------------------------------------------

    def endpoint(self) -> JdbcEndpoint:
        return self.connector.jdbc()

    def select_sql(self, schema: TableSchema, where: str | None, chunks: ChunkPlan) -> str:
        # read_jdbc: CHAR, ENUM and SET values come as the server sends them, not blank-padded by Spark, so
        # they equal what the binlog carries.
        select = ", ".join(self.types.snapshot_select_sql(c) for c in schema.columns)
        return f"(SELECT {select} FROM {_table(schema)}{f' WHERE {where}' if where else ''}) AS cdclake_snapshot"

    def integer_key(self, schema: TableSchema, key: str) -> bool:
        column = schema.column(key)
        return not (column.attrs.get("base") == "bigint" and column.attrs.get("unsigned"))

    def key_range(self, spark: SparkSession, schema: TableSchema, key: str, where: str | None) -> KeyRange | None:
        conn = self.connector.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT table_rows FROM information_schema.tables WHERE table_schema = %s AND "
                            "table_name = %s", (schema.database, schema.table))
                row = cur.fetchone()
                estimate = int(row[0] or 0) if row else 0  # InnoDB's estimate: no scan
                if estimate // self.options.min_rows_per_partition < 2:
                    return None
                cur.execute(f"SELECT MIN({quote(key)}), MAX({quote(key)}) FROM {_table(schema)}"
                            f"{f' WHERE {where}' if where else ''}")
                low, high = cur.fetchone()
        finally:
            conn.close()
        return None if low is None else KeyRange(int(low), int(high), estimate)

    def canonical(self, frame: DataFrame, schema: TableSchema) -> DataFrame:
        return frame.selectExpr(
            *[f"CAST({quote(c.name)} AS {self.types.canonical_type(c)}) AS {quote(c.name)}" for c in schema.columns])
