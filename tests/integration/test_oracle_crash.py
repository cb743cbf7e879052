"""Item 30 of the Oracle checklist: a run killed at any step of a window (data written, checkpoint
not) is finished by the next run with the same bounds: the lake equals the source, each window is in
bronze once, and no transaction is lost or applied twice — including ones still open in the buffer."""

from __future__ import annotations

import random

import pytest
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill
from cdclake.testing.logminer_sim import SimulatedOracle, create_typed_tables, random_workload

from tests.integration.kill_helpers import kill_at_write
from tests.integration.oracle_helpers import assert_lake_equals_simulated, bronze_markers, oracle_pipeline

pytestmark = pytest.mark.integration

# A run killed at a step leaves what a fresh run killed there leaves (every earlier step of a window is
# idempotent), so each window below is killed at its steps one after another, in the order a run meets
# them, and finished by one more run: every step is a kill point at the cost of two windows.
POINTS_BY_WINDOW = [["planned", "staged", "history", "inflight"], ["bronze", "merge", "ddl", "applied"]]


def test_killed_at_every_step_then_rerun_ends_equal(spark, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    db = SimulatedOracle(threads=2, seed=31)
    tables = create_typed_tables(db, lob=False)
    rng = random.Random(31)
    random_workload(db, rng, tables, transactions=20, lob=False)
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    names = [f"{o}.{t}" for o, t in tables]
    carried = db.begin(thread=1)  # open across every window below, committed at the end
    carried.insert("APP", "ACCOUNTS", {"ID": 777777, "NAME": "carried"})
    monkeypatch.setenv(CRASH_MODE_ENV, "raise")
    for n, points in enumerate(POINTS_BY_WINDOW):
        with_ddl = "ddl" in points
        random_workload(db, rng, tables, transactions=12, lob=False, p_jump=0, ddl=with_ddl,
                        p_ddl=1.0 if with_ddl else 0.0)
        carried.update("APP", "ACCOUNTS", {"ID": 777777}, {"AMOUNT": n})
        for point in points:
            monkeypatch.setenv(CRASH_ENV, point)
            with pytest.raises(SimulatedKill):
                oracle_pipeline(spark, db, tmp_path).mine()  # a new pipeline object: nothing carried over
            monkeypatch.delenv(CRASH_ENV)
        finished = oracle_pipeline(spark, db, tmp_path).mine()  # finishes the window, same bounds
        assert finished.resumed, points
        windows = [m["window_id"] for m in bronze_markers(spark, pipeline)]
        assert len(windows) == len(set(windows)) == n + 1, f"{points}: a window is in bronze twice or missing"
        assert_lake_equals_simulated(spark, pipeline, db, names)
    carried.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, names)


def test_killed_at_random_writes_then_rerun_ends_equal(spark, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """Killed before a randomly chosen Delta/Parquet write or SQL statement of a window (not only at the
    named steps: also between the in-flight and transactions appends, between MERGEs, inside apply),
    then re-run: the lake equals the source and every window is in bronze once."""
    db = SimulatedOracle(threads=2, seed=37)
    tables = create_typed_tables(db, lob=False)
    rng = random.Random(37)
    random_workload(db, rng, tables, transactions=15, lob=False)
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    names = [f"{o}.{t}" for o, t in tables]
    carried = db.begin(thread=2)
    carried.insert("APP", "ACCOUNTS", {"ID": 888888, "NAME": "carried"})
    killed_at = []
    for n in range(4):
        random_workload(db, rng, tables, transactions=10, lob=False, p_jump=0)
        carried.update("APP", "ACCOUNTS", {"ID": 888888}, {"AMOUNT": n})
        kill_at = rng.randint(1, 14)
        with kill_at_write(spark, monkeypatch, kill_at):
            try:
                pipeline.mine()
            except SimulatedKill:
                killed_at.append(kill_at)
        pipeline.mine()
        windows = [m["window_id"] for m in bronze_markers(spark, pipeline)]
        assert len(windows) == len(set(windows)), f"kill at {kill_at}: a window is in bronze twice"
        assert_lake_equals_simulated(spark, pipeline, db, names)
    assert killed_at, "no run was killed: the kill points are past every write of a window"
    carried.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, names)
