"""Runs killed at every step of a window and by a real SIGKILL mid-apply, then re-run: exact. (Kills before
a random write of a window: tests/integration/test_oracle_crash.py, the same engine.)"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml
from tests.settings import short_jvm_env

ROOT = Path(__file__).resolve().parents[2]
# A run killed at a step leaves what a fresh run killed there leaves (every earlier step of a window is
# idempotent), so each window is killed at its steps one after another, in the order a run meets them
# (the side table's truncate and merge come before t's merges and DDL), then finished by one more run.
CRASH_POINTS_BY_WINDOW = [["planned", "staged", "history", "bronze"],
                          ["truncate", "merge", "merge:2", "ddl", "applied"]]


def _workload(db, database: str, step: int, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    conn = db.connect(database=database)
    conn.autocommit(False)
    with conn.cursor() as cur:
        for i in range(20):
            key = step * 100 + i
            cur.execute("INSERT INTO t (id, v, s) VALUES (%s, %s, %s)", (key, rng.randint(0, 999), f"s{key}"))
            cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (rng.randint(0, key),))
            if i % 5 == 0:
                cur.execute("DELETE FROM t WHERE id = %s", (rng.randint(0, key),))
            conn.commit()
        # barriers inside the window: a truncate of the side table, then a DDL
        cur.execute("TRUNCATE TABLE side")
        cur.execute("INSERT INTO side VALUES (%s, 'after truncate')", (step,))
        conn.commit()
        cur.execute(f"ALTER TABLE t ADD COLUMN c{step} INT NOT NULL DEFAULT {step}")
        cur.execute("UPDATE t SET v = v * 2 WHERE MOD(id, 3) = 0")
        conn.commit()
    conn.close()


def _mine_subprocess(config: Path, crash_at: str | None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = short_jvm_env({**os.environ, "PYTHONPATH": str(ROOT / "lib")})
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


def test_kill_at_every_step_then_rerun_is_exact(spark, mariadb, fresh_database, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every step boundary in-process (a BaseException nothing catches), then real SIGKILLs. The first window's
    plan is turned into the checkpoints row earlier versions wrote, which the next runs resume from.

    A cold ``cdclake mine`` process costs ~60 s here, so only one run is a real kill: at a fixed point
    between two MERGEs (a stale lock, half-applied steps).
    """
    rng = random.Random(7)
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT, s VARCHAR(20))")
    mariadb.execute(f"CREATE TABLE `{db}`.side (id INT PRIMARY KEY, note VARCHAR(20))")
    mariadb.execute(f"INSERT INTO `{db}`.t VALUES (0, 0, 'zero')")
    lake = tmp_path / "lake"
    config = tmp_path / "p.yaml"
    config.write_text(pipeline_yaml(mariadb, db, lake, "crash"))
    make_pipeline(spark, mariadb, db, lake, "crash").snapshot()
    tables = [f"{db}.t", f"{db}.side"]
    monkeypatch.setenv(CRASH_MODE_ENV, "raise")
    for step, points in enumerate(CRASH_POINTS_BY_WINDOW, start=1):
        _workload(mariadb, db, step, rng)
        for point in points:
            monkeypatch.setenv(CRASH_ENV, point)
            with pytest.raises(SimulatedKill):  # a fresh pipeline object each time: only the lake carries over
                make_pipeline(spark, mariadb, db, lake, "crash").mine()
            if (step, point) == (1, "planned"):
                _plan_as_written_by_earlier_versions(spark, make_pipeline(spark, mariadb, db, lake, "crash"))
        monkeypatch.delenv(CRASH_ENV)
        pipeline = make_pipeline(spark, mariadb, db, lake, "crash")
        finished = pipeline.mine()  # finishes the killed window (same bounds) exactly once
        assert finished.resumed and finished.window_id == step, points
        assert_lake_equals_source(spark, mariadb, pipeline, tables)
    monkeypatch.delenv(CRASH_MODE_ENV)

    # a real kill -9 of a separate process between two MERGEs: its lock file is left behind
    _workload(mariadb, db, 50, rng)
    killed = _mine_subprocess(config, "merge:2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert pipeline.mine().resumed
    assert_lake_equals_source(spark, mariadb, pipeline, tables)

    # nothing doubled in bronze: each window committed once
    bronze = spark.read.format("delta").load(pipeline.layout.bronze)
    assert bronze.where("op = 'w'").groupBy("window_id").count().where("count > 1").count() == 0
