"""The floor under any Spark + Delta mining window on this machine, with no cdclake code in it.

A window of ``--rows`` LogMiner rows (the Oracle benchmark's mix: per transaction one START, four
changes, one COMMIT; 10-column JSON images like the decoder's) is pre-written as Parquet, then the
steps every design with transaction buffering, a durable window record and a MERGE must do at least
once are timed on their own:

1. **assemble** — join the change rows to their transaction's COMMIT and write the result (Parquet);
2. **bronze** — append the window's changes to a Delta table (the durable record a killed run
   re-applies from);
3. **merge** — keep the last change per key, parse the images (``from_json``) and MERGE them into a
   Delta target of ``--rows / 3`` rows.

Each step runs ``--repeat`` times into a fresh destination: the first run is cold (JIT, class
loading), the best run is warm. The sum of the warm minimums, divided into the row count, is the most
a single window can do on this machine with Spark and Delta alone, before fetching and decoding.

Usage: ``.venv/bin/python benchmarks/run_spark_floor.py [--rows N] [--repeat R]`` (``make bench-floor``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))

from cdclake.spark import build_spark  # noqa: E402

IMAGE = ("to_json(named_struct('ID', key, 'CUSTOMER', id * 7 % 1000000, 'AMOUNT', CAST(id % 100000 AS DECIMAL(12,2)), "
         "'STATUS', 'PAID', 'NOTE', concat('order ', id, ' note ', repeat('x', CAST(id % 60 AS INT))), "
         "'CREATED', '2024-01-01T00:00:00', 'UPDATED', '2024-06-01T12:00:00.123456', 'QTY', id % 500, "
         "'SKU', concat('SKU-', id % 99999), 'RATIO', '12.345'))")
TARGET_DDL = ("ID BIGINT, CUSTOMER BIGINT, AMOUNT DECIMAL(12,2), STATUS STRING, NOTE STRING, CREATED TIMESTAMP, "
              "UPDATED TIMESTAMP, QTY INT, SKU STRING, RATIO DECIMAL(38,10)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=640_000, help="LogMiner rows in the window")
    ap.add_argument("--repeat", type=int, default=3, help="runs per step (first cold, best warm)")
    args = ap.parse_args(argv)
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = build_spark("cdclake-spark-floor")
    root = tempfile.mkdtemp(prefix="cdclake-floor-")
    keys = max(1, args.rows // 3)
    # Per transaction of 6 rows: 0 = START, 1..4 = changes, 5 = COMMIT.
    spark.range(args.rows).selectExpr(
        "id", "CAST(id DIV 6 AS STRING) AS txid", "'APP.ORDERS' AS source_table",
        "CASE id % 6 WHEN 0 THEN 'B' WHEN 5 THEN 'C' ELSE 'u' END AS op", "CAST(id AS DECIMAL(38,0)) AS seq",
        f"CAST(id * 7919 % {keys} AS BIGINT) AS key",
    ).selectExpr("*", f"{IMAGE} AS after").drop("key").write.parquet(f"{root}/window")
    spark.range(keys).selectExpr(
        f"from_json(to_json(named_struct('ID', id, 'CUSTOMER', id, 'AMOUNT', 1.5, 'STATUS', 'NEW', 'NOTE', 'n', "
        f"'CREATED', '2024-01-01T00:00:00', 'UPDATED', '2024-01-01T00:00:00', 'QTY', 1, 'SKU', 's', "
        f"'RATIO', '1')), '{TARGET_DDL}') AS a").select("a.*").write.format("delta").save(f"{root}/target0")
    window = spark.read.parquet(f"{root}/window")
    changes = window.where("op NOT IN ('B', 'C')")

    def assemble(n: int) -> None:
        commits = window.where("op = 'C'").select("txid", F.col("seq").alias("commit_seq"))
        changes.join(commits, "txid").write.parquet(f"{root}/assembled{n}")

    def bronze(n: int) -> None:
        changes.write.format("delta").mode("append").save(f"{root}/bronze{n}")

    def merge(n: int) -> None:
        images = changes.selectExpr("seq", f"from_json(after, '{TARGET_DDL}') AS a")
        last = images.withColumn("rn", F.row_number().over(Window.partitionBy("a.ID").orderBy(F.desc("seq"))))
        source = last.where("rn = 1").select("a.*")
        (DeltaTable.forPath(spark, f"{root}/target{n}").alias("t").merge(source.alias("s"), "t.ID = s.ID")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    for n in range(1, args.repeat + 1):  # a fresh copy of the starting target per merge run, not timed
        spark.read.format("delta").load(f"{root}/target0").write.format("delta").save(f"{root}/target{n}")
    steps: dict[str, list[float]] = {}
    for name, step in (("assemble", assemble), ("bronze", bronze), ("merge", merge)):
        for n in range(1, args.repeat + 1):
            t = time.time()
            step(n)
            steps.setdefault(name, []).append(round(time.time() - t, 2))
            print(f"[{time.strftime('%H:%M:%S')}] {name} run {n}: {steps[name][-1]}s", flush=True)
    warm = sum(min(v) for v in steps.values())
    cold = sum(v[0] for v in steps.values())
    results = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {platform.python_version()}",
        "rows": args.rows, "changes": changes.count(), "target_rows": keys, "steps_s": steps,
        "floor_warm_s": round(warm, 2), "floor_warm_rows_per_s": round(args.rows / warm),
        "floor_cold_s": round(cold, 2), "floor_cold_rows_per_s": round(args.rows / cold),
    }
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / f"spark-floor-{args.rows}.json").write_text(json.dumps(results, indent=2))
    for k, v in results.items():
        print(f"{k:24} {v}")


if __name__ == "__main__":
    main()
