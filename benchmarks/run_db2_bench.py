"""cdclake Db2 benchmark over the capture emulator: one window of ``--cd-rows`` CD rows, end to end, and its read.

1. A table ``APP.ORDERS`` (8 columns: integers, DECIMAL, VARCHAR, TIMESTAMP, DATE) with ``--rows`` rows is
   registered and snapshotted.
2. ``--cd-rows`` CD rows are written straight into its CD table and ``IBMSNAP_UOW``, as Capture writes them:
   transactions of 10 rows, 70 % of them inserts of new keys and 30 % updates of earlier keys as delete/insert
   pairs; then the register's synchpoint moves past them. (Written in bulk: the emulator's transaction API
   would spend the benchmark's time in Python.)
3. **Read phase**: the window's CD rows read by Spark exactly as the source plans them (its reads split by
   commit sequence into ``mining.max_rows_per_read``-row tasks, through the SQLite JDBC driver the tests use),
   every column converted to its canonical JSON image, into Spark's ``noop`` sink; the fastest of ``--repeats``.
4. **End to end**: one ``Pipeline.mine()`` of the window: plan, read, pair updates, number commits, bronze,
   MERGE. Reported as CD rows/s.

Run once per Spark master (``--master local[1]`` and ``local[2]``) to compare the read phase on one and two
cores: ``make bench-db2`` runs both. Usage: ``.venv/bin/python benchmarks/run_db2_bench.py [--cd-rows N]``.
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
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT))

from cdclake.spark import build_spark  # noqa: E402
from cdclake.testing.db2_emulator import EmulatedDb2, db2_timestamp_text, store  # noqa: E402

from tests.integration.db2_helpers import db2_pipeline  # noqa: E402

COLUMNS = [("ID", "INTEGER", False), ("CUSTOMER", "INTEGER", True), ("AMOUNT", "DECIMAL(12,2)", True),
           ("STATUS", "VARCHAR(20)", True), ("NOTE", "VARCHAR(200)", True), ("CREATED", "TIMESTAMP(6)", True),
           ("DUE", "DATE", True), ("QTY", "SMALLINT", True)]
ROWS_PER_TXN = 10


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def values(rng: random.Random, i: int) -> dict:
    return {"ID": i, "CUSTOMER": rng.randint(1, 10**6), "AMOUNT": Decimal(rng.randint(100, 10**7)) / 100,
            "STATUS": rng.choice(["NEW", "PAID", "SHIPPED"]), "NOTE": f"order {i} " + "x" * rng.randint(0, 60),
            "CREATED": dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**13)),
            "DUE": dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 900)), "QTY": rng.randint(1, 500)}


def write_cd_rows(db: EmulatedDb2, rng: random.Random, first_key: int, count: int) -> int:
    """``count`` CD rows in transactions of :data:`ROWS_PER_TXN`, with their UOW rows; returns the keys inserted."""
    cs, cd = db.control_schema, "CDC_APP_ORDERS"
    types = [t for _, t, _ in db.table(cs, cd).columns[3:]]
    names = [c for c, _, _ in COLUMNS]
    key, written, txid = first_key, 0, 10**6
    cd_batch: list[tuple] = []
    uow_batch: list[tuple] = []
    seq = int.from_bytes(db.next_lsn(), "big") + 0x100

    def image(v: dict) -> tuple:
        return tuple(store(t, v[n]) for t, n in zip(types, names, strict=True))

    db.conn.execute("BEGIN")
    while written < count:
        seq += 0x100
        commit = seq.to_bytes(16, "big")
        intent = seq - 0x80
        in_txn = 0
        while in_txn < ROWS_PER_TXN and written < count:
            intent += 2
            if key > first_key + 100 and rng.random() < 0.3 and count - written >= 2:
                old = rng.randrange(first_key, key)
                before, after = values(rng, old), values(rng, old)
                cd_batch.append((commit, intent.to_bytes(16, "big"), "D", *image(before)))
                cd_batch.append((commit, (intent + 1).to_bytes(16, "big"), "I", *image(after)))
                written += 2
                in_txn += 2
            else:
                cd_batch.append((commit, intent.to_bytes(16, "big"), "I", *image(values(rng, key))))
                key += 1
                written += 1
                in_txn += 1
        txid += 1
        uow_batch.append((txid.to_bytes(10, "big"), commit, db2_timestamp_text(db.now(), 6), "APPL", "APP"))
        if len(cd_batch) >= 50_000:
            db.conn.executemany(f'INSERT INTO "{cs}"."{cd}" VALUES ({", ".join("?" * (3 + len(names)))})', cd_batch)
            cd_batch.clear()
    if cd_batch:
        db.conn.executemany(f'INSERT INTO "{cs}"."{cd}" VALUES ({", ".join("?" * (3 + len(names)))})', cd_batch)
    db.conn.executemany(f'INSERT INTO "{cs}"."IBMSNAP_UOW" (IBMSNAP_UOWID, IBMSNAP_COMMITSEQ, IBMSNAP_LOGMARKER, '
                        "IBMSNAP_AUTHTKN, IBMSNAP_AUTHID) VALUES (?, ?, ?, ?, ?)", uow_batch)
    last = (seq + 0x10).to_bytes(16, "big")
    db.conn.execute(f'UPDATE "{cs}"."IBMSNAP_REGISTER" SET CD_NEW_SYNCHPOINT = ? WHERE SOURCE_TABLE = ?',
                    ((seq).to_bytes(16, "big"), "ORDERS"))
    db.conn.execute("COMMIT")
    db.capture.synchpoint = last
    db.capture._global_record(last, db2_timestamp_text(db.now(), 6))  # the synchpoint past the window
    return len(uow_batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000, help="rows snapshotted first")
    parser.add_argument("--cd-rows", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=2, help="read-phase runs; the fastest counts")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rng = random.Random(5)
    tmp = Path(tempfile.mkdtemp(prefix="cdclake-db2-bench-"))
    db = EmulatedDb2(tmp / "db2")
    db.create_table("APP", "ORDERS", COLUMNS, ["ID"])
    db.add_table("APP", "ORDERS")
    with db.transaction() as tx:
        for i in range(1, args.rows + 1):
            tx.insert("APP", "ORDERS", values(rng, i))
    db.capture.cycle()
    spark = build_spark("cdclake-db2-bench", master=args.master)
    pipeline = db2_pipeline(spark, db, tmp / "lake", include=r"APP\.ORDERS")
    t0 = time.perf_counter()
    pipeline.snapshot()
    snapshot_s = time.perf_counter() - t0
    log(f"snapshot of {args.rows} rows: {snapshot_s:.1f} s")
    t0 = time.perf_counter()
    txns = write_cd_rows(db, rng, args.rows + 1, args.cd_rows)
    log(f"wrote {args.cd_rows} CD rows in {txns} transactions: {time.perf_counter() - t0:.1f} s")

    source = pipeline.source
    from cdclake.sources.db2 import catalog
    from cdclake.sources.db2.reads import TableRead, cd_rows

    lo = pipeline.control.table_states()["APP.ORDERS"].position["commitseq"]  # the snapshot's position
    hi = source._high_water_mark().seq  # type: ignore[union-attr]
    reg = catalog.registrations(source.conn(), source.cs)["APP.ORDERS"]
    schema = catalog.table_schema(source.conn(), reg)
    read = TableRead("APP.ORDERS", reg, schema, 1, source._cd_count(reg, lo, hi), None)
    reads_s = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        # every column read and converted (a count alone would let Spark read no columns)
        cd_rows(spark, source.config, source.types, read, lo, hi).write.format("noop").mode("overwrite").save()
        reads_s.append(time.perf_counter() - t0)
    parts = cd_rows(spark, source.config, source.types, read, lo, hi).rdd.getNumPartitions()
    log(f"read phase: {min(reads_s):.1f} s ({parts} reads), runs {[round(s, 1) for s in reads_s]}")

    t0 = time.perf_counter()
    report = pipeline.mine()
    mine_s = time.perf_counter() - t0
    log(f"mine: {report.events} changes in {report.transactions} transactions, {mine_s:.1f} s, "
        f"{args.cd_rows / mine_s:,.0f} CD rows/s; phases {report.phases}")
    target = spark.read.format("delta").load(pipeline.layout.target("APP.ORDERS")).count()
    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": platform.node(),
        "cpus": __import__("os").cpu_count(), "master": args.master, "snapshot_rows": args.rows,
        "snapshot_s": round(snapshot_s, 2), "cd_rows": args.cd_rows, "transactions": txns,
        "changes": report.events, "reads": parts, "read_s": round(min(reads_s), 2),
        "read_runs_s": [round(s, 2) for s in reads_s], "read_rows_per_s": round(args.cd_rows / min(reads_s)),
        "mine_s": round(mine_s, 2), "phases": report.phases, "cd_rows_per_s": round(args.cd_rows / mine_s),
        "target_rows": target,
    }
    print(json.dumps(result, indent=2))
    out = Path(args.out or HERE / "out" / f"db2-{args.master.replace('[', '').replace(']', '')}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
