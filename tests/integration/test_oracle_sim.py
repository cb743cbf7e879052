"""Oracle LogMiner mining end to end against the simulator: each test is a situation from the
"naive mistakes" list of shared/reference/oracle.md (section 4, item numbers in the docstrings) and
ends with the Delta tables equal to the simulated source, row by row."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from cdclake.errors import CdcError, PositionLostError, PreflightError
from cdclake.testing.logminer_sim import SimulatedOracle, create_typed_tables, random_workload

from tests.integration.oracle_helpers import (
    assert_lake_equals_simulated,
    bronze_markers,
    drain,
    oracle_pipeline,
)

pytestmark = pytest.mark.integration


def names(tables):  # type: ignore[no-untyped-def]
    return [f"{o}.{t}" for o, t in tables]


def test_interleaved_rac_transactions_cut_by_windows(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 1, 2, 3, 5, 7, 8, 14, 15: buffered by XID until commit across windows and runs,
    rollbacks and savepoint rollbacks, two redo threads, commit order, PK updates, every type."""
    db = SimulatedOracle(threads=2, seed=7)
    tables = create_typed_tables(db, lob=False)
    rng = random.Random(7)
    random_workload(db, rng, tables, transactions=40, lob=False)
    # A transaction open across the snapshot: its first change lies below the snapshot SCN.
    open_tx = db.begin(thread=2)
    open_tx.insert("APP", "ACCOUNTS", {"ID": 900001, "AMOUNT": 1, "NAME": "early"})
    small_batches = "batch_size_min: 20\nbatch_size_default: 60\nbatch_size_increment: 20\nbatch_size_max: 120"
    pipeline = oracle_pipeline(spark, db, tmp_path, mining=small_batches)
    pipeline.snapshot()
    state = pipeline.control.table_states()["APP.ACCOUNTS"]
    assert int(state.position["resume_scn"]) < int(state.position["scn"])  # mining starts below the snapshot
    open_tx.update("APP", "ACCOUNTS", {"ID": 900001}, {"NAME": "late"})
    random_workload(db, rng, tables, transactions=90, lob=False, long_txn_every=20, p_partial_rollback=0.2,
                    p_jump=0)
    open_tx.commit()
    windows = drain(pipeline, max_events=250)
    assert windows >= 3
    markers = bronze_markers(spark, pipeline)
    assert sum(m["open_transactions"] > 0 for m in markers) >= 1  # windows did cut through transactions
    assert_lake_equals_simulated(spark, pipeline, db, names(tables))
    again = pipeline.mine()  # idle re-run
    assert again.events == 0
    assert_lake_equals_simulated(spark, pipeline, db, names(tables))


def test_scn_gap_is_jumped_and_scns_compare_as_numbers(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 6 and 8: SCNs cross from 10 to 11 digits; a 50M SCN jump in no time is one batch."""
    db = SimulatedOracle(start_scn=9_999_999_000, seed=3)
    tables = create_typed_tables(db, lob=False)
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    tx = db.begin()
    tx.insert("APP", "ACCOUNTS", {"ID": 1, "NAME": "before"})
    tx.commit()
    db.jump_scn(50_000_000)
    tx = db.begin()
    tx.update("APP", "ACCOUNTS", {"ID": 1}, {"NAME": "after"})
    tx.commit()
    assert db.current_scn > 10_000_000_000
    pipeline.mine()
    assert int(bronze_markers(spark, pipeline)[-1]["mining_batches"]) <= 4
    assert_lake_equals_simulated(spark, pipeline, db, names(tables))


def test_schema_changes_apply_at_their_scn(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 11, 16, 17: DDL inside a window (add/drop column, new table, keyless table, truncate)."""
    db = SimulatedOracle(seed=5)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("A", "VARCHAR2(20)")], ["ID"])
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1, "A": "x"})
    tx.commit()
    db.add_column("APP", "T", "B", "NUMBER(5)", default=7)
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 2, "A": "y", "B": 3})
    tx.update("APP", "T", {"ID": 1}, {"B": 4})
    tx.commit()
    db.drop_column("APP", "T", "A")
    db.create_table("APP", "LOG", [("MSG", "VARCHAR2(20)"), ("N", "NUMBER(3)")], [])
    tx = db.begin()
    tx.insert("APP", "LOG", {"MSG": "m", "N": 1})
    tx.insert("APP", "LOG", {"MSG": "m", "N": 2})
    tx.insert("APP", "T", {"ID": 3, "B": 9})
    tx.commit()
    db.create_table("APP", "GONE", [("ID", "NUMBER(10)")], ["ID"])
    tx = db.begin()
    tx.insert("APP", "GONE", {"ID": 1})
    tx.commit()
    db.truncate_table("APP", "GONE")
    tx = db.begin()
    tx.insert("APP", "GONE", {"ID": 2})
    tx.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.T", "APP.LOG", "APP.GONE"])
    kinds = [(e.table, e.kind) for e in pipeline.control.history()]
    assert ("APP.LOG", "create") in kinds and kinds.count(("APP.T", "ddl")) == 2  # LOG made anew: it starts empty


