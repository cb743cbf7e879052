"""Row keys the way users expect (moved from integration/test_row_keys.py, issue 44): a primary key (a text one
too), else the first NOT NULL unique key, else ``key_columns`` from the pipeline file, else a multiset (equal
rows are distinct copies; a delete or update touches exactly one). Each table is compared with the source row
by row (as multisets) after the snapshot, after mining a workload of every kind of change, and after backfills
and reconcile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdclake.testing.fake import FakeDatabase

from tests.engine.helpers import assert_lake_equals_source, make_pipeline

TABLES = ["shop.pk_text", "shop.uk", "shop.cfg", "shop.bag"]


def test_every_kind_of_key_ends_equal_to_the_source(spark: Any, tmp_path: Path) -> None:
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.pk_text", [("code", "text", False), ("v", "int"), ("note", "text")], key=["code"])
    db.create_table("shop.uk", [("id", "int"), ("email", "text", False), ("v", "int")],
                    unique_keys={"uk_id": ["id"], "uk_email": ["email"]})
    db.create_table("shop.cfg", [("a", "int"), ("b", "text"), ("v", "int")])
    db.create_table("shop.bag", [("a", "int"), ("b", "text"), ("c", "double")])
    db.insert("shop.pk_text", {"code": "ab", "v": 1, "note": "x"}, {"code": "c", "v": 2})
    db.insert("shop.uk", {"email": "p@x", "v": 1}, {"id": 2, "email": "q@x", "v": 2})
    db.insert("shop.cfg", {"a": 1, "b": "a", "v": 1}, {"a": 2, "b": "b", "v": 2})
    db.insert("shop.bag", *[{"a": 1, "b": "x", "c": 0.5}] * 3, *[{"a": 2}] * 2)
    p = make_pipeline(spark, db, tmp_path / "lake", name="rowkeys",
                      extra="tables:\n  shop.cfg:\n    key_columns: [a]\n")
    p.snapshot()
    assert_lake_equals_source(spark, p, TABLES)
    keys = {t["source_table"]: t["row_key"] for t in p.status()}
    assert keys == {"shop.pk_text": "primary key (code)", "shop.uk": "unique key uk_email (email)",
                    "shop.cfg": "key_columns (a)", "shop.bag": "none (rows kept as a multiset)"}

    with db.transaction() as tx:  # every column updated, keys changed, deletes
        tx.update("shop.pk_text", {"code": "ab"}, {"v": 10, "note": "y"})
        tx.update("shop.pk_text", {"code": "c"}, {"code": "zz"})
        tx.update("shop.uk", {"email": "p@x"}, {"email": "r@x", "id": 7, "v": 3})
        tx.delete("shop.uk", {"email": "q@x"})
        tx.insert("shop.uk", {"email": "q@x", "v": 9})
        tx.update("shop.cfg", {"a": 1}, {"a": 3, "b": "c"})
        tx.delete("shop.cfg", {"a": 2})
    # the multiset: one copy of three deleted, one updated, a copy added, equal rows in one statement
    db.delete("shop.bag", {"a": 1}, limit=1)
    db.update("shop.bag", {"a": 1}, {"c": 1.5}, limit=1)
    db.insert("shop.bag", {"a": 2}, {"a": 3, "b": "y", "c": 1e30}, {"a": 3, "b": "y", "c": 1e30})
    db.update("shop.bag", {"a": 2}, {"b": "n"}, limit=2)
    db.delete("shop.bag", {"a": 3}, limit=1)
    rolled = db.begin()  # a rolled-back transaction lands nowhere
    rolled.delete("shop.bag", {})
    rolled.insert("shop.pk_text", {"code": "rb", "v": 0, "note": "no"})
    rolled.rollback()
    p.mine()
    assert_lake_equals_source(spark, p, TABLES)

    # schema changes, and a unique key that appears: the key changes with them
    db.add_column("shop.bag", "d", "int", default=7)
    db.retype_column("shop.bag", "a", "bigint")
    db.delete("shop.bag", {"a": 2}, limit=1)
    db.update("shop.uk", {"email": "q@x"}, {"id": 8})
    db.retype_column("shop.uk", "id", "int", nullable=False)
    db.set_key("shop.uk", [], unique_keys={"uk_id": ["id"]})
    db.update("shop.uk", {"id": 7}, {"email": "s@x"})
    db.insert("shop.bag", {"a": 1, "b": "x", "c": 0.5})
    p.mine()
    assert_lake_equals_source(spark, p, TABLES)
    assert {t["source_table"]: t["row_key"] for t in p.status()}["shop.uk"] == "unique key uk_id (id)"

    # a backfill of the multiset, whole and by range, after the lake drifted; then reconcile finds it equal
    target = p.layout.target("shop.bag")
    spark.sql(f"DELETE FROM delta.`{target}` WHERE a = 1")
    p.backfill("shop.bag", where="a = 1")
    assert_lake_equals_source(spark, p, TABLES)
    db.insert("shop.bag", {"a": 1, "b": "x", "c": 0.5})  # after the backfill's position
    spark.sql(f"INSERT INTO delta.`{target}` SELECT * FROM delta.`{target}` WHERE a = 2")
    p.backfill("shop.bag")
    p.mine()
    assert_lake_equals_source(spark, p, TABLES)
    report = p.reconcile(tables=["shop.bag", "shop.uk"])
    assert report.ok and all(r.differing == 0 for r in report.tables), report.to_dict()
