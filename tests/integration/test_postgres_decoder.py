"""pgoutput messages of a real cluster as the engine's log records: row images per replica identity, unchanged
TOAST, key changes, TRUNCATE, and each column change as a schema-history entry where its rows begin; a partitioned
table's changes as its root's, its partitions no tables of their own."""

from __future__ import annotations

import secrets

import pytest
from cdclake.schema import TableSchema
from cdclake.sources.postgresql import catalog
from cdclake.sources.postgresql.decoder import ChangeDecoder
from cdclake.sources.postgresql.stream import read_window
from cdclake.sources.postgresql.types import columns
from cdclake.spi import records as R
from cdclake.spi.logrows import UNAVAILABLE_KEY
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration


def test_rows_and_column_changes_become_log_records() -> None:
    big = secrets.token_hex(20_000)
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text, body text)")
        conn.execute("ALTER TABLE t ALTER COLUMN body SET STORAGE EXTERNAL")
        conn.execute("CREATE TABLE f (id int PRIMARY KEY, body text)")
        conn.execute("ALTER TABLE f REPLICA IDENTITY FULL")
        conn.execute("ALTER TABLE f ALTER COLUMN body SET STORAGE EXTERNAL")
        conn.execute("CREATE PUBLICATION p FOR TABLE t, f")
        conn.execute("INSERT INTO t VALUES (1, 'a', %s)", (big,))
        conn.execute("INSERT INTO f VALUES (1, %s)", (big,))
        start = {name: TableSchema("public", name.split(".")[1], columns(conn, name), ["id"])
                 for name in ("public.t", "public.f")}
        conn.execute("SELECT pg_create_logical_replication_slot('s', 'pgoutput')")
        conn.execute("UPDATE t SET v = 'b' WHERE id = 1")  # body: unchanged TOAST
        conn.execute("UPDATE f SET id = 2 WHERE id = 1")  # FULL: the old row supplies body
        conn.execute("UPDATE t SET id = 5 WHERE id = 1")  # a key change under DEFAULT
        conn.execute("ALTER TABLE t ADD COLUMN w numeric(6,2)")
        conn.execute("ALTER TABLE t RENAME COLUMN v TO name")
        with conn.transaction():
            conn.execute("INSERT INTO t VALUES (2, 'x', 'y', 1.5)")
            conn.execute("DELETE FROM t WHERE id = 5")
        conn.execute("TRUNCATE t")
        decoder = ChangeDecoder(start, {"public.t": 1, "public.f": 2}, 3, catalog.TypeCatalog(conn),
                                lambda table: table in ("public.t", "public.f"), system="sys",
                                attnums=lambda table: catalog.attnums(conn, table))
        records = list(decoder.records(read_window(conn, "s", "p", catalog.flush_lsn(conn))))

        # a partitioned table published through its root: pgoutput sends each partition's Relation after the root's,
        # and the changes as the root's; a pattern matching the partitions too captures the root alone
        conn.execute("CREATE TABLE parted (id int PRIMARY KEY, v text) PARTITION BY RANGE (id)")
        conn.execute("CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (MINVALUE) TO (1000)")
        conn.execute("CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (1000) TO (MAXVALUE)")
        conn.execute("CREATE PUBLICATION pp FOR TABLE parted WITH (publish_via_partition_root = true)")
        conn.execute("SELECT pg_create_logical_replication_slot('sp', 'pgoutput')")
        conn.execute("INSERT INTO parted VALUES (1, 'a'), (1500, 'b')")
        parted = ChangeDecoder({}, {}, 1, catalog.TypeCatalog(conn), lambda table: table.startswith("public."),
                               own_relation=lambda relid: catalog.published_as_itself(conn, "pp", relid),
                               partition_tree=lambda relid: catalog.partition_tree(conn, relid))
        tree = catalog.partition_tree(conn, conn.execute("SELECT 'parted'::regclass::oid::bigint").fetchone()[0])
        parted_records = list(parted.records(read_window(conn, "sp", "pp", catalog.flush_lsn(conn))))
    created = [r for r in parted_records if isinstance(r, R.Ddl)]
    assert [list(r.changes) for r in created] == [["public.parted"]], [r.statement for r in created]
    assert created[0].changes["public.parted"].attrs["partitions"] == tree and len(tree or []) == 2
    assert [(c.table, c.after) for c in parted_records if isinstance(c, R.RowChange)] == [
        ("public.parted", {"id": "1", "v": "a"}), ("public.parted", {"id": "1500", "v": "b"})]

    changes = [r for r in records if isinstance(r, R.RowChange)]
    ddls = [r for r in records if isinstance(r, R.Ddl)]
    assert [(c.table, c.op, c.schema_version) for c in changes] == [
        ("public.t", "u", 1), ("public.f", "u", 2), ("public.t", "u", 1), ("public.t", "c", 3),
        ("public.t", "d", 3), ("public.t", "t", 3)]
    toast, full, key, insert, delete, _ = changes
    assert toast.after == {"id": "1", "v": "b", UNAVAILABLE_KEY: ["body"]} and toast.before is None
    assert full.after == {"id": "2", "body": big} and full.before == {"id": "1", "body": big}
    assert key.before == {"id": "1"} and key.after == {"id": "5", "v": "b", UNAVAILABLE_KEY: ["body"]}
    assert insert.after == {"id": "2", "name": "x", "body": "y", "w": "1.50"}
    assert delete.before == {"id": "5"}
    # one entry: the ALTERs commit with no row between them; the first transaction after shows both
    (ddl,) = ddls
    new = ddl.changes["public.t"]
    assert new is not None and new.column_names == ["id", "name", "body", "w"] and new.primary_key == ["id"]
    assert new.column("w").spark_type == "DECIMAL(6,2)" and new.column("w").source_type == "numeric(6,2)"
    assert records.index(ddl) < records.index(insert)  # before the rows decoded with it
    begin = next(r for r in records[records.index(ddl) + 1:] if isinstance(r, R.Begin))
    assert ddl.position.ordinal <= begin.position.ordinal
    assert ddl.column_renames == {"public.t": {"v": "name"}}  # the same column number: a rename, a column added
