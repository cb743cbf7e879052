"""The LogMiner client and preflight against the simulator, without Spark: checklist items 9
(online logs archived and overwritten under a batch, archive destinations), 24 (standby roles,
checkpoints bound to a DBID) and 25 (redo_log_catalog dictionaries, one pipeline per database)."""

from __future__ import annotations

from typing import Any

import pytest
from cdclake.config import load_config_text
from cdclake.errors import PositionLostError, PreflightError
from cdclake.sources.oracle.logminer import LogMinerClient, MiningSettings
from cdclake.sources.oracle.position import ScnPosition
from cdclake.sources.oracle.source import OracleSource
from cdclake.spi import SourceContext
from cdclake.testing.logminer_sim import SimulatedOracle

from tests.integration.oracle_helpers import spy_added, switch_twice

OWNERS, EXCLUDED = ["APP"], ["C##CDC"]


class ListSink:
    """A RawSink keeping Arrow tables per batch (a retried batch discards its earlier rows)."""

    chunk_rows = 1_000_000

    def __init__(self) -> None:
        self.batches: dict[int, list[Any]] = {}

    def write(self, batch: int, table: Any) -> None:
        self.batches.setdefault(batch, []).append(table)

    def discard(self, batch: int) -> None:
        self.batches.pop(batch, None)

    def rows(self) -> list[tuple[Any, ...]]:
        out = []
        for batch in sorted(self.batches):
            for table in self.batches[batch]:
                d = table.to_pydict()
                out += list(zip(d["SCN"], d["XID"], d["OPERATION_CODE"], d["SQL_REDO"], strict=True))
        return out


def db_with_rows(n: int = 60, **kw: Any) -> tuple[SimulatedOracle, int]:
    db = SimulatedOracle(groups_per_thread=2, **kw)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("NAME", "VARCHAR2(20)")], ["ID"])
    lo = db.current_scn
    for i in range(n):
        tx = db.begin()
        tx.insert("APP", "T", {"ID": i, "NAME": f"n{i}"})
        tx.commit()
    return db, lo






def mine(db: SimulatedOracle, lo: int, hi: int, **settings: Any) -> list[tuple[Any, ...]]:
    sink = ListSink()
    client = LogMinerClient(db.connect, MiningSettings(retry_backoff_s=0, **settings), sleep=lambda s: None)
    client.mine(lo, hi, OWNERS, EXCLUDED, 1, sink)
    return sink.rows()


def test_online_log_overwritten_during_the_fetch_is_read_again_from_its_archived_copy() -> None:
    db, lo = db_with_rows()
    hi = db.current_scn
    expected = mine(db, lo, hi)  # read from the online log, nothing switching
    current = db.current_log(1)
    added = spy_added(db)
    db.run_next("CONTENTS", lambda: switch_twice(db), after_rows=15)
    got = mine(db, lo, hi, fetch_size=10)
    assert got == expected  # no row lost, none twice
    assert added == [db.member_name(current.group), current.archived[1]]  # online first, then the archived copy
    assert not db.is_online(current)


def test_online_log_reused_between_listing_and_start_is_listed_again() -> None:
    db, lo = db_with_rows()
    hi = db.current_scn
    expected = mine(db, lo, hi)
    current = db.current_log(1)
    added = spy_added(db)
    db.run_next("ADD_LOGFILE", lambda: switch_twice(db))  # the member now holds a newer sequence: ORA-01291
    assert mine(db, lo, hi) == expected
    assert added[-1] == current.archived[1]


def test_batches_after_an_archive_and_reuse_read_the_archived_copy() -> None:
    db, lo = db_with_rows(80)
    hi = db.current_scn
    expected = mine(db, lo, hi, batch_size_min=40, batch_size_default=40, batch_size_increment=1,
                    batch_size_max=40)
    current = db.current_log(1)
    added = spy_added(db)
    db.run_next("END_LOGMNR", lambda: switch_twice(db))  # between batch 1 and batch 2 of the window
    got = mine(db, lo, hi, batch_size_min=40, batch_size_default=40, batch_size_increment=1, batch_size_max=40)
    assert got == expected
    assert added[0] == db.member_name(current.group) and set(added[1:]) == {current.archived[1]}


def test_a_log_missing_on_every_fresh_list_is_a_position_error() -> None:
    db, lo = db_with_rows(5)
    db.fail_next("START_LOGMNR", "ORA-01291: missing logfile", times=3)
    with pytest.raises(PositionLostError) as err:
        mine(db, lo, db.current_scn)
    assert "ORA-01291" in err.value.problem and "restore" in (err.value.fix or "")


