"""cdclake backfill: a re-snapshot of a key range repairs the lake while mining goes on, never
overwrites a newer change, never resurrects a deleted row, and resumes after a kill (moved from
integration/test_backfill.py, issue 44)."""

from __future__ import annotations

import pytest
from cdclake.engine.faults import SimulatedKill
from cdclake.errors import CdcError
from cdclake.testing.compare import compare_table
from cdclake.testing.fake import FakeDatabase

from tests.engine.helpers import assert_lake_equals_source, config_file, make_pipeline, run_cli

T = "shop.acct"


def _setup(spark, tmp_path, extra: str = ""):  # type: ignore[no-untyped-def]
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table(T, [("id", "int", False), ("owner", "text"), ("balance", "decimal(10,2)")], key=["id"])
    db.insert(T, *({"id": i, "owner": f"o{i}", "balance": i * 1.5} for i in range(1, 301) if i != 175))
    pipeline = make_pipeline(spark, db, tmp_path / "lake", name="bf", extra=extra)
    config = config_file(db, tmp_path / "lake", name="bf", extra=extra)
    snapshot = run_cli("snapshot", "--config", config, "--tables", "shop\\.acct")
    assert snapshot.output.startswith(f"snapshot {T}: 299 rows at ")
    db.update(T, lambda r: r["id"] % 10 == 0, {"balance": lambda r: float(r["balance"]) + 1})
    pipeline.mine()
    return db, pipeline


def _corrupt(spark, pipeline, outside: bool = True) -> None:  # type: ignore[no-untyped-def]
    """What a bug could leave behind: rows lost, changed and invented (also outside 100..199); 175 has no
    source row."""
    path = pipeline.layout.target(T)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (105, 150{', 250' if outside else ''})")
    spark.sql(f"UPDATE delta.`{path}` SET owner = 'wrong' WHERE id IN (110, 160{', 260' if outside else ''})")
    deleted = ", `__deleted`" if pipeline.targets.options.soft else ""
    spark.sql(f"INSERT INTO delta.`{path}` (id, owner, balance, `__op`, `__seq`, `__position`{deleted}) "
              f"VALUES (175, 'ghost', 1, 'c', 1, 'x'{', false' if deleted else ''})")


def _target(spark, pipeline) -> dict[int, tuple[str, str]]:  # type: ignore[no-untyped-def]
    path = pipeline.layout.target(T)
    return {r.id: (r.owner, str(r.balance)) for r in spark.read.format("delta").load(path).collect()}


