"""Table states (lib/cdclake/engine/states.py): the stored strings, the moves between them, the one function
that makes a move, and that every writer uses it. No Spark."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cdclake.engine.apply import states_after
from cdclake.engine.history import HistoryEntry
from cdclake.engine.repair.common import Backfill
from cdclake.engine.states import (
    BACKFILL_APPLIED,
    BACKFILL_BASED,
    BACKFILL_PLANNED,
    BACKFILL_READ,
    BACKFILL_STATES,
    BACKFILL_STEPS,
    DROPPED,
    PARKED,
    SNAPSHOTTING,
    STREAMING,
    TABLE_STATES,
    TRANSITIONS,
    TableState,
    check_backfill_step,
    check_move,
    move,
)
from cdclake.errors import CdcError
from cdclake.schema import Column, TableSchema
from cdclake.spi import Position

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "lib" / "cdclake" / "engine"


class _Pos(Position):
    def __init__(self, n: int) -> None:
        self.n = n

    @property
    def ordinal(self) -> int:
        return self.n

    def to_dict(self) -> dict:
        return {"n": self.n}

    @classmethod
    def from_dict(cls, data: Any) -> _Pos:
        return cls(int(data["n"]))

    def describe(self) -> str:
        return f"@{self.n}"


def _reachable(moves: dict[tuple[str | None, str], str]) -> set[str]:
    seen: set[str] = set()
    todo: list[str | None] = [None]
    while todo:
        here = todo.pop()
        for (old, new) in moves:
            if old == here and new not in seen:
                seen.add(new)
                todo.append(new)
    return seen


def test_the_stored_strings_never_change() -> None:
    """They are in the checkpoints tables of existing lakes."""
    assert TABLE_STATES == ("snapshotting", "streaming", "parked", "dropped")
    assert BACKFILL_STATES == ("planned", "read", "based", "applied")


def test_every_state_is_reachable_and_none_is_a_dead_end() -> None:
    assert _reachable(TRANSITIONS) == set(TABLE_STATES)
    assert {old for old, _ in TRANSITIONS} == {None, *TABLE_STATES}
    assert {new for _, new in TRANSITIONS} <= set(TABLE_STATES)
    for state in TABLE_STATES:  # every state can come back to streaming (through a snapshot if need be)
        assert STREAMING in _reachable({k: v for k, v in TRANSITIONS.items() if k[0] is not None} | {
            (None, state): ""}), state
    assert _reachable(BACKFILL_STEPS) == set(BACKFILL_STATES)


def test_each_move_says_why_and_who_makes_it() -> None:
    for (old, new), why in TRANSITIONS.items():
        assert re.match(r"(window|snapshot|re-read)\b", why), (old, new, why)
        assert check_move("db.t", old, new) == why


@pytest.mark.parametrize(("old", "new"), [(SNAPSHOTTING, DROPPED), (None, "streamin"), (STREAMING, "covers")])
def test_a_move_not_in_the_table_is_refused_as_a_bug(old: str | None, new: str) -> None:
    current = None if old is None else TableState("db.t", old, {}, 1, None, None)
    with pytest.raises(CdcError, match="db.t") as err:
        move("db.t", current, new, {"n": 2}, 2)
    assert err.value.permanent and "bug in cdclake" in (err.value.fix or "")


def test_a_move_builds_the_state_to_record() -> None:
    old = TableState("db.t", STREAMING, {"n": 1}, 1, 3, None, {"k": 1})
    new = move("db.t", old, PARKED, {"n": 1}, 1, 4, {"parked_reason": "x"})
    assert new == TableState("db.t", PARKED, {"n": 1}, 1, 4, None, {"parked_reason": "x"})


def test_a_window_that_drops_a_table_still_snapshotting_is_refused() -> None:
    """The windows' states go through the check too (states_after): a window never drops a table it did not mine."""
    schema = TableSchema("db", "t", [Column("id", "int", "INT")], ["id"])
    drop = HistoryEntry(9, "db.t", 20, "@2", "DROP TABLE t", "drop", None, None, {}, 2)
    streaming = {"db.t": TableState("db.t", STREAMING, {"n": 1}, 1, 1, None)}
    assert states_after(streaming, [drop], _Pos(40), 2, 0.0)["db.t"].status == DROPPED
    create = HistoryEntry(10, "db.t", 30, "@3", "CREATE TABLE t", "create", schema, None, {}, 2)
    assert states_after(streaming, [drop, create], _Pos(40), 2, 0.0)["db.t"].status == STREAMING
    with pytest.raises(CdcError, match="from snapshotting to dropped"):
        states_after({"db.t": TableState("db.t", SNAPSHOTTING, {"n": 1}, 1, None, None)}, [drop], _Pos(40), 2, 0.0)


def test_backfill_steps_follow_their_table() -> None:
    recorded: list[str] = []
    ctx = SimpleNamespace(control=SimpleNamespace(record_backfill=lambda _id, _t, status, _d: recorded.append(status)))
    b = Backfill("b1", "db.t", None, {})
    for step in (BACKFILL_PLANNED, BACKFILL_BASED, BACKFILL_BASED, BACKFILL_APPLIED):
        b.record(ctx, step)  # type: ignore[arg-type]
    assert recorded == [BACKFILL_PLANNED, BACKFILL_BASED, BACKFILL_BASED, BACKFILL_APPLIED]
    with pytest.raises(CdcError, match="cannot go from applied to planned"):
        b.record(ctx, BACKFILL_PLANNED)  # type: ignore[arg-type]
    with pytest.raises(CdcError, match="cannot go from nothing to read"):
        check_backfill_step("b2", "db.t", None, BACKFILL_READ)


def test_only_the_states_module_makes_a_state() -> None:
    """Every writer moves a table with states.move: no other module builds a TableState or changes a status,
    and no module but states.py spells a state's string (the history's entry kinds are another thing)."""
    allowed = {
        "control.py": "reads a stored row back",
        "repair/rebuild.py": "the replay's floor, given to the window applier and never recorded",
    }
    built, spelled = [], []
    states = "|".join(TABLE_STATES)
    literal = re.compile(rf"""status\s*(==|!=|=)\s*["']({states})["']""")
    for path in sorted(ENGINE.rglob("*.py")):
        name = str(path.relative_to(ENGINE))
        if name == "states.py":
            continue
        # the code, less docstring examples (they build states to show a function, not to record one)
        text = "\n".join(line for line in path.read_text().splitlines() if ">>> " not in line)
        if re.search(r"\bTableState\(|replace\([^)]*status=", text) and name not in allowed:
            built.append(name)
        spelled += [f"{name}: {m.group(0)}" for m in literal.finditer(text)]
        assert not re.search(r"\bTABLE_(SNAPSHOTTING|STREAMING|PARKED|DROPPED)\b", text), name
    assert built == [] and spelled == []


def test_the_concepts_page_draws_exactly_these_moves() -> None:
    text = (ROOT / "docs" / "concepts.md").read_text()
    diagram = re.search(r"```mermaid\n(.*?)```", text, re.S)
    assert diagram is not None
    arrows = re.findall(r"^\s*(\[\*\]|\w+) --> (\w+)", diagram.group(1), re.M)
    drawn = {(None if a == "[*]" else a, b) for a, b in arrows}
    assert drawn == set(TRANSITIONS)
    for state in TABLE_STATES:
        assert f"| `{state}` |" in text, state
