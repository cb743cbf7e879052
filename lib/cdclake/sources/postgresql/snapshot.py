"""The consistent parallel snapshot: a slot created with its snapshot exported, held open by one session,
and imported by every Spark JDBC partition (docs/postgresql-design.md, section 3).

``CREATE_REPLICATION_SLOT ... (SNAPSHOT 'export')`` needs a replication connection, and its snapshot lives
only while that connection runs no other command. A *holder* session imports it at once and exports it again
(``pg_export_snapshot()``); that id stays valid while the holder's transaction is open, whatever happens to
the replication connection. Each Spark partition then runs, before its query, inside its own transaction
(Spark's PostgreSQL dialect turns autocommit off when ``fetchsize`` > 0)::

    SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET TRANSACTION SNAPSHOT '<id>'; ...

so every partition reads the database exactly as of the slot's consistent point: the snapshot needs no lock
and no re-applied changes. A read that did not import the snapshot fails (:data:`GUARD`) instead of
silently reading current rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.errors import CdcError
from cdclake.kit import ChunkPlan, JdbcEndpoint, JdbcSnapshotReader, KeyRange
from cdclake.schema import TableSchema
from cdclake.sources.postgresql import catalog
from cdclake.sources.postgresql.config import SESSION_SETTINGS, PostgresSourceConfig
from cdclake.sources.postgresql.connection import PostgresServer
from cdclake.sources.postgresql.pgoutput import parse_lsn
from cdclake.sources.postgresql.position import LsnPosition
from cdclake.sources.postgresql.types import PostgresTypeMapper, quote_identifier
from cdclake.spi import Position, SnapshotStart

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

KEY_RANGE = "SELECT min({key})::bigint, max({key})::bigint, count(*) FROM {table}"
#: the column a chunked snapshot read splits on: the integer key as stored
PARTITION_KEY = "cdclake_part"


@dataclass
class ExportedSnapshot:
    """A slot's consistent point and the snapshot every read of the tables imports."""

    slot: str
    consistent_point: int  # LSN: the snapshot holds every transaction committed before it, none after
    snapshot_id: str  # the holder's export
    xmin_text: str  # pg_current_snapshot() in the snapshot: the guard's expected value
    holder: Any  # the psycopg connection whose open transaction keeps ``snapshot_id`` importable

    def release(self) -> None:
        """End the holder's transaction: the snapshot can no longer be imported."""
        if self.holder is not None:
            try:
                self.holder.rollback()
            finally:
                self.holder.close()
                self.holder = None


def session_settings_sql() -> str:
    return "; ".join(f"SET {name} = '{value}'" for name, value in SESSION_SETTINGS.items())


def create_slot_with_snapshot(settings: dict[str, Any], slot: str, temporary: bool = False) -> ExportedSnapshot:
    """Create logical slot ``slot`` (pgoutput) with its snapshot exported and held (``settings``: psycopg's
    connection keywords). A temporary slot lasts only as long as this call: it serves a snapshot of tables
    added to a pipeline whose own slot already holds the WAL."""
    import psycopg

    try:
        repl = psycopg.connect(**settings, replication="database", autocommit=True)
    except psycopg.OperationalError as exc:
        raise CdcError(f"cannot open a replication connection to create slot {slot}: {exc}".strip(),
                       "allow it in pg_hba.conf (a 'host <database> <user>' line also serves replication=database "
                       "connections) and give the user REPLICATION", permanent=True) from None
    try:
        kind = "TEMPORARY LOGICAL" if temporary else "LOGICAL"
        # no query parameters: a replication connection speaks only the simple query protocol
        row = repl.execute(f"CREATE_REPLICATION_SLOT {slot} {kind} pgoutput (SNAPSHOT 'export')").fetchone()
        assert row is not None
        consistent_point, exported = parse_lsn(str(row[1])), str(row[2])
        holder = psycopg.connect(**settings, autocommit=False)
        try:
            holder.execute("SET idle_in_transaction_session_timeout = 0")
            holder.commit()
            holder.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            holder.read_only = True
            holder.execute(f"SET TRANSACTION SNAPSHOT '{exported}'")
            snapshot_id, xmin_text = holder.execute("SELECT pg_export_snapshot(), pg_current_snapshot()::text"
                                                    ).fetchone()  # type: ignore[misc]
        except BaseException:
            holder.close()
            raise
    finally:
        repl.close()  # the holder's export outlives it
    return ExportedSnapshot(slot, consistent_point, str(snapshot_id), str(xmin_text), holder)


def jdbc_options(snapshot: ExportedSnapshot, fetch_size: int) -> dict[str, str]:
    """Spark JDBC options that make each partition read inside ``snapshot``."""
    return {
        "fetchsize": str(max(1, fetch_size)),  # > 0: Spark's PostgreSQL dialect opens a transaction for the read
        "sessionInitStatement": (f"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; "
                                 f"SET TRANSACTION SNAPSHOT '{snapshot.snapshot_id}'; {session_settings_sql()}"),
    }


#: the guard's column: 1 inside the snapshot; a division by zero outside it
GUARD = "cdclake_in_snapshot"


def guarded(select: str, snapshot: ExportedSnapshot) -> str:
    """``select`` with a :data:`GUARD` column that fails the read unless it runs inside ``snapshot``.

    The check is a scalar subquery (an init plan: evaluated once, and only when a row is produced, so Spark's
    schema probe, which reads no row outside any snapshot, passes). The reader must use the column
    (``.where(f"{GUARD} = 1")``): a column Spark prunes is never evaluated."""
    return (f"SELECT q.*, (SELECT 1 / (pg_current_snapshot()::text = '{snapshot.xmin_text}')::int) AS {GUARD} "
            f"FROM ({select}) q")


