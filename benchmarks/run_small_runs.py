"""cdclake small runs: what an operator feels on a pipeline scheduled every minute.

One throwaway MariaDB server, one 1,000-row table, the ``cdclake`` command line as a user runs it
(a new process each time, JVM start included). Timed, each as a whole process:

1. ``cdclake mine`` with nothing new in the log (an idle run);
2. ``cdclake mine`` of a window of 300 changes to the table (its Spark jobs counted from the
   run's Spark event log);
3. ``cdclake status``;

and, as the reference each figure is read against, the **floor**: a new Python process that starts a
Spark session with Delta, appends the same number of rows to a Delta table and MERGEs them into a
1,000-row Delta table, nothing else (what any Spark + Delta batch job of that size costs here).

Usage: ``.venv/bin/python benchmarks/run_small_runs.py [--repeat N] [--out FILE]`` (part of ``make bench``).
Prints the figures and writes ``benchmarks/out/small_runs.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "lib"))

from cdclake.testing.mariadb import MariaDBServer  # noqa: E402

CDCLAKE = str(ROOT / ".venv" / "bin" / "cdclake")
ROWS = 1000
CHANGES = 300


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def pipeline_file(db: MariaDBServer, work: Path, events: Path) -> Path:
    path = work / "pipeline.yaml"
    path.write_text(
        "pipeline: small\n"
        f"source:\n  type: mariadb\n  host: 127.0.0.1\n  port: {db.port}\n  user: {db.cdc_user}\n"
        "  password: ${CDCLAKE_BENCH_PASSWORD}\n  server_id: 4711\n  include_tables: ['shop\\.items']\n"
        f"lake:\n  root: {work / 'lake'}\n"
        f"spark:\n  conf:\n    spark.eventLog.enabled: 'true'\n    spark.eventLog.dir: '{events}'\n"
        "    spark.eventLog.compress: 'false'\n    spark.eventLog.rolling.enabled: 'false'\n"
    )
    return path


def cdclake(*args: str) -> tuple[float, str]:
    """One ``cdclake`` process: its wall time and output (a failure stops the benchmark)."""
    began = time.perf_counter()
    done = subprocess.run([CDCLAKE, *args], capture_output=True, text=True, env=os.environ)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"cdclake {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took, done.stdout


def spark_jobs(events: Path, before: set[str]) -> int | None:
    """Jobs started by the Spark application whose event log appeared after ``before`` (None: it ran no Spark)."""
    new = [p for p in events.iterdir() if p.name not in before]
    if not new:
        return None
    files = sorted(new[0].iterdir()) if new[0].is_dir() else [new[0]]  # a rolling log is a directory
    text = "".join(f.read_text(errors="replace") for f in files if not f.name.startswith("appstatus"))
    return sum(1 for line in text.splitlines() if '"Event":"SparkListenerJobStart"' in line)


FLOOR = """
import sys, time
began = time.perf_counter()
sys.path.insert(0, {lib!r})
from cdclake.spark import build_spark
from delta.tables import DeltaTable
spark = build_spark("floor")
root, mode, n = {root!r}, sys.argv[1], int(sys.argv[2])
if mode == "setup":
    spark.range(1, {rows} + 1).selectExpr("CAST(id AS INT) id", "CONCAT('item', id) name", "CAST(id % 50 AS INT) qty",
        "CAST(0 AS INT) op").write.format("delta").save(root + "/target")
    spark.range(0).selectExpr("CAST(id AS INT) id", "'' name", "CAST(0 AS INT) qty", "CAST(0 AS INT) op", "0L AS run"
        ).write.format("delta").save(root + "/changes")
    sys.exit(0)
spark.range({changes}).selectExpr(f"CAST(id * 7 + 1 + {{n}} AS INT) id", "'x' name", "CAST(1 AS INT) qty",
    "CAST(id % 3 AS INT) op", f"CAST({{n}} AS BIGINT) run").write.format("delta").mode("append").save(root + "/changes")
batch = spark.read.format("delta").load(root + "/changes").where(f"run = {{n}}").drop("run")
DeltaTable.forPath(spark, root + "/target").alias("t").merge(batch.alias("s"), "t.id = s.id").whenMatchedDelete(
    "s.op = 2").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
