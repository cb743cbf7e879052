"""More of the checklist of shared/reference/oracle.md §4 (item numbers in the docstrings) against the
LogMiner simulator: online logs archived and reused while mining, archive-log-only mining from one
destination, tables snapshotted late, standby roles, the redo-log dictionary. Each scenario ends with
the Delta tables equal to the simulated source, or with an error that names the problem and the fix.
The client-level mechanics are unit-tested in tests/unit/test_oracle_mining_checklist.py."""

from __future__ import annotations

from typing import Any

import pytest
from cdclake.errors import CdcError, PositionLostError, PreflightError
from cdclake.testing.logminer_sim import SimulatedOracle

from tests.integration.oracle_helpers import (
    assert_lake_equals_simulated,
    bronze_markers,
    oracle_pipeline,
    spy_added,
    switch_twice,
)

pytestmark = pytest.mark.integration






def starts(db: SimulatedOracle) -> int:
    return sum(1 for s in db.statements if s.startswith("BEGIN SYS.DBMS_LOGMNR.START_LOGMNR"))


def commit(db: SimulatedOracle, *changes: tuple[str, str, int, str | None]) -> int:
    """One transaction of ("i"|"u"|"d", table, ID, V) changes on APP tables; returns its commit SCN."""
    tx = db.begin()
    for op, table, key, value in changes:
        if op == "i":
            tx.insert("APP", table, {"ID": key, "V": value})
        elif op == "u":
            tx.update("APP", table, {"ID": key}, {"V": value})
        else:
            tx.delete("APP", table, {"ID": key})
    scn = tx.commit()
    assert scn is not None
    return scn


def workload(db: SimulatedOracle, first: int, transactions: int) -> None:
    """Two interleaved transactions at a time on APP.T: inserts, updates of earlier rows, deletes."""
    for n in range(first, first + transactions, 2):
        a, b = db.begin(), db.begin()
        a.insert("APP", "T", {"ID": n, "V": f"a{n}"})
        b.insert("APP", "T", {"ID": n + 1, "V": f"b{n}"})
        a.update("APP", "T", {"ID": n}, {"V": f"a{n}u"})
        if n - 4 >= first:
            b.delete("APP", "T", {"ID": n - 4})
        b.commit()
        a.commit()


def one_table(**kw: Any) -> SimulatedOracle:
    db = SimulatedOracle(**kw)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("V", "VARCHAR2(20)")], ["ID"])
    return db


def two_tables(seed: int) -> SimulatedOracle:
    db = SimulatedOracle(seed=seed)
    for table in ("A", "B"):
        db.create_table("APP", table, [("ID", "NUMBER(10)"), ("V", "VARCHAR2(20)")], ["ID"])
    commit(db, *[("i", t, i, t.lower()) for i in range(1, 9) for t in ("A", "B")])
    return db


def lake_rows(spark: Any, pipeline: Any, table: str) -> dict[int, str]:
    return {r.ID: r.V for r in spark.read.format("delta").load(pipeline.layout.target(table)).collect()}


# ---- item 9: online redo is a circular buffer -----------------------------------------------------------

