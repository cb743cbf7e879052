"""One window of the slot's changes: ``pg_logical_slot_peek_binary_changes`` up to a planned LSN, read with
bounded memory; the slot confirmed (``pg_replication_slot_advance``) only after the lake has the window.

Peek never moves the slot, so a run killed at any instant reads the same transactions again; a transaction is
in a window bounded by ``upto`` if and only if its commit record starts below ``upto``, so windows always end
between transactions (docs/postgresql-design.md, sections 1 and 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cdclake.errors import CdcError, PositionLostError
from cdclake.sources.postgresql import catalog
from cdclake.sources.postgresql.pgoutput import Commit, Decoded, decode, lsn_text

#: peek's options: protocol 1, the publication, no streamed (in-progress) transactions, logical messages
PEEK = (
    "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, %s, 'proto_version', '1', "
    "'publication_names', %s, 'messages', 'true')"
)
ADVANCE = "SELECT end_lsn::text FROM pg_replication_slot_advance(%s, %s::pg_lsn)"
FETCH_ROWS = 5_000


@dataclass
class WindowRead:
    """Where a window read ended: ``end`` (the slot's next start), the commits and messages read."""

    end: int
    commits: int = 0
    messages: int = 0
    stopped_early: bool = False  # max_changes reached: ``end`` is the last commit's end, before ``upto``


def read_window(conn: Any, slot: str, publication: str, upto: int, max_messages: int | None = None,
                result: WindowRead | None = None) -> Iterator[Decoded]:
    """The decoded messages of the transactions committed below ``upto``, in commit order (``conn``: a psycopg
    connection; the rows stream through a server-side cursor). ``result`` is filled as the read goes: its
    ``end`` is ``upto``, or the last commit's end LSN when ``max_messages`` cut the window short (peek counts
    every message it returns and stops only after a whole transaction)."""
    out = result if result is not None else WindowRead(upto)
    out.end = upto
    last_end = None
    with conn.transaction(), conn.cursor(name="cdclake_peek") as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(PEEK, (slot, lsn_text(upto), max_messages, publication))
        for _, data in cur:
            message = decode(data)
            out.messages += 1
            if isinstance(message, Commit):
                out.commits += 1
                last_end = message.end_lsn
            yield message
    if last_end is None:
        return
    if max_messages is not None and out.messages >= max_messages:
        out.end, out.stopped_early = last_end, True  # the next window starts after the last whole transaction
    elif last_end > out.end:
        out.end = last_end  # a commit starting exactly at ``upto`` (in a page header): resume after it


def advance(conn: Any, slot: str, to: int) -> None:
    """Confirm ``slot`` up to ``to`` (a window the lake has committed); never backwards."""
    state = catalog.slot(conn, slot)
    if state is None:
        raise PositionLostError(f"replication slot {slot} no longer exists: changes after the lake's position are "
                                "lost", "re-snapshot the tables: cdclake snapshot --force (creates the slot anew)")
    if state.confirmed_flush_lsn is not None and state.confirmed_flush_lsn >= to:
        return  # already there (a re-run after a kill between the lake commit and the advance)
    row = conn.execute(ADVANCE, (slot, lsn_text(to))).fetchone()
    if row is None:
        raise CdcError(f"pg_replication_slot_advance({slot}, {lsn_text(to)}) returned nothing",
                       "check the slot in pg_replication_slots")
