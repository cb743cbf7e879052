"""The engine's own logic, without Spark or a database: transaction assembly, window planning, the
schema history's lookups, apply barriers and order, table states after a window, backfill options and
the source registry."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pytest
from cdclake.config import load_config_text
from cdclake.engine.apply import SchemaChangeRefused, WindowApplier, barriers, rename_seqs, states_after
from cdclake.engine.assembler import EventRow, TransactionAssembler
from cdclake.engine.control import WINDOW_APPLIED, WINDOW_CANCELLED, WINDOW_MINED, WINDOW_PLANNED, WindowState
from cdclake.engine.events import SEQ_SPAN, backfill_seq, commit_ordinal_of, event_seq, snapshot_seq
from cdclake.engine.history import (
    SKIPPED,
    HistoryEntry,
    entries_for_ddl,
    latest_per_table,
    registry_before,
    schema_at,
    window_ddl,
)
from cdclake.engine.mining import live_states, next_window, stop_on_parked, window_open
from cdclake.engine.repair.backfill import check_backfill_args
from cdclake.engine.states import DROPPED, STREAMING, TableState
from cdclake.errors import CdcError, ConfigError, UsageError
from cdclake.schema import Column, TableSchema
from cdclake.spi import Begin, Commit, Ddl, Position, Rollback, RowChange, SourceContext, create_source, plugin_for


class Pos(Position):
    """A log position that is just a number."""

    def __init__(self, n: int) -> None:
        self.n = n

    @property
    def ordinal(self) -> int:
        return self.n

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pos:
        return cls(int(data["n"]))

    def describe(self) -> str:
        return f"@{self.n}"


T1 = TableSchema("db", "t", [Column("id", "int", "INT", nullable=False), Column("v", "int", "INT")], ["id"])
T2 = T1.with_columns([*T1.columns, Column("w", "int", "INT")])


def change(txid: str, table: str = "db.t", op: str = "c", key: int = 1) -> RowChange:
    return RowChange(txid, table, op, None if op == "c" else {"id": key}, None if op == "d" else {"id": key}, 1)


# ---- transaction assembly ---------------------------------------------------------------------------


def _assemble(records: list[Any], floors: dict[str, int] | None = None, spill_rows: int = 1000
              ) -> tuple[list[EventRow], list[Ddl], TransactionAssembler]:
    staged: list[EventRow] = []
    ddl: list[Ddl] = []
    assembler = TransactionAssembler(staged.extend, ddl.append, flush_rows=2, spill_rows=spill_rows,
                                     floors=floors)
    for r in records:
        assembler.feed(r)
    assert assembler.finish() == []
    return staged, ddl, assembler


def test_interleaved_transactions_land_in_commit_order_and_rollbacks_never() -> None:
    ts = datetime(2026, 1, 1)
    rows, _, a = _assemble([
        Begin("a", Pos(1)), Begin("b", Pos(1)), change("a", key=1), change("b", key=2), change("a", op="u", key=1),
        Begin("r", Pos(2)), change("r", key=9), Rollback("r", Pos(3)),
        Commit("b", Pos(10), ts), Commit("a", Pos(11), ts),
    ])
    assert [(r.txid, r.seq) for r in rows] == [("b", event_seq(10, 1)), ("a", event_seq(11, 1)),
                                               ("a", event_seq(11, 2))]
    assert all(r.position == ("@10" if r.txid == "b" else "@11") for r in rows)
    assert (a.stats.transactions, a.stats.events, a.stats.rolled_back) == (2, 3, 1)
    assert a.stats.rows_by_table == {"db.t": 3}


def test_changes_a_table_holds_already_are_dropped_by_its_floor() -> None:
    rows, _, a = _assemble([change("a", "db.t"), change("a", "db.u"), Commit("a", Pos(5), None),
                            change("b", "db.t"), Commit("b", Pos(6), None)], floors={"db.t": 5})
    assert [(r.source_table, commit_ordinal_of(r.seq)) for r in rows] == [("db.u", 5), ("db.t", 6)]
    assert a.stats.transactions == 2


def test_ddl_flushes_the_rows_before_it_and_a_spilled_transaction_keeps_its_order() -> None:
    staged: list[tuple[str, Any]] = []
    assembler = TransactionAssembler(lambda rows: staged.extend(("row", json.loads(r.after)["id"]) for r in rows),
                                     lambda d: staged.append(("ddl", d.statement)), flush_rows=1000, spill_rows=3)
    for i in range(1, 8):
        assembler.feed(change("big", key=i))
    assembler.feed(Commit("big", Pos(3), None))
    assembler.feed(Ddl(Pos(4), "ALTER TABLE t ADD w INT", "db", {"db.t": T2}))
    assert assembler.finish() == []
    assert staged == [*[("row", i) for i in range(1, 8)], ("ddl", "ALTER TABLE t ADD w INT")]


def test_a_window_that_ends_inside_a_transaction_is_reported() -> None:
    assembler = TransactionAssembler(lambda rows: None, lambda d: None)
    assembler.feed(change("open"))
    assert assembler.finish() == ["open"]


# ---- sequences ----------------------------------------------------------------------------------------


def test_sequences_order_snapshot_changes_and_backfills() -> None:
    assert snapshot_seq(7) < event_seq(7, 1) < backfill_seq(7) < event_seq(8, 1)
    assert commit_ordinal_of(event_seq(123, SEQ_SPAN - 1)) == 123
    with pytest.raises(ValueError):
        event_seq(1, SEQ_SPAN)


# ---- planning ------------------------------------------------------------------------------------------


def _state(table: str, ordinal: int, status: str = STREAMING) -> TableState:
    return TableState(table, status, {"n": ordinal}, ordinal, None, None)


def test_a_window_starts_at_the_lowest_streaming_table_and_numbers_on() -> None:
    states = {"db.a": _state("db.a", 9), "db.b": _state("db.b", 4), "db.gone": _state("db.gone", 1, DROPPED)}
    first = next_window(None, states, {"n": 20}, 500)
    assert (first.window_id, first.start, first.end_limit, first.max_events, first.status) == (
        1, {"n": 4}, {"n": 20}, 500, WINDOW_PLANNED)
    assert next_window(WindowState(7, WINDOW_APPLIED, {}, {}, None, {}), states, {"n": 30}, None).window_id == 8


def test_only_a_finished_or_cancelled_window_lets_a_new_one_be_planned() -> None:
    assert not window_open(None)
    for status, is_open in ((WINDOW_PLANNED, True), (WINDOW_MINED, True), (WINDOW_APPLIED, False),
                            (WINDOW_CANCELLED, False)):
        assert window_open(WindowState(1, status, {}, {}, None, None)) is is_open


def test_mining_needs_a_snapshotted_table() -> None:
    with pytest.raises(CdcError, match="no table of this pipeline has a snapshot"):
        live_states({"db.a": _state("db.a", 1, "snapshotting")}, "p")
    assert set(live_states({"db.a": _state("db.a", 1), "db.x": _state("db.x", 1, DROPPED)}, "p")) == {
        "db.a", "db.x"}


# ---- schema history -------------------------------------------------------------------------------------


def _entry(version: int, table: str, seq: int, schema: TableSchema | None, window: int | None,
           kind: str = "ddl", renamed_from: str | None = None) -> HistoryEntry:
    return HistoryEntry(version, table, seq, f"@{seq}", "DDL", kind, schema, renamed_from, {}, window)


def test_the_registry_before_a_window_holds_the_schemas_valid_there() -> None:
    entries = [_entry(1, "db.t", 10, T1, None, "snapshot"), _entry(2, "db.t", 50, T2, 2),
               _entry(3, "db.u", 60, T1, 2), _entry(4, "db.u", 70, None, 3, "drop"),
               _entry(5, "db", 80, None, 3, SKIPPED)]
    r2 = registry_before(entries, 2)
    assert (r2.schemas, r2.versions, r2.next_version) == ({"db.t": T1}, {"db.t": 1}, 2)
    r4 = registry_before(entries, 4)
    assert r4.schemas == {"db.t": T2} and r4.next_version == 6  # db.u dropped; versions go on after skipped
    assert set(latest_per_table(entries)) == {"db.t", "db.u"}  # the skipped statement is no table's entry
    assert [e.version for e in window_ddl(entries, 3)] == [4]
    assert [e.version for e in window_ddl(entries, 2, "db.u")] == [3]


def test_a_rebuild_starts_from_the_schema_at_its_floor() -> None:
    entries = [_entry(1, "db.t", 10, T1, None, "snapshot"), _entry(2, "db.t", 50, T2, 2),
               _entry(3, "db.t", 90, T1, None, "snapshot")]  # a later re-snapshot is not in force yet
    assert schema_at(entries, "db.t", 20, 2).version == 1
    assert schema_at(entries, "db.t", 20, 3).version == 2
    assert schema_at(entries, "db.t", 95, 3).version == 3
    assert schema_at(entries, "db.none", 95, 3) is None


def test_a_ddl_makes_one_entry_per_table_and_a_skipped_one_is_recorded() -> None:
    ddl = Ddl(Pos(12), "RENAME TABLE a TO b", "db", {"db.a": None, "db.b": T1}, renamed_from={"db.b": "db.a"})
    out = entries_for_ddl(ddl, 40, 6)
    assert [(e.version, e.table, e.kind, e.renamed_from, e.seq) for e in out] == [
        (40, "db.a", "drop", None, event_seq(12, 0)), (41, "db.b", "ddl", "db.a", event_seq(12, 0))]
    skipped = entries_for_ddl(Ddl(Pos(13), "ALTER ???", "db", {}, skipped_reason="unparsable"), 42, 6)
    assert [(e.kind, e.table, e.schema) for e in skipped] == [(SKIPPED, "db", None)]


# ---- apply --------------------------------------------------------------------------------------------------


def test_barriers_below_the_tables_position_are_done_already() -> None:
    ddl = [_entry(3, "db.t", 300, T2, 1), _entry(4, "db.t", 100, T1, 1)]
    assert [(s, kind) for s, kind, _ in barriers([300, 50, 200], ddl, 150)] == [
        (200, "truncate"), (300, "ddl"), (300, "truncate")]


def test_a_rename_statement_is_where_tables_trade_rows() -> None:
    ddl = [_entry(1, "db.a", 10, T1, 1, renamed_from="db.z"), _entry(2, "db.z", 20, T1, 1, renamed_from="db.y")]
    assert rename_seqs(ddl) == {10, 20}


def test_a_change_the_lake_refuses_parks_its_table_and_a_retry_cure_does_not() -> None:
    entry = _entry(1, "db.t", 10, T1, 1)

    def refused() -> None:
        raise ValueError("[DELTA_SOMETHING] the table cannot take it")

    with pytest.raises(SchemaChangeRefused, match="cannot take it"):
        WindowApplier._refused_parks(entry, refused)
    for error in (CdcError("a window is unfinished", "run mine"), OSError("storage gone")):
        def fails(error: Exception = error) -> None:
            raise error

        with pytest.raises(type(error)):
            WindowApplier._refused_parks(entry, fails)


def test_a_swap_leaves_both_tables_streaming() -> None:
    states = {t: _state(t, 3) for t in ("db.a", "db.b")}
    ddl = [_entry(1, "db.a", 10, T1, 5, renamed_from="db.b"), _entry(2, "db.b", 10, T1, 5, renamed_from="db.a")]
    out = states_after(states, ddl, Pos(40), 5, 1.0)
    assert {t: s.status for t, s in out.items()} == {"db.a": STREAMING, "db.b": STREAMING}


def test_states_after_a_window_follow_its_ddl() -> None:
    states = {"db.t": _state("db.t", 3), "db.old": _state("db.old", 3)}
    ddl = [_entry(1, "db.new", 10, T1, 5, renamed_from="db.old"), _entry(2, "db.t", 20, None, 5, "drop"),
           _entry(3, "db.born", 30, T1, 5)]
    out = states_after(states, ddl, Pos(40), 5, 1234.0)
    assert {t: (s.status, s.ordinal, s.window_id) for t, s in out.items()} == {
        "db.t": (DROPPED, 40, 5), "db.new": (STREAMING, 40, 5), "db.born": (STREAMING, 40, 5),
        "db.old": (DROPPED, 40, 5)}
    assert out["db.t"].detail["as_of"] == 1234.0


# ---- backfill options --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "problem"), [
    (("resnapshot", None, None, None, None), "needs --table"),
    (("rebuild", "db.t", "id < 3", None, None), "--where only applies"),
    (("resnapshot", "db.t", None, 4, None), "--from-window only applies"),
    (("remine", None, None, None, None), "needs --window"),
    (("remine", "db.t", None, None, (1, 2)), "needs --window and no --table"),
    (("rebuild", "db.t", None, None, (1, 2)), "--window only applies"),
    (("fastest", "db.t", None, None, None), "unknown backfill mode"),
])
def test_each_backfill_mode_takes_its_own_options(args: tuple[Any, ...], problem: str) -> None:
    with pytest.raises(UsageError, match=problem) as err:
        check_backfill_args(*args)
    assert err.value.fix


def test_valid_backfill_options_pass() -> None:
    check_backfill_args("resnapshot", "db.t", "id < 3", None, None)
    check_backfill_args("rebuild", "db.t", None, 4, None)
    check_backfill_args("remine", None, None, None, (1, 3))


# ---- the source registry and the pipeline file ------------------------------------------------------------


def test_an_unknown_source_type_names_the_registered_ones() -> None:
    with pytest.raises(ConfigError, match="'db9' is not a registered source") as err:
        plugin_for("db9")
    assert "mariadb" in (err.value.fix or "") and "oracle" in (err.value.fix or "")
    with pytest.raises(ConfigError, match="source.type"):
        load_config_text("pipeline: p\nsource: {type: db9}\nlake: {root: /tmp/l}\n")


def test_a_source_key_error_names_the_key_without_the_type_tag() -> None:
    with pytest.raises(ConfigError) as err:
        load_config_text("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: x, server_id: 1, "
                         "hostname: typo}\nlake: {root: /tmp/l}\n")
    assert "source.hostname: unknown key" in err.value.problem


def test_a_missing_driver_names_the_install_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = plugin_for("oracle")

    def missing(self: Any) -> Any:
        raise ModuleNotFoundError("No module named 'oracledb'", name="oracledb")

    monkeypatch.setattr(type(plugin), "source_class", missing)
    config = load_config_text("pipeline: p\nsource: {type: oracle, dsn: x, user: u, password: p}\n"
                              "lake: {root: /tmp/l}\n")
    with pytest.raises(ConfigError, match="needs the Python package 'oracledb'") as err:
        create_source(config.source, SourceContext("p", "/tmp/l"))
    assert err.value.fix == "pip install 'cdclake[oracle]'"


# ---- parked and re-read tables ---------------------------------------------------------------------------


def test_a_parked_table_stops_where_its_change_is_and_the_others_stream_on() -> None:
    ddl = Ddl(Pos(20), "ALTER TABLE t TRUNCATE PARTITION p0", "db", {}, parked={"db.t": "rows go without events"})
    entries = entries_for_ddl(ddl, 7, 3)
    assert [(e.kind, e.table, e.schema, e.reason) for e in entries] == [
        ("parked", "db.t", None, "rows go without events")]
    states = {t: TableState(t, STREAMING, {"n": 5}, 5, 2, None) for t in ("db.t", "db.u")}
    out = states_after(states, entries, Pos(40), 3, 1.0)
    assert out["db.t"].status == "parked" and out["db.u"].status == STREAMING
    assert out["db.t"].detail["parked_at"] == "@20" and "backfill" in out["db.t"].detail["remedy"]
    # the registry forgets it: the source is no longer asked for its rows
    assert "db.t" not in registry_before([HistoryEntry(1, "db.t", 10, "p", "s", "snapshot", T1, None, {}, None),
                                          *entries], 4).schemas
    # a change Delta refused at apply parks it too, keeping the others' states
    refused = states_after(states, [], Pos(40), 3, 1.0, {"db.u": ("@30", "Delta refused")})
    assert refused["db.u"].status == "parked" and refused["db.t"].status == STREAMING
    with pytest.raises(CdcError, match="db.u is parked since @30: Delta refused") as err:
        stop_on_parked(refused)
    assert "cdclake backfill --table db.u" in (err.value.fix or "")
    stop_on_parked(states)  # nothing parked: no error


def test_a_change_the_log_does_not_carry_marks_the_table_for_a_re_read() -> None:
    ddl = Ddl(Pos(20), "ALTER TABLE t ADD g INT AS (v * 2)", "db", {"db.t": T2}, reread={"db.t": "generated"})
    entries = entries_for_ddl(ddl, 7, 3)
    assert [(e.kind, e.schema) for e in entries] == [("ddl", T2), ("reread", T2)]
    assert registry_before(entries, 4).schemas["db.t"] == T2  # the mark does not change the schema
    states = {"db.t": TableState("db.t", STREAMING, {"n": 5}, 5, 2, None)}
    out = states_after(states, entries, Pos(40), 3, 1.0)["db.t"]
    assert out.status == STREAMING and out.detail["reread_reason"] == "generated"
    assert int(out.detail["reread_seq"]) == event_seq(20, 0)
