"""The throwaway PostgreSQL cluster the PostgreSQL source's tests run against (cdclake.testing.postgres)."""

from __future__ import annotations

import pytest
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration


def test_a_private_cluster_decodes_a_publication_through_a_slot_and_leaves_nothing_behind() -> None:
    with PostgresServer() as pg:
        root = pg.root
        assert root is not None and str(pg.datadir).startswith(str(root))
        assert pg.query("SHOW wal_level") == [("logical",)]
        with pg.connect() as conn:  # the capture user, over TCP with its password
            assert conn.execute("SELECT rolreplication FROM pg_roles WHERE rolname = current_user").fetchone() == (
                True,)
            conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
            conn.execute("CREATE PUBLICATION p FOR TABLE t")
            conn.execute("SELECT pg_create_logical_replication_slot('s', 'pgoutput')")
            conn.execute("INSERT INTO t VALUES (1, 'a')")
            kinds = [bytes(r[0])[:1] for r in conn.execute(
                "SELECT data FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL, 'proto_version', '1', "
                "'publication_names', 'p')").fetchall()]
            assert kinds == [b"B", b"R", b"I", b"C"]  # begin, relation, insert, commit
            conn.execute("SELECT pg_drop_replication_slot('s')")
    assert not root.exists()
