"""The PostgreSQL source end to end on a real cluster (not yet a registered plug-in: the pipeline is built from
its configuration model directly): snapshot, then windows of interleaved transactions, TOASTed values left
unchanged, key changes, rollbacks, a column added and one renamed; the lake equals the source row by row."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.sources.postgresql.config import PostgresSourceConfig
from cdclake.sources.postgresql.source import PostgresSource
from cdclake.spi import SourceContext
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration


def _pipeline(spark: Any, pg: PostgresServer, lake: Path) -> Pipeline:
    base = load_config_text("pipeline: pgtest\nsource: {type: mariadb, host: x, user: x, password: x, server_id: 7}\n"
                            f"lake:\n  root: {lake}\n")
    source_config = PostgresSourceConfig(type="postgresql", host=pg.host, port=pg.port, database=pg.database,
                                         user=pg.cdc_user, password=pg.passwords[pg.cdc_user],
                                         include_tables=[r"public\..*"])
    config = base.model_copy(update={"source": source_config})
    return Pipeline(config, PostgresSource(source_config, SourceContext(config.pipeline, config.lake.root)), spark)


def _assert_equal(spark: Any, pipeline: Pipeline, pg: PostgresServer, table: str, cols: list[str]) -> None:
    source = {tuple(r) for r in pg.query(f"SELECT {', '.join(cols)} FROM {table}")}
    frame = spark.read.format("delta").load(pipeline.layout.target(f"public.{table}"))
    lake = {tuple(r) for r in frame.select(*cols).collect()}
    assert lake == source, f"{table}: only in lake {lake - source}, only in source {source - lake}"


def test_snapshot_then_windows_equal_the_source(spark: Any, tmp_path: Path) -> None:
    big = secrets.token_hex(20_000)
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, v text, n numeric(10,2), body text)")
        conn.execute("ALTER TABLE orders ALTER COLUMN body SET STORAGE EXTERNAL")
        conn.execute("INSERT INTO orders SELECT g, 'v' || g, g / 4.0, CASE WHEN g = 1 THEN %s END "
                     "FROM generate_series(1, 200) g", (big,))
        pipeline = _pipeline(spark, pg, tmp_path / "lake")
        pipeline.snapshot()
        cols = ["id", "v", "n", "body"]
        _assert_equal(spark, pipeline, pg, "orders", cols)

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

        conn.execute("ALTER TABLE orders ADD COLUMN w int")
        conn.execute("ALTER TABLE orders RENAME COLUMN v TO name")
        conn.execute("UPDATE orders SET w = id WHERE id < 10")
        pipeline.mine()
        _assert_equal(spark, pipeline, pg, "orders", ["id", "name", "n", "body", "w"])
        assert pipeline.mine().events == 0  # nothing new
        other.close()
