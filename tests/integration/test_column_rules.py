"""Column selection and masking against a real MariaDB: a column left out and the raw values of masked
columns appear in no file under the lake root after a snapshot, mining (updates of every column, a key
change, deletes, a rolled-back transaction, ADD/MODIFY COLUMN) and backfills, while the lake equals the
source read through the same rules, and a hashed column still joins across tables.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cdclake.testing.mariadb import MariaDBServer

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline

pytestmark = [pytest.mark.integration]

SALT = "s4lt-for-tests"


def _raw_values_in(root: Path, needles: list[str]) -> dict[str, list[str]]:
    """needle -> files under ``root`` holding it: in the bytes of any file, or in a value of a Parquet
    file (pages may be compressed, so Parquet files are read too)."""
    found: dict[str, list[str]] = {n: [] for n in needles}
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        texts = [path.read_bytes().decode("latin-1")]
        if path.suffix == ".parquet":
            texts.append(str(pq.read_table(path).to_pylist()))
        for needle in needles:
            if any(needle in t for t in texts):
                found[needle].append(str(path.relative_to(root)))
    return found


# The binlog decoded on the driver and by Spark tasks (whose images are masked in the bronze commit's job).
@pytest.mark.parametrize("decoder", ["driver", "executors"])
def test_left_out_and_masked_columns_never_reach_the_lake(spark: Any, mariadb: MariaDBServer, fresh_database: str,
                                                          tmp_path: Path, decoder: str) -> None:
    db = fresh_database
    mariadb.execute(f"CREATE TABLE {db}.people (id INT PRIMARY KEY, name VARCHAR(40), ssn CHAR(20), "
                    "email VARCHAR(60), phone VARCHAR(20), notes TEXT) CHARACTER SET latin1")
    mariadb.execute(f"CREATE TABLE {db}.visits (email VARCHAR(60) NOT NULL, city VARCHAR(20), secret VARCHAR(30), "
                    "UNIQUE KEY uk_email (email))")
    mariadb.execute(f"INSERT INTO {db}.people VALUES "
                    "(1, 'NAME-VISIBLE-1', 'SSN-RAW-001', 'raw.mail.1@example.com', 'PHONE-RAW-0001', 'NOTE-RAW-1'),"
                    "(2, 'NAME-VISIBLE-2', 'SSN-RAW-002', 'raw.mail.2@example.com', NULL, 'NOTE-RAW-2'),"
                    "(3, 'NAME-VISIBLE-3', NULL, NULL, 'PHONE-RAW-0003', NULL)")
    mariadb.execute(f"INSERT INTO {db}.visits VALUES ('raw.mail.1@example.com', 'Oslo', 'SECRET-RAW-1'), "
                    "('raw.mail.9@example.com', 'Rome', 'SECRET-RAW-9')")
    os.environ["CDCLAKE_TEST_SALT"] = SALT
    extra = (
        'masking: {salt: "${CDCLAKE_TEST_SALT}"}\n'
        f"tables:\n"
        f"  {db}.people:\n"
        f"    exclude_columns: [ssn]\n"
        f"    mask_columns:\n"
        f"      email: {{hash: sha256}}\n"
        f"      phone: {{truncate: 5}}\n"
        f"      notes: {{text: '***'}}\n"
        f"      iban: {{hash: sha256}}\n"  # a column added later is masked from its first value
        f"  {db}.visits:\n"
        f"    include_columns: [email, city]\n"
        f"    mask_columns: {{email: {{hash: sha256}}}}\n"
        f"mining: {{decoder: {decoder}}}\n"
    )
    lake = tmp_path / "lake"
    p = make_pipeline(spark, mariadb, db, lake, name=f"columns{decoder}", extra=extra)
    tables = [f"{db}.people", f"{db}.visits"]
    p.snapshot()
    assert_lake_equals_source(spark, mariadb, p, tables)  # the source read through the same rules

    people = p.layout.target(f"{db}.people")
    row = spark.read.format("delta").load(people).where("id = 1").first().asDict()
    assert "ssn" not in row
    assert row["email"] == hashlib.sha256((SALT + "raw.mail.1@example.com").encode()).hexdigest()
    assert (row["phone"], row["notes"], row["name"]) == ("PHONE", "***", "NAME-VISIBLE-1")

    mariadb.execute(f"UPDATE {db}.people SET name = 'NAME-VISIBLE-1b', ssn = 'SSN-RAW-011', "
                    "email = 'raw.mail.11@example.com', phone = 'PHONE-RAW-0011', notes = 'NOTE-RAW-11' WHERE id = 1")
    mariadb.execute(f"INSERT INTO {db}.people VALUES (4, 'NAME-VISIBLE-4', 'SSN-RAW-004', 'raw.mail.1@example.com', "
                    "'PHONE-RAW-0004', 'NOTE-RAW-4')")
    mariadb.execute(f"UPDATE {db}.people SET id = 20, email = 'raw.mail.20@example.com' WHERE id = 2")  # key change
    mariadb.execute(f"DELETE FROM {db}.people WHERE id = 3")
    mariadb.execute(f"INSERT INTO {db}.visits VALUES ('raw.mail.20@example.com', 'Lima', 'SECRET-RAW-20')")
    mariadb.execute(f"UPDATE {db}.visits SET email = 'raw.mail.21@example.com', secret = 'SECRET-RAW-21' "
                    "WHERE city = 'Rome'")
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO {db}.people VALUES (5, 'n', 'SSN-RAW-ROLLEDBACK', 'raw.mail.rb@example.com', "
                        "NULL, NULL)")
            cur.execute("ROLLBACK")
    finally:
        conn.close()
    mariadb.execute(f"ALTER TABLE {db}.people ADD COLUMN iban VARCHAR(34) NOT NULL DEFAULT 'IBAN-RAW-DEFAULT', "
                    "MODIFY email VARCHAR(80)")
    mariadb.execute(f"INSERT INTO {db}.people VALUES (6, 'NAME-VISIBLE-6', 'SSN-RAW-006', NULL, NULL, NULL, "
                    "'IBAN-RAW-6')")
    mariadb.execute(f"ALTER TABLE {db}.visits ADD COLUMN secret2 VARCHAR(30)")  # not included: never lands
    mariadb.execute(f"UPDATE {db}.visits SET secret2 = 'SECRET-RAW-NEW' WHERE city = 'Oslo'")
    p.mine()
    assert_lake_equals_source(spark, mariadb, p, tables)
    assert set(spark.read.format("delta").load(p.layout.target(f"{db}.visits")).columns) >= {"email", "city"}
    assert not {"secret", "secret2"} & set(spark.read.format("delta").load(p.layout.target(f"{db}.visits")).columns)
    # a hashed column joins across tables as the raw values would
    joined = spark.sql(f"SELECT p.id, v.city FROM delta.`{people}` p JOIN delta.`{p.layout.target(db + '.visits')}` v "
                       "ON p.email = v.email ORDER BY p.id").collect()
    assert [(r.id, r.city) for r in joined] == [(4, "Oslo"), (20, "Lima")]

    # backfills re-read through the same rules: a range, then the whole table after the lake drifted
    spark.sql(f"UPDATE delta.`{people}` SET notes = 'wrong'")
    spark.sql(f"DELETE FROM delta.`{people}` WHERE id = 4")
    p.backfill(f"{db}.people", where="id = 4")
    p.backfill(f"{db}.people")
    assert_lake_equals_source(spark, mariadb, p, tables)
    report = p.reconcile(tables=tables)
    assert report.ok and all(r.differing == 0 for r in report.tables), report.to_dict()

    raw = ["SSN-RAW-", "raw.mail.", "PHONE-RAW-", "NOTE-RAW-", "IBAN-RAW-", "SECRET-RAW-"]
    found = _raw_values_in(lake, [*raw, "NAME-VISIBLE-4"])
    assert found["NAME-VISIBLE-4"], "the scan must find a value the rules let through"
    leaked = {n: f[:3] for n, f in found.items() if f and n in raw}
    assert not leaked, f"raw values under the lake root: {leaked}"


def test_oracle_rules_apply_to_log_rows_and_transactions_held_in_flight(spark: Any, tmp_path: Path) -> None:
    from cdclake.engine.target.changes import typed_select
    from cdclake.testing.logminer_sim import SimulatedOracle

    from tests.integration.oracle_helpers import flashback_reader, oracle_pipeline

    db = SimulatedOracle(seed=5)
    db.create_table("APP", "P", [("ID", "NUMBER(10)"), ("NAME", "VARCHAR2(30)"), ("SSN", "VARCHAR2(20)"),
                                 ("EMAIL", "VARCHAR2(40)")], ["ID"])
    tx = db.begin()
    for i in (1, 2, 3):
        tx.insert("APP", "P", {"ID": i, "NAME": f"NAME-VISIBLE-{i}", "SSN": f"SSN-RAW-{i}", "EMAIL": f"raw.mail.{i}@x"})
    tx.commit()
    os.environ["CDCLAKE_TEST_SALT"] = SALT
    extra = ('masking: {salt: "${CDCLAKE_TEST_SALT}"}\n'
             "tables:\n  APP.P:\n    exclude_columns: [SSN]\n    mask_columns: {EMAIL: {hash: sha256}}\n")
    lake = tmp_path / "lake"
    p = oracle_pipeline(spark, db, lake, extra=extra)
    p.snapshot()
    held = db.begin()  # open across a window: its rows wait in the in-flight buffer
    held.update("APP", "P", {"ID": 1}, {"SSN": "SSN-RAW-HELD", "EMAIL": "raw.mail.held@x"})
    tx = db.begin()
    tx.insert("APP", "P", {"ID": 4, "NAME": "NAME-VISIBLE-4", "SSN": "SSN-RAW-4", "EMAIL": "raw.mail.4@x"})
    tx.update("APP", "P", {"ID": 2}, {"ID": 20, "EMAIL": "raw.mail.20@x"})
    tx.delete("APP", "P", {"ID": 3})
    tx.commit()
    p.mine()
    assert list(lake.rglob("*.parquet")), "the in-flight buffer holds the open transaction"
    raw = ["SSN-RAW-", "raw.mail."]
    assert not {n: f for n, f in _raw_values_in(lake, raw).items() if f}
    held.commit()
    p.mine()

    schema = p.control.latest_entries()["APP.P"].schema
    assert schema is not None
    shown = p.ctx.columns.lake_schema(schema)
    expected = p.ctx.columns.mask_frame("APP.P", flashback_reader(db)(spark, shown, db.current_scn)).selectExpr(
        *typed_select(p.source.types, shown))
    got = spark.read.format("delta").load(p.layout.target("APP.P")).select(*shown.column_names)
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, expected.collect()))
    assert sorted(r.ID for r in got.collect()) == [1, 4, 20] and "SSN" not in got.columns
    email = got.where("ID = 1").first().EMAIL
    assert email == hashlib.sha256((SALT + "raw.mail.held@x").encode()).hexdigest()
    found = _raw_values_in(lake, [*raw, "NAME-VISIBLE-4"])
    assert found["NAME-VISIBLE-4"] and not {n: f for n, f in found.items() if f and n in raw}
