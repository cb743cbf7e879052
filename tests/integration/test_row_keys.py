"""Row keys the way users expect, against a real MariaDB: a primary key (CHAR and ENUM ones too), else
the first NOT NULL unique key, else ``key_columns`` from the pipeline file, else a multiset (equal
rows are distinct copies; a delete or update touches exactly one). Each table is compared with the
source row by row (as multisets) after the snapshot, after mining a workload of every kind of change,
and after backfills and reconcile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cdclake.testing.mariadb import MariaDBServer

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline

pytestmark = [pytest.mark.integration]

TABLES = {
    "pk_char": "code CHAR(5) NOT NULL PRIMARY KEY, v INT, note VARCHAR(10)",
    "pk_enum": "e ENUM('a','bb','ccc') NOT NULL PRIMARY KEY, v INT",
    "uk": "id INT NULL, email VARCHAR(20) NOT NULL, v INT, UNIQUE KEY uk_id (id), UNIQUE KEY uk_email (email)",
    "cfg": "a INT, b VARCHAR(5), v INT",
    "bag": "a INT, b CHAR(3), c DOUBLE",
}


def test_every_kind_of_key_ends_equal_to_the_source(spark: Any, mariadb: MariaDBServer, fresh_database: str,
                                                     tmp_path: Path) -> None:
    db = fresh_database
    for name, cols in TABLES.items():
        mariadb.execute(f"CREATE TABLE {db}.{name} ({cols})")
    mariadb.execute(f"INSERT INTO {db}.pk_char VALUES ('ab', 1, 'x'), ('c', 2, NULL)")
    mariadb.execute(f"INSERT INTO {db}.pk_enum VALUES ('a', 1), ('bb', 2)")
    mariadb.execute(f"INSERT INTO {db}.uk VALUES (NULL, 'p@x', 1), (2, 'q@x', 2)")
    mariadb.execute(f"INSERT INTO {db}.cfg VALUES (1, 'a', 1), (2, 'b', 2)")
    mariadb.execute(f"INSERT INTO {db}.bag VALUES (1, 'x', 0.5), (1, 'x', 0.5), (1, 'x', 0.5), (2, NULL, NULL), "
                    "(2, NULL, NULL)")
    p = make_pipeline(spark, mariadb, db, tmp_path / "lake", name="rowkeys",
                      extra=f"tables:\n  {db}.cfg:\n    key_columns: [a]\n")
    tables = [f"{db}.{t}" for t in TABLES]
    p.snapshot()
    assert_lake_equals_source(spark, mariadb, p, tables)
    keys = {t["source_table"]: t["row_key"] for t in p.status()}
    assert keys == {
        f"{db}.pk_char": "primary key (code)", f"{db}.pk_enum": "primary key (e)",
        f"{db}.uk": "unique key uk_email (email)", f"{db}.cfg": "key_columns (a)",
        f"{db}.bag": "none (rows kept as a multiset)",
    }

    for sql in [
        # every column updated, keys changed, deletes
        f"UPDATE {db}.pk_char SET v = 10, note = 'y' WHERE code = 'ab'",
        f"UPDATE {db}.pk_char SET code = 'zz' WHERE code = 'c'",
        f"UPDATE {db}.pk_enum SET e = 'ccc', v = 3 WHERE e = 'a'",
        f"DELETE FROM {db}.pk_enum WHERE e = 'bb'",
        f"UPDATE {db}.uk SET email = 'r@x', id = 7, v = 3 WHERE email = 'p@x'",
        f"DELETE FROM {db}.uk WHERE email = 'q@x'",
        f"INSERT INTO {db}.uk VALUES (NULL, 'q@x', 9)",
        f"UPDATE {db}.cfg SET a = 3, b = 'c' WHERE a = 1",
        f"DELETE FROM {db}.cfg WHERE a = 2",
        # the multiset: one copy of three deleted, one updated, a copy added, equal rows in one statement
        f"DELETE FROM {db}.bag WHERE a = 1 LIMIT 1",
        f"UPDATE {db}.bag SET c = 1.5 WHERE a = 1 LIMIT 1",
        f"INSERT INTO {db}.bag VALUES (2, NULL, NULL), (3, 'y', 1e30), (3, 'y', 1e30)",
        f"UPDATE {db}.bag SET b = 'n' WHERE a = 2 LIMIT 2",
        f"DELETE FROM {db}.bag WHERE a = 3 LIMIT 1",
    ]:
        mariadb.execute(sql)
    conn = mariadb.connect()
    try:  # a rolled-back transaction lands nowhere
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(f"DELETE FROM {db}.bag")
            cur.execute(f"INSERT INTO {db}.pk_char VALUES ('rb', 0, 'no')")
            cur.execute("ROLLBACK")
    finally:
        conn.close()
    p.mine()
    assert_lake_equals_source(spark, mariadb, p, tables)

    # schema changes, and a unique key that appears: the key changes with them
    mariadb.execute(f"ALTER TABLE {db}.bag ADD COLUMN d INT DEFAULT 7")
    mariadb.execute(f"ALTER TABLE {db}.bag MODIFY COLUMN c FLOAT")
    mariadb.execute(f"DELETE FROM {db}.bag WHERE a = 2 LIMIT 1")
    mariadb.execute(f"UPDATE {db}.uk SET id = 8 WHERE email = 'q@x'")
    mariadb.execute(f"ALTER TABLE {db}.uk MODIFY id INT NOT NULL, DROP INDEX uk_email")
    mariadb.execute(f"UPDATE {db}.uk SET email = 's@x' WHERE id = 7")
    mariadb.execute(f"INSERT INTO {db}.bag (a, b, c) VALUES (1, 'x', 0.5)")
    p.mine()
    assert_lake_equals_source(spark, mariadb, p, tables)
    assert {t["source_table"]: t["row_key"] for t in p.status()}[f"{db}.uk"] == "unique key uk_id (id)"

    # a backfill of the multiset, whole and by range, after the lake drifted; then reconcile finds it equal
    target = p.layout.target(f"{db}.bag")
    spark.sql(f"DELETE FROM delta.`{target}` WHERE a = 1")
    p.backfill(f"{db}.bag", where="a = 1")
    assert_lake_equals_source(spark, mariadb, p, tables)
    mariadb.execute(f"INSERT INTO {db}.bag (a, b, c) VALUES (1, 'x', 0.5)")  # after the backfill's position
    spark.sql(f"INSERT INTO delta.`{target}` SELECT * FROM delta.`{target}` WHERE a = 2")
    p.backfill(f"{db}.bag")
    p.mine()
    assert_lake_equals_source(spark, mariadb, p, tables)
    report = p.reconcile(tables=[f"{db}.bag", f"{db}.uk"])
    assert report.ok and all(r.differing == 0 for r in report.tables), report.to_dict()
