"""The MySQL/MariaDB conformance driver: the workload as SQL on the session's throwaway MariaDB.

Each workload session is a pymysql connection of its own (READ COMMITTED, short lock waits: the
workload never makes one session wait for the other, so a wait is a bug of the workload and fails in
seconds instead of hanging); DDL runs on a third, autocommit connection. The comparison reads the
source through the pipeline's own snapshot path (``LOCK TABLES ... READ`` first), which would wait for
an open transaction: transactions end before every window here — the binlog holds committed
transactions only, so an open one would not reach a window anyway.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.mariadb import MariaDBServer

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
from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline

MARKS = (pytest.mark.mariadb,)  # the driver's parameter uses the session MariaDB (tests/conftest.py)
SQL_TYPES = {KEY: "INT NOT NULL", INT: "INT", BIGINT: "BIGINT", DEC: "DECIMAL(12,2)", STR: "VARCHAR(20)",
             WIDE_STR: "VARCHAR(40)", DATE: "DATE"}
SESSION = ("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET SESSION innodb_lock_wait_timeout = 5",
           "SET SESSION lock_wait_timeout = 5")


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class MySqlDriver(Driver):
    name = "mysql"
    seed = 20260319  # kills the truncate round after its first MERGE; small window in the drop_table round
    supported_ddl = frozenset(DDL_KINDS)
    open_transactions_across_windows = False

    def __init__(self, server: MariaDBServer, database: str, spark: Any) -> None:
        self.server, self.database, self.spark = server, database, spark
        self.sessions = [server.connect(database=database) for _ in range(2)]
        self.ddl = server.connect(database=database)
        for conn in [*self.sessions, self.ddl]:
            with conn.cursor() as cur:
                for sql in SESSION:
                    cur.execute(sql)
        for conn in self.sessions:
            conn.autocommit(False)

    def source_table(self, table: str) -> str:
        return f"{self.database}.{table}"

    def pipeline(self, spark: Any, lake_path: Path) -> Pipeline:
        return make_pipeline(spark, self.server, self.database, lake_path, "conformance")

    def assert_lake_equals_source(self, pipeline: Pipeline, tables: list[str]) -> None:
        assert_lake_equals_source(self.spark, self.server, pipeline, [self.source_table(t) for t in tables])

    def close(self) -> None:
        for conn in [*self.sessions, self.ddl]:
            conn.close()  # an open transaction rolls back; its metadata locks go with it

    # ---- the operations ----------------------------------------------------------------------------

    def _run(self, conn: Any, sql: str, params: Any = None) -> int:
        with conn.cursor() as cur:
            return int(cur.execute(sql, params))

    def apply(self, op: Op) -> None:
        if isinstance(op, Begin):
            self.sessions[op.tx].begin()
        elif isinstance(op, Commit):
            self.sessions[op.tx].commit()
        elif isinstance(op, Rollback):
            self.sessions[op.tx].rollback()
        elif isinstance(op, Insert):
            cols = list(op.values)
            self._run(self.sessions[op.tx], f"INSERT INTO {q(op.table)} ({', '.join(q(c) for c in cols)}) "
                      f"VALUES ({', '.join(['%s'] * len(cols))})", [op.values[c] for c in cols])
        elif isinstance(op, Update):
            sets = ", ".join(f"{q(c)} = %s" for c in op.changes)
            self._run(self.sessions[op.tx], f"UPDATE {q(op.table)} SET {sets} WHERE {self._where(op.key)}",
                      [*op.changes.values(), *op.key.values()])
        elif isinstance(op, UpdateKey):
            sets = ", ".join(f"{q(c)} = %s" for c in op.new_key)
            n = self._run(self.sessions[op.tx], f"UPDATE {q(op.table)} SET {sets} WHERE {self._where(op.key)}",
                          [*op.new_key.values(), *op.key.values()])
            assert n == 1, f"{op}: {n} rows changed"
        elif isinstance(op, Delete):
            n = self._run(self.sessions[op.tx], f"DELETE FROM {q(op.table)} WHERE {self._where(op.key)}",
                          list(op.key.values()))
            assert n == 1, f"{op}: {n} rows deleted"
        else:
            self._run(self.ddl, self._ddl_sql(op))

    @staticmethod
    def _where(key: Any) -> str:
        return " AND ".join(f"{q(c)} = %s" for c in key)

    def _ddl_sql(self, op: Op) -> str:
        if isinstance(op, Create):
            cols = [f"{q(c)} {SQL_TYPES[t]}" for c, t in op.columns]
            return f"CREATE TABLE {q(op.table)} ({', '.join(cols)}, PRIMARY KEY ({', '.join(q(k) for k in op.key)}))"
        if isinstance(op, AddColumn):
            default = self.ddl.escape(op.default)
            return f"ALTER TABLE {q(op.table)} ADD COLUMN {q(op.column)} {SQL_TYPES[op.type]} DEFAULT {default}"
        if isinstance(op, DropColumn):
            return f"ALTER TABLE {q(op.table)} DROP COLUMN {q(op.column)}"
        if isinstance(op, RenameColumn):
            return f"ALTER TABLE {q(op.table)} RENAME COLUMN {q(op.column)} TO {q(op.new_name)}"
        if isinstance(op, WidenColumn):
            return f"ALTER TABLE {q(op.table)} MODIFY COLUMN {q(op.column)} {SQL_TYPES[op.new_type]}"
        if isinstance(op, Truncate):
            return f"TRUNCATE TABLE {q(op.table)}"
        if isinstance(op, DropTable):
            return f"DROP TABLE {q(op.table)}"
        raise TypeError(f"not an operation: {op!r}")


def make_driver(request: pytest.FixtureRequest) -> MySqlDriver:
    """The shared session MariaDB, a fresh database on it, the shared Spark session."""
    return MySqlDriver(request.getfixturevalue("mariadb"), request.getfixturevalue("fresh_database"),
                       request.getfixturevalue("spark"))
