"""A Db2 mining run killed at any step of a window, or before a random write (in windows with the online and
the offline schema procedure), then run again: the lake equals the emulated source and every window is in
bronze once."""

from __future__ import annotations

import random

import pytest
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill
from cdclake.testing.db2_emulator import EmulatedDb2
from cdclake.testing.db2_emulator.workload import create_typed_tables, random_row, random_workload

from tests.integration.db2_helpers import assert_lake_equals_emulated, db2_pipeline
from tests.integration.kill_helpers import kill_at_write
from tests.integration.oracle_helpers import bronze_markers

pytestmark = pytest.mark.integration

POINTS = ["planned", "staged", "history", "bronze", "merge", "applied"]


def test_killed_at_every_step_and_at_random_writes_then_rerun_ends_equal(spark, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    db = EmulatedDb2(tmp_path / "db2")
    tables = create_typed_tables(db)
    rng = random.Random(41)
    with db.transaction() as tx:
        for i in range(1, 21):
            for schema, name in tables:
                tx.insert(schema, name, random_row(rng, i))
    db.capture.cycle()
    pipeline = db2_pipeline(spark, db, tmp_path / "lake")
    pipeline.snapshot()
    monkeypatch.setenv(CRASH_MODE_ENV, "raise")
    random_workload(db, rng, tables, transactions=12)
    for point in POINTS:  # one window, killed at each of its steps in the order a run meets them
        monkeypatch.setenv(CRASH_ENV, point)
        with pytest.raises(SimulatedKill):
            db2_pipeline(spark, db, tmp_path / "lake").mine()  # a new pipeline object: nothing carried over
        monkeypatch.delenv(CRASH_ENV)
    assert db2_pipeline(spark, db, tmp_path / "lake").mine().resumed
    assert_lake_equals_emulated(spark, pipeline, db)

    killed_at = []
    for round_ in range(2):
        (schema, name) = tables[round_]
        if round_ == 0:  # the online procedure: a column added at the end of the source and of the CD table
            db.set_state(schema, name, "I")
            db.add_column(schema, name, "W", "INTEGER")
            db.add_column("ASNCDC", f"CDC_{schema}_{name}", "W", "INTEGER")
            db.set_state(schema, name, "A")
        else:  # the offline procedure (the lake has caught up): the CD table dropped and made anew
            db.set_state(schema, name, "I")
            db.remove_table(schema, name)
            db.add_column(schema, name, "W", "VARCHAR(10)")
            db.add_table(schema, name)
        with db.transaction() as tx:
            tx.update(schema, name, {"ID": db.rows(schema, name)[0]["ID"]}, {"W": 5 if round_ == 0 else "five"})
        random_workload(db, rng, tables, transactions=8)
        kill_at = rng.randint(1, 3)
        with kill_at_write(spark, monkeypatch, kill_at):
            try:
                db2_pipeline(spark, db, tmp_path / "lake").mine()
            except SimulatedKill:
                killed_at.append(kill_at)
        db2_pipeline(spark, db, tmp_path / "lake").mine()
        assert_lake_equals_emulated(spark, pipeline, db)
    entries = pipeline.control.latest_entries()
    assert all(entries[f"{s}.{n}"].schema.column_names[-1] == "W" for s, n in tables)  # type: ignore[union-attr]
    windows = [m["window_id"] for m in bronze_markers(spark, pipeline)]
    assert len(windows) == len(set(windows)), "a window is in bronze twice"
    assert killed_at, "no run was killed: the kill points are past every write of a window"
