"""Log rows decoded in Spark, windows that end inside transactions (the fake source's ``shape: frame``): interleaved
transactions, a rollback and a partial rollback (``undo`` rows), a transaction open across the snapshot (mining
starts at its first change) and across windows (held in flight), a window cut by ``max_events``, key changes,
schema changes and a truncate mid-window; the lake equals the source after each window. (Log records: every other
test of tests/engine/; committed windows: test_column_rules.py, test_target_partial.py.)"""

from __future__ import annotations

from cdclake.testing.fake import FakeDatabase

from tests.engine.helpers import assert_lake_equals_source, make_pipeline

TABLES = ["shop.acct", "shop.kv"]


def test_windows_that_end_inside_transactions_land_the_source_exactly(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.acct", [("id", "int", False), ("owner", "text"), ("balance", "decimal(10,2)")], key=["id"])
    db.create_table("shop.kv", [("k", "text", False), ("v", "bigint")], key=["k"])
    db.insert("shop.acct", *({"id": i, "owner": f"o{i}", "balance": i * 1.5} for i in range(1, 11)))
    db.insert("shop.kv", {"k": "a", "v": 1}, {"k": "b", "v": 2})
    held = db.begin()  # open across the snapshot and the first window
    held.update("shop.acct", {"id": 1}, {"owner": "held"})
    pipeline = make_pipeline(spark, db, tmp_path / "lake", "frames", "frame")
    pipeline.snapshot()

    with db.transaction() as tx:
        tx.update("shop.acct", {"id": 2}, {"id": 20})  # a key change
        tx.delete("shop.acct", {"id": 3})
        tx.insert("shop.kv", {"k": "c", "v": 3})
    rolled = db.begin()
    rolled.delete("shop.kv", {})
    rolled.rollback()
    partly = db.begin()
    partly.insert("shop.acct", {"id": 30, "owner": "kept"})
    savepoint = partly.savepoint()
    partly.update("shop.acct", {"id": 30}, {"owner": "undone"})
    partly.insert("shop.acct", {"id": 31})
    partly.rollback_to(savepoint)
    partly.commit()
    pipeline.mine(max_events=2)
    pipeline.mine()
    assert_lake_equals_source(spark, pipeline, TABLES)

    held.commit()
    db.add_column("shop.acct", "note", "text", default="n/a", at="owner")
    db.update("shop.acct", {"id": 4}, {"note": "x", "balance": 9})
    db.rename_column("shop.kv", "v", "value")
    db.update("shop.kv", {"k": "a"}, {"value": 10})
    db.truncate("shop.kv")
    db.insert("shop.kv", {"k": "z", "value": 26})
    db.retype_column("shop.acct", "balance", "decimal(12,1)")
    db.insert("shop.acct", {"id": 40, "balance": 4.25})
    pipeline.mine()
    assert_lake_equals_source(spark, pipeline, TABLES)
