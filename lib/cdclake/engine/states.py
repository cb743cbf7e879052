"""A captured table's state: the states, the moves between them, and the one function that makes a move.

A table's state is the ``status`` of its newest ``kind = 'table'`` row of the checkpoints table
(:mod:`.control`); a table without a row has none (``None`` here: never snapshotted). Every writer builds
the state it records with :func:`move`, which refuses a move :data:`TRANSITIONS` does not list: such a
move is a bug in cdclake, never something an operator did. docs/concepts.md ("Table states") draws them.

The steps of a backfill (``kind = 'backfill'`` rows: resnapshot and rebuild) are a machine of their own,
:data:`BACKFILL_STEPS`, checked by :func:`check_backfill_step`.

The stored strings are in lakes already: they never change.

>>> s = move("db.t", None, SNAPSHOTTING, {"n": 1}, 1)
>>> move("db.t", move("db.t", s, STREAMING, {"n": 1}, 1), SNAPSHOTTING, {"n": 5}, 5).status
'snapshotting'
>>> move("db.t", s, DROPPED, {"n": 1}, 1)
Traceback (most recent call last):
...
cdclake.errors.CdcError: db.t cannot move from snapshotting to dropped: no step of cdclake makes that move
  fix: this is a bug in cdclake: report it with the table's rows of the checkpoints table ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from cdclake.errors import CdcError, command

# ---- table states ------------------------------------------------------------------------------------

SNAPSHOTTING: Final = "snapshotting"  # a snapshot is reading it; mining leaves it alone
STREAMING: Final = "streaming"  # mined from its position on
PARKED: Final = "parked"  # capture stopped at a change cdclake cannot apply; the detail says why and the remedy
DROPPED: Final = "dropped"  # dropped or renamed away at the source; mined for still (a rename may bring it back)
TABLE_STATES: Final = (SNAPSHOTTING, STREAMING, PARKED, DROPPED)

# (from, to) -> why, and who makes the move. ``None``: the table has no state yet. A pair not listed is
# refused. "window" is the apply of a mining window (:func:`.apply.states_after`), "snapshot" is
# :func:`.snapshot.snapshot` (also run by a backfill of a parked table), "re-read" is the backfill that
# re-reads a table a schema change marked (:func:`.repair.backfill.reread_marked`).
TRANSITIONS: Final[dict[tuple[str | None, str], str]] = {
    (None, SNAPSHOTTING): "snapshot: a captured table is read for the first time",
    (None, STREAMING): "window: a statement in the log made it (CREATE, or a rename onto its name); it starts empty",
    (None, DROPPED): "window: a statement dropped (or renamed away) a table the window did not mine for",
    (None, PARKED): "window: a statement cdclake cannot follow made it (e.g. CREATE TABLE ... LIKE an "
                    "uncaptured table)",
    (SNAPSHOTTING, SNAPSHOTTING): "snapshot: one killed before it wrote the table reads it again, at a new position",
    (SNAPSHOTTING, STREAMING): "snapshot: written; mining goes on from the snapshot's position",
    (SNAPSHOTTING, PARKED): "snapshot: Delta refused the table (e.g. names it cannot hold); the others are read",
    (STREAMING, STREAMING): "window: applied, the position moves (a re-read may be marked in the detail); "
                            "re-read: done, the mark is cleared",
    (STREAMING, SNAPSHOTTING): "snapshot --force: read again whole (e.g. the source no longer has the log its "
                               "position needs)",
    (STREAMING, PARKED): "window: a change cdclake cannot apply exactly, or a schema change the table refused; "
                         "re-read: it failed",
    (STREAMING, DROPPED): "window: dropped, or renamed away",
    (DROPPED, DROPPED): "window: applied, the position moves",
    (DROPPED, STREAMING): "window: made again (CREATE), or another table renamed onto its name",
    (DROPPED, SNAPSHOTTING): "snapshot: the source has the table again and it is read anew",
    (DROPPED, PARKED): "window: made again by a statement cdclake cannot follow",
    (PARKED, SNAPSHOTTING): "snapshot: the remedy, a backfill of the table, snapshots it alone",
    (PARKED, PARKED): "window: parked again in the window that parked it (the later reason is kept)",
    (PARKED, STREAMING): "window: made anew (CREATE, a rename onto it) later in the window that parked it",
    (PARKED, DROPPED): "window: dropped or renamed away later in the window that parked it",
}

# the detail keys a parked table has (``cdclake status`` shows them), and those of a re-read to come
PARKED_DETAIL: Final = ("parked_at", "parked_reason", "remedy")
REREAD_DETAIL: Final = ("reread_at", "reread_seq", "reread_reason")


@dataclass
class TableState:
    table: str
    status: str
    position: dict[str, Any]
    ordinal: int
    window_id: int | None
    updated_at: datetime | None
    detail: dict[str, Any] = field(default_factory=dict)


def _bug(problem: str) -> CdcError:
    return CdcError(problem, "this is a bug in cdclake: report it with the table's rows of the checkpoints table "
                             "('cdclake status --json' shows its state)", permanent=True)


def check_state(table: str, status: str) -> None:
    """Refuse a state that is none of :data:`TABLE_STATES` (what the checkpoints table may hold)."""
    if status not in TABLE_STATES:
        raise _bug(f"{table} cannot be recorded in state {status!r}: the states are {', '.join(TABLE_STATES)}")


def check_move(table: str, old: str | None, new: str) -> str:
    """Why ``table`` may move from ``old`` (None: no state yet) to ``new``; an error if it may not."""
    check_state(table, new)
    why = TRANSITIONS.get((old, new))
    if why is None:
        raise _bug(f"{table} cannot move from {old or 'no state'} to {new}: no step of cdclake makes that move")
    return why


def move(table: str, current: TableState | None, to: str, position: dict[str, Any], ordinal: int,
         window_id: int | None = None, detail: dict[str, Any] | None = None) -> TableState:
    """``table``'s state after a move from ``current`` (None: it has none) to ``to``, at ``position``
    (``ordinal``: its order), checked against :data:`TRANSITIONS`. The caller records it
    (:meth:`.control.ControlTables.set_tables`, or with a window's checkpoint)."""
    check_move(table, current.status if current is not None else None, to)
    return TableState(table, to, position, ordinal, window_id, None, dict(detail or {}))


def parked_detail(table: str, position: str, reason: str) -> dict[str, str]:
    """What ``status``, the run report and the run's error say of a parked table.

    >>> parked_detail("db.t", "bin.000001:99", "x")["remedy"].split(" (")[0]
    'cdclake backfill --table db.t'
    """
    # no backticks: ``cdclake status`` prints it as the command itself (the command line adds --config)
    return {"parked_at": position, "parked_reason": reason,
            "remedy": f"{command('backfill', '--table', table).strip('`')} (re-snapshots it; the other tables go on "
                      "meanwhile)"}


def rereads(state: TableState) -> bool:
    """Whether a schema change marked the table for a re-read after the run (``schema_changes.reread: auto``)."""
    return "reread_seq" in state.detail


# ---- backfill steps ----------------------------------------------------------------------------------

BACKFILL_PLANNED: Final = "planned"  # its read position taken (resnapshot), its base chosen (rebuild)
BACKFILL_READ: Final = "read"  # resnapshot: the source's rows are in a staging folder
BACKFILL_BASED: Final = "based"  # rebuild: the staging copy holds the base; windows replay into it
BACKFILL_APPLIED: Final = "applied"  # done: the rows landed (resnapshot), the copy swapped in (rebuild)
BACKFILL_STATES: Final = (BACKFILL_PLANNED, BACKFILL_READ, BACKFILL_BASED, BACKFILL_APPLIED)

BACKFILL_STEPS: Final[dict[tuple[str | None, str], str]] = {
    (None, BACKFILL_PLANNED): "a new backfill is planned under the pipeline lock",
    (BACKFILL_PLANNED, BACKFILL_READ): "resnapshot: the range is read from the source (no lock)",
    (BACKFILL_READ, BACKFILL_APPLIED): "resnapshot: the rows are merged under the lock",
    (BACKFILL_PLANNED, BACKFILL_BASED): "rebuild: the base is written to the staging copy",
    (BACKFILL_BASED, BACKFILL_BASED): "rebuild: one more window is replayed into the copy",
    (BACKFILL_BASED, BACKFILL_APPLIED): "rebuild: the copy is swapped in under the lock",
}


def check_backfill_step(backfill_id: str, table: str, old: str | None, new: str) -> None:
    """Refuse a backfill step :data:`BACKFILL_STEPS` does not list (``old`` None: not recorded yet)."""
    if (old, new) not in BACKFILL_STEPS:
        raise _bug(f"backfill {backfill_id} of {table} cannot go from {old or 'nothing'} to {new}")
