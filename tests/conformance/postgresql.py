"""The PostgreSQL conformance driver: the workload as SQL on a throwaway cluster of its own.

The publication is the kind that captures new tables by itself: ``FOR ALL TABLES``, made by the superuser and
named in the pipeline file (``create_publication: false``). Each workload session is a psycopg connection of
its own with explicit transactions and a short lock timeout (the workload never makes one session wait for
the other, so a wait is a bug of the workload and fails in seconds); DDL runs on a third, autocommit
connection. The comparison reads the source through the pipeline's own snapshot path (a temporary slot's
exported snapshot), which waits for open transactions: every transaction ends before a window.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.compare import compare_table
from cdclake.testing.postgres import PostgresServer

from tests.conformance.workload import (
    BIGINT,
    DATE,
    DDL_KINDS,
    DEC,
    INT,
    KEY,
    STR,
    WIDE_STR,
    AddColumn,
    Begin,
    Commit,
    Create,
    Delete,
    Driver,
    DropColumn,
    DropTable,
    Insert,
    Op,
    RenameColumn,
    Rollback,
    Truncate,
    Update,
    UpdateKey,
    WidenColumn,
)
from tests.integration.postgres_helpers import postgres_pipeline

SQL_TYPES = {KEY: "integer NOT NULL", INT: "integer", BIGINT: "bigint", DEC: "numeric(12,2)", STR: "varchar(20)",
             WIDE_STR: "varchar(40)", DATE: "date"}
PUBLICATION = "conformance_all"


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class PostgresDriver(Driver):
    name = "postgresql"
    seed = 20261128
    supported_ddl = frozenset(DDL_KINDS)
    open_transactions_across_windows = False

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.server = PostgresServer()
        self.server.__enter__()
        self.server.execute(f"CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (publish_via_partition_root = true)")
        self.sessions = [self.server.connect() for _ in range(2)]
        self.ddl = self.server.connect()
        for conn in [*self.sessions, self.ddl]:
            conn.execute("SET lock_timeout = '5s'")

    def source_table(self, table: str) -> str:
        return f"public.{table}"

    def pipeline(self, spark: Any, lake_path: Path) -> Pipeline:
        return postgres_pipeline(spark, self.server, lake_path, name="conformance",
                                 source_extra=f"  publication: {PUBLICATION}\n  create_publication: false\n")

    def assert_lake_equals_source(self, pipeline: Pipeline, tables: list[str]) -> None:
        for table in tables:
            result = compare_table(self.spark, pipeline, self.source_table(table))
            assert result.equal, f"{table}: {result.summary()}"

    def close(self) -> None:
        try:
            for conn in [*self.sessions, self.ddl]:
                conn.close()  # an open transaction rolls back
        finally:
            self.server.__exit__(None, None, None)

    def apply(self, op: Op) -> None:
        if isinstance(op, Begin):
            self.sessions[op.tx].execute("BEGIN")
        elif isinstance(op, Commit):
            self.sessions[op.tx].execute("COMMIT")
        elif isinstance(op, Rollback):
            self.sessions[op.tx].execute("ROLLBACK")
        elif isinstance(op, Insert):
            cols = list(op.values)
            self.sessions[op.tx].execute(
                f"INSERT INTO {q(op.table)} ({', '.join(q(c) for c in cols)}) VALUES ({', '.join(['%s'] * len(cols))})",
                [op.values[c] for c in cols])
        elif isinstance(op, (Update, UpdateKey)):
            changes = op.changes if isinstance(op, Update) else op.new_key
            sets = ", ".join(f"{q(c)} = %s" for c in changes)
            n = self.sessions[op.tx].execute(f"UPDATE {q(op.table)} SET {sets} WHERE {self._where(op.key)}",
                                             [*changes.values(), *op.key.values()]).rowcount
            assert n == 1, f"{op}: {n} rows changed"
        elif isinstance(op, Delete):
            n = self.sessions[op.tx].execute(f"DELETE FROM {q(op.table)} WHERE {self._where(op.key)}",
                                             list(op.key.values())).rowcount
            assert n == 1, f"{op}: {n} rows deleted"
        else:
            sql, params = self._ddl_sql(op)
            self.ddl.execute(sql, params)

    @staticmethod
    def _where(key: Any) -> str:
        return " AND ".join(f"{q(c)} = %s" for c in key)

    @staticmethod
    def _ddl_sql(op: Op) -> tuple[str, list[Any] | None]:
        if isinstance(op, Create):
            cols = [f"{q(c)} {SQL_TYPES[t]}" for c, t in op.columns]
            key = ", ".join(q(k) for k in op.key)
            return f"CREATE TABLE {q(op.table)} ({', '.join(cols)}, PRIMARY KEY ({key}))", None
        if isinstance(op, AddColumn):  # a constant default: PostgreSQL stores it once for the rows that exist
            return (f"ALTER TABLE {q(op.table)} ADD COLUMN {q(op.column)} {SQL_TYPES[op.type]} "
                    f"DEFAULT {_literal(op.default)}"), None
        if isinstance(op, DropColumn):
            return f"ALTER TABLE {q(op.table)} DROP COLUMN {q(op.column)}", None
        if isinstance(op, RenameColumn):
            return f"ALTER TABLE {q(op.table)} RENAME COLUMN {q(op.column)} TO {q(op.new_name)}", None
        if isinstance(op, WidenColumn):
            return f"ALTER TABLE {q(op.table)} ALTER COLUMN {q(op.column)} TYPE {SQL_TYPES[op.new_type]}", None
        if isinstance(op, Truncate):
            return f"TRUNCATE TABLE {q(op.table)}", None
        if isinstance(op, DropTable):
            return f"DROP TABLE {q(op.table)}", None
        raise TypeError(f"not an operation: {op!r}")


def _literal(value: Any) -> str:
    """A constant of the workload's value types as SQL (a DEFAULT takes no parameter)."""
    if value is None:
        return "NULL"
    if isinstance(value, (int, Decimal)):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def make_driver(request: pytest.FixtureRequest) -> PostgresDriver:
    """A cluster of its own and the shared Spark session."""
    return PostgresDriver(request.getfixturevalue("spark"))
