"""Every source, the same workload: after each mining window the lake equals the source, row by row.

One run per source (the ``driver`` fixture, tests/conformance/conftest.py): a snapshot of two tables,
then one round per supported DDL kind — interleaved, rolled-back and key-changing transactions plus
that DDL — each mined and compared; one round's window has a small ``max_events`` first, one round's
run is killed at a crash point and finished by a fresh pipeline object; at the end an idle run changes
nothing and bronze holds every window once. Everything random comes from the driver's fixed seed.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill
from cdclake.engine.lake import is_delta_table
from cdclake.engine.pipeline import Pipeline

from tests.conformance.workload import DATE, DEC, INT, STR, WIDENINGS, Driver, Op, WidenColumn, Workload

pytestmark = pytest.mark.integration


def _compared(driver: Driver, pipeline: Pipeline, tables: list[str], what: str, ops: list[Op]) -> None:
    """The driver's comparison; a difference names the round and lists its operations (to replay the case)."""
    try:
        driver.assert_lake_equals_source(pipeline, tables)
    except AssertionError as exc:
        listing = "\n".join(f"  {op!r}" for op in ops)
        raise AssertionError(f"{what}: {exc}\noperations of the round:\n{listing}") from None


def _live_rows(spark: Any, path: str) -> int:
    if not is_delta_table(spark, path):
        return 0
    frame = spark.read.format("delta").load(path)
    if "__deleted" in frame.columns:
        frame = frame.where("NOT `__deleted`")
    return int(frame.count())


def _version(spark: Any, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first().version)


def test_workload_mined_window_by_window_equals_source(driver: Driver, spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    work = Workload(random.Random(driver.seed), driver.supported_ddl, driver.open_transactions_across_windows)
    plan = random.Random(driver.seed + 1)  # which round is killed (and where), which has a small window
    lake = tmp_path / "lake"

    # (1) the snapshot: two tables with a few rows
    setup = work.setup()
    for op in setup:
        driver.apply(op)
    pipeline = driver.pipeline(spark, lake)
    snap = pipeline.snapshot()
    assert sorted(snap.tables) == sorted(driver.source_table(t) for t in work.tables)
    _compared(driver, pipeline, work.tables, "after the snapshot", setup)

    # (2) a round per DDL kind, each mined and compared; (3) one of them killed and finished afresh
    kinds = work.ddl_schedule()
    assert set(kinds) == set(driver.supported_ddl) and len(kinds) >= 3, kinds
    crash_round = plan.randrange(1, len(kinds))
    crash_at = plan.choice(driver.crash_points)
    small_round = plan.choice([n for n in range(len(kinds)) if n != crash_round])
    windows = 0
    for n, kind in enumerate(kinds):
        ops = work.round(kind, keep_open=n < len(kinds) - 1)
        for op in ops:
            driver.apply(op)
        what = f"{driver.name} seed {driver.seed}, round {n} ({kind})"
        if n == crash_round:
            what += f", killed at {crash_at!r}"
            monkeypatch.setenv(CRASH_ENV, crash_at)
            monkeypatch.setenv(CRASH_MODE_ENV, "raise")
            with pytest.raises(SimulatedKill):
                pipeline.mine()
            monkeypatch.delenv(CRASH_ENV)
            monkeypatch.delenv(CRASH_MODE_ENV)
            pipeline = driver.pipeline(spark, lake)  # nothing carried over but the lake
            report = pipeline.mine()
            assert report.resumed, f"{what}: the next run did not finish the killed window"
        else:
            if n == small_round and driver.supports_max_events:
                max_events = plan.randint(2, 8)
                what += f", a window of max_events={max_events} first"
                assert not pipeline.mine(max_events=max_events).resumed
                windows += 1
            report = pipeline.mine()
            assert not report.resumed, what
        # a run that finds every table at the log end writes no window; one that finished a killed window may go
        # on to the log end in another
        windows += 0 if report.idle else report.windows
        _compared(driver, pipeline, work.tables, what, ops)
        for table in work.dropped:  # a dropped table's mirror is empty (its history stays in time travel)
            rows = _live_rows(spark, pipeline.layout.target(driver.source_table(table)))
            assert rows == 0, f"{what}: dropped table {table} still has {rows} rows in the lake"

    # (4) an idle run changes nothing; bronze holds each window once
    targets = {t: pipeline.layout.target(driver.source_table(t)) for t in work.tables}
    versions = {t: _version(spark, path) for t, path in targets.items() if is_delta_table(spark, path)}
    idle = pipeline.mine()
    windows += 0 if idle.idle else 1
    assert idle.events == 0 and not idle.resumed, idle
    assert {t: _version(spark, targets[t]) for t in versions} == versions, "an idle run wrote to a target"
    _compared(driver, pipeline, work.tables, "after an idle run", [])
    markers = spark.read.format("delta").load(pipeline.layout.bronze).where("op = 'w'")
    twice = [r.window_id for r in markers.groupBy("window_id").count().where("count > 1").collect()]
    assert not twice, f"windows in bronze more than once: {twice}"
    assert markers.count() == windows, f"{markers.count()} window markers for {windows} windows"

    # the workload did what it is for (a generator that degenerated would prove little)
    stats = work.stats
    for what in ("insert", "insert_reused_key", "update", "update_key", "delete", "reinsert", "commit", "rollback",
                 "interleaved", *driver.supported_ddl):
        assert stats[what] > 0, f"the workload never did {what!r}: {dict(stats)}"
    updated = {s.removeprefix("update ") for s in stats if s.startswith("update ")}
    assert {INT, DEC, STR, DATE} <= updated, updated
    if WidenColumn.kind in driver.supported_ddl:  # values of the wider type were written after the widening
        assert updated & set(WIDENINGS.values()), updated
    if driver.open_transactions_across_windows:
        assert stats["open_across_window"] == len(kinds) - 1, dict(stats)
