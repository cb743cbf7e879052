"""A PostgreSQL window decoded in Spark tasks (``mining.decoder: executors``) gives the very bronze rows and schema
history the driver's decoding gives, for every kind of change, and a lake equal to the source."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.compare import compare_table
from cdclake.testing.postgres import PostgresServer

from tests.integration.oracle_helpers import bronze_markers
from tests.integration.postgres_helpers import postgres_pipeline

pytestmark = pytest.mark.integration

SCHEMA = [
    "CREATE TABLE orders (id int PRIMARY KEY, v text, n numeric(10,2), body text)",
    "ALTER TABLE orders ALTER COLUMN body SET STORAGE EXTERNAL",
    "CREATE TABLE logs (v text, at date)",
    "ALTER TABLE logs REPLICA IDENTITY FULL",
    "CREATE TABLE events (id int, at date, what text, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)",
    "CREATE TABLE events_a PARTITION OF events FOR VALUES FROM ('2000-01-01') TO ('2025-01-01')",
    "CREATE TABLE events_b PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2100-01-01')",
    "CREATE TABLE ignored (id int PRIMARY KEY, v text)",
]


def _workload(conn: Any) -> None:
    big = secrets.token_hex(5000)
    with conn.transaction():
        conn.execute("INSERT INTO orders SELECT g, 'v' || g, g / 4.0, CASE WHEN g < 4 THEN %s END "
                     "FROM generate_series(100, 130) g", (big,))
        conn.execute("INSERT INTO ignored VALUES (1, 'x')")
    conn.execute("UPDATE orders SET v = 'toast kept' WHERE id = 1")
    with conn.transaction():  # a chain of key changes, the TOASTed value unchanged
        conn.execute("UPDATE orders SET id = 300 WHERE id = 2")
        conn.execute("UPDATE orders SET id = 301, v = 'moved twice' WHERE id = 300")
    with conn.transaction():  # a subtransaction rolled back, one kept
        conn.execute("INSERT INTO orders VALUES (50, 'kept', 1, NULL)")
        conn.execute("SAVEPOINT s")
        conn.execute("INSERT INTO orders VALUES (51, 'rolled back', 1, NULL)")
        conn.execute("ROLLBACK TO SAVEPOINT s")
        conn.execute("SAVEPOINT t")
        conn.execute("UPDATE orders SET n = 9 WHERE id = 50")
        conn.execute("RELEASE SAVEPOINT t")
    with pytest.raises(RuntimeError), conn.transaction():
        conn.execute("DELETE FROM orders")
        raise RuntimeError("rolled back")
    conn.execute("DELETE FROM orders WHERE id = 3")
    conn.execute("INSERT INTO logs VALUES ('a', '2024-01-01'), ('a', '2024-01-01'), ('b', NULL)")
    conn.execute("UPDATE logs SET at = '2024-02-29' WHERE v = 'a'")
    conn.execute("DELETE FROM logs WHERE v = 'b'")
    conn.execute("INSERT INTO events VALUES (1, '2024-05-05', 'x'), (2, '2024-06-06', 'y')")
    conn.execute("UPDATE events SET at = '2030-01-01' WHERE id = 1")  # to the other partition
    conn.execute("ALTER TABLE orders ADD COLUMN w int DEFAULT 7")
    conn.execute("UPDATE orders SET w = 8 WHERE id = 4")
    conn.execute("ALTER TABLE orders RENAME COLUMN v TO name")
    conn.execute("UPDATE orders SET name = 'renamed' WHERE id = 5")
    conn.execute("TRUNCATE logs")
    conn.execute("INSERT INTO logs VALUES ('after truncate', NULL)")
    conn.execute("UPDATE ignored SET v = 'y'")


def _bronze(spark: Any, pipeline: Pipeline) -> list[tuple[Any, ...]]:
    cols = ["window_id", "source_table", "op", "seq", "position", "txid", "commit_ts", "schema_version", "before",
            "after"]
    rows = spark.read.format("delta").load(pipeline.layout.bronze).where("op <> 'w'").select(*cols)
    return [tuple(r) for r in rows.orderBy("window_id", "seq").collect()]


def _history(pipeline: Pipeline) -> list[tuple[Any, ...]]:
    return [(e.version, e.table, e.seq, e.position, e.kind, e.schema, e.column_renames, e.window_id)
            for e in pipeline.control.history() if e.window_id is not None]


def _marker(m: dict[str, Any]) -> tuple[Any, ...]:
    """(A window's end is the flush LSN when its run began, or its last commit's end when max_events cut it: the
    runs of the two pipelines began apart, maybe on either side of a record the server wrote of its own.)"""
    return tuple(m.get(k) for k in ("window_id", "events", "transactions", "rows_by_table", "truncates", "partial"))


def test_a_window_decoded_in_spark_tasks_equals_the_driver_s(spark: Any, tmp_path: Path) -> None:
    with PostgresServer() as pg, pg.connect() as conn:
        for sql in SCHEMA:
            conn.execute(sql)
        conn.execute("INSERT INTO orders SELECT g, 'v' || g, g, CASE WHEN g < 3 THEN %s END "
                     "FROM generate_series(1, 20) g", (secrets.token_hex(5000),))
        include = r"public\.(orders|logs|events.*)"  # the partitions too: they land in events alone
        by_driver = postgres_pipeline(spark, pg, tmp_path / "a", name="bydriver", include=include,
                                      extra="mining:\n  decoder: driver\n")
        in_tasks = postgres_pipeline(spark, pg, tmp_path / "b", name="intasks", include=include,
                                     extra="mining:\n  decoder: executors\n  target_splits: 3\n")
        by_driver.snapshot()
        in_tasks.snapshot()
        _workload(conn)
        first = by_driver.mine()
        assert first.events > 40
        assert in_tasks.mine().events == first.events
        # a window cut short by max_events (after a whole transaction), then the rest
        conn.execute("INSERT INTO orders SELECT g, 'late', 0, NULL FROM generate_series(600, 605) g")
        conn.execute("UPDATE orders SET n = n + 1 WHERE id IN (600, 601)")
        conn.execute("INSERT INTO orders VALUES (700, 'last', 0, NULL, 1)")
        for pipeline in (by_driver, in_tasks):
            assert pipeline.mine(max_events=3).events == 6
            assert pipeline.mine().events == 3

        assert _bronze(spark, in_tasks) == _bronze(spark, by_driver)
        assert _history(in_tasks) == _history(by_driver)
        for pipeline in (by_driver, in_tasks):
            assert sorted(pipeline.control.table_states()) == ["public.events", "public.logs", "public.orders"]
        assert [_marker(m) for m in bronze_markers(spark, in_tasks)] == [
            _marker(m) for m in bronze_markers(spark, by_driver)]
        for table in ("public.orders", "public.logs", "public.events"):
            result = compare_table(spark, in_tasks, table)
            assert result.equal, f"{table}: {result.summary()}"
