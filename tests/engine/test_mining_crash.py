"""Runs killed at every step of a window and by a real SIGKILL mid-apply, then re-run: exact (moved from
integration/test_mining_crash.py, issue 44: the fake source's log is a file, so a killed ``cdclake mine`` process
and the next run read the same database). Kills before a random write of a window: integration/test_oracle_crash.py;
a seeded random kill per source: the conformance suite."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill
from cdclake.testing.fake import FakeDatabase, process_env

from tests.engine.helpers import assert_lake_equals_source, config_file, make_pipeline
from tests.settings import short_jvm_env

ROOT = Path(__file__).resolve().parents[2]
# A run killed at a step leaves what a fresh run killed there leaves (every earlier step of a window is
# idempotent), so each window is killed at its steps one after another, in the order a run meets them
# (the side table's truncate and merge come before t's merges and DDL), then finished by one more run.
CRASH_POINTS_BY_WINDOW = [["planned", "staged", "history", "bronze"],
                          ["truncate", "merge", "merge:2", "ddl", "applied"]]
TABLES = ["shop.t", "shop.side"]


def _workload(db: FakeDatabase, step: int, rng: random.Random) -> None:
    for i in range(20):
        key = step * 100 + i
        with db.transaction() as tx:
            tx.insert("shop.t", {"id": key, "v": rng.randint(0, 999), "s": f"s{key}"})
            tx.update("shop.t", {"id": rng.randint(0, key)}, {"v": lambda r: r["v"] + 1})
            if i % 5 == 0:
                tx.delete("shop.t", {"id": rng.randint(0, key)})
    # barriers inside the window: a truncate of the side table, then a schema change
    db.truncate("shop.side")
    db.insert("shop.side", {"id": step, "note": "after truncate"})
    db.add_column("shop.t", f"c{step}", "int", False, default=step)
    db.update("shop.t", lambda r: r["id"] % 3 == 0, {"v": lambda r: r["v"] * 2})


def _mine_subprocess(config: Path, crash_at: str | None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = process_env(short_jvm_env({**os.environ, "PYTHONPATH": str(ROOT / "lib")}))
    env.pop(CRASH_ENV, None)
    env.pop(CRASH_MODE_ENV, None)
    if crash_at:
        env[CRASH_ENV] = crash_at
    return subprocess.run([sys.executable, "-m", "cdclake.cli", "mine", "--config", str(config)],
                          env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def _plan_as_written_by_earlier_versions(spark, pipeline) -> None:  # type: ignore[no-untyped-def]
    """Turn the open window's plan file into the checkpoints row that cdclake wrote before plans were files."""
    import json

    from cdclake.engine.control import CHECKPOINTS_DDL
    from cdclake.hadoopfs import hadoop_delete

    plan_dir = Path(pipeline.layout.plans)
    (plan_file,) = plan_dir.glob("window-*.json")
    plan = json.loads(plan_file.read_text())
    row = {"rev": plan["rev"], "kind": "window", "window_id": plan["window_id"], "status": "planned",
           "table_name": None, "position": None, "position_ordinal": None, "start_position": json.dumps(plan["start"]),
           "end_limit": json.dumps(plan["end_limit"]), "max_events": plan["max_events"], "run_id": plan["run_id"],
           "updated_at": None, "detail": None}
    spark.createDataFrame([row], CHECKPOINTS_DDL).write.format("delta").mode("append").save(pipeline.layout.checkpoints)
    hadoop_delete(spark, str(plan_dir))
    assert pipeline.control.last_window().window_id == plan["window_id"]


def test_kill_at_every_step_then_rerun_is_exact(spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every step boundary in-process (a BaseException nothing catches), then a real SIGKILL. The first window's
    plan is turned into the checkpoints row earlier versions wrote, which the next runs resume from.

    A cold ``cdclake mine`` process costs ~60 s here, so only one run is a real kill: at a fixed point
    between two MERGEs (a stale lock, half-applied steps).
    """
    rng = random.Random(7)
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.t", [("id", "int", False), ("v", "int"), ("s", "text")], key=["id"])
    db.create_table("shop.side", [("id", "int", False), ("note", "text")], key=["id"])
    db.insert("shop.t", {"id": 0, "v": 0, "s": "zero"})
    lake = tmp_path / "lake"
    config = config_file(db, lake, "crash")
    make_pipeline(spark, db, lake, "crash").snapshot()
    monkeypatch.setenv(CRASH_MODE_ENV, "raise")
    for step, points in enumerate(CRASH_POINTS_BY_WINDOW, start=1):
        _workload(db, step, rng)
        for point in points:
            monkeypatch.setenv(CRASH_ENV, point)
            with pytest.raises(SimulatedKill):  # a fresh pipeline object each time: only the lake carries over
                make_pipeline(spark, db, lake, "crash").mine()
            if (step, point) == (1, "planned"):
                _plan_as_written_by_earlier_versions(spark, make_pipeline(spark, db, lake, "crash"))
        monkeypatch.delenv(CRASH_ENV)
        pipeline = make_pipeline(spark, db, lake, "crash")
        finished = pipeline.mine()  # finishes the killed window (same bounds) exactly once
        assert finished.resumed and finished.window_id == step, points
        assert_lake_equals_source(spark, pipeline, TABLES)
    monkeypatch.delenv(CRASH_MODE_ENV)

    # a real kill -9 of a separate process between two MERGEs: its lock file is left behind
    _workload(db, 50, rng)
    killed = _mine_subprocess(config, "merge:2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert pipeline.mine().resumed
    assert_lake_equals_source(spark, pipeline, TABLES)

    # nothing doubled in bronze: each window committed once
    bronze = spark.read.format("delta").load(pipeline.layout.bronze)
    assert bronze.where("op = 'w'").groupBy("window_id").count().where("count > 1").count() == 0
