"""A window of the slot on a real cluster: bounded by a planned LSN, whole transactions only, the same on a
re-read until the slot is confirmed, and confirmed only forwards."""

from __future__ import annotations

import pytest
from cdclake.errors import PositionLostError
from cdclake.sources.postgresql import catalog
from cdclake.sources.postgresql.pgoutput import Commit, Insert
from cdclake.sources.postgresql.stream import WindowRead, advance, read_window
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration


def _inserted(conn, upto: int, max_messages: int | None = None) -> tuple[list[str], WindowRead]:  # type: ignore[no-untyped-def]
    result = WindowRead(0)
    values = [m.new[1].text for m in read_window(conn, "s", "p", upto, max_messages, result)
              if isinstance(m, Insert)]
    return values, result  # type: ignore[return-value]


def test_a_window_is_whole_transactions_below_its_bound_and_the_slot_moves_only_when_confirmed() -> None:
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE t (id serial PRIMARY KEY, v text)")
        conn.execute("CREATE PUBLICATION p FOR TABLE t")
        conn.execute("SELECT pg_create_logical_replication_slot('s', 'pgoutput')")
        conn.execute("INSERT INTO t (v) VALUES ('t1')")
        conn.execute("INSERT INTO t (v) VALUES ('t2a'), ('t2b')")
        upto = catalog.flush_lsn(conn)
        conn.execute("INSERT INTO t (v) VALUES ('t3')")  # committed past the bound: the next window's

        first = _inserted(conn, upto)
        assert first[0] == ["t1", "t2a", "t2b"] and first[1].end == upto and first[1].commits == 2
        assert _inserted(conn, upto)[0] == first[0]  # not confirmed: a re-run reads the same transactions
        advance(conn, "s", upto)
        advance(conn, "s", upto)  # again (a re-run after a kill between the lake commit and the advance)
        assert catalog.slot(conn, "s").confirmed_flush_lsn == upto  # type: ignore[union-attr]

        conn.execute("INSERT INTO t (v) VALUES ('t4a'), ('t4b'), ('t4c')")
        conn.execute("INSERT INTO t (v) VALUES ('t5')")
        end = catalog.flush_lsn(conn)
        cut = _inserted(conn, end, max_messages=4)  # B R I C: the first transaction reaches it
        commits = [m for m in read_window(conn, "s", "p", end) if isinstance(m, Commit)]
        assert cut[0] == ["t3"] and cut[1].stopped_early and cut[1].end == commits[0].end_lsn
        advance(conn, "s", cut[1].end)
        assert _inserted(conn, end)[0] == ["t4a", "t4b", "t4c", "t5"]
        advance(conn, "s", upto)  # backwards: nothing happens
        assert catalog.slot(conn, "s").confirmed_flush_lsn == cut[1].end  # type: ignore[union-attr]

        conn.execute("SELECT pg_drop_replication_slot('s')")
        with pytest.raises(PositionLostError) as err:
            advance(conn, "s", end)
        assert str(err.value) == (
            "replication slot s no longer exists: changes after the lake's position are lost\n"
            "  fix: re-snapshot the tables: cdclake snapshot --force (creates the slot anew)")
