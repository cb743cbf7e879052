"""The lag's logic without a server: how the engine reads a source's answer (exact, bounded, unknown),
and how the Oracle redo scan and the MySQL/MariaDB binlog scan attribute commits to tables."""

from __future__ import annotations

from datetime import datetime, timedelta

from cdclake.engine.status import _pipeline_entry, _table_entry, describe
from cdclake.sources.mysql.lag import BinlogScan, ddl_tables
from cdclake.sources.mysql.position import BinlogPosition
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.lag import RedoScan
from cdclake.sources.oracle.position import ScnPosition
from cdclake.spi import PendingChanges

T0 = datetime(2030, 1, 1, 0, 0, 0)  # commit times are naive UTC
EPOCH = 1_893_456_000.0  # T0 as epoch seconds


def _entries(p: PendingChanges, tables: list[str], now: float = EPOCH + 100) -> tuple[dict, dict]:
    per = {t: _table_entry(t, p, now) for t in tables}
    return per, _pipeline_entry(per, p, now)


def test_exact_answers_give_zero_or_the_age_of_the_oldest_pending_commit() -> None:
    p = PendingChanges(True, ScnPosition(9), {"A.T": T0 + timedelta(seconds=40)}, True, None,
                       {"A.T": 12, "A.U": 12}, "scn", 7)
    per, pipe = _entries(p, ["A.T", "A.U"])
    assert per["A.T"]["lag_s"] == 60.0 and per["A.T"]["pending_since"] == "2030-01-01T00:00:40.000000Z"
    assert per["A.U"]["lag_s"] == 0.0 and per["A.U"]["distance"] == 12
    assert pipe["lag_s"] == 60.0 and pipe["caught_up"] is False and pipe["log_end"] == "SCN 9"
    assert describe(pipe).startswith("60.0 s: the oldest change not applied was committed at 2030-01-01T00:00:40")
    _, caught_up = _entries(PendingChanges(True, ScnPosition(9), {}, True), ["A.T", "A.U"])
    assert caught_up["lag_s"] == 0.0 and caught_up["caught_up"] is True


def test_a_read_stopped_at_its_bound_gives_an_upper_bound_or_the_exact_oldest() -> None:
    cut = T0 + timedelta(seconds=70)
    nothing_found = PendingChanges(True, None, {}, False, cut, {}, None, 5)
    per, pipe = _entries(nothing_found, ["A.T"])
    assert per["A.T"]["lag_s"] is None and per["A.T"]["lag_at_most_s"] == 30.0
    assert "first 5 log events" in per["A.T"]["lag_note"]
    assert pipe["lag_s"] is None and pipe["lag_at_most_s"] == 30.0 and pipe["caught_up"] is None
    assert describe(pipe).startswith("at most 30.0 s (")
    # One table's oldest change found: everything unread is newer, so the pipeline's lag is exact.
    one_found = PendingChanges(True, None, {"A.T": T0 + timedelta(seconds=10)}, False, cut, {}, None, 5)
    per, pipe = _entries(one_found, ["A.T", "A.U"])
    assert per["A.U"]["lag_s"] is None and pipe["lag_s"] == 90.0


def test_a_source_that_cannot_tell_gives_no_lag_and_the_reason() -> None:
    per, pipe = _entries(PendingChanges(note="cannot connect"), ["A.T"])
    assert per["A.T"]["lag_s"] is None and per["A.T"]["lag_note"] == "cannot connect"
    assert pipe["lag_s"] is None and describe(pipe) == "unknown (cannot connect)"
    _, none = _entries(PendingChanges(), [])
    assert none["lag_s"] is None and none["caught_up"] is None


def test_redo_scan_commits_partial_rollbacks_carried_transactions_and_ddl() -> None:
    behind = {"APP.T": ScnPosition(100), "APP.U": ScnPosition(100), "APP.V": ScnPosition(300)}
    scan = RedoScan(behind, {"0A0B": frozenset({"APP.V"})})
    ts = [T0 + timedelta(seconds=s) for s in range(10)]
    # A transaction whose only change of APP.U was rolled back to a savepoint: nothing for APP.U.
    scan.row(101, ts[0], None, "01", Q.OP_INSERT, "APP", "U", 0, 0)
    scan.row(102, ts[0], None, "01", Q.OP_DELETE, "APP", "U", 1, 0)
    scan.row(103, ts[1], ts[1], "01", Q.OP_COMMIT, None, None, 0, 0)
    # A rolled-back transaction: nothing.
    scan.row(104, ts[2], None, "02", Q.OP_UPDATE, "APP", "T", 0, 0)
    scan.row(105, ts[2], None, "02", Q.OP_ROLLBACK, None, None, 1, 0)
    # A commit at or below APP.V's position does not count for it; the carried transaction commits above.
    scan.row(106, ts[3], None, "03", Q.OP_INSERT, "APP", "V", 0, 0)
    scan.row(107, ts[3], ts[3], "03", Q.OP_COMMIT, None, None, 0, 0)
    scan.row(301, ts[4], ts[5], "0a0b", Q.OP_COMMIT, None, None, 0, 0)
    # DDL of a table is pending at its own SCN (a continued piece counts once, on its last row).
    scan.row(302, ts[6], None, "04", Q.OP_DDL, "APP", "T", 0, 1)
    scan.row(302, ts[6], None, "04", Q.OP_DDL, "APP", "T", 0, 0)
    assert scan.found == {"APP.V": ts[5], "APP.T": ts[6]}


def test_binlog_scan_attributes_a_commit_after_each_tables_position() -> None:
    def at(pos: int) -> BinlogPosition:
        return BinlogPosition("b.000001", pos)

    scan = BinlogScan({"s.a": at(100), "s.b": at(500)}, at(900))
    scan.group = {"s.a", "s.b"}
    scan.commit(scan.group, at(400).ordinal, 1_893_456_010)  # after a's position, not after b's
    scan.commit(["s.b"], at(600).ordinal, 1_893_456_020)
    assert scan.found == {"s.a": datetime(2030, 1, 1, 0, 0, 10), "s.b": datetime(2030, 1, 1, 0, 0, 20)}


def test_ddl_names_its_tables() -> None:
    assert ddl_tables("ALTER TABLE t ADD COLUMN c INT", "db") == {"db.t"}
    assert ddl_tables("DROP TABLE IF EXISTS a, `B`.`c`", "db") == {"db.a", "b.c"}
    assert ddl_tables("CREATE TABLE x (id INT) /* c */", None) == set()  # no database: cannot tell
