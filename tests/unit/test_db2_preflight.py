"""Db2 preflight over the capture emulator: each failure names the problem and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdclake.config import load_config_text
from cdclake.errors import PositionLostError, PreflightError
from cdclake.sources.db2.position import CommitSeqPosition
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
    text = str(err.value)
    assert text.startswith("the registration of APP.T is not active (STATE 'I'): Capture does not capture it")
    assert "UPDATE ASNCDC.IBMSNAP_REGISTER SET STATE = 'A' WHERE SOURCE_OWNER = 'APP' AND SOURCE_TABLE = 'T'" in text
    assert "cdclake snapshot --force --tables APP.T" in text


def test_a_boolean_column_is_refused_at_preflight(db: EmulatedDb2, tmp_path: Path) -> None:
    db.create_table("APP", "FLAGS", [("ID", "INTEGER", False), ("OK", "BOOLEAN", True)], ["ID"])
    db.add_table("APP", "FLAGS")
    db.capture.cycle()
    with pytest.raises(PreflightError, match=r"APP\.FLAGS\.OK is BOOLEAN: SQL Replication does not capture tables "
                                             r"with BOOLEAN columns\n  fix: exclude APP\.FLAGS"):
        _source(db, tmp_path).preflight()


def test_an_unreachable_server_names_the_connection_keys(db: EmulatedDb2, tmp_path: Path) -> None:
    db.down = True
    with pytest.raises(PreflightError, match=r"cannot connect to Db2 emulated:50000/TESTDB: .*SQL30081N.*"
                                             r"\n  fix: check source.host, port, database, user and password"):
        _source(db, tmp_path).preflight()


def test_a_capture_cold_start_after_the_lake_position_is_a_lost_range(db: EmulatedDb2, tmp_path: Path) -> None:
    with db.transaction() as tx:
        tx.insert("APP", "T", {"ID": 1, "V": "a"})
    db.capture.cycle()
    source = _source(db, tmp_path)
    source.preflight()
    with pytest.raises(PositionLostError, match=r"Capture started \(cold\) at .*, after the lake's position "
                                                r"commit sequence 00000000:00000000:0000000000000001"):
        source.check_available(CommitSeqPosition("0" * 31 + "1", 0))