def test_values_logminer_does_not_supply_keep_the_lake_value(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 12 and 37: unchanged LOBs and 'Unsupported Type' never overwrite data in the lake."""
    db = SimulatedOracle(seed=9, lob_inline_max=4000)
    db.create_table("APP", "DOCS", [("ID", "NUMBER(10)"), ("TITLE", "VARCHAR2(50)"), ("BODY", "CLOB"),
                                    ("DATA", "BLOB")], ["ID"])
    tx = db.begin()
    tx.insert("APP", "DOCS", {"ID": 1, "TITLE": "a", "BODY": "first body", "DATA": b"\x01\x02"})
    tx.commit()
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    tx = db.begin()
    tx.insert("APP", "DOCS", {"ID": 2, "TITLE": "b", "BODY": "second", "DATA": b"\x03"})
    tx.update("APP", "DOCS", {"ID": 1}, {"TITLE": "a2"})  # BODY/DATA not in the redo: unavailable
    tx.update("APP", "DOCS", {"ID": 2}, {"TITLE": "b2"})  # ... and the insert is in the same batch
    tx.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.DOCS"])


def test_purged_archive_logs_name_the_missing_scn_range(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 19 and 59: logs gone before they were mined: a clear error with the range and remedy."""
    db = SimulatedOracle(seed=11, groups_per_thread=2)
    db.create_table("APP", "T", [("ID", "NUMBER(10)")], ["ID"])
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    for i in range(4):
        tx = db.begin()
        tx.insert("APP", "T", {"ID": i})
        tx.commit()
        db.switch_log(1)
        db.archive_logs()
    db.purge_archived(1, up_to_sequence=db.current_log(1).sequence - 1)
    with pytest.raises(PositionLostError) as err:
        pipeline.mine()
    assert "SCN" in err.value.problem and "thread 1" in err.value.problem and "re-snapshot" in (err.value.fix or "")


def test_connection_lost_mid_window_is_retried(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Item 26: a dropped connection during the fetch retries the batch (no duplicates), then fails clearly."""
    db = SimulatedOracle(seed=13)
    tables = create_typed_tables(db, lob=False)
    pipeline = oracle_pipeline(spark, db, tmp_path, mining="fetch_size: 20")
    pipeline.snapshot()
    random_workload(db, random.Random(13), tables, transactions=30, lob=False)
    db.fail_next("CONTENTS", "DPY-4011: the database or network closed the connection", after_rows=45)
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, names(tables))
    random_workload(db, random.Random(14), tables, transactions=5, lob=False)
    db.fail_next("CONTENTS", "ORA-03113: end-of-file on communication channel", times=4)  # 1 + 3 retries
    with pytest.raises(CdcError, match="lost the connection to Oracle"):
        pipeline.mine()
    pipeline.mine()  # the network is back: the same window completes
    assert_lake_equals_simulated(spark, pipeline, db, names(tables))


def test_own_user_other_pdbs_and_filters_are_not_captured(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 21, 22, 23: the pipeline's user, other PDBs and anchored, case-sensitive filters."""
    db = SimulatedOracle(cdb="YES", pdb_name="ORCLPDB1", seed=17)
    db.create_table("APP", "ACCOUNTS", [("ID", "NUMBER(10)"), ("N", "VARCHAR2(9)")], ["ID"])
    db.create_table("APP", "ACCOUNTS_X", [("ID", "NUMBER(10)")], ["ID"])
    pipeline = oracle_pipeline(spark, db, tmp_path, include=r"APP\.ACCOUNTS",
                               source_extra="  pdb: ORCLPDB1\n")
    pipeline.snapshot()
    assert [t for t in pipeline.control.table_states()] == ["APP.ACCOUNTS"]
    for user in ("APP", "C##CDC"):
        tx = db.begin(username=user)
        tx.insert("APP", "ACCOUNTS", {"ID": 1 if user == "APP" else 2, "N": user})
        tx.insert("APP", "ACCOUNTS_X", {"ID": 1 if user == "APP" else 2})
        tx.commit()
    pipeline.mine()
    rows = {r.ID: r.N for r in spark.read.format("delta").load(pipeline.layout.target("APP.ACCOUNTS")).collect()}
    assert rows == {1: "APP"}  # the pipeline's own changes (C##CDC) are not captured


def test_preflight_names_the_fixing_sql(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 18 and 56/57: archive log mode, supplemental logging, privileges, CDB settings."""
    db = SimulatedOracle(seed=19)
    db.create_table("APP", "T", [("ID", "NUMBER(10)")], ["ID"], supplemental_all=False)
    source = oracle_pipeline(spark, db, tmp_path).source
    cases = [
        ("log_mode", "NOARCHIVELOG", "ALTER DATABASE ARCHIVELOG"),
        ("supplemental_min", "NO", "ALTER DATABASE ADD SUPPLEMENTAL LOG DATA"),
        ("privileges", [p for p in db.privileges if p != "LOGMINING"], "GRANT LOGMINING TO C##CDC"),
    ]
    for attr, value, fix in cases:
        saved = getattr(db, attr)
        setattr(db, attr, value)
        with pytest.raises(PreflightError) as err:
            source.preflight()
        assert fix in (err.value.fix or ""), err.value
        setattr(db, attr, saved)
    with pytest.raises(PreflightError) as err:
        source.preflight()
    assert 'ALTER TABLE "APP"."T" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS' in (err.value.fix or "")


def test_abandoned_transactions_are_recorded_and_reported(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Item 20: retention abandons a transaction visibly; its late commit does not apply half of it."""
    db = SimulatedOracle(seed=23)
    db.create_table("APP", "T", [("ID", "NUMBER(10)")], ["ID"])
    pipeline = oracle_pipeline(spark, db, tmp_path, extra="mining:\n  transaction_retention_s: 3600\n")
    pipeline.snapshot()
    stuck = db.begin()
    stuck.insert("APP", "T", {"ID": 1})
    db.advance_time(timedelta(hours=2))
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 2})
    tx.commit()
    pipeline.mine()
    ended = spark.read.format("delta").load(pipeline.layout.transactions).where("status = 'abandoned'").collect()
    assert len(ended) == 1 and ended[0].rows == 1
    assert bronze_markers(spark, pipeline)[-1]["abandoned"] == 1
    stuck.insert("APP", "T", {"ID": 3})
    stuck.commit()
    pipeline.mine()
    assert bronze_markers(spark, pipeline)[-1]["late_commits"]
    ids = sorted(r.ID for r in spark.read.format("delta").load(pipeline.layout.target("APP.T")).collect())
    assert ids == [2]  # neither half of the abandoned transaction


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_mode_mines_exported_logminer_rows(spark, tmp_path, fmt):  # type: ignore[no-untyped-def]
    """``source.mode: export``: the same decoding from V$LOGMNR_CONTENTS rows exported to a file."""
    db = SimulatedOracle(threads=2, seed=41)
    tables = create_typed_tables(db, lob=False)
    random_workload(db, random.Random(41), tables, transactions=60, lob=False, p_jump=0)
    export = tmp_path / f"contents.{fmt}"
    db.export_contents(export, fmt=fmt)
    from cdclake.config import load_config_text
    from cdclake.engine.pipeline import Pipeline

    config = load_config_text(
        "pipeline: exp\nsource:\n  type: oracle\n  mode: export\n  include_tables: ['APP\\..*']\n"
        f"  export: {{path: '{export}', format: {fmt}}}\nlake: {{root: '{tmp_path / 'lake'}'}}\n")
    pipeline = Pipeline.from_config(config, spark)
    pipeline.snapshot()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, names(tables))


def test_lob_writes_are_reassembled_when_lob_capture_is_on(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 13 and 35: LOB_WRITE/LOB_TRIM pieces build the value; LOB-only updates; unchanged LOBs kept."""
    db = SimulatedOracle(threads=2, seed=43, lob_chunk=64, lob_inline_max=16)
    tables = create_typed_tables(db, lob=True)
    rng = random.Random(43)
    random_workload(db, rng, tables, transactions=20, lob=True, p_jump=0)
    pipeline = oracle_pipeline(spark, db, tmp_path, mining="lob: true")
    pipeline.snapshot()
    random_workload(db, rng, tables, transactions=80, lob=True, p_jump=0, p_partial_rollback=0.2)
    tx = db.begin()
    tx.lob_write("APP", "DOCS", {"ID": db.rows("APP", "DOCS")[0]["ID"]}, "BODY", "rewritten " * 30)
    tx.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, names(tables))
