"""cdclake backfill --mode rebuild / remine: a target rebuilt from the bronze change log (from its
snapshot or from a window, resumed after a kill, with mining in between, with an SCD2 history table
started for a running pipeline), and windows bronze retention deleted re-mined from the source's log (moved from
integration/test_rebuild.py, issue 44)."""

from __future__ import annotations

import json

import pytest
from cdclake.cli import cli
from cdclake.engine.faults import SimulatedKill
from cdclake.engine.repair.rebuild import base_version
from cdclake.errors import ERROR_TAG, CdcError, UsageError
from cdclake.testing.fake import FakeDatabase
from click.testing import CliRunner

from tests.engine.helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml

BRONZE_COLUMNS = ("window_id", "source_table", "op", "seq", "position", "before", "after")


def _bronze(spark, pipeline, windows: str):  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in spark.read.format("delta").load(pipeline.layout.bronze)
                  .where(f"window_id IN ({windows}) AND op <> 'w'").select(*BRONZE_COLUMNS).collect())


def test_rebuild_from_snapshot_and_from_a_window_resumes_and_remine_restores_bronze(
        spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    t = "shop.acct"
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table(t, [("id", "int", False), ("owner", "text"), ("balance", "decimal(10,2)")], key=["id"])
    db.insert(t, *({"id": i, "owner": f"o{i}", "balance": i} for i in range(1, 201)))
    pipeline = make_pipeline(spark, db, tmp_path / "lake", name="rb")
    pipeline.snapshot()
    db.update(t, lambda r: r["id"] % 10 == 0, {"balance": lambda r: float(r["balance"]) + 1})  # window 1
    pipeline.mine()
    db.add_column(t, "note", "text", default="n")  # window 2: DDL, then rows
    db.insert(t, {"id": 201, "owner": "new", "balance": 1, "note": "x"})
    db.delete(t, lambda r: 31 <= r["id"] <= 35)
    pipeline.mine()
    db.update(t, lambda r: r["id"] in (10, 40), {"owner": "w3"})  # window 3
    db.insert(t, {"id": 33, "owner": "back", "balance": 3})
    pipeline.mine()
    path = pipeline.layout.target(t)

    # A bug left the target wrong (lost, stale and invented rows): rebuilt from the snapshot and bronze.
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (5, 201)")
    spark.sql(f"UPDATE delta.`{path}` SET owner = 'wrong' WHERE id IN (10, 150)")
    spark.sql(f"INSERT INTO delta.`{path}` (id, owner, balance, note, `__op`, `__seq`, `__position`) "
              "VALUES (34, 'ghost', 1, 'n', 'c', 1, 'x')")
    report = pipeline.backfill(t, mode="rebuild")
    assert report.window_id == 3 and report.rows_by_table == {t: 197}
    assert_lake_equals_source(spark, pipeline, [t])
    # One MERGE of the differences: readers of the change feed see the five repaired rows only.
    last = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version", ascending=False).first()
    changes = spark.read.format("delta").option("readChangeFeed", "true").option(
        "startingVersion", last.version).load(path).where("_change_type <> 'update_preimage'")
    assert sorted((r.id, r._change_type) for r in changes.collect()) == [
        (5, "insert"), (10, "update_postimage"), (34, "delete"), (150, "update_postimage"), (201, "insert")]

    # From window 4 (a rebuild covers windows up to 3 now), killed after its base is written; mining
    # goes on; the same command resumes and replays the window mined meanwhile too.
    db.update(t, lambda r: r["id"] in (40, 41), {"owner": "w4"})  # window 4
    pipeline.mine()
    spark.sql(f"UPDATE delta.`{path}` SET owner = 'wrong' WHERE id = 40")
    with pytest.raises(CdcError, match="rebuilt through window 3"):
        pipeline.backfill(t, mode="rebuild", from_window=3)
    monkeypatch.setenv("CDCLAKE_CRASH_MODE", "raise")
    monkeypatch.setenv("CDCLAKE_CRASH_AT", "rebuild_based")
    with pytest.raises(SimulatedKill):
        pipeline.backfill(t, mode="rebuild", from_window=4)
    monkeypatch.delenv("CDCLAKE_CRASH_AT")
    db.update(t, {"id": 41}, {"balance": 77})  # window 5, mined meanwhile
    pipeline.mine()
    config = tmp_path / "rb.yaml"
    config.write_text(pipeline_yaml(db, tmp_path / "lake", name="rb"))
    resumed = CliRunner().invoke(cli, ["backfill", "--config", str(config), "--table", t, "--mode", "rebuild",
                                       "--from-window", "4"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.startswith(f"rebuild {t}: from ") and " through window 5, " in resumed.output
    assert_lake_equals_source(spark, pipeline, [t])
    rebuilds = [b for b in pipeline.control.backfills(t) if b[2].get("mode") == "rebuild"]
    assert len(rebuilds) == 2 and {status for _, status, _ in rebuilds} == {"applied"}

    # Bronze retention took windows 1-2: the rebuild names them, with the command that brings them back (as
    # printed, an operator's fix: permanent); re-mined from the source's log, they are back.
    before = _bronze(spark, pipeline, "1, 2")
    spark.sql(f"DELETE FROM delta.`{pipeline.layout.bronze}` WHERE window_id <= 2")
    failed = CliRunner().invoke(cli, ["backfill", "--config", str(config), "--table", t, "--mode", "rebuild"])
    assert failed.exit_code == 2, failed.output
    remine = f"cdclake backfill --config {config} --mode remine --window 1-2"
    assert "error: bronze no longer has window(s) 1..2 (2)" in failed.output and remine in failed.output
    error = json.loads(failed.output.split(ERROR_TAG)[1])
    assert error["permanent"] is True and remine in error["fix"]
    done = CliRunner().invoke(cli, ["backfill", "--config", str(config), "--mode", "remine", "--window", "1-3"])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[0].startswith("remine windows 1..3: 2 window(s) re-mined, ")
    assert "  window(s) 3 still in bronze (retention has not deleted them): left as they are\n" in done.output
    assert _bronze(spark, pipeline, "1, 2") == before
    again = CliRunner().invoke(cli, ["backfill", "--config", str(config), "--mode", "remine", "--window", "1-2"])
    assert again.output == ("remine windows 1..2: nothing to do\n  window(s) 1-2 still in bronze (retention has "
                            "not deleted them): left as they are; nothing to re-mine\n")

    # An SCD2 history table started for the running pipeline: every version since the snapshot.
    history = make_pipeline(spark, db, tmp_path / "lake", name="rb", extra="  history_tables: true\n")
    history.backfill(t, mode="rebuild")
    db.update(t, {"id": 40}, {"balance": 99})  # window 6
    history.mine()
    assert_lake_equals_source(spark, history, [t])
    versions = spark.read.format("delta").load(pipeline.layout.type2(t))
    by_key = {k: [(r.owner, r["__deleted"], r["__valid_to_seq"] is None) for r in
                  versions.where(f"id = {k}").orderBy("__seq").collect()] for k in (40, 33, 7)}
    assert by_key[40] == [("o40", False, False), ("o40", False, False), ("w3", False, False),
                          ("w4", False, False), ("w4", False, True)]
    assert by_key[33] == [("o33", False, False), ("o33", True, False), ("back", False, True)]
    assert by_key[7] == [("o7", False, True)]

    with pytest.raises(UsageError, match="--where only applies to --mode resnapshot"):
        pipeline.backfill(t, "id < 5", mode="rebuild")
    with pytest.raises(UsageError, match="needs --window and no --table"):
        pipeline.backfill(t, mode="remine", windows=(1, 1))


def test_base_version_follows_the_commit_tags() -> None:
    log = [(0, "CREATE OR REPLACE TABLE", {"snapshot": True}), (1, "WRITE", {"snapshot": True}),
           (2, "MERGE", {"window": 1}), (3, "MERGE", None), (4, "ADD COLUMNS", {"window": 2}),
           (5, "MERGE", {"window": 2}), (6, "MERGE", {"rebuild": "r1", "through": 2}), (7, "MERGE", {"window": 3})]
    assert base_version(log, None) == 1
    assert base_version(log[:6], 2) == 3  # a backfill's commit (untagged) before window 2 stays in the base
    assert base_version(log, 3) == 6
    assert base_version(log, 4) == 7  # nothing of window 4 yet: the latest version
    with pytest.raises(CdcError, match="rebuilt through window 2"):
        base_version(log, 2)
    legacy = [(0, "CREATE OR REPLACE TABLE", None), (1, "WRITE", None), (2, "MERGE", None)]
    assert base_version(legacy, None) == 1 and base_version(legacy, 2) is None
