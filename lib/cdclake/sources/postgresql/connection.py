"""Connections to a PostgreSQL server: psycopg for the driver's queries, pgJDBC for Spark's reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdclake.kit import Connector, JdbcEndpoint, Session
from cdclake.schema import TableSchema
from cdclake.sources.postgresql import catalog
from cdclake.sources.postgresql.config import SESSION_SETTINGS, PostgresSourceConfig
from cdclake.sources.postgresql.decoder import PARTITIONS, RELID
from cdclake.sources.postgresql.types import columns, quote_identifier


def _options() -> str:
    """libpq ``options``: the session settings on every connection, the replication one included."""
    return " ".join(f"-c {name}={value.replace(' ', '')}" for name, value in SESSION_SETTINGS.items())


class PostgresConnector(Connector):
    system = "PostgreSQL"
    config: PostgresSourceConfig
    fix = "check source.host, port, database, user and password, and pg_hba.conf"

    def connect_errors(self) -> tuple[type[BaseException], ...]:
        import psycopg

        return (psycopg.OperationalError,)

    def where(self) -> str:
        return f"{self.config.host}:{self.config.port}/{self.config.database} as {self.config.user}"

    def settings(self) -> dict[str, Any]:
        """psycopg's connection keywords (a replication connection adds ``replication``)."""
        c = self.config
        return {"host": c.host, "port": c.port, "user": c.user, "password": c.password.get_secret_value(),
                "dbname": c.database, "connect_timeout": c.connect_timeout, "options": _options()}

    def open(self) -> Any:
        import psycopg

        return psycopg.connect(**self.settings(), autocommit=True)

    def jdbc(self) -> JdbcEndpoint:
        return JdbcEndpoint(self.config.spark_jdbc_url(), {
            "driver": "org.postgresql.Driver", "user": self.config.user,
            "password": self.config.password.get_secret_value(), **self.config.jdbc_options})


class PostgresServer(Session):
    """The source's one driver connection, and what the catalog tells of the server."""

    connector: PostgresConnector

    def __init__(self, connector: PostgresConnector, connect: Callable[[], Any] | None = None) -> None:
        super().__init__(connector, connect)
        self._system: str | None = None

    def system(self) -> str:
        """The database system identifier (a position names it: another cluster has other WAL)."""
        if self._system is None:
            self._system = catalog.server(self.conn()).system
        return self._system

    def table_schema(self, table: str, conn: Any = None, relid: int | None = None) -> TableSchema:
        """``table``'s schema from the catalog (``conn``: e.g. the snapshot holder's, to read it in the snapshot)."""
        schema, name = table.split(".", 1)
        qualified = f"{quote_identifier(schema)}.{quote_identifier(name)}"
        conn = conn or self.conn()
        cols = columns(conn, qualified)
        key = [c.name for c in sorted((c for c in cols if "keyseq" in c.attrs), key=lambda c: c.attrs["keyseq"])]
        if relid is None:
            relid = conn.execute("SELECT %s::regclass::oid::bigint", (qualified,)).fetchone()[0]
        attrs: dict[str, Any] = {RELID: int(relid)}
        tree = catalog.partition_tree(conn, int(relid))
        if tree is not None:  # a partitioned table: which partitions its rows are in (one attached or detached
            attrs[PARTITIONS] = tree  # moves rows without a row change in the WAL)
        return TableSchema(schema, name, cols, key, attrs=attrs)
