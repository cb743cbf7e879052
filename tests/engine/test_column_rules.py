"""Column selection and masking (moved from integration/test_column_rules.py, issue 44): a column left out and the
raw values of masked columns appear in no file under the lake root after a snapshot, mining (updates of every
column, a key change, deletes, a rolled-back transaction, columns added and retyped) and backfills, while the lake
equals the source read through the same rules, and a hashed column still joins across tables. Log records
assembled on the driver, and committed windows a source decoded in Spark tasks (their images masked in the bronze
commit's job); log rows held in flight: integration/test_column_rules.py (Oracle)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from cdclake.testing.fake import FakeDatabase

from tests.engine.helpers import SALT, assert_lake_equals_source, make_pipeline, raw_values_in

TABLES = ["shop.people", "shop.visits"]


@pytest.mark.parametrize("shape", ["records", "committed"])
def test_left_out_and_masked_columns_never_reach_the_lake(spark: Any, tmp_path: Path, shape: str) -> None:
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.people", [("id", "int", False), ("name", "text"), ("ssn", "text"), ("email", "varchar(60)"),
                                    ("phone", "text"), ("notes", "text")], key=["id"])
    db.create_table("shop.visits", [("email", "varchar(60)", False), ("city", "text"), ("secret", "text")],
                    unique_keys={"uk_email": ["email"]})
    db.insert("shop.people",
              {"id": 1, "name": "NAME-VISIBLE-1", "ssn": "SSN-RAW-001", "email": "raw.mail.1@example.com",
               "phone": "PHONE-RAW-0001", "notes": "NOTE-RAW-1"},
              {"id": 2, "name": "NAME-VISIBLE-2", "ssn": "SSN-RAW-002", "email": "raw.mail.2@example.com",
               "notes": "NOTE-RAW-2"},
              {"id": 3, "name": "NAME-VISIBLE-3", "phone": "PHONE-RAW-0003"})
    db.insert("shop.visits", {"email": "raw.mail.1@example.com", "city": "Oslo", "secret": "SECRET-RAW-1"},
              {"email": "raw.mail.9@example.com", "city": "Rome", "secret": "SECRET-RAW-9"})
    os.environ["CDCLAKE_TEST_SALT"] = SALT
    extra = ('masking: {salt: "${CDCLAKE_TEST_SALT}"}\n'
             "tables:\n"
             "  shop.people:\n"
             "    exclude_columns: [ssn]\n"
             "    mask_columns:\n"
             "      email: {hash: sha256}\n"
             "      phone: {truncate: 5}\n"
             "      notes: {text: '***'}\n"
             "      iban: {hash: sha256}\n"  # a column added later is masked from its first value
             "  shop.visits:\n"
             "    include_columns: [email, city]\n"
             "    mask_columns: {email: {hash: sha256}}\n")
    lake = tmp_path / "lake"
    p = make_pipeline(spark, db, lake, name=f"columns{shape}", shape=shape, extra=extra)
    p.snapshot()
    assert_lake_equals_source(spark, p, TABLES)  # the source read through the same rules

    people = p.layout.target("shop.people")
    row = spark.read.format("delta").load(people).where("id = 1").first().asDict()
    assert "ssn" not in row
    assert row["email"] == hashlib.sha256((SALT + "raw.mail.1@example.com").encode()).hexdigest()
    assert (row["phone"], row["notes"], row["name"]) == ("PHONE", "***", "NAME-VISIBLE-1")

    db.update("shop.people", {"id": 1}, {"name": "NAME-VISIBLE-1b", "ssn": "SSN-RAW-011",
                                          "email": "raw.mail.11@example.com", "phone": "PHONE-RAW-0011",
                                          "notes": "NOTE-RAW-11"})
    db.insert("shop.people", {"id": 4, "name": "NAME-VISIBLE-4", "ssn": "SSN-RAW-004",
                              "email": "raw.mail.1@example.com", "phone": "PHONE-RAW-0004", "notes": "NOTE-RAW-4"})
    db.update("shop.people", {"id": 2}, {"id": 20, "email": "raw.mail.20@example.com"})  # key change
    db.delete("shop.people", {"id": 3})
    db.insert("shop.visits", {"email": "raw.mail.20@example.com", "city": "Lima", "secret": "SECRET-RAW-20"})
    db.update("shop.visits", {"city": "Rome"}, {"email": "raw.mail.21@example.com", "secret": "SECRET-RAW-21"})
    rolled = db.begin()
    rolled.insert("shop.people", {"id": 5, "name": "n", "ssn": "SSN-RAW-ROLLEDBACK",
                                  "email": "raw.mail.rb@example.com"})
    rolled.rollback()
    with db.alter("shop.people") as a:
        a.add_column("iban", "text", False, default="IBAN-RAW-DEFAULT")
        a.retype_column("email", "varchar(80)")
    db.insert("shop.people", {"id": 6, "name": "NAME-VISIBLE-6", "ssn": "SSN-RAW-006", "iban": "IBAN-RAW-6"})
    db.add_column("shop.visits", "secret2", "text")  # not included: never lands
    db.update("shop.visits", {"city": "Oslo"}, {"secret2": "SECRET-RAW-NEW"})
    p.mine()
    assert_lake_equals_source(spark, p, TABLES)
    visits = spark.read.format("delta").load(p.layout.target("shop.visits")).columns
    assert set(visits) >= {"email", "city"} and not {"secret", "secret2"} & set(visits)
    # a hashed column joins across tables as the raw values would
    joined = spark.sql(f"SELECT p.id, v.city FROM delta.`{people}` p JOIN delta.`{p.layout.target('shop.visits')}` v "
                       "ON p.email = v.email ORDER BY p.id").collect()
    assert [(r.id, r.city) for r in joined] == [(4, "Oslo"), (20, "Lima")]

    # backfills re-read through the same rules: a range, then the whole table after the lake drifted
    spark.sql(f"UPDATE delta.`{people}` SET notes = 'wrong'")
    spark.sql(f"DELETE FROM delta.`{people}` WHERE id = 4")
    p.backfill("shop.people", where="id = 4")
    p.backfill("shop.people")
    assert_lake_equals_source(spark, p, TABLES)
    report = p.reconcile(tables=TABLES)
    assert report.ok and all(r.differing == 0 for r in report.tables), report.to_dict()

    raw = ["SSN-RAW-", "raw.mail.", "PHONE-RAW-", "NOTE-RAW-", "IBAN-RAW-", "SECRET-RAW-"]
    found = raw_values_in(lake, [*raw, "NAME-VISIBLE-4"])
    assert found["NAME-VISIBLE-4"], "the scan must find a value the rules let through"
    leaked = {n: f[:3] for n, f in found.items() if f and n in raw}
    assert not leaked, f"raw values under the lake root: {leaked}"
