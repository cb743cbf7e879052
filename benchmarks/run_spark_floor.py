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

With ``--decode``, the change rows carry LogMiner ``SQL_REDO`` text instead of images (half
inserts of all ten columns, half updates of two columns with the full supplemental-logging WHERE),
and the assemble step decodes them with cdclake's JVM decoder (``RedoFastPath``) in the same scan as
the join; bronze and MERGE then read the decoded, assembled window. That is the least any design
that parses SQL_REDO must do: a fused pipeline with no per-stage bookkeeping at all.

Each step runs ``--repeat`` times into a fresh destination: the first run is cold (JIT, class
loading), the best run is warm. The sum of the warm minimums, divided into the row count, is the most
a single window can do on this machine with Spark and Delta alone, before fetching and decoding.

Usage: ``.venv/bin/python benchmarks/run_spark_floor.py [--rows N] [--repeat R] [--decode]`` (``make bench-floor``).
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
KINDS = [["ID", "int"], ["CUSTOMER", "int"], ["AMOUNT", "num"], ["STATUS", "text"], ["NOTE", "text"],
         ["CREATED", "date"], ["UPDATED", "ts6"], ["QTY", "int"], ["SKU", "text"], ["RATIO", "num"]]
# SQL_REDO as LogMiner prints it for APP.ORDERS: numbers quoted, DATE/TIMESTAMP through TO_DATE/TO_TIMESTAMP.
_VALUES = ["CAST(key AS STRING)", "CAST(id * 7 % 1000000 AS STRING)", "CAST(id % 100000 AS STRING)", "'PAID'",
           "concat('order ', id, ' note ', repeat('x', CAST(id % 60 AS INT)))", None, None,
           "CAST(id % 500 AS STRING)", "concat('SKU-', id % 99999)", "'12.345'"]
_LITERALS = [f"concat(\"'\", {v}, \"'\")" if v else None for v in _VALUES]
_LITERALS[5] = "\"TO_DATE('2024-01-01 00:00:00', 'YYYY-MM-DD HH24:MI:SS')\""
_LITERALS[6] = "\"TO_TIMESTAMP('2024-06-01 12:00:00.123456')\""
_NAMES = [k[0] for k in KINDS]
INSERT_SQL = ("concat('insert into \"APP\".\"ORDERS\"(" + ",".join(f'"{n}"' for n in _NAMES) + ") values (', "
              + ", ',', ".join(_LITERALS) + ", ')')")
UPDATE_SQL = ("concat('update \"APP\".\"ORDERS\" set \"STATUS\" = \\'PAID\\', \"QTY\" = \\'7\\' where ', "
              + ", ' and ', ".join(f"'\"{n}\" = ', {lit}" for n, lit in zip(_NAMES, _LITERALS)) + ")")
TARGET_DDL = ("ID BIGINT, CUSTOMER BIGINT, AMOUNT DECIMAL(12,2), STATUS STRING, NOTE STRING, CREATED TIMESTAMP, "
              "UPDATED TIMESTAMP, QTY INT, SKU STRING, RATIO DECIMAL(38,10)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=640_000, help="LogMiner rows in the window")
    ap.add_argument("--repeat", type=int, default=3, help="runs per step (first cold, best warm)")
    ap.add_argument("--decode", action="store_true", help="changes carry SQL_REDO, decoded in the JVM by assemble")
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
    ).selectExpr("*", f"{IMAGE} AS after", f"CASE WHEN id % 2 = 0 THEN {INSERT_SQL} ELSE {UPDATE_SQL} END AS sql_redo",
                  "CASE WHEN id % 2 = 0 THEN 1 ELSE 3 END AS code",
                  ).drop("key").write.parquet(f"{root}/window")
    spark.range(keys).selectExpr(
        f"from_json(to_json(named_struct('ID', id, 'CUSTOMER', id, 'AMOUNT', 1.5, 'STATUS', 'NEW', 'NOTE', 'n', "
        f"'CREATED', '2024-01-01T00:00:00', 'UPDATED', '2024-01-01T00:00:00', 'QTY', 1, 'SKU', 's', "
        f"'RATIO', '1')), '{TARGET_DDL}') AS a").select("a.*").write.format("delta").save(f"{root}/target0")
    window = spark.read.parquet(f"{root}/window")
    if args.decode:
        udf = "cdclake_floor_redo"
        spark._jvm.cdclake.oracle.RedoFastPath.register(
            spark._jsparkSession, udf, json.dumps({"APP.ORDERS": [[0, 1, KINDS]]}))
        window = window.drop("after")
        raw = window.where("op NOT IN ('B', 'C')")
        decoded = raw.selectExpr("txid", "source_table", "seq",
                                 f"{udf}(sql_redo, source_table, CAST(1 AS BIGINT), code) AS d").selectExpr(
            "txid", "source_table", "d.op AS op", "seq", "d.after AS after")
    else:
        decoded = window.where("op NOT IN ('B', 'C')").drop("sql_redo", "code")
    # With --decode, bronze and MERGE read the assembled (decoded) window, as a fused pipeline would.
    changes = decoded

    def assemble(n: int) -> None:
        nonlocal changes
        commits = window.where("op = 'C'").select("txid", F.col("seq").alias("commit_seq"))
        decoded.join(commits, "txid").write.parquet(f"{root}/assembled{n}")
        if args.decode:
            changes = spark.read.parquet(f"{root}/assembled{n}")

    def bronze(n: int) -> None:
        changes.write.format("delta").mode("append").save(f"{root}/bronze{n}")

    def merge(n: int) -> None:
        if args.decode:  # the decoder's canonical images hold every value as text: parse, then cast
            texts = ", ".join(f"{c.split()[0]} STRING" for c in TARGET_DDL.split(", "))
            casts = [f"CAST(a.{c.split()[0]} AS {c.split()[1]}) AS {c.split()[0]}" for c in TARGET_DDL.split(", ")]
            images = changes.selectExpr("seq", f"from_json(after, '{texts}') AS a").selectExpr(
                "seq", f"struct({', '.join(casts)}) AS a")
        else:
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
        "rows": args.rows, "decode": args.decode, "changes": changes.count(),
        "undecoded": changes.where("after IS NULL").count(), "target_rows": keys, "steps_s": steps,
        "floor_warm_s": round(warm, 2), "floor_warm_rows_per_s": round(args.rows / warm),
        "floor_cold_s": round(cold, 2), "floor_cold_rows_per_s": round(args.rows / cold),
    }
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / f"spark-floor{'-decode' if args.decode else ''}-{args.rows}.json").write_text(json.dumps(results, indent=2))
    for k, v in results.items():
        print(f"{k:24} {v}")


if __name__ == "__main__":
    main()
