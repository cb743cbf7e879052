"""Item 30 of the Oracle checklist: a run killed at any step of a window (data written, checkpoint
not) is finished by the next run with the same bounds: the lake equals the source, each window is in
bronze once, and no transaction is lost or applied twice — including ones still open in the buffer."""

from __future__ import annotations

import random

import pytest
from cdclake.engine.pipeline import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill
from cdclake.testing.logminer_sim import SimulatedOracle, create_typed_tables, random_workload

from tests.integration.oracle_helpers import assert_lake_equals_simulated, bronze_markers, oracle_pipeline

pytestmark = pytest.mark.integration

POINTS = ["planned", "staged", "history", "inflight", "bronze", "merge", "ddl", "applied"]


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
    for n, point in enumerate(POINTS):
        random_workload(db, rng, tables, transactions=12, lob=False, p_jump=0, ddl=point == "ddl",
                        p_ddl=1.0 if point == "ddl" else 0.0)
        carried.update("APP", "ACCOUNTS", {"ID": 777777}, {"AMOUNT": n})
        monkeypatch.setenv(CRASH_ENV, point)
        with pytest.raises(SimulatedKill):
            pipeline.mine()
        monkeypatch.delenv(CRASH_ENV)
        pipeline.mine()  # finishes the killed window
        windows = [m["window_id"] for m in bronze_markers(spark, pipeline)]
        assert len(windows) == len(set(windows)), f"{point}: a window is in bronze twice"
        assert_lake_equals_simulated(spark, pipeline, db, names)
    carried.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, names)
