"""Db2 preflight over the capture emulator: each failure names the problem and the fix."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cdclake.config import load_config_text
from cdclake.errors import CdcError, PositionLostError, PreflightError
from cdclake.sources.db2.position import CommitSeqPosition, show
from cdclake.sources.db2.source import Db2Source
from cdclake.spi import SourceContext
from cdclake.testing.db2_emulator import EmulatedDb2

from tests.integration.db2_helpers import db2_yaml


def _source(db: EmulatedDb2, tmp_path: Path, **kw: str) -> Db2Source:
    config = load_config_text(db2_yaml(tmp_path / "lake", db, **kw))
    return Db2Source(config.source, SourceContext(config.pipeline, config.lake.root), connect=db.connect)


@pytest.fixture
def db(tmp_path: Path) -> EmulatedDb2:
    db = EmulatedDb2(tmp_path / "db2")
    db.create_table("APP", "T", [("ID", "INTEGER", False), ("V", "VARCHAR(10)", True)], ["ID"])
    db.add_table("APP", "T")
    return db


def test_capture_that_never_ran_is_named_with_the_command_that_starts_it(db: EmulatedDb2, tmp_path: Path) -> None:
    with pytest.raises(PreflightError) as err:
        _source(db, tmp_path).preflight()
    assert str(err.value) == (
        "Capture has not recorded a synchpoint in ASNCDC.IBMSNAP_REGISTER: it has never run, or not yet finished a "
        "commit cycle\n  fix: start it: VALUES ASNCDC.ASNCDCSERVICES('start','asncdc') (or asncap "
        "capture_schema=ASNCDC), and check its status")


def test_a_control_schema_without_the_control_tables_is_named(db: EmulatedDb2, tmp_path: Path) -> None:
    db.capture.cycle()
    source = _source(db, tmp_path, source_extra="  control_schema: ASN\n")
    with pytest.raises(PreflightError) as err:
        source.preflight()
    assert str(err.value) == (
        "ASN.IBMSNAP_REGISTER does not exist: SQL Replication's Capture control tables are not in schema ASN\n"
        "  fix: create them (asncdctables.sql, docs/db2.md) or set source.control_schema to the schema that has them "
        "(ASNCDC in Debezium's set-up, ASN in a classic one)")


def test_an_inactive_registration_names_the_update_and_reinit(db: EmulatedDb2, tmp_path: Path) -> None:
    db.capture.cycle()
    db.set_state("APP", "T", "I")
    with pytest.raises(PreflightError) as err:
        _source(db, tmp_path).preflight()
    assert str(err.value) == (
        "the registration of APP.T is not active (STATE 'I'): Capture does not capture it\n"
        "  fix: UPDATE ASNCDC.IBMSNAP_REGISTER SET STATE = 'A' WHERE SOURCE_OWNER = 'APP' AND SOURCE_TABLE = 'T', "
        "then VALUES ASNCDC.ASNCDCSERVICES('reinit','asncdc'); changes made while it was inactive are lost: "
        "`cdclake snapshot --force --tables 'APP\\.T'` afterwards")


def test_a_boolean_column_is_refused_at_preflight(db: EmulatedDb2, tmp_path: Path) -> None:
    db.create_table("APP", "FLAGS", [("ID", "INTEGER", False), ("OK", "BOOLEAN", True)], ["ID"])
    db.add_table("APP", "FLAGS")
    db.capture.cycle()
    with pytest.raises(PreflightError) as err:
        _source(db, tmp_path).preflight()
    assert str(err.value) == (
        "APP.FLAGS.OK is BOOLEAN: SQL Replication does not capture tables with BOOLEAN columns\n"
        "  fix: exclude APP.FLAGS (source.exclude_tables) or change the column's type")


def test_an_unreachable_server_names_the_connection_keys(db: EmulatedDb2, tmp_path: Path) -> None:
    db.down = True
    with pytest.raises(PreflightError) as err:
        _source(db, tmp_path).preflight()
    assert str(err.value) == (
        "cannot connect to Db2 at emulated:50000/TESTDB as db2inst1: ibm_db_dbi::OperationalError: [IBM][CLI Driver]"
        "[DB2/LINUXX8664] SQL30081N  A communication error has been detected. Communication protocol being used: "
        "\"TCP/IP\".  Communication API being used: \"SOCKETS\".  Location where the error was detected: "
        "\"127.0.0.1\".  Communication function detecting the error: \"connect\".  Protocol specific error "
        "code(s): \"111\", \"*\", \"*\".  SQLSTATE=08001 SQLCODE=-30081\n"
        "  fix: check source.host, port, database, user and password, and that the server accepts TCP/IP "
        "connections")


def test_a_capture_cold_start_after_the_lake_position_is_a_lost_range(db: EmulatedDb2, tmp_path: Path) -> None:
    with db.transaction() as tx:
        tx.insert("APP", "T", {"ID": 1, "V": "a"})
    db.capture.cycle()
    source = _source(db, tmp_path)
    source.preflight()
    with pytest.raises(PositionLostError, match=r"Capture started \(cold\) at .*, after the lake's position "
                                                r"commit sequence 00000000:00000000:0000000000000001"):
        source.log.check_available(CommitSeqPosition("0" * 31 + "1", 0))


def _commit(db: EmulatedDb2, key: int) -> None:
    with db.transaction() as tx:
        tx.insert("APP", "T", {"ID": key, "V": "a"})
    db.capture.cycle()


def test_retention_pruning_past_the_lake_position_is_a_lost_range(db: EmulatedDb2, tmp_path: Path) -> None:
    _commit(db, 1)
    source = _source(db, tmp_path)
    position = source.log.current_position()
    db.clock += dt.timedelta(days=8)  # RETENTION_LIMIT 10080 minutes: 7 days
    _commit(db, 2)
    source.log.check_available(position)  # not pruned yet: everything after the position is there
    assert db.capture.prune() == 1
    kept = db.select('SELECT MIN(IBMSNAP_COMMITSEQ) FROM ASNCDC."IBMSNAP_UOW"')[0][0]
    with pytest.raises(PositionLostError) as err:
        source.log.check_available(position)
    assert str(err.value) == (
        "Capture's retention pruning (RETENTION_LIMIT 10080 minutes, ASNCDC.IBMSNAP_CAPPARMS) has passed the lake's "
        f"position {position.describe()}, taken at {position.captured_at}: the oldest transaction it keeps is at "
        f"{show(kept.hex())}, and the changes committed in between may be gone\n"
        "  fix: re-snapshot the tables: cdclake snapshot --force; then run mining more often than the retention "
        "limit, or raise it")


def test_retention_pruning_of_what_the_lake_has_read_is_no_gap(db: EmulatedDb2, tmp_path: Path) -> None:
    _commit(db, 1)
    db.clock += dt.timedelta(days=6)
    db.capture.cycle()  # an idle cycle: Capture's synchpoint and SYNCHTIME move on
    source = _source(db, tmp_path)
    position = source.log.current_position()
    db.clock += dt.timedelta(days=2)
    assert db.capture.prune() == 1  # the only transaction, read before the position, is pruned
    source.log.check_available(position)


def test_a_subscription_prune_point_past_the_lake_position_is_a_lost_range(db: EmulatedDb2, tmp_path: Path) -> None:
    _commit(db, 1)
    source = _source(db, tmp_path)
    position = source.log.current_position()
    _commit(db, 2)
    point = db.capture.synchpoint
    db.set_prune_point("APP", "T", point)
    source.log.check_available(position)  # Capture has not pruned yet
    assert db.capture.prune() == 2
    with pytest.raises(PositionLostError) as err:
        source.log.check_available(position)
    assert str(err.value) == (
        "APP.T: the subscriptions in ASNCDC.IBMSNAP_PRUNCNTL let Capture prune its CD table ASNCDC.CDC_APP_T up to "
        f"{show(point.hex())}, past the lake's position {position.describe()}: its changes committed in between may "
        "be gone\n  fix: re-snapshot it: `cdclake snapshot --force --tables 'APP\\.T'`; keep a prune-control row with "
        "a NULL SYNCHPOINT for the table (ASNCDC.ADDTABLE makes one) so that no other subscriber's progress prunes "
        "what cdclake has not read")


def test_a_capture_cold_start_after_the_lake_position_empties_the_cd_tables_and_is_a_lost_range(
        db: EmulatedDb2, tmp_path: Path) -> None:
    _commit(db, 1)
    source = _source(db, tmp_path)
    position = source.log.current_position()
    _commit(db, 2)
    db.capture.cold_start()
    assert db.select('SELECT COUNT(*) FROM ASNCDC."CDC_APP_T"') == [(0,)]
    with pytest.raises(PositionLostError) as err:
        source.log.check_available(position)
    assert str(err.value) == (
        f"Capture started (cold) at {show(db.capture.first_seq.hex())}, after the lake's position "
        f"{position.describe()}: the changes committed in between were never captured\n"
        "  fix: re-snapshot the tables: cdclake snapshot --force")


SHARE_LOCKS = "  snapshot:\n    lock_mode: share\n    lock_timeout: 5\n    isolation: rs\n"


def test_share_locks_hold_writers_off_until_the_table_is_written(db: EmulatedDb2, tmp_path: Path) -> None:
    from cdclake.testing.db2_emulator import EmulatorError

    _commit(db, 1)
    source = _source(db, tmp_path, source_extra=SHARE_LOCKS)
    start = source.snapshot.start(["APP.T"])
    assert start.held == ["APP.T"]
    tx = db.begin()
    with pytest.raises(EmulatorError, match="locked IN SHARE MODE"):
        tx.insert("APP", "T", {"ID": 2, "V": "b"})
    source.snapshot.end("APP.T")
    tx.insert("APP", "T", {"ID": 2, "V": "b"})
    with pytest.raises(CdcError) as err:  # now the writer's open transaction holds the table
        source.snapshot.start(["APP.T"])
    assert str(err.value).startswith("cannot lock APP.T IN SHARE MODE for the snapshot within "
                                     "source.snapshot.lock_timeout (5 s): ")
    assert str(err.value).endswith(
        "\n  fix: wait for the transactions writing them to end, raise source.snapshot.lock_timeout, or set "
        "source.snapshot.lock_mode: none (the snapshot is exact without locks)")
    tx.commit()
    assert source.snapshot.start(["APP.T"]).held == ["APP.T"]
    source.close()
    assert db.table_locks == {}


def test_the_snapshot_reads_at_the_configured_isolation(db: EmulatedDb2, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from unittest import mock

    from cdclake.kit import snapshot as kit_snapshot

    _commit(db, 1)
    source = _source(db, tmp_path, source_extra=SHARE_LOCKS)
    schema = source.snapshot.start(["APP.T"]).schemas["APP.T"]
    seen: list[dict[str, str]] = []
    monkeypatch.setattr(kit_snapshot, "read_jdbc", lambda spark, url, sql, props, **kw: seen.append(props) or
                        mock.MagicMock())
    source.snapshot.read(mock.MagicMock(), schema)
    assert seen[0]["defaultIsolationLevel"] == "4"  # JDBC REPEATABLE_READ: Db2's read stability
    with pytest.raises(Exception, match=r"source.snapshot.isolation: Input should be 'cs', 'rs' or 'rr'"):
        _source(db, tmp_path, source_extra="  snapshot:\n    isolation: ur\n")


def test_a_capture_far_behind_is_warned_at_preflight(db: EmulatedDb2, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    db.capture.cycle()
    source = _source(db, tmp_path)
    source.preflight()
    assert "Capture's synchpoint is" not in caplog.text
    db.clock += dt.timedelta(hours=2)  # Capture stopped: no cycle since
    source.preflight()
    assert "Capture's synchpoint is 7200 s old (SYNCHTIME 2026-01-01T00:00:00." in caplog.text
    assert "check VALUES ASNCDC.ASNCDCSERVICES('status','asncdc')" in caplog.text
