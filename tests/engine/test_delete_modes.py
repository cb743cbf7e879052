"""Soft deletes keep tombstones; SCD type 2 history tables hold every version of every key (moved from
integration/test_delete_modes.py, issue 44)."""

from __future__ import annotations

from cdclake.testing.fake import FakeDatabase

from tests.engine.helpers import assert_lake_equals_source, config_file, make_pipeline, run_cli


def test_soft_delete_and_history_tables(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.item", [("id", "int", False), ("qty", "int")], key=["id"])
    db.insert("shop.item", {"id": 1, "qty": 10}, {"id": 2, "qty": 20}, {"id": 3, "qty": 30})
    extra = "  delete_mode: soft\n  history_tables: true\n"
    pipeline = make_pipeline(spark, db, tmp_path / "lake", "scd", extra=extra)
    pipeline.snapshot()
    table = "shop.item"
    db.update(table, {"id": 1}, {"qty": 11})
    db.update(table, {"id": 1}, {"qty": 12})
    db.delete(table, {"id": 2})
    db.insert(table, {"id": 4, "qty": 40})
    db.update(table, {"id": 3}, {"id": 5})  # key change: delete 3, insert 5
    config = config_file(db, tmp_path / "lake", "scd", extra=extra)
    first = run_cli("mine", "--config", config, "--max-events", "2")
    assert first.output.startswith("window 1: ") and "2 events in 2 transactions" in first.output
    pipeline.mine()
    assert_lake_equals_source(spark, pipeline, [table])

    target = spark.read.format("delta").load(pipeline.layout.target(table))
    tombstones = {r.id for r in target.where("__deleted").collect()}
    assert tombstones == {2, 3}

    history = spark.read.format("delta").load(pipeline.layout.type2(table))
    versions: dict[int, list] = {}
    for r in history.orderBy("__seq").collect():
        versions.setdefault(r.id, []).append(r)
    assert [v.qty for v in versions[1]] == [10, 11, 12]
    assert [v["__deleted"] for v in versions[2]] == [False, True]
    assert [v["__deleted"] for v in versions[3]] == [False, True]
    assert [v.qty for v in versions[5]] == [30]
    for rows in versions.values():  # each version ends where the next begins; the last is open
        assert [r["__valid_to_seq"] for r in rows[:-1]] == [r["__seq"] for r in rows[1:]]
        assert rows[-1]["__valid_to_seq"] is None
    current = {r.id: r.qty for r in history.where("__valid_to_seq IS NULL AND NOT __deleted").collect()}
    assert current == {r["id"]: r["qty"] for r in db.rows(table)}
