"""pgoutput messages from a real PostgreSQL, decoded (cdclake.sources.postgresql.pgoutput): what each row image,
TOAST, TRUNCATE and ALTER TABLE give, as docs/postgresql-design.md describes them."""

from __future__ import annotations

import secrets

import pytest
from cdclake.sources.postgresql.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    Relation,
    Truncate,
    Update,
    Value,
    decode,
    lsn_text,
    parse_lsn,
)
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration

PEEK = ("SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL, "
        "'proto_version', '1', 'publication_names', 'p', 'messages', 'true')")


def test_every_message_kind_decodes_with_the_images_each_replica_identity_gives() -> None:
    big = secrets.token_hex(20_000)  # random: stored out of line (TOASTed), not compressed inline
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE d (id int PRIMARY KEY, v text, body text)")
        conn.execute("CREATE TABLE f (id int PRIMARY KEY, v text, body text)")
        conn.execute("ALTER TABLE f REPLICA IDENTITY FULL")
        conn.execute("ALTER TABLE d ALTER COLUMN body SET STORAGE EXTERNAL")
        conn.execute("ALTER TABLE f ALTER COLUMN body SET STORAGE EXTERNAL")
        conn.execute("CREATE PUBLICATION p FOR TABLE d, f")
        conn.execute("SELECT pg_create_logical_replication_slot('s', 'pgoutput')")
        with conn.transaction():
            conn.execute("INSERT INTO d VALUES (1, 'a', %s), (2, NULL, 'x')", (big,))
            conn.execute("INSERT INTO f VALUES (1, 'a', %s)", (big,))
        conn.execute("UPDATE d SET v = 'b' WHERE id = 1")  # body unchanged: TOASTed, not sent
        conn.execute("UPDATE d SET id = 3 WHERE id = 2")  # a key change: the old key comes along
        conn.execute("UPDATE f SET v = 'b' WHERE id = 1")
        conn.execute("DELETE FROM d WHERE id = 3")
        conn.execute("DELETE FROM f WHERE id = 1")
        with pytest.raises(Exception, match="boom"), conn.transaction():
            conn.execute("INSERT INTO d VALUES (9, 'rolled back', NULL)")
            raise RuntimeError("boom")
        conn.execute("ALTER TABLE d ADD COLUMN w int")
        conn.execute("INSERT INTO d VALUES (4, 'c', NULL, 7)")
        conn.execute("TRUNCATE d")
        conn.execute("SELECT pg_logical_emit_message(true, 'cdclake', 'mark')")
        rows = conn.execute(PEEK).fetchall()
        relid = {name: oid for name, oid in conn.execute(
            "SELECT relname, oid::int FROM pg_class WHERE relname IN ('d', 'f')").fetchall()}

    messages = [decode(r[2]) for r in rows]
    changes = [m for m in messages if not isinstance(m, (Begin, Commit, Relation))]
    t = lambda *texts: tuple(Value("n") if x is None else Value("u") if x is ... else Value("t", x)  # noqa: E731
                             for x in texts)
    d, f = relid["d"], relid["f"]
    assert changes == [
        Insert(d, t("1", "a", big)), Insert(d, t("2", None, "x")), Insert(f, t("1", "a", big)),
        Update(d, None, None, t("1", "b", ...)),  # DEFAULT: the new row only, the unchanged TOASTed value not sent
        Update(d, t("2", None, None), "K", t("3", None, "x")),  # the key changed: the old key
        Update(f, t("1", "a", big), "O", t("1", "b", ...)),  # FULL: the whole old row; the new one still lacks it
        Delete(d, t("3", None, None), "K"), Delete(f, t("1", "b", big), "O"),
        Insert(d, t("4", "c", None, "7")),  # the rolled-back insert is not there
        Truncate((d,), False, False), Message(True, changes[-1].lsn, "cdclake", b"mark"),  # type: ignore[union-attr]
    ]
    relations = [m for m in messages if isinstance(m, Relation) and m.relid == d]
    assert [c.name for c in relations[0].columns] == ["id", "v", "body"] and relations[0].replica_identity == "d"
    assert [c.name for c in relations[-1].columns] == ["id", "v", "body", "w"]  # re-sent after the ALTER
    assert [c.key for c in relations[0].columns] == [True, False, False]
    begins, commits = [m for m in messages if isinstance(m, Begin)], [m for m in messages if isinstance(m, Commit)]
    # 9 transactions: the rolled-back one and the ALTER (no change of a published row) are not sent
    assert len(begins) == len(commits) == 9 and all(b.final_lsn == c.commit_lsn for b, c in zip(begins, commits))
    assert [r[0] for r in rows if r[2][:1] == b"C"] == [lsn_text(c.end_lsn) for c in commits]
    assert all(parse_lsn(lsn_text(c.end_lsn)) == c.end_lsn for c in commits)
