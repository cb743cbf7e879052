"""The PostgreSQL source end to end on a real cluster: snapshot, then windows of interleaved transactions, TOASTed
values left unchanged, key changes, rollbacks, columns added (with the value older rows hold, or a volatile
default that makes them be read again), renamed and retyped, a table dropped and created again; the lake equals
the source row by row."""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.pipeline import Pipeline
from cdclake.engine.status import status_report
from cdclake.errors import PositionLostError
from cdclake.testing.compare import compare_table
from cdclake.testing.postgres import PostgresServer

from tests.integration.postgres_helpers import postgres_pipeline

pytestmark = pytest.mark.integration


def _pipeline(spark: Any, pg: PostgresServer, lake: Path) -> Pipeline:
    return postgres_pipeline(spark, pg, lake)


def _assert_equal(spark: Any, pipeline: Pipeline, pg: PostgresServer, table: str, cols: list[str]) -> None:
    """The lake equals the source read now (through the source's snapshot path: the same Delta values), and has
    exactly the columns ``cols``."""
    result = compare_table(spark, pipeline, f"public.{table}")
    assert result.equal, f"{table}: {result.summary()}"
    lake = [c for c in spark.read.format("delta").load(pipeline.layout.target(f"public.{table}")).columns
            if not c.startswith("__")]
    assert lake == cols, lake


def test_snapshot_then_windows_equal_the_source(spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    big = secrets.token_hex(20_000)
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, v text, n numeric(10,2), body text)")
        conn.execute("ALTER TABLE orders ALTER COLUMN body SET STORAGE EXTERNAL")
        conn.execute("INSERT INTO orders SELECT g, 'v' || g, g / 4.0, CASE WHEN g = 1 THEN %s END "
                     "FROM generate_series(1, 200) g", (big,))
        pipeline = _pipeline(spark, pg, tmp_path / "lake")
        pipeline.snapshot()
        cols = ["id", "v", "n", "body"]

        other = pg.connect()
        with conn.transaction(), other.transaction():  # interleaved, both committed
            conn.execute("UPDATE orders SET v = 'toast kept' WHERE id = 1")  # body: unchanged TOAST
            other.execute("INSERT INTO orders VALUES (201, 'new', 1.25, NULL)")
            conn.execute("UPDATE orders SET id = 300 WHERE id = 2")  # a key change
            other.execute("DELETE FROM orders WHERE id = 3")
        with pytest.raises(RuntimeError), conn.transaction():
            conn.execute("DELETE FROM orders")
            raise RuntimeError("rolled back")
        report = pipeline.mine()
        assert report.events == 4
        _assert_equal(spark, pipeline, pg, "orders", cols)

        # a column added (older rows: NULL), one renamed, and columns with the value PostgreSQL stored for the rows
        # that existed (no WAL for them)
        conn.execute("ALTER TABLE orders ADD COLUMN w int")
        conn.execute("ALTER TABLE orders RENAME COLUMN v TO name")
        conn.execute("UPDATE orders SET w = id WHERE id < 10")
        conn.execute("ALTER TABLE orders ADD COLUMN at timestamptz NOT NULL DEFAULT now(), ADD COLUMN tag text "
                     "DEFAULT 'it''s \"x\"'")
        conn.execute("UPDATE orders SET n = 0 WHERE id = 5")
        pipeline.mine()
        cols = ["id", "name", "n", "body", "w", "at", "tag"]
        _assert_equal(spark, pipeline, pg, "orders", cols)
        # a volatile default and a retyping with USING rewrite the rows unlogged: the table is read again
        conn.execute("ALTER TABLE orders ADD COLUMN r double precision DEFAULT random()")
        conn.execute("ALTER TABLE orders ALTER COLUMN w TYPE bigint USING w * 1000")
        conn.execute("UPDATE orders SET n = 1 WHERE id = 6")
        pipeline.mine()
        _assert_equal(spark, pipeline, pg, "orders", [*cols, "r"])

        # dropped and created again under its name: not in cdclake's publication any more, so its mirror empties
        # and the next snapshot takes the new table
        conn.execute("CREATE TABLE side (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO side VALUES (1, 'old'), (2, 'old')")
        pipeline.snapshot()
        conn.execute("DROP TABLE side")
        conn.execute("CREATE TABLE side (id int PRIMARY KEY, v text, extra int)")
        conn.execute("INSERT INTO side VALUES (7, 'new', 7)")
        pipeline.mine()
        lake_side = pipeline.layout.target("public.side")
        assert spark.read.format("delta").load(lake_side).where("NOT coalesce(__deleted, false)").count() == 0 \
            if "__deleted" in spark.read.format("delta").load(lake_side).columns \
            else spark.read.format("delta").load(lake_side).count() == 0
        pipeline.snapshot()
        _assert_equal(spark, pipeline, pg, "side", ["id", "v", "extra"])
        assert pipeline.mine().events == 0  # nothing new

        # lag: each table's distance to the flushed WAL, and the WAL the slot retains
        report = status_report(pipeline.ctx)
        orders = next(t for t in report["tables"] if t["source_table"] == "public.orders")
        # (0, unless the server wrote a record of its own since: a running-transactions snapshot, every 15 s)
        caught_up = orders["distance"]
        assert caught_up < 1024 and (caught_up > 0 or orders["lag_s"] == 0.0), orders
        conn.execute("UPDATE orders SET n = 2 WHERE id = 7")
        report = status_report(pipeline.ctx)
        orders = next(t for t in report["tables"] if t["source_table"] == "public.orders")
        assert orders["distance"] > caught_up and orders["distance_unit"] == "bytes of WAL", orders
        assert "retains" in orders["lag_note"] and "wal_status reserved" in orders["lag_note"], orders
        other.close()

        # the slot retains more WAL than max_slot_wal_keep_size: a warning, and mining still reaches the source
        pg.execute("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
        pg.execute("SELECT pg_reload_conf()")
        for n in range(3):
            conn.execute("UPDATE orders SET n = %s WHERE id = 8", (n,))
            pg.execute("SELECT pg_switch_wal()")
        with caplog.at_level("WARNING"):
            assert pipeline.mine().events == 4  # the lag check's update, and these three
        assert re.search(r"replication slot \S+ is unreserved", caplog.text), caplog.text
        _assert_equal(spark, pipeline, pg, "orders", [*cols, "r"])
        # ... then a checkpoint removes what it retains: the slot is lost, and mining stops with the remedy
        for n in range(3):
            conn.execute("UPDATE orders SET n = %s WHERE id = 9", (n,))
            pg.execute("SELECT pg_switch_wal()")
        pg.execute("CHECKPOINT")
        report = status_report(pipeline.ctx)
        orders = next(t for t in report["tables"] if t["source_table"] == "public.orders")
        assert re.search(r"replication slot \S+ was invalidated \(wal_status lost\)", orders["lag_note"]), orders
        with pytest.raises(PositionLostError) as err:
            pipeline.mine()
        assert "was invalidated" in str(err.value) and "cdclake snapshot --force" in \
            str(err.value), err.value