def test_only_the_configured_valid_local_archive_destination_is_read() -> None:
    db, lo = db_with_rows(20, archive_destinations=2)
    switch_twice(db)
    db.archive_logs()
    hi = LogMinerClient(db.connect, MiningSettings(archive_log_only=True)).plan_end()  # the archived horizon
    assert hi == db.current_log(1).first_change - 1
    added = spy_added(db)
    mine(db, lo, hi, archive_log_only=True, archive_destination="LOG_ARCHIVE_DEST_2")
    assert added and all(name.startswith("/fra/") for name in added)  # destination 2 only, no online log
    added.clear()
    mine(db, lo, hi, archive_log_only=True)
    assert added and all(name.startswith("/arch/") for name in added)  # the lowest valid one, never at random
    # The next window starts at the horizon, the last SCN of an archived log: that log is not needed.
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1000, "NAME": "next"})
    tx.commit()
    switch_twice(db)
    db.archive_logs()
    nxt = LogMinerClient(db.connect, MiningSettings(archive_log_only=True)).plan_end()
    assert [r[3] for r in mine(db, hi, nxt, archive_log_only=True) if r[2] == 1] == [
        'insert into "APP"."T"("ID","NAME") values (\'1000\',\'next\')']
    db.archive_dests[1].status = "ERROR"
    with pytest.raises(Exception, match="LOG_ARCHIVE_DEST_2 is not a VALID LOCAL destination") as err:
        mine(db, lo, hi, archive_log_only=True, archive_destination="LOG_ARCHIVE_DEST_2")
    assert "LOG_ARCHIVE_DEST_1" in str(err.value)


# ---- standby (item 24) --------------------------------------------------------------------------------

def oracle_source(db: SimulatedOracle, mining: str = "", name: str = "p") -> OracleSource:
    text = (f"pipeline: {name}\nsource:\n  type: oracle\n  dsn: sim/ORCL\n  user: C##CDC\n  password: x\n"
            "  include_tables: ['APP\\..*']\n  mining:\n    retry_backoff_s: 0\n"
            + "".join(f"    {line}\n" for line in mining.splitlines()) + "lake: {root: /tmp/unused}\n")
    config = load_config_text(text)
    return OracleSource(config.source, SourceContext(name, "/tmp/unused"), connect=db.connect)  # type: ignore[arg-type]


def test_standby_roles_in_preflight() -> None:
    db, _ = db_with_rows(1)
    source = oracle_source(db)
    db.database_role, db.open_mode = "PHYSICAL STANDBY", "MOUNTED"
    with pytest.raises(PreflightError) as err:
        source.preflight()
    assert "PHYSICAL STANDBY" in err.value.problem and "primary" in (err.value.fix or "")
    assert "promote" in (err.value.fix or "")
    db.database_role, db.open_mode = "SNAPSHOT STANDBY", "READ WRITE"
    with pytest.raises(PreflightError, match="converts back to a physical standby"):
        source.preflight()
    db.database_role = "LOGICAL STANDBY"
    with pytest.raises(PreflightError) as err:
        source.preflight()
    assert "ORA-16224" in err.value.problem and "archive_log_only: true" in (err.value.fix or "")
    oracle_source(db, "archive_log_only: true").preflight()  # a logical standby, archived logs only
    db.database_role = "PRIMARY"
    source.preflight()


def test_a_position_continues_only_on_its_database() -> None:
    db, _ = db_with_rows(1)
    source = oracle_source(db)
    source.preflight()
    here = ScnPosition(db.current_scn, dbid=db.dbid, role="PRIMARY")
    source.log._check_same_database(here)  # same DBID (also a promoted physical standby)
    source.log._check_same_database(ScnPosition(db.current_scn))  # a position from before DBIDs were kept
    with pytest.raises(PositionLostError) as err:
        source.log._check_same_database(ScnPosition(db.current_scn, dbid=db.dbid + 1, role="PRIMARY"))
    assert f"DBID {db.dbid + 1}" in err.value.problem and "re-snapshot" in (err.value.fix or "")
    db.database_role = "LOGICAL STANDBY"  # same DBID, but a logical standby now: its SCNs are its own
    logical = oracle_source(db, "archive_log_only: true")
    logical.preflight()
    with pytest.raises(PositionLostError, match="logical standby"):
        logical.log._check_same_database(here)
    logical.log._check_same_database(ScnPosition(db.current_scn, dbid=db.dbid, role="LOGICAL STANDBY"))