def test_key_range_resnapshot_repairs_only_that_range(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _, pipeline = _setup(spark, tmp_path)
    _corrupt(spark, pipeline)
    # the tests' row-by-row comparison sees exactly what was done to the lake
    for on_driver in (True, False):  # small tables are compared on the driver, large ones in one Spark job
        found = compare_table(spark, pipeline, T, on_driver=on_driver)
        assert (found.equal, found.lake_rows, found.source_rows) == (False, 297, 299)
        assert sorted((r["id"], r["owner"]) for r in found.only_in_lake) == [
            (110, "wrong"), (160, "wrong"), (175, "ghost"), (260, "wrong")]
        assert sorted(r["id"] for r in found.only_in_source) == [105, 110, 150, 160, 250, 260]

    report = pipeline.backfill(T, "id BETWEEN 100 AND 199")

    assert report.rows_by_table == {T: 99}
    lake = _target(spark, pipeline)
    assert (lake.get(105), lake.get(150), lake.get(175)) == (("o105", "157.50"), ("o150", "226.00"), None)
    assert lake[110][0] == "o110" and lake[160][0] == "o160"
    assert 250 not in lake and lake[260][0] == "wrong"  # outside the range: untouched
    pipeline.backfill(T, "id BETWEEN 200 AND 299")
    assert_lake_equals_source(spark, pipeline, [T])
    runs = spark.read.format("delta").load(pipeline.layout.runs).where("command = 'backfill' AND status = 'ok'")
    assert runs.count() == 2


@pytest.mark.parametrize("killed_at", ["backfill_planned", "backfill_read", "backfill_applied"])
def test_mining_between_read_and_apply_is_never_overwritten_and_a_killed_backfill_resumes(
        spark, tmp_path, monkeypatch, killed_at: str) -> None:  # type: ignore[no-untyped-def]
    db, pipeline = _setup(spark, tmp_path, extra="  delete_mode: soft\n" if killed_at == "backfill_applied" else "")
    _corrupt(spark, pipeline, outside=False)
    monkeypatch.setenv("CDCLAKE_CRASH_MODE", "raise")
    monkeypatch.setenv("CDCLAKE_CRASH_AT", killed_at)
    with pytest.raises(SimulatedKill):
        pipeline.backfill(T, "id < 200")
    monkeypatch.delenv("CDCLAKE_CRASH_AT")
    # While the backfill is stopped, the source moves on and mining applies it (beyond the backfill's
    # position): deletes, updates, re-inserts and new rows inside the range.
    with db.transaction() as tx:
        tx.delete(T, lambda r: r["id"] in (3, 4, 120))
        tx.update(T, lambda r: r["id"] in (5, 110, 130), {"owner": "newer"})
        tx.delete(T, {"id": 6})
        tx.insert(T, {"id": 6, "owner": "back", "balance": 6})
        tx.insert(T, {"id": 1000, "owner": "new", "balance": 1})
        tx.update(T, {"id": 7}, {"id": 2000})  # a key change: 7 is gone
    pipeline.mine()

    pipeline.backfill(T, "id < 200")  # resumes the killed one (same table and filter)

    # The backfill reads as of its position (the fake source reads exactly there): what mining applied since
    # has a higher sequence and is kept.
    assert _target(spark, pipeline)[5][0] == "newer"
    assert_lake_equals_source(spark, pipeline, [T])
    backfills = spark.read.format("delta").load(pipeline.layout.checkpoints).where("kind = 'backfill'")
    assert {r.status for r in backfills.collect()} == {"planned", "read", "applied"}
    assert backfills.select("run_id").distinct().count() == 1  # one backfill, resumed
    pipeline.mine()
    assert_lake_equals_source(spark, pipeline, [T])


def test_backfill_refuses_a_table_that_is_not_captured(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # refused before anything is read or written: no snapshot needed
    pipeline = make_pipeline(spark, FakeDatabase(tmp_path / "db.log"), tmp_path / "lake", name="bf")
    with pytest.raises(CdcError, match="is not captured by pipeline bf"):
        pipeline.backfill("other_db.acct")


def test_resnapshot_versions_what_it_changes_in_the_history_table(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db, pipeline = _setup(spark, tmp_path, extra="  history_tables: true\n")
    _corrupt(spark, pipeline, outside=False)
    # committed before the backfill's position, not mined yet: the backfill mines it first
    db.update(T, lambda r: r["id"] in (5, 121), {"owner": "before"})

    config = config_file(db, tmp_path / "lake", name="bf", extra="  history_tables: true\n")
    done = run_cli("backfill", "--config", config, "--table", T, "--where", "id BETWEEN 100 AND 199")
    assert done.output.startswith(f"backfill {T} (id BETWEEN 100 AND 199): 99 source rows read at ")

    assert_lake_equals_source(spark, pipeline, [T])
    history = spark.read.format("delta").load(pipeline.layout.type2(T))
    current = history.where("`__valid_to_seq` IS NULL")
    assert current.groupBy("id").count().where("count > 1").count() == 0
    lake = _target(spark, pipeline)
    assert {r.id: (r.owner, str(r.balance)) for r in current.where("NOT `__deleted`").collect()} == lake
    # mined in commit order before the re-read landed
    assert [r.owner for r in history.where("id = 121").orderBy("__seq").collect()] == ["o121", "before"]
    reread_seq = history.where("`__window_id` IS NULL").agg({"__seq": "max"}).first()[0]
    changed = {(r.id, r["__deleted"]) for r in history.where(f"`__seq` = {reread_seq}").collect()}
    # only what the re-read changed: lost rows back, wrong values fixed, the invented row deleted
    assert changed == {(105, False), (150, False), (110, False), (160, False), (175, True)}
