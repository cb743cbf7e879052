"""The Db2 snapshot: tables read over Spark JDBC in key-range chunks (:class:`cdclake.kit.JdbcSnapshotReader`) at the
isolation ``source.snapshot.isolation`` says, optionally under SHARE locks taken before the position (Capture's
synchpoint). Changes committed after the position and visible to a read are applied again from the CD tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.errors import CdcError
from cdclake.kit import ChunkPlan, HeldTables, JdbcEndpoint, JdbcSnapshotReader, KeyRange
from cdclake.schema import TableSchema
from cdclake.sources.db2 import catalog
from cdclake.sources.db2 import queries as Q
from cdclake.sources.db2.config import ISOLATION_LEVELS
from cdclake.sources.db2.connection import Db2Server
from cdclake.sources.db2.position import CommitSeqPosition
from cdclake.sources.db2.types import Db2TypeMapper, quote_identifier
from cdclake.spi import Position, SnapshotStart

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def schema_ddl(schema: TableSchema) -> str:
    """The CREATE TABLE text a schema-history entry shows for ``schema`` (from the catalog, not the server)."""
    cols = ", ".join(f"{quote_identifier(c.name)} {c.source_type}{'' if c.nullable else ' NOT NULL'}"
                     for c in schema.columns)
    key = f", PRIMARY KEY ({', '.join(quote_identifier(k) for k in schema.primary_key)})" if schema.primary_key else ""
    return f"CREATE TABLE {quote_identifier(schema.database)}.{quote_identifier(schema.table)} ({cols}{key})"


def _table(schema: TableSchema) -> str:
    return f"{quote_identifier(schema.database)}.{quote_identifier(schema.table)}"


class Db2SnapshotReader(JdbcSnapshotReader):
    """Tables read over Spark JDBC at the isolation ``source.snapshot.isolation`` says, optionally under SHARE locks
    taken before the position (Capture's synchpoint)."""

    def __init__(self, server: Db2Server, types: Db2TypeMapper) -> None:
        super().__init__(server.config.snapshot)
        self.server = server
        self.config = server.config
        self.types = types
        self.cs = server.cs
        self._snapshot: CommitSeqPosition | None = None
        self._held = HeldTables(lambda conn: conn.rollback())  # ends the locks' transaction: they go

    def start(self, tables: list[str]) -> SnapshotStart:
        regs = self.server.registrations()
        for table in tables:
            if table not in regs:
                raise CdcError(f"{table} is not registered for capture in {self.cs}.IBMSNAP_REGISTER",
                               f"CALL {self.cs}.ADDTABLE('<schema>', '<table>') and VALUES "
                               f"{self.cs}.ASNCDCSERVICES('reinit','asncdc')", permanent=True)
        if self.config.snapshot.lock_mode == "share":
            self._lock_tables([regs[t] for t in tables])  # before the position: no write lands in between
        position = self.server.position_at_hwm()
        schemas = {t: catalog.table_schema(self.server.conn(), regs[t]) for t in tables}
        self.server.conn().rollback()
        self._snapshot = position
        ddl = {t: schema_ddl(s) for t, s in schemas.items()}
        return SnapshotStart(position, schemas, ddl, sorted(self._held.tables))

    def _lock_tables(self, regs: list[catalog.Registration]) -> None:
        conn = self._held.conn or self.server.connect_new()
        self._held.hold(conn, [])
        try:
            catalog.execute(conn, Q.LOCK_TIMEOUT.format(seconds=self.config.snapshot.lock_timeout))
            for reg in regs:
                catalog.execute(conn, Q.LOCK_TABLE.format(
                    table=f"{quote_identifier(reg.source_owner)}.{quote_identifier(reg.source_table)}"))
                self._held.hold(conn, [reg.table])
        except Exception as exc:
            self.end()
            raise CdcError(f"cannot lock {', '.join(r.table for r in regs)} IN SHARE MODE for the snapshot "
                           f"within source.snapshot.lock_timeout ({self.config.snapshot.lock_timeout} s): {exc}",
                           "wait for the transactions writing them to end, raise source.snapshot.lock_timeout, or "
                           "set source.snapshot.lock_mode: none (the snapshot is exact without locks)") from None

    def end(self, table: str | None = None) -> None:
        self._held.let_go(table)

    def prepare(self, position: Position) -> None:
        assert isinstance(position, CommitSeqPosition)
        self._snapshot = position

    # ---- the chunked read's queries -----------------------------------------------------------------------

    def endpoint(self) -> JdbcEndpoint:
        return self.server.connector.jdbc()

    def properties(self, schema: TableSchema) -> dict[str, str]:
        custom = ", ".join(f"`{c.name}` {self.types.read_type(c)}" for c in schema.columns)
        props = {"customSchema": custom}
        if "defaultIsolationLevel" not in self.config.jdbc_options:
            props["defaultIsolationLevel"] = str(ISOLATION_LEVELS[self.config.snapshot.isolation])
        return props

    def select_sql(self, schema: TableSchema, where: str | None, chunks: ChunkPlan) -> str:
        cols = ", ".join(f"{self.types.read_sql(c)} AS {quote_identifier(c.name)}" for c in schema.columns)
        return Q.TABLE_READ.format(columns=cols, table=_table(schema), where=f" WHERE {where}" if where else "")

    def key_range(self, spark: SparkSession, schema: TableSchema, key: str, where: str | None) -> KeyRange | None:
        if where:
            return None  # a filtered read (reconcile, backfill) is small: one query
        low, high, count = self.server.fetch(Q.KEY_RANGE.format(key=quote_identifier(key), table=_table(schema)))[0]
        return None if low is None else KeyRange(int(low), int(high), int(count or 0))

    def canonical(self, frame: DataFrame, schema: TableSchema) -> DataFrame:
        return frame.selectExpr(*[f"CAST({self.types.canonical_sql(c, f'`{c.name}`')} AS "
                                  f"{self.types.canonical_type(c)}) AS `{c.name}`" for c in schema.columns])


