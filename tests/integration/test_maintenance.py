"""cdclake maintain: compaction, vacuum and retention never change what the lake holds or how mining goes on."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from cdclake.testing.logminer_sim import SimulatedOracle, create_typed_tables, random_workload

from tests.integration.oracle_helpers import assert_lake_equals_simulated, bronze_markers, drain, oracle_pipeline

MAINTENANCE = ("maintenance:\n  vacuum_retain_hours: 0\n  bronze_retention_days: 7\n"
               "  control_retention_days: 7\n")


def _backdate(spark, path: str, column: str, where: str, days: int) -> None:  # type: ignore[no-untyped-def]
    old = (datetime.now() - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")
    spark.sql(f"UPDATE delta.`{path}` SET {column} = TIMESTAMP'{old}' WHERE {where}")


def _files(spark, path: str) -> int:  # type: ignore[no-untyped-def]
    return int(spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first().numFiles)


def test_maintain_compacts_and_applies_retention_without_changing_the_lake(spark, tmp_path):  # type: ignore[no-untyped-def]
    db = SimulatedOracle(seed=11)
    tables = create_typed_tables(db, lob=False)
    rng = random.Random(11)
    random_workload(db, rng, tables, transactions=30, lob=False)
    pipeline = oracle_pipeline(spark, db, tmp_path, extra=MAINTENANCE,
                               mining="batch_size_min: 20\nbatch_size_default: 40\nbatch_size_increment: 20\n"
                                      "batch_size_max: 80")
    pipeline.snapshot()
    # A transaction stays open across every window mined before maintenance and commits after it.
    open_tx = db.begin()
    open_tx.insert("APP", "ACCOUNTS", {"ID": 800001, "AMOUNT": 5, "NAME": "spans maintenance"})
    random_workload(db, rng, tables, transactions=40, lob=False, long_txn_every=15, p_partial_rollback=0.1, p_jump=0)
    windows = drain(pipeline, max_events=150)
    assert windows >= 2
    layout = pipeline.layout
    target = layout.target("APP.ACCOUNTS")
    assert _files(spark, layout.bronze) >= windows  # one append per window
    last_window = max(m["window_id"] for m in bronze_markers(spark, pipeline))
    # bronze keeps file statistics on window_id (and seq) only, and a read of one window skips the others' files
    one_window = spark.read.format("delta").load(layout.bronze).where(f"window_id = {last_window}").inputFiles()
    assert 0 < len(one_window) < _files(spark, layout.bronze)
    # Everything but the last window happened "ten days ago".
    _backdate(spark, layout.checkpoints, "updated_at", f"kind = 'window' AND window_id < {last_window}", 10)
    _backdate(spark, layout.runs, "started_at", "command = 'snapshot'", 10)
    _backdate(spark, layout.transactions, "recorded_at", f"window_id < {last_window}", 10)
    transactions_before = spark.read.format("delta").load(layout.transactions).count()
    open_txid = open_tx.xid_hex.lower()
    inflight = spark.read.format("delta").load(layout.inflight)
    assert inflight.where(f"txid = '{open_txid}'").count() == 1

    run, report = pipeline.maintain()

    assert target in report.optimized and target in report.vacuumed and layout.bronze in report.vacuumed
    assert _files(spark, layout.bronze) == 1 and _files(spark, target) == 1
    assert report.bronze_windows_deleted_through == last_window - 1
    bronze_windows = {r.window_id for r in spark.read.format("delta").load(layout.bronze)
                      .select("window_id").distinct().collect()}
    assert bronze_windows == {last_window}
    assert report.deleted_rows["runs"] == 1
    assert 0 < report.deleted_rows["transactions"] < transactions_before
    # The open transaction's buffered change survives; only ended transactions' rows may go.
    assert spark.read.format("delta").load(layout.inflight).where(f"txid = '{open_txid}'").count() == 1
    assert_lake_equals_simulated(spark, pipeline, db)
    assert run.command == "maintain"

    open_tx.update("APP", "ACCOUNTS", {"ID": 800001}, {"NAME": "committed after maintenance"})
    open_tx.commit()
    random_workload(db, rng, tables, transactions=20, lob=False, p_jump=0)
    drain(pipeline)
    assert_lake_equals_simulated(spark, pipeline, db)
    row = spark.read.format("delta").load(target).where("ID = 800001").first()
    assert row is not None and row.NAME == "committed after maintenance"