def test_online_logs_archived_and_overwritten_while_mining(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Item 9: an online log is archived and its group overwritten in the middle of a fetch, and
    between listing the logs and starting LogMiner (and so between windows): each batch starts over on
    a fresh list naming the archived copy, never reading the overwritten group; a change only in the
    log buffer when the window is planned is flushed by the flush-table commit, so it is not skipped.
    (Between two batches of a window: tests/unit/test_oracle_mining_checklist.py.)"""
    db = one_table(seed=51, groups_per_thread=2)
    workload(db, 0, 10)
    small = "fetch_size: 20\nbatch_size_min: 40\nbatch_size_default: 80\nbatch_size_increment: 40\nbatch_size_max: 160"
    pipeline = oracle_pipeline(spark, db, tmp_path, mining=small)
    pipeline.snapshot()

    workload(db, 100, 30)
    pending = db.begin()  # its change is in the log buffer only (no commit since): LGWR has not written it
    pending.insert("APP", "T", {"ID": 880001, "V": "unflushed"})
    assert db.flushed_scn < db.current_scn
    db.run_next("CONTENTS", lambda: switch_twice(db), after_rows=30)  # overwritten during the fetch
    added = spy_added(db)
    pipeline.mine()
    current = {db.member_name(g) for g in db.threads[1].groups}
    assert added[0] in current and any(name.startswith("/arch/") for name in added)

    workload(db, 200, 30)
    pending.commit()
    db.run_next("ADD_LOGFILE", lambda: switch_twice(db))  # overwritten after the listing: ORA-01291
    pipeline.mine()
    batches = sum(int(m["mining_batches"]) for m in bronze_markers(spark, pipeline))
    assert starts(db) >= batches + 2  # a batch of each window started again on a fresh list
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.T"])
    assert lake_rows(spark, pipeline, "APP.T")[880001] == "unflushed"


def test_archive_log_only_reads_the_configured_destination(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Item 9: archive-log-only mode mines up to what every thread has archived (no flush table needed),
    from the configured VALID LOCAL destination only (the other one's copies are purged: never used);
    a destination that stops being valid is a clear error naming the valid ones."""
    db = one_table(seed=53, archive_destinations=2)
    workload(db, 0, 10)
    mining = "archive_log_only: true\narchive_destination: LOG_ARCHIVE_DEST_2\nflush_table: null"
    pipeline = oracle_pipeline(spark, db, tmp_path, mining=mining)
    pipeline.snapshot()
    workload(db, 100, 20)
    db.switch_log(1)
    db.archive_logs()
    horizon = db.current_log(1).first_change - 1
    workload(db, 200, 10)
    db.purge_archived(1, db.current_log(1).sequence, dest_id=1)
    added = spy_added(db)
    pipeline.mine()
    assert int(pipeline.control.last_window().end_limit["scn"]) == horizon
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.T"], scn=horizon)  # not past the archived redo
    assert 200 not in lake_rows(spark, pipeline, "APP.T")
    db.switch_log(1)
    db.archive_logs()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.T"])
    assert added and all(name.startswith("/fra/") for name in added)  # destination 2, no online member
    assert not any("CDCLAKE_FLUSH" in s for s in db.statements)
    db.archive_dests[1].status = "ERROR"
    with pytest.raises(CdcError) as err:
        oracle_pipeline(spark, db, tmp_path, mining=mining).mine()
    assert "LOG_ARCHIVE_DEST_2 is not a VALID LOCAL destination (valid: LOG_ARCHIVE_DEST_1)" in err.value.problem
    assert "source.mining.archive_destination" in (err.value.fix or "")


# ---- items 10 and 29: a table snapshotted while the others stream ---------------------------------------

def test_table_snapshotted_late_applies_only_changes_after_its_scn(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 10 and 29: table B joins a pipeline whose table A streams. B's snapshot has its own SCN,
    above A's position; the next window mines from A's position and applies to B only commits after
    B's SCN: rows changed and deleted before it stay deleted, a row deleted after it is not brought
    back by the snapshot, a transaction open across B's SCN applies whole, DDL before it is not
    applied twice."""
    db = two_tables(61)
    streaming = oracle_pipeline(spark, db, tmp_path, include=r"APP\.A")
    streaming.snapshot()
    commit(db, ("u", "A", 1, "a1"), ("u", "B", 1, "b1"))
    streaming.mine()
    # Committed between A's position and B's snapshot: in B's snapshot, never applied again.
    commit(db, ("u", "B", 2, "b2"))
    commit(db, ("d", "B", 2, None), ("u", "A", 2, "a2"))
    commit(db, ("i", "B", 9, "nine"))
    commit(db, ("u", "B", 9, "nine2"))
    commit(db, ("d", "B", 9, None))
    commit(db, ("u", "B", 3, "b3"))
    # Open across B's snapshot SCN: changes before and after it, committed after it.
    across = db.begin()
    across.update("APP", "B", {"ID": 4}, {"V": "across-1"})
    across.insert("APP", "B", {"ID": 20, "V": "new"})
    across.delete("APP", "B", {"ID": 5})

    late = oracle_pipeline(spark, db, tmp_path, include=r"APP\.(A|B)")
    report = late.snapshot(tables_regex=r"APP\.B")
    assert report.tables == ["APP.B"]  # A streams on
    states = late.control.table_states()
    b_pos, a_pos = states["APP.B"].position, states["APP.A"].position
    assert int(b_pos["scn"]) > int(a_pos["scn"]) and int(b_pos["resume_scn"]) < int(b_pos["scn"])
    assert lake_rows(spark, late, "APP.B") == {1: "b1", 3: "b3", 4: "b", 5: "b", 6: "b", 7: "b", 8: "b"}

    across.update("APP", "B", {"ID": 4}, {"V": "across-2"})
    across.commit()
    commit(db, ("d", "B", 6, None))  # in B's snapshot, deleted after it: must not come back
    commit(db, ("u", "B", 7, "b7"), ("d", "A", 3, None))
    late.mine()
    assert lake_rows(spark, late, "APP.B") == {1: "b1", 3: "b3", 4: "across-2", 7: "b7", 8: "b", 20: "new"}
    assert_lake_equals_simulated(spark, late, db, ["APP.A", "APP.B"])


def test_ddl_below_the_position_after_a_snapshot_is_not_applied_again(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 10 and 11: a transaction open at the snapshot makes the first window start below the
    snapshot SCN; DDL in that range is in the snapshot's table definition already and is skipped."""
    db = two_tables(63)
    open_tx = db.begin()
    open_tx.update("APP", "A", {"ID": 1}, {"V": "open"})
    db.add_column("APP", "B", "X", "NUMBER(5)")
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    state = pipeline.control.table_states()["APP.B"].position
    assert int(state["resume_scn"]) < int(state["scn"])
    open_tx.commit()
    tx = db.begin()
    tx.insert("APP", "B", {"ID": 30, "V": "x", "X": 5})
    tx.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.A", "APP.B"])
    assert [e.kind for e in pipeline.control.history() if e.table == "APP.B"] == ["snapshot"]


def test_late_snapshot_waits_for_a_transaction_open_since_before_the_stream(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 10 and 29: a transaction that changed B before A's position is still open when B is added.
    Its B changes were in windows already mined (B not captured then), so B's snapshot is refused with
    the remedy; once the transaction ended, B is snapshotted and both tables equal the source."""
    db = two_tables(65)
    streaming = oracle_pipeline(spark, db, tmp_path, include=r"APP\.A")
    streaming.snapshot()
    old = db.begin()
    old.insert("APP", "B", {"ID": 100, "V": "old"})
    old.update("APP", "B", {"ID": 1}, {"V": "old"})
    old.update("APP", "A", {"ID": 1}, {"V": "old"})
    streaming.mine()  # `old` is open at the window's end: its A change waits in the in-flight buffer
    late = oracle_pipeline(spark, db, tmp_path, include=r"APP\.(A|B)")
    with pytest.raises(CdcError) as err:
        late.snapshot(tables_regex=r"APP\.B")
    assert "cannot add APP.B now" in err.value.problem and "once that transaction has ended" in err.value.fix
    assert "APP.B" not in late.control.table_states()
    old.commit()
    late.mine()
    late.snapshot(tables_regex=r"APP\.B")
    commit(db, ("u", "B", 100, "new"), ("d", "B", 1, None))
    late.mine()
    assert_lake_equals_simulated(spark, late, db, ["APP.A", "APP.B"])


def test_late_snapshot_after_ddl_on_the_new_table(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 10 and 11: B gains a column after A's position and before B's late snapshot; the next
    window must not apply that DDL to B's snapshot definition again."""
    db = two_tables(67)
    streaming = oracle_pipeline(spark, db, tmp_path, include=r"APP\.A")
    streaming.snapshot()
    db.add_column("APP", "B", "X", "NUMBER(5)")
    late = oracle_pipeline(spark, db, tmp_path, include=r"APP\.(A|B)")
    late.snapshot(tables_regex=r"APP\.B")
    tx = db.begin()
    tx.insert("APP", "B", {"ID": 30, "V": "x", "X": 5})
    tx.commit()
    late.mine()
    assert_lake_equals_simulated(spark, late, db, ["APP.A", "APP.B"])


def test_renamed_table_keeps_its_rows(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Item 11: ALTER TABLE T RENAME TO T2 moves T's rows (and T's changes before the rename in the
    same window) to T2, whichever name sorts first."""
    db = SimulatedOracle(seed=69)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("V", "VARCHAR2(20)")], ["ID"])
    commit(db, ("i", "T", 1, "one"), ("i", "T", 2, "two"))
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    commit(db, ("i", "T", 4, "four"), ("u", "T", 1, "uno"))
    db.rename_table("APP", "T", "T2")
    commit(db, ("i", "T2", 3, "three"))
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.T2"])
    assert spark.read.format("delta").load(pipeline.layout.target("APP.T")).count() == 0


def test_rename_then_create_of_the_old_name_in_one_window(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Item 11: T renamed to T2 and a new T created in the same window: T2 keeps T's rows (the new
    T starts empty and gets only its own), in both name orders."""
    for new_name in ("T2", "S"):
        db = SimulatedOracle(seed=70)
        db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("V", "VARCHAR2(20)")], ["ID"])
        commit(db, ("i", "T", 1, "one"), ("i", "T", 2, "two"))
        pipeline = oracle_pipeline(spark, db, tmp_path / new_name)
        pipeline.snapshot()
        commit(db, ("i", "T", 4, "four"), ("u", "T", 1, "uno"))
        db.rename_table("APP", "T", new_name)
        db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("V", "VARCHAR2(20)")], ["ID"])
        commit(db, ("i", "T", 7, "seven"), ("i", new_name, 3, "three"))
        pipeline.mine()
        assert_lake_equals_simulated(spark, pipeline, db, ["APP.T", f"APP.{new_name}"])
        assert lake_rows(spark, pipeline, f"APP.{new_name}") == {1: "uno", 2: "two", 3: "three", 4: "four"}
        assert lake_rows(spark, pipeline, "APP.T") == {7: "seven"}