def test_a_position_does_not_continue_past_an_open_resetlogs() -> None:
    """Point-in-time recovery, FLASHBACK DATABASE or a failover opens a new incarnation at
    RESETLOGS_CHANGE#: a checkpoint below it continues, one at or above it is refused."""
    db, _ = db_with_rows(3)
    source = oracle_source(db)
    source.preflight()
    start = source.log.current_position()
    assert start.resetlogs == db.resetlogs_change == 1
    assert ScnPosition.from_dict(start.to_dict()) == start and start.to_dict()["resetlogs"] == "1"
    source.log._check_same_database(start)
    db.resetlogs_change = start.scn + 1  # opened with RESETLOGS after the checkpoint: nothing was lost
    source = oracle_source(db)
    source.preflight()
    source.log._check_same_database(start)
    after = start.after_window(start.scn + 10, {}, None, None, source.log.current_position().resetlogs)
    assert after.resetlogs == start.scn + 1  # the next window's checkpoint counts in the new incarnation
    source.log._check_same_database(after)
    db.resetlogs_change = start.scn  # recovered to just before the checkpoint's SCN: changes lost
    source = oracle_source(db)
    source.preflight()
    with pytest.raises(PositionLostError) as err:
        source.log._check_same_database(start)
    assert f"RESETLOGS at SCN {start.scn}" in err.value.problem and "re-snapshot" in (err.value.fix or "")
    old = ScnPosition.from_dict({k: v for k, v in start.to_dict().items() if k != "resetlogs"})
    source.log._check_same_database(old)  # a checkpoint from before incarnations were recorded


# ---- redo_log_catalog (item 25) -------------------------------------------------------------------------

def test_one_pipeline_per_database_claims_redo_log_catalog() -> None:
    db, _ = db_with_rows(1)
    first = oracle_source(db, "dictionary: redo_log_catalog", name="first")
    first.preflight()
    first.preflight()  # its own claim
    second = oracle_source(db, "dictionary: redo_log_catalog", name="second")
    with pytest.raises(PreflightError) as err:
        second.preflight()
    assert "first@/tmp/unused" in err.value.problem and "redo_log_catalog" in err.value.problem
    assert "online_catalog" in (err.value.fix or "") and "DELETE FROM C##CDC.CDCLAKE_DICTIONARY_CLAIM" in (
        err.value.fix or "")
    oracle_source(db, name="third").preflight()  # online_catalog pipelines are not limited


def test_redo_log_catalog_batches_use_a_dictionary_built_before_them() -> None:
    db, _ = db_with_rows(0, track_dictionary=True)
    client = LogMinerClient(db.connect, MiningSettings(dictionary="redo_log_catalog", retry_backoff_s=0))
    lo = db.current_scn
    with pytest.raises(PositionLostError, match="no LogMiner dictionary in the redo at or before SCN"):
        client.batch_dictionary(lo, None)
    built = client.build_dictionary()
    assert client.batch_dictionary(built[1], built) == ("redo_log_catalog", built[0], None)
    # below the build: the online catalog, up to where the dictionary takes over
    assert client.batch_dictionary(built[0] - 5, built) == ("online_catalog", built[0] - 5, built[1])
    switch_twice(db)  # the build's log is archived: found without the tracked build too
    dictionary_log = next(f for f in db.logs(1) if f.dictionary)
    assert client.batch_dictionary(db.current_scn, None) == ("redo_log_catalog", dictionary_log.first_change - 1,
                                                             None)
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1, "NAME": "before"})
    tx.commit()
    hi = db.current_scn
    db.add_column("APP", "T", "X", "NUMBER")  # the dictionary changes after the range
    redo = LogMinerClient(db.connect, MiningSettings(dictionary="redo_log_catalog", retry_backoff_s=0))
    sink = ListSink()
    redo.mine(built[1], hi, OWNERS, EXCLUDED, 1, sink, dictionary=built)
    assert [r[3] for r in sink.rows() if r[2] == 1] == ['insert into "APP"."T"("ID","NAME") values (\'1\',\'before\')']
    online = ListSink()
    LogMinerClient(db.connect, MiningSettings(retry_backoff_s=0)).mine(built[1], hi, ["APP", "UNKNOWN"], EXCLUDED,
                                                                       1, online)
    assert [r[3] for r in online.rows() if r[2] == 1][0].startswith('insert into "UNKNOWN"."OBJ# ')


def test_extended_strings_without_lob_capture_are_warned_about(caplog: Any) -> None:
    db, _ = db_with_rows(1)
    db.max_string_size = "EXTENDED"
    with caplog.at_level("WARNING", logger="cdclake.sources.oracle.preflight"):
        oracle_source(db).preflight()
    assert "MAX_STRING_SIZE=EXTENDED" in caplog.text and "source.mining.lob: true" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="cdclake.sources.oracle.preflight"):
        oracle_source(db, "lob: true").preflight()
        db.max_string_size = "STANDARD"
        oracle_source(db).preflight()
    assert "MAX_STRING_SIZE" not in caplog.text
