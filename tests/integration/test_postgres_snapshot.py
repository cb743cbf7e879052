"""The exported snapshot on a real cluster: every Spark partition reads the database as of the slot's
consistent point (writes after it invisible, no lock taken), the slot then decodes exactly the writes after it,
and a read outside the snapshot fails instead of reading current rows."""

from __future__ import annotations

from typing import Any

import pytest
from cdclake.sources.postgresql.pgoutput import Delete, Insert, Update, decode
from cdclake.sources.postgresql.snapshot import GUARD, create_slot_with_snapshot, guarded, jdbc_options
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration


def test_every_partition_reads_the_slot_s_consistent_point_and_the_slot_decodes_what_came_after(spark: Any) -> None:
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 1000) g")
        conn.execute("CREATE PUBLICATION p FOR TABLE t")
        snap = create_slot_with_snapshot(pg.connection_settings(), "s")
        try:
            conn.execute("INSERT INTO t VALUES (1001, 'after')")  # committed after the consistent point
            conn.execute("UPDATE t SET v = 'changed' WHERE id = 5")
            conn.execute("DELETE FROM t WHERE id = 6")
            options = {"url": pg.jdbc_url, "driver": "org.postgresql.Driver", "user": pg.cdc_user,
                       "password": pg.passwords[pg.cdc_user]}
            frame = (spark.read.format("jdbc").options(**options, **jdbc_options(snap, 100))
                     .option("dbtable", f"({guarded('SELECT id, v FROM t', snap)}) s")
                     .option("partitionColumn", "id").option("lowerBound", 1).option("upperBound", 1002)
                     .option("numPartitions", 4).load().where(f"{GUARD} = 1").drop(GUARD))
            assert frame.rdd.getNumPartitions() == 4
            rows = {(r.id, r.v) for r in frame.collect()}
            assert rows == {(i, f"v{i}") for i in range(1, 1001)}  # before the three writes, in every partition
            outside = (spark.read.format("jdbc").options(**options, fetchsize="0")
                       .option("query", guarded("SELECT id FROM t", snap)).load().where(f"{GUARD} = 1"))
            with pytest.raises(Exception, match="division by zero"):
                outside.collect()
        finally:
            snap.release()
        changes = [decode(r[0]) for r in conn.execute(
            "SELECT data FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL, 'proto_version', '1', "
            "'publication_names', 'p')").fetchall()]
        kinds = [type(c) for c in changes if isinstance(c, (Insert, Update, Delete))]
        assert kinds == [Insert, Update, Delete]  # exactly the writes after the consistent point