# ---- item 24: standby databases ---------------------------------------------------------------------------

def test_physical_standby_is_refused_and_continues_once_promoted(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Item 24: a physical standby is not mined (preflight names the fix); once promoted (PRIMARY, same
    DBID and SCNs) mining continues from the checkpoint. A logical standby, another DBID with SCNs of
    its own, never continues the primary's checkpoint."""
    db = two_tables(71)
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()
    commit(db, ("u", "A", 1, "a1"), ("i", "B", 10, "ten"))
    db.database_role, db.open_mode = "PHYSICAL STANDBY", "MOUNTED"  # source.dsn now reaches the standby
    with pytest.raises(PreflightError) as err:
        oracle_pipeline(spark, db, tmp_path).mine()
    assert "PHYSICAL STANDBY" in err.value.problem and "cannot be mined" in err.value.problem
    assert "mine the primary" in (err.value.fix or "") and "promote the standby" in (err.value.fix or "")
    db.database_role, db.open_mode = "PRIMARY", "READ WRITE"  # failover: the standby is the primary now
    commit(db, ("d", "A", 2, None))
    oracle_pipeline(spark, db, tmp_path).mine()
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.A", "APP.B"])

    logical = SimulatedOracle(seed=72, dbid=db.dbid + 17, database_role="LOGICAL STANDBY", start_scn=5_000_000)
    for table in ("A", "B"):
        logical.create_table("APP", table, [("ID", "NUMBER(10)"), ("V", "VARCHAR2(20)")], ["ID"])
        commit(logical, *[("i", table, int(r["ID"]), r["V"]) for r in db.rows("APP", table)])
    with pytest.raises(PreflightError) as err:
        oracle_pipeline(spark, logical, tmp_path).mine()
    assert "ORA-16224" in err.value.problem and "archive_log_only: true" in (err.value.fix or "")
    logical.switch_log(1)
    logical.archive_logs()
    with pytest.raises(PositionLostError) as lost:
        oracle_pipeline(spark, logical, tmp_path, mining="archive_log_only: true").mine()
    assert f"DBID {db.dbid} (PRIMARY)" in lost.value.problem and f"DBID {logical.dbid}" in lost.value.problem
    assert "logical standby" in lost.value.problem and "re-snapshot" in (lost.value.fix or "")
    # Back on the primary: the window planned on the standby (its SCNs are far above the primary's) ends
    # at the primary's SCN instead, so no change of the primary is skipped.
    commit(db, ("u", "B", 4, "b4"))
    resumed = oracle_pipeline(spark, db, tmp_path)
    assert resumed.mine().resumed
    assert int(resumed.control.table_states()["APP.B"].position["scn"]) < logical.start_scn
    assert_lake_equals_simulated(spark, resumed, db, ["APP.A", "APP.B"])


# ---- item 25: the LogMiner dictionary ---------------------------------------------------------------------

def test_dictionary_from_the_redo_decodes_what_the_online_catalog_cannot(spark, tmp_path):  # type: ignore[no-untyped-def]
    """Items 25 and 11: a table's definition changes after a window's end but before it is mined. The
    online catalog names its rows 'OBJ# n' (a clear error); redo_log_catalog decodes them with the
    dictionary the snapshot built into the redo. A second redo_log_catalog pipeline on the database is
    refused at preflight."""
    db = SimulatedOracle(seed=73, track_dictionary=True)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("V", "VARCHAR2(20)")], ["ID"])
    online = oracle_pipeline(spark, db, tmp_path / "online", name="online")
    redo = oracle_pipeline(spark, db, tmp_path / "redo", name="redo", mining="dictionary: redo_log_catalog")
    online.snapshot()
    redo.snapshot()
    for i in range(1, 6):
        commit(db, ("i", "T", i, f"v{i}"))
    commit(db, ("u", "T", 2, "v2b"), ("d", "T", 3, None))
    ddl = iter([lambda: db.add_column("APP", "T", "X", "NUMBER(5)"), lambda: db.drop_column("APP", "T", "V")])
    db.run_next("START_LOGMNR", lambda: next(ddl)())  # the DDL lands after the window's planned end
    with pytest.raises(CdcError) as err:
        online.mine()
    assert "OBJ# " in err.value.problem and "dictionary changed" in err.value.problem
    assert "redo_log_catalog" in err.value.problem  # decode's hint; the window is not applied
    db.run_next("START_LOGMNR", lambda: next(ddl)())
    redo.mine()
    assert lake_rows(spark, redo, "APP.T") == {1: "v1", 2: "v2b", 4: "v4", 5: "v5"}
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 6, "X": 6})
    tx.update("APP", "T", {"ID": 1}, {"X": 1})
    tx.commit()
    redo.mine()  # the DDL after the previous window, then rows of the new definition
    assert_lake_equals_simulated(spark, redo, db, ["APP.T"])
    with pytest.raises(PreflightError) as err:
        oracle_pipeline(spark, db, tmp_path / "other", name="other", mining="dictionary: redo_log_catalog").snapshot()
    assert f"redo@{tmp_path / 'redo'}" in err.value.problem and "not allowed" in err.value.problem
    assert "online_catalog" in (err.value.fix or "")
