"""cdclake Oracle benchmark over the LogMiner simulator: LogMiner rows/s end to end, and snapshot writes.

1. A table ``APP.ORDERS`` (10 columns: numbers, text, DATE, TIMESTAMP) is snapshotted at one SCN
   from the simulator's flashback state (``--rows`` rows): canonical rows -> typed Delta target.
   This times cdclake's side of a snapshot; the JDBC ``AS OF SCN`` read itself needs a real Oracle.
2. A write workload (``--txns`` transactions of inserts/updates/deletes, several open at once) is
   generated, then ONE ``Pipeline.mine()`` window processes it end to end: fetch from the simulated
   ``V$LOGMNR_CONTENTS`` (python-oracledb's DB-API path), stage, parse SQL_REDO in Spark, assemble
   transactions (in-flight buffer), bronze, MERGE. Reported: LogMiner rows/s (every row the query
   returns, START/COMMIT included) and change rows/s.
3. The same window's parse alone: ``parse_redo`` over the DML statements in one Python process.

Usage: ``.venv/bin/python benchmarks/run_oracle_bench.py [--rows N] [--txns T]`` (``make bench-oracle``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT))

from cdclake.sources.oracle.redo import parse_redo  # noqa: E402
from cdclake.spark import build_spark  # noqa: E402
from cdclake.testing.logminer_sim import SimulatedOracle  # noqa: E402

from tests.integration.oracle_helpers import bronze_markers, oracle_pipeline  # noqa: E402

COLUMNS = [("ID", "NUMBER(12)"), ("CUSTOMER", "NUMBER(10)"), ("AMOUNT", "NUMBER(12,2)"), ("STATUS", "VARCHAR2(20)"),
           ("NOTE", "VARCHAR2(200)"), ("CREATED", "DATE"), ("UPDATED", "TIMESTAMP(6)"), ("QTY", "NUMBER(6)"),
           ("SKU", "VARCHAR2(30)"), ("RATIO", "NUMBER")]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def row(rng: random.Random, i: int) -> dict:
    return {"ID": i, "CUSTOMER": rng.randint(1, 10**6), "AMOUNT": round(rng.uniform(1, 10**5), 2),
            "STATUS": rng.choice(["NEW", "PAID", "SHIPPED"]), "NOTE": f"order {i} note " + "x" * rng.randint(0, 60),
            "CREATED": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rng.randint(0, 10**7)),
            "UPDATED": dt.datetime(2024, 6, 1, 12, 0, 0, rng.randint(0, 999999)), "QTY": rng.randint(1, 500),
            "SKU": f"SKU-{rng.randint(1, 99999)}", "RATIO": rng.randint(1, 10**6) / 1000}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows in the table at the snapshot")
    ap.add_argument("--txns", type=int, default=50_000, help="transactions mined in the window")
    ap.add_argument("--changes", type=int, default=4, help="row changes per transaction")
    args = ap.parse_args(argv)
    rng = random.Random(1)
    db = SimulatedOracle(seed=1, literal_split=None)
    db.create_table("APP", "ORDERS", COLUMNS, ["ID"])
    log(f"loading {args.rows} rows into the simulator")
    with db.bulk():
        for start in range(0, args.rows, 1000):
            tx = db.begin()
            for i in range(start, min(start + 1000, args.rows)):
                tx.insert("APP", "ORDERS", row(rng, i))
            tx.commit()
    spark = build_spark("cdclake-oracle-bench")
    lake = Path(tempfile.mkdtemp(prefix="cdclake-orabench-"))
    pipeline = oracle_pipeline(spark, db, lake, name="bench")
    t = time.time()
    pipeline.snapshot()
    snap_s = time.time() - t
    log(f"snapshot {args.rows} rows: {snap_s:.1f}s")

    log(f"generating {args.txns} transactions")
    next_id = args.rows
    first_scn = db.current_scn
    with db.bulk():
        open_txs = []
        for _ in range(args.txns):
            tx = db.begin(thread=1)
            for _ in range(args.changes):
                kind = rng.random()
                if kind < 0.5:
                    tx.insert("APP", "ORDERS", row(rng, next_id))
                    next_id += 1
                elif kind < 0.9:
                    key = rng.randrange(0, args.rows // 2)
                    if any(key in o[1] for o in open_txs):
                        continue
                    tx.update("APP", "ORDERS", {"ID": key}, {"STATUS": rng.choice(["PAID", "SHIPPED"]),
                                                            "QTY": rng.randint(1, 500)})
                else:
                    tx.insert("APP", "ORDERS", row(rng, next_id))
                    tx.delete("APP", "ORDERS", {"ID": next_id})
                    next_id += 1
            tx.commit()
    redo = db.redo(first_scn, db.current_scn)
    dml = [r[15] for r in redo if r[6] in (1, 2, 3)]
    log(f"{len(redo)} LogMiner rows ({len(dml)} DML)")

    t = time.time()
    report = pipeline.mine()
    mine_s = time.time() - t
    marker = bronze_markers(spark, pipeline)[-1]
    log(f"mine window: {mine_s:.1f}s, {report.events} changes, {report.transactions} transactions")

    t = time.time()
    for sql in dml:
        parse_redo(sql)
    parse_s = time.time() - t

    results = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {platform.python_version()}",
        "snapshot_rows": args.rows, "snapshot_s": round(snap_s, 2), "snapshot_rows_per_s": round(args.rows / snap_s),
        "logminer_rows": len(redo), "dml_rows": len(dml), "mine_s": round(mine_s, 2),
        "logminer_rows_per_s": round(len(redo) / mine_s), "changes_per_s": round(report.events / mine_s),
        "parse_only_rows_per_s_1core": round(len(dml) / parse_s), "batches": marker.get("mining_batches"),
        "phases_s": report.phases,
    }
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "oracle-results.json").write_text(json.dumps(results, indent=2))
    for k, v in results.items():
        print(f"{k:32} {v}")


if __name__ == "__main__":
    main()