print(round(time.perf_counter() - began, 3))
"""


def floor_runs(work: Path, repeat: int) -> list[float]:
    """Wall times of the floor process (see the module docstring), after an untimed set-up process."""
    script = work / "floor.py"
    script.write_text(FLOOR.format(lib=str(ROOT / "lib"), root=str(work / "floor"), rows=ROWS, changes=CHANGES))
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, str(script), "setup", "0"], check=True, capture_output=True)
    out = []
    for n in range(1, repeat + 1):
        began = time.perf_counter()
        subprocess.run([python, str(script), "run", str(n)], check=True, capture_output=True)
        out.append(time.perf_counter() - began)
        log(f"floor (Spark + Delta, append + MERGE of {CHANGES} rows): {out[-1]:.2f} s")
    return out


def changes(db: MariaDBServer, n: int, round_no: int) -> None:
    """``n`` row changes in 30 transactions: 30 % updates, 40 % inserts, 30 % deletes."""
    conn = db.connect(database="shop")
    with conn.cursor() as cur:
        per = n // 30
        third = per * 3 // 10
        for t in range(30):
            base = 100_000 + round_no * 10_000 + t * per
            cur.execute("BEGIN")
            for i in range(third):
                cur.execute("UPDATE items SET qty = qty + 1 WHERE id = %s", ((t * per + i) % ROWS + 1,))
            for i in range(per - 2 * third):
                cur.execute("INSERT INTO items (id, name, qty) VALUES (%s, %s, %s)", (base + i, f"n{base + i}", i))
            for i in range(third):
                cur.execute("DELETE FROM items WHERE id = %s", (base + i,))
            cur.execute("COMMIT")
    conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each timed command (median reported)")
    ap.add_argument("--out", default=str(HERE / "out" / "small_runs.json"))
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cdclake-small-"))
    events = work / "spark-events"
    events.mkdir()
    results: dict[str, object] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": ROWS,
                                  "changes": CHANGES}
    with MariaDBServer() as db:
        os.environ["CDCLAKE_BENCH_PASSWORD"] = db.cdc_password
        db.execute("CREATE DATABASE shop")
        db.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), qty INT, "
                   "updated TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3))")
        db.execute("INSERT INTO shop.items (id, name, qty) SELECT seq, CONCAT('item', seq), seq % 50 "
                   f"FROM shop.seq_1_to_{ROWS}")
        config = str(pipeline_file(db, work, events))
        took, _ = cdclake("snapshot", "--config", config)
        log(f"snapshot: {took:.1f} s")
        cdclake("mine", "--config", config)  # the first window after the snapshot
        idle, window, jobs, status = [], [], [], []
        for round_no in range(args.repeat):
            took, out = cdclake("mine", "--config", config)
            idle.append(took)
            log(f"idle mine: {took:.2f} s ({out.strip().splitlines()[0] if out.strip() else ''})")
            changes(db, CHANGES, round_no)
            before = {p.name for p in events.iterdir()}
            took, out = cdclake("mine", "--config", config)
            window.append(took)
            jobs.append(spark_jobs(events, before))
            log(f"{CHANGES}-change mine: {took:.2f} s, {jobs[-1]} Spark jobs ({out.strip().splitlines()[0]})")
            took, _ = cdclake("status", "--config", config)
            status.append(took)
            log(f"status: {took:.2f} s")
        floor = floor_runs(work, args.repeat)
        results.update({
            "floor_s": statistics.median(floor),
            "window_300_vs_floor": statistics.median(window) / statistics.median(floor),
            "idle_mine_s": statistics.median(idle), "window_300_s": statistics.median(window),
            "window_300_jobs": max(j or 0 for j in jobs), "status_s": statistics.median(status),
            "runs": {"idle_mine_s": idle, "window_300_s": window, "window_300_jobs": jobs, "status_s": status,
                     "floor_s": floor},
        })
    print(f"\n{'figure':42} {'median':>9}  aim")
    print(f"{'idle cdclake mine (s, JVM start included)':42} {results['idle_mine_s']:9.2f}  <= 10")
    print(f"{'300-change cdclake mine (s)':42} {results['window_300_s']:9.2f}  <= 15")
    print(f"{'... Spark jobs':42} {results['window_300_jobs']:9d}  <= 25")
    print(f"{'cdclake status (s)':42} {results['status_s']:9.2f}  <= 3")
    print(f"{'floor: Spark + Delta append + MERGE (s)':42} {results['floor_s']:9.2f}")
    print(f"{'300-change mine / floor':42} {results['window_300_vs_floor']:9.2f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