def _table(schema: TableSchema) -> str:
    return f"{quote_identifier(schema.database)}.{quote_identifier(schema.table)}"


class PostgresSnapshotReader(JdbcSnapshotReader):
    """Reads inside the exported snapshot of the pipeline's slot (or of a temporary one for tables added later)."""

    def __init__(self, server: PostgresServer, config: PostgresSourceConfig, types: PostgresTypeMapper, slot: str,
                 publication: str) -> None:
        super().__init__(config.snapshot)
        self.server = server
        self.config = config
        self.types = types
        self.slot = slot
        self.publication = publication
        self._snapshot: ExportedSnapshot | None = None

    def start(self, tables: list[str]) -> SnapshotStart:
        conn = self.server.conn()
        known = catalog.tables(conn)  # the run's preflight has checked the captured tables already
        missing = [t for t in tables if t not in known]
        if missing:
            raise CdcError(f"no such table (or a partition, captured through its root): {', '.join(missing)}",
                           "check source.include_tables", permanent=True)
        self._publish(tables, known)
        self.end()
        exists = catalog.slot(conn, self.slot) is not None
        name = f"{self.slot}_snap" if exists else self.slot
        self._snapshot = create_slot_with_snapshot(self.server.connector.settings(), name, temporary=exists)
        # the schemas as of the snapshot: read in the holder's transaction
        schemas = {table: self.server.table_schema(table, self._snapshot.holder) for table in tables}
        position = LsnPosition(self._snapshot.consistent_point, self.server.system())
        ddl = {t: f"-- {t}: " + ", ".join(f"{c.name} {c.source_type}" for c in s.columns) for t, s in schemas.items()}
        return SnapshotStart(position, schemas, ddl)

    def _publish(self, tables: list[str], known: dict[str, catalog.Table]) -> None:
        conn = self.server.conn()
        pub = catalog.publication(conn, self.publication)
        names = {t: f"{quote_identifier(known[t].schema)}.{quote_identifier(known[t].name)}" for t in tables}
        if pub is None:
            if not self.config.create_publication:
                return  # preflight has named it
            conn.execute(f"CREATE PUBLICATION {self.publication} FOR TABLE {', '.join(names.values())} "
                         "WITH (publish_via_partition_root = true)")
            return
        missing = [t for t in tables if not pub.all_tables and t not in pub.tables]
        if missing and self.config.create_publication:
            conn.execute(f"ALTER PUBLICATION {self.publication} ADD TABLE " + ", ".join(names[t] for t in missing))

    def prepare(self, position: Position) -> None:
        """Read at ``position``, or, once its exported snapshot has ended (with the process or transaction that
        held it), in a new one at a later point: what a re-read takes, since the engine keeps what mining brought
        after ``position`` (a re-read that must be exact, of a table without a row key, reads in the snapshot
        it planned)."""
        assert isinstance(position, LsnPosition)
        if self._snapshot is not None and position.lsn == self._snapshot.consistent_point:
            return
        self.end()
        self._snapshot = self._fresh_snapshot()

    def end(self, table: str | None = None) -> None:
        if table is None and self._snapshot is not None:
            snap, self._snapshot = self._snapshot, None
            snap.release()

    def _fresh_snapshot(self) -> ExportedSnapshot:
        """An exported snapshot of the database now (a temporary slot beside cdclake's)."""
        return create_slot_with_snapshot(self.server.connector.settings(), f"{self.slot}_snap", temporary=True)

    def _current(self) -> ExportedSnapshot:
        if self._snapshot is None:  # (the engine let the last one go) the database as it is now
            self._snapshot = self._fresh_snapshot()
        return self._snapshot

    # ---- the chunked read's queries -----------------------------------------------------------------------

    def endpoint(self) -> JdbcEndpoint:
        return self.server.connector.jdbc()

    def properties(self, schema: TableSchema) -> dict[str, str]:
        return {**jdbc_options(self._current(), self.options.fetch_size), **self.config.jdbc_options,
                "customSchema": ", ".join(f"`{c.name}` STRING" for c in schema.columns) + f", {GUARD} INT"}

    def chunk_column(self, key: str) -> str:
        return PARTITION_KEY

    def select_sql(self, schema: TableSchema, where: str | None, chunks: ChunkPlan) -> str:
        cols = [f"{self.types.read_sql(c)} AS {quote_identifier(c.name)}" for c in schema.columns]
        if chunks.by_key:  # the key as it is (the columns are read as text): ranges of it use its index
            cols.append(f"{quote_identifier(str(chunks.key))} AS {PARTITION_KEY}")
        select = f"SELECT {', '.join(cols)} FROM {_table(schema)}" + (f" WHERE {where}" if where else "")
        return f"({guarded(select, self._current())}) cdclake_t"

    def key_range(self, spark: SparkSession, schema: TableSchema, key: str, where: str | None) -> KeyRange | None:
        if where:
            return None  # a filtered read (reconcile, backfill) is small: one query
        low, high, count = self.server.conn().execute(
            KEY_RANGE.format(key=quote_identifier(key), table=_table(schema))).fetchone()
        return None if low is None else KeyRange(int(low), int(high), int(count or 0))

    def canonical(self, frame: DataFrame, schema: TableSchema) -> DataFrame:
        return frame.where(f"{GUARD} = 1").drop(GUARD, PARTITION_KEY)
