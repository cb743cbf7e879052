"""The simulator scenarios against a real Oracle: the lake must equal the database row by row."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline

# the connection variables are checked before the (session) Spark fixture starts a JVM
pytestmark = pytest.mark.usefixtures("oracle_env")


class LiveDatabase:
    """A test schema in the PDB, driven with python-oracledb as an application would."""

    def __init__(self, env: dict[str, str]) -> None:
        import oracledb

        self.oracledb = oracledb
        self.dsn = env.get("CDCLAKE_ORACLE_PDB_DSN") or env["CDCLAKE_ORACLE_DSN"]
        self.user = env["CDCLAKE_ORACLE_APP_USER"].upper()
        self.password = env["CDCLAKE_ORACLE_APP_PASSWORD"]
        self.suffix = uuid.uuid4().hex[:6].upper()

    def connect(self) -> Any:
        conn = self.oracledb.connect(user=self.user, password=self.password, dsn=self.dsn)
        conn.autocommit = False
        return conn

    def name(self, table: str) -> str:
        return f"{table}_{self.suffix}"

    def ddl(self, sql: str) -> None:
        with self.connect() as conn:
            conn.cursor().execute(sql)

    def rows(self, table: str, columns: list[str]) -> set[tuple[Any, ...]]:
        with self.connect() as conn:
            cur = conn.cursor()
            cur.execute(f'SELECT {", ".join(columns)} FROM "{self.name(table)}"')
            return {tuple(r) for r in cur.fetchall()}


def pipeline_for(spark: Any, env: dict[str, str], db: LiveDatabase, lake: Path, extra: str = "") -> Pipeline:
    os.environ["CDCLAKE_LIVE_PW"] = env["CDCLAKE_ORACLE_PASSWORD"]
    pdb = env.get("CDCLAKE_ORACLE_PDB")
    text = (
        f"pipeline: live{db.suffix.lower()}\nsource:\n  type: oracle\n  dsn: '{env['CDCLAKE_ORACLE_DSN']}'\n"
        f"  user: '{env['CDCLAKE_ORACLE_USER']}'\n  password: ${{CDCLAKE_LIVE_PW}}\n"
        + (f"  pdb: {pdb}\n  snapshot_dsn: '{env.get('CDCLAKE_ORACLE_PDB_DSN', '')}'\n" if pdb else "")
        + f"  include_tables: ['{db.user}\\..*_{db.suffix}']\n{extra}lake:\n  root: {lake}\n"
    )
    config = load_config_text(text)
    return Pipeline.from_config(config, spark)


def lake_rows(spark: Any, pipeline: Pipeline, db: LiveDatabase, table: str, columns: list[str]) -> set[tuple]:
    frame = spark.read.format("delta").load(pipeline.layout.target(f"{db.user}.{db.name(table)}"))
    return {tuple(r) for r in frame.select(*columns).collect()}


def test_transactions_rollbacks_and_windows(spark, oracle_env, tmp_path):  # type: ignore[no-untyped-def]
    db = LiveDatabase(oracle_env)
    t = db.name("ACCOUNTS")
    db.ddl(f'CREATE TABLE "{t}" (ID NUMBER(10) PRIMARY KEY, NAME VARCHAR2(40), AMOUNT NUMBER(12,2))')
    db.ddl(f'ALTER TABLE "{t}" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS')
    pipeline = pipeline_for(spark, oracle_env, db, tmp_path)
    open_conn = db.connect()
    open_conn.cursor().execute(f'INSERT INTO "{t}" VALUES (1000, \'open at snapshot\', 1)')
    pipeline.snapshot()
    with db.connect() as conn:
        cur = conn.cursor()
        for i in range(200):
            cur.execute(f'INSERT INTO "{t}" VALUES (:1, :2, :3)', [i, f"n{i}", i / 4])
        conn.commit()
        cur.execute(f'UPDATE "{t}" SET NAME = \'rolled back\' WHERE ID < 10')
        conn.rollback()
        cur.execute(f'UPDATE "{t}" SET AMOUNT = AMOUNT + 1 WHERE ID < 50')
        cur.execute("SAVEPOINT s1")
        cur.execute(f'DELETE FROM "{t}" WHERE ID < 20')
        cur.execute("ROLLBACK TO SAVEPOINT s1")
        cur.execute(f'UPDATE "{t}" SET ID = ID + 10000 WHERE ID = 199')
        conn.commit()
    open_conn.commit()
    for _ in range(3):
        pipeline.mine(100)
    pipeline.mine()
    cols = ["ID", "NAME", "AMOUNT"]
    assert lake_rows(spark, pipeline, db, "ACCOUNTS", cols) == db.rows("ACCOUNTS", cols)


def test_ddl_and_lobs(spark, oracle_env, tmp_path):  # type: ignore[no-untyped-def]
    db = LiveDatabase(oracle_env)
    t = db.name("DOCS")
    db.ddl(f'CREATE TABLE "{t}" (ID NUMBER(10) PRIMARY KEY, TITLE VARCHAR2(40), BODY CLOB)')
    db.ddl(f'ALTER TABLE "{t}" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS')
    pipeline = pipeline_for(spark, oracle_env, db, tmp_path, extra="  mining:\n    lob: true\n")
    pipeline.snapshot()
    with db.connect() as conn:
        cur = conn.cursor()
        cur.execute(f'INSERT INTO "{t}" VALUES (1, \'a\', :1)', ["x" * 20000])
        conn.commit()
    db.ddl(f'ALTER TABLE "{t}" ADD (N NUMBER(5) DEFAULT 7)')
    with db.connect() as conn:
        cur = conn.cursor()
        cur.execute(f'INSERT INTO "{t}" (ID, TITLE, BODY, N) VALUES (2, \'b\', \'short\', 3)')
        cur.execute(f'UPDATE "{t}" SET TITLE = \'a2\' WHERE ID = 1')
        conn.commit()
    pipeline.mine()
    cols = ["ID", "TITLE", "BODY", "N"]
    assert lake_rows(spark, pipeline, db, "DOCS", cols) == db.rows("DOCS", cols)
