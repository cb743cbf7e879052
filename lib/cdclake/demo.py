"""``cdclake demo``: the whole product on an embedded default, end to end on this machine.

A throwaway MariaDB (binlog on) is seeded with a small shop schema, snapshotted into Delta, then a
workload of inserts, updates, deletes, a primary-key change, a rolled-back transaction and an
``ALTER TABLE`` runs while mining windows apply it. It ends by printing each table's position, row
count and lag, a few rows of a Delta table and of its change data feed, and a row-by-row
comparison of lake and source.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import click

SCHEMA = [
    "CREATE DATABASE shop",
    """CREATE TABLE shop.customers (
        id INT PRIMARY KEY, name VARCHAR(80) NOT NULL, email VARCHAR(120), vip BOOL DEFAULT 0,
        created DATETIME(6) NOT NULL, balance DECIMAL(12,2))""",
    """CREATE TABLE shop.products (
        sku VARCHAR(20) PRIMARY KEY, title TEXT, price DECIMAL(10,2) NOT NULL,
        tags SET('new','sale','eco'), kind ENUM('book','tool','food'), stock INT UNSIGNED)""",
    """CREATE TABLE shop.orders (
        id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL, sku VARCHAR(20),
        qty SMALLINT, placed TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), note JSON)""",
]


def _seed(db: object, rows: int, rng: random.Random) -> None:
    for stmt in SCHEMA:
        db.execute(stmt)  # type: ignore[attr-defined]
    conn = db.connect()  # type: ignore[attr-defined]
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO shop.customers VALUES (%s, %s, %s, %s, NOW(6), %s)",
            [(i, f"customer {i}", f"c{i}@example.com", i % 7 == 0, round(rng.uniform(0, 5000), 2))
             for i in range(1, rows + 1)],
        )
        cur.executemany(
            "INSERT INTO shop.products VALUES (%s, %s, %s, %s, %s, %s)",
            [(f"SKU-{i:05d}", f"product {i}", round(rng.uniform(1, 300), 2), rng.choice(["new", "sale,eco", ""]),
              rng.choice(["book", "tool", "food"]), rng.randint(0, 500)) for i in range(1, rows // 4 + 1)],
        )
        cur.executemany(
            "INSERT INTO shop.orders (customer_id, sku, qty, note) VALUES (%s, %s, %s, %s)",
            [(rng.randint(1, rows), f"SKU-{rng.randint(1, rows // 4):05d}", rng.randint(1, 9),
              '{"channel": "web"}') for _ in range(rows)],
        )
    conn.close()


def _workload(db: object, rows: int, rng: random.Random, phase: int) -> None:
    conn = db.connect()  # type: ignore[attr-defined]
    conn.autocommit(False)
    with conn.cursor() as cur:
        for _ in range(rows // 10):
            i = rng.randint(1, rows)
            cur.execute("UPDATE shop.customers SET balance = balance + 10, vip = NOT vip WHERE id = %s", (i,))
            cur.execute("INSERT INTO shop.orders (customer_id, sku, qty, note) VALUES (%s, %s, %s, %s)",
                        (i, f"SKU-{rng.randint(1, rows // 4):05d}", rng.randint(1, 9), '{"channel": "app"}'))
            conn.commit()
        cur.execute("DELETE FROM shop.orders WHERE id %% 13 = %s", (phase,))
        cur.execute("UPDATE shop.customers SET id = id + 1000000 WHERE id = %s", (phase + 2,))  # key change
        conn.commit()
        cur.execute("UPDATE shop.products SET price = 0 WHERE 1 = 1")
        conn.rollback()  # never reaches the binlog
        if phase == 1:
            cur.execute("ALTER TABLE shop.customers ADD COLUMN tier VARCHAR(10) NOT NULL DEFAULT 'basic'")
            cur.execute("UPDATE shop.customers SET tier = 'gold' WHERE vip")
            conn.commit()
    conn.close()


def run_demo(lake: str | None, rows: int) -> None:
    from cdclake.config import load_config_text
    from cdclake.engine.pipeline import Pipeline
    from cdclake.testing.compare import compare_table
    from cdclake.testing.mariadb import MariaDBServer

    lake_root = Path(lake or "demo-lake").resolve()
    if lake_root.exists():
        shutil.rmtree(lake_root)
    rng = random.Random(7)
    started = time.time()
    click.echo("starting a throwaway MariaDB (binlog on)...")
    with MariaDBServer() as db:
        _seed(db, rows, rng)
        os.environ["CDCLAKE_DEMO_PASSWORD"] = db.cdc_password
        conf = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)  # noqa: SIM115
        conf.write(
            f"pipeline: demo\n"
            f"source:\n  type: mariadb\n  host: 127.0.0.1\n  port: {db.port}\n  user: {db.cdc_user}\n"
            f"  password: ${{CDCLAKE_DEMO_PASSWORD}}\n  server_id: 5401\n  include_tables: ['shop\\..*']\n"
            f"lake:\n  root: {lake_root}\n"
        )
        conf.close()
        config = load_config_text(Path(conf.name).read_text(), conf.name)
        pipeline = Pipeline.from_config(config, app_name="cdclake-demo")
        click.echo(f"pipeline file: {conf.name} (password from $CDCLAKE_DEMO_PASSWORD)")
        report = pipeline.snapshot()
        for t in report.tables:
            click.echo(f"snapshot {t}: {report.rows_by_table[t]} rows at {report.start}")
        for phase in (1, 2):
            _workload(db, rows, rng, phase)
            r = pipeline.mine()
            click.echo(f"mining window {r.window_id}: {r.events} changes in {r.transactions} transactions "
                       f"({r.start} -> {r.end}) in {r.duration_s:.1f}s")
        click.echo("\nstatus:")
        for t in pipeline.status():
            click.echo(f"  {t['source_table']:16} rows={t['rows']:<6} lag_s={t['lag_s']:<7} position={t['position']}")
        spark = pipeline.spark
        target = pipeline.layout.target("shop.customers")
        click.echo("\nshop.customers in Delta (a few rows):")
        spark.read.format("delta").load(target).orderBy("id", ascending=False).show(5, truncate=False)
        click.echo("its change data feed (latest changes):")
        (
            spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(target)
            .select("id", "name", "balance", "tier", "_change_type", "_commit_version", "__op")
            .orderBy("_commit_version", ascending=False).show(6, truncate=False)
        )
        click.echo("lake vs source, row by row:")
        for t in ("shop.customers", "shop.products", "shop.orders"):
            result = compare_table(spark, pipeline, t)
            click.echo(f"  {t}: {result.summary()}")
            if not result.equal:
                raise SystemExit(f"demo: {t} differs between lake and source")
        os.unlink(conf.name)
    click.echo(f"\ndemo finished in {time.time() - started:.0f}s; lake at {lake_root}")
