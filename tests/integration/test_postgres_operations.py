"""The commands around mining, on PostgreSQL: quality gates after the snapshot and a window, reconcile finding and
repairing (by key-filtered backfills read in an exported snapshot) a lost, a stale and an extra row, a resnapshot
backfill of a key range, a rebuild from bronze, status and the HTML report; the table read in key ranges."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.compare import compare_table
from cdclake.testing.postgres import PostgresServer

from tests.integration.pipeline_helpers import break_three_rows_and_reconcile
from tests.integration.postgres_helpers import postgres_pipeline

pytestmark = pytest.mark.integration

QUALITY = ("quality:\n  enabled: true\n  after_snapshot: true\ntables:\n  public.orders:\n    expectations:\n"
           "      - {type: expect_column_values_to_not_be_null, kwargs: {column: id}}\n")


def _assert_equal(spark: Any, pipeline: Pipeline) -> None:
    result = compare_table(spark, pipeline, "public.orders")
    assert result.equal, result.summary()


def test_reconcile_backfill_quality_gates_and_report_work_for_postgresql(spark: Any, tmp_path: Path) -> None:
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, name text, amount numeric(10,2), body text)")
        conn.execute("INSERT INTO orders SELECT g, 'n' || g, g * 1.5, CASE WHEN g = 7 THEN %s END "
                     "FROM generate_series(1, 40) g", (secrets.token_hex(5000),))
        # read in key ranges (three Spark partitions, each in the exported snapshot)
        parts = "  snapshot:\n    partitions: 3\n    min_rows_per_partition: 10\n"
        pipeline = postgres_pipeline(spark, pg, tmp_path / "lake", extra=QUALITY, source_extra=parts)
        pipeline.snapshot()
        schema = pipeline.control.latest_entries()["public.orders"].schema
        assert pipeline.source.snapshot.read(spark, schema).rdd.getNumPartitions() == 3  # type: ignore[arg-type]
        conn.execute("UPDATE orders SET name = 'changed' WHERE id = 2")
        conn.execute("DELETE FROM orders WHERE id = 3")
        conn.execute("UPDATE orders SET amount = 0 WHERE id = 7")  # its TOASTed body unchanged
        window = pipeline.mine()
        results = spark.read.format("delta").load(pipeline.layout.quality)
        assert results.where("window_id IS NULL").count() > 0  # the snapshot's gate ran
        assert results.where(f"window_id = {window.window_id} AND NOT success").count() == 0

        break_three_rows_and_reconcile(spark, pipeline, "public.orders", "id", lost=5, stale=7,
                                       stale_set="name = 'wrong', body = NULL", extra=999)
        _assert_equal(spark, pipeline)
        path = pipeline.layout.target("public.orders")

        spark.sql(f"UPDATE delta.`{path}` SET amount = -1 WHERE id BETWEEN 10 AND 12")
        pipeline.backfill("public.orders", where="id BETWEEN 10 AND 12")
        _assert_equal(spark, pipeline)
        conn.execute("UPDATE orders SET name = 'after backfill' WHERE id = 7")
        pipeline.mine()
        _assert_equal(spark, pipeline)
        pipeline.backfill("public.orders", mode="rebuild")  # from the snapshot's rows and bronze
        _assert_equal(spark, pipeline)

        conn.execute("UPDATE orders SET name = 'pending' WHERE id = 4")
        (status,) = pipeline.status()
        assert (status["source_table"], status["rows"], status["distance_unit"]) == (
            "public.orders", 39, "bytes of WAL")
        assert status["distance"] > 0
        assert "public.orders" in pipeline.report(tmp_path / "report.html").read_text()
