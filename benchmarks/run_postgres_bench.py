"""cdclake PostgreSQL benchmark: one window of ``--changes`` row changes end to end, against the server's readers.

Everything runs against ONE throwaway cluster (``cdclake.testing.postgres.PostgresServer``) and one local Spark
session (the pipeline's), in this order:

1. A table ``public.pgbench_accounts`` (``aid int`` primary key, ``bid int``, ``abalance numeric(12,2)``,
   ``filler text``, ``note varchar(40)``, ``seen date``) with ``--rows`` rows, a pipeline (``source.type:
   postgresql``; ``source.mining.max_window_bytes`` and ``mining.window_bytes`` 4 GiB so that one window holds
   every change whether decoded on the driver or in Spark tasks; ``mining.decoder`` from ``--decoder``: with
   ``auto`` a window of at least ``mining.parallel_min_bytes``, 32 MiB of WAL, is decoded in tasks) and
   ``Pipeline.snapshot()`` (which creates the publication and the pipeline's slot).
2. A second logical slot ``bench`` (pgoutput), so that the reference readers read exactly the window's changes
   without touching cdclake's slot; then the workload, generated on the server by a PL/pgSQL procedure that
   COMMITs inside its loop: transactions of ``--txn-changes`` (10) row changes, 60 % inserts of new keys, 30 %
   updates of four columns of random live keys, 10 % deletes. Then the flushed WAL's LSN.
3. Reference readers of slot ``bench`` up to that LSN, each timed: (a) ``SELECT count(*) FROM
   pg_logical_slot_peek_binary_changes(...)`` (the server's decoding alone), the faster of ``--repeats``;
   (c) cdclake's own peek read and pgoutput decoder on the driver (``stream.read_window``: a server-side cursor,
   ``pgoutput.decode`` of every message), the faster of ``--repeats``; (b) ``pg_recvlogical --start`` into
   ``/dev/null``, last because it consumes the slot.
4. ONE ``Pipeline.mine()`` window (peek, decode, assembly, bronze, MERGE, slot confirmation), with the run
   report's phases; then the lake compared with the source row by row (``cdclake.testing.compare``).

Ratios: end-to-end changes/s over pg_recvlogical's and over peek's (both reported as changes/s of the same
changes). Usage: ``.venv/bin/python benchmarks/run_postgres_bench.py [--changes N] [--rows R] [--decoder D]``
(``make bench-postgres``). Prints a results table and writes ``benchmarks/out/postgres.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "lib"))

from cdclake.config import load_config_text  # noqa: E402
from cdclake.engine.pipeline import Pipeline  # noqa: E402
from cdclake.sources.postgresql import stream  # noqa: E402
from cdclake.sources.postgresql.pgoutput import Commit, Delete, Insert, Update, parse_lsn  # noqa: E402
from cdclake.testing.compare import compare_table  # noqa: E402
from cdclake.testing.postgres import PostgresServer  # noqa: E402
from common import machine_facts, rate, timed  # noqa: E402

PIPELINE = "pgbench"
TABLE = "public.pgbench_accounts"
REF_SLOT = "bench"

CREATE_TABLE = """
CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance numeric(12,2), filler text,
                               note varchar(40), seen date)
"""
# the initial rows and the workload's inserts alike (g: the key)
ROW_VALUES = ("g::int, (1 + g % 100)::int, round((random() * 100000)::numeric, 2), left(repeat(md5(g::text), 3), 84), "
              "'acct ' || g, date '2024-01-01' + (g % 700)::int")

# Transactions of per_txn row changes (the last may hold fewer): 60 % inserts of new keys (next_key on), 30 %
# updates of four columns of distinct live keys, 10 % deletes of the lowest live keys (low_key on). The live keys
# are always exactly [low_key, next_key), so every statement changes exactly the rows it names: n changes in all.
# The updated keys come one from each of ``upd`` equal buckets of the live range (distinct), looked up with
# = ANY(array) so that the plan is an index scan whatever the table's size.
PROCEDURE = f"""
CREATE PROCEDURE bench_workload(n bigint, per_txn int, next_key bigint, low_key bigint)
LANGUAGE plpgsql AS $$
DECLARE
  done bigint := 0; k int; ins int; upd int; del int; span bigint;
BEGIN
  PERFORM setseed(0.42);
  WHILE done < n LOOP
    k := LEAST(per_txn, n - done);
    upd := (k * 3) / 10;
    del := k / 10;
    ins := k - upd - del;
    INSERT INTO pgbench_accounts (aid, bid, abalance, filler, note, seen)
      SELECT {ROW_VALUES} FROM generate_series(next_key, next_key + ins - 1) g;
    next_key := next_key + ins;
    IF upd > 0 THEN
      span := (next_key - low_key) / upd;
      UPDATE pgbench_accounts
         SET bid = bid + 1, abalance = abalance + round((random() * 200 - 100)::numeric, 2),
             note = 'upd ' || done, seen = seen + 1
       WHERE aid = ANY(ARRAY(SELECT (low_key + i * span + floor(random() * span))::int
                             FROM generate_series(0, upd - 1) i));
    END IF;
    IF del > 0 THEN
      DELETE FROM pgbench_accounts WHERE aid >= low_key AND aid < low_key + del;
      low_key := low_key + del;
    END IF;
    done := done + k;
    COMMIT;
  END LOOP;
END $$
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=1_000_000, help="row changes of the measured window")
    ap.add_argument("--rows", type=int, default=10_000, help="rows of the table before the snapshot (>= 10)")
    ap.add_argument("--txn-changes", type=int, default=10, help="row changes per transaction of the workload")
    ap.add_argument("--warmup-changes", type=int, default=2000, help="row changes of an untimed window mined "
                    "first (0: none)")
    ap.add_argument("--decoder", choices=["driver", "executors", "auto"], default="auto",
                    help="the pipeline file's mining.decoder")
    ap.add_argument("--repeats", type=int, default=2, help="runs of the peek and decoder references; the fastest "
                    "counts")
    ap.add_argument("--shared-buffers", default="256MB", help="shared_buffers of the throwaway server")
    ap.add_argument("--master", default=None, help="Spark master of the pipeline's session, e.g. local[1]")
    ap.add_argument("--workdir", default=None, help="lake dir (default: a temp dir, removed)")
    ap.add_argument("--out", default=str(HERE / "out" / "postgres.json"))
    args = ap.parse_args(argv)
    if args.rows < 10:
        ap.error("--rows must be at least 10 (the updates pick keys from equal buckets of the live keys)")
    return args


def pipeline_file(pg: PostgresServer, lake: Path, args: argparse.Namespace):
    """The pipeline file, shaped as the tests' (``tests/integration/postgres_helpers.py``) but without their Spark
    settings (they turn generated code off for tiny data): one window holds every change, up to 4 GiB of WAL, whether
    decoded on the driver (``source.mining.max_window_bytes``) or in Spark tasks (``mining.window_bytes``)."""
    os.environ["CDCLAKE_BENCH_PG_PASSWORD"] = pg.passwords[pg.cdc_user]
    return load_config_text(
        f"pipeline: {PIPELINE}\n"
        f"source:\n  type: postgresql\n  host: {pg.host}\n  port: {pg.port}\n  database: {pg.database}\n"
        f"  user: {pg.cdc_user}\n  password: ${{CDCLAKE_BENCH_PG_PASSWORD}}\n"
        f"  include_tables: ['public\\.pgbench_accounts']\n"
        f"  mining: {{max_window_bytes: {4 * 2**30}}}\n"
        f"mining: {{decoder: {args.decoder}, window_bytes: {4 * 2**30}}}\n"
        f"lake:\n  root: {lake}\n"
        + (f"spark: {{master: '{args.master}'}}\n" if args.master else ""))


# ---- the reference readers of slot `bench` -------------------------------------------------------------------


def peek_count(pg: PostgresServer, publication: str, upto: str) -> int:
    """The server's decoding alone: every message of the window produced and counted inside the server."""
    with pg.connect() as conn:
        return int(conn.execute(
            "SELECT count(*) FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL, 'proto_version', '1', "
            "'publication_names', %s)", (REF_SLOT, upto, publication)).fetchone()[0])


def driver_decode(settings: dict, publication: str, upto: int) -> dict[str, int]:
    """cdclake's read on the driver: its peek (a server-side cursor of ``stream.FETCH_ROWS`` rows) and
    ``pgoutput.decode`` of every message, the row changes counted (nothing assembled, nothing staged)."""
    import psycopg

    counts = {"insert": 0, "update": 0, "delete": 0, "commit": 0, "messages": 0}
    kinds = {Insert: "insert", Update: "update", Delete: "delete", Commit: "commit"}
    with psycopg.connect(**settings, autocommit=True) as conn:
        read = stream.WindowRead(upto)
        for message in stream.read_window(conn, REF_SLOT, publication, upto, None, read):
            kind = kinds.get(type(message))
            if kind is not None:
                counts[kind] += 1
        counts["messages"] = read.messages
    return counts


def recvlogical(pg: PostgresServer, publication: str, upto: str) -> tuple[float, list[str]]:
    """``pg_recvlogical`` of the same version as the server, streaming slot ``bench`` to ``upto`` into
    /dev/null (it confirms what it received: the slot moves)."""
    cmd = [str(pg.bindir / "pg_recvlogical"), "--start", "-S", REF_SLOT, "-P", "pgoutput",
           "-o", "proto_version=1", "-o", f"publication_names={publication}", f"--endpos={upto}",
           "-f", "/dev/null", "--no-loop", "-h", pg.host, "-p", str(pg.port), "-d", pg.database, "-U", pg.cdc_user]
    env = {**os.environ, "PGPASSWORD": pg.passwords[pg.cdc_user]}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"pg_recvlogical failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return took, cmd


# ---- main ---------------------------------------------------------------------------------------------------


def print_table(title: str, rows: list[tuple[str, object]]) -> None:
    print(f"\n{title}")
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k.ljust(width)}  {v}")


def run(args: argparse.Namespace, work: Path, facts: dict) -> dict:
    n = args.changes
    settings = {"shared_buffers": args.shared_buffers, "max_wal_size": "8GB", "checkpoint_timeout": "1h"}
    with PostgresServer(settings=settings) as pg, pg.connect() as conn:
        facts["postgres"] = conn.execute("SHOW server_version").fetchone()[0]
        log(f"PostgreSQL {facts['postgres']} on port {pg.port}")
        conn.execute(CREATE_TABLE)
        _, load_s = timed(lambda: conn.execute(f"INSERT INTO pgbench_accounts SELECT {ROW_VALUES} "
                                               f"FROM generate_series(1, {args.rows}) g"))
        conn.execute("ANALYZE pgbench_accounts")
        log(f"{TABLE}: {args.rows} rows in {load_s:.2f}s")

        pipeline = Pipeline.from_config(pipeline_file(pg, work / "lake", args), app_name="cdclake-postgres-bench")
        spark = pipeline.spark
        spark.sparkContext.setLogLevel("ERROR")
        facts["spark_master"] = spark.sparkContext.master
        facts["spark_runtime"] = spark.version
        log("Pipeline.snapshot()")
        snap, snap_s = timed(pipeline.snapshot)
        log(f"  {snap.rows_by_table.get(TABLE, 0)} rows in {snap_s:.2f}s")
        publication, slot = pipeline.source.publication, pipeline.source.slot
        if not conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)).fetchall():
            raise RuntimeError(f"the snapshot created no publication {publication}")

        conn.execute(PROCEDURE)
        if args.warmup_changes:  # an untimed window first (JIT, Python workers), as the other benches do
            conn.execute("CALL bench_workload(%s, %s, %s, %s)", (args.warmup_changes, args.txn_changes,
                                                                 args.rows + 1, 1))
            warm = pipeline.mine()
            log(f"warm-up window: {warm.events} changes in {warm.duration_s:.2f}s")
        low_key, next_key = conn.execute("SELECT min(aid), max(aid) + 1 FROM pgbench_accounts").fetchone()
        # the reference slot after the publication (pgoutput reads it in the catalog as of each change)
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (REF_SLOT,))
        start_lsn = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0]
        log(f"workload: {n} row changes in transactions of {args.txn_changes} (CALL bench_workload)")
        _, work_s = timed(lambda: conn.execute("CALL bench_workload(%s, %s, %s, %s)",
                                               (n, args.txn_changes, next_key, low_key)))
        upto = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0]
        wal_bytes = parse_lsn(upto) - parse_lsn(start_lsn)
        rows_now = int(conn.execute("SELECT count(*) FROM pgbench_accounts").fetchone()[0])
        log(f"  {work_s:.2f}s; WAL {start_lsn} -> {upto} ({wal_bytes / 2**20:.1f} MiB); table now {rows_now} rows")

        log(f"reference (a): count(*) of pg_logical_slot_peek_binary_changes('{REF_SLOT}', '{upto}', ...)")
        peek_runs = []
        for _ in range(args.repeats):
            messages, took = timed(lambda: peek_count(pg, publication, upto))
            peek_runs.append(round(took, 3))
            log(f"  {messages} messages in {took:.2f}s")
        log("reference (c): cdclake's peek read + pgoutput.decode on the driver")
        dec_runs = []
        for _ in range(args.repeats):
            counts, took = timed(lambda: driver_decode(pipeline.source.settings(), publication, parse_lsn(upto)))
            dec_runs.append(round(took, 3))
            log(f"  {counts} in {took:.2f}s")
        decoded = counts["insert"] + counts["update"] + counts["delete"]
        if decoded != n:
            raise RuntimeError(f"the decoder read {decoded} row changes of slot {REF_SLOT}, the workload made {n}")
        log("reference (b): pg_recvlogical --start (consumes the slot)")
        recv_s, recv_cmd = recvlogical(pg, publication, upto)
        confirmed = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                                 (REF_SLOT,)).fetchone()[0]
        log(f"  {recv_s:.2f}s; slot {REF_SLOT} confirmed to {confirmed}")
        conn.execute("SELECT pg_drop_replication_slot(%s)", (REF_SLOT,))

        log(f"Pipeline.mine() (one window, mining.decoder {args.decoder})")
        report, mine_wall = timed(pipeline.mine)
        log(f"  {report.events} changes / {report.transactions} txns in {mine_wall:.2f}s (report.duration_s="
            f"{report.duration_s:.2f}, {report.windows} window(s)) {report.start} -> {report.end}; "
            f"phases {report.phases}")
        log("compare the lake with the source")
        comparison, compare_s = timed(lambda: compare_table(spark, pipeline, TABLE, on_driver=False))
        log(f"  {comparison.summary()} ({compare_s:.1f}s)")
        spark.stop()

    # where the window was decoded, as the source decides (mining.decoder; auto: tasks from parallel_min_bytes on)
    window_wal = parse_lsn(report.end.split()[-1]) - parse_lsn(report.start.split()[-1])
    decoded_on = "executors" if args.decoder == "executors" or (
        args.decoder == "auto" and window_wal >= pipeline.config.mining.parallel_min_bytes) else "driver"
    e2e = rate(report.events, report.duration_s)
    peek_rate, recv_rate = rate(n, min(peek_runs)), rate(n, recv_s)
    return {
        "table": TABLE, "rows": args.rows, "load_s": round(load_s, 3),
        "snapshot_s": round(snap_s, 3), "snapshot_report_duration_s": round(snap.duration_s, 3),
        "snapshot_rows_per_s": rate(args.rows, snap_s),
        "publication": publication, "slot": slot, "reference_slot": REF_SLOT,
        "changes": n, "txn_changes": args.txn_changes, "workload_s": round(work_s, 3),
        "workload_changes_per_s": rate(n, work_s), "wal_start": start_lsn, "wal_end": upto, "wal_bytes": wal_bytes,
        "rows_after": rows_now,
        "peek_messages": messages, "peek_s": min(peek_runs), "peek_runs_s": peek_runs,
        "peek_changes_per_s": peek_rate,
        "decoder_counts": counts, "decoder_s": min(dec_runs), "decoder_runs_s": dec_runs,
        "decoder_changes_per_s": rate(decoded, min(dec_runs)),
        "recvlogical_cmd": " ".join(recv_cmd), "recvlogical_s": round(recv_s, 3),
        "recvlogical_changes_per_s": recv_rate,
        "mining_decoder": args.decoder, "decoded_on": decoded_on,
        "window_id": report.window_id, "window": f"{report.start} -> {report.end}", "window_wal_bytes": window_wal,
        "windows": report.windows,
        "row_changes": report.events, "transactions": report.transactions,
        "mine_wall_s": round(mine_wall, 3), "mine_report_duration_s": round(report.duration_s, 3),
        "mine_phases_s": dict(report.phases), "end_to_end_changes_per_s": e2e,
        "ratio_end_to_end_vs_recvlogical": round(e2e / recv_rate, 4) if recv_rate else None,
        "ratio_end_to_end_vs_peek": round(e2e / peek_rate, 4) if peek_rate else None,
        "lake_rows": comparison.lake_rows, "source_rows": comparison.source_rows,
        "lake_equals_source": comparison.equal, "compare": comparison.summary(), "compare_s": round(compare_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    facts = machine_facts("psycopg")
    own_work = args.workdir is None
    work = Path(args.workdir or tempfile.mkdtemp(prefix="cdclake-pg-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "lake", ignore_errors=True)
    t_all = time.perf_counter()
    try:
        r = run(args, work, facts)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    results = {"machine": facts, "args": vars(args), "postgres": r, "total_s": round(time.perf_counter() - t_all, 1)}

    print_table("Machine", [(k, v) for k, v in facts.items()])
    print_table(f"1. Set-up: {TABLE}, {r['rows']} rows", [
        ("Pipeline.snapshot()", f"{r['snapshot_s']:.2f} s  {r['snapshot_rows_per_s']:,.0f} rows/s"),
        ("workload (CALL bench_workload)", f"{r['workload_s']:.2f} s  {r['workload_changes_per_s']:,.0f} changes/s, "
                                           f"{r['wal_bytes'] / 2**20:.1f} MiB of WAL"),
    ])
    print_table(f"2. Window of {r['changes']} row changes ({r['transactions']} transactions), "
                f"mining.decoder {r['mining_decoder']}: decoded on the {r['decoded_on']}", [
        ("Pipeline.mine() end to end", f"{r['mine_report_duration_s']:.2f} s  "
                                       f"{r['end_to_end_changes_per_s']:,.0f} changes/s"),
        ("... of which", ", ".join(f"{k} {v:.2f} s" for k, v in r["mine_phases_s"].items())),
        ("peek count(*) (server decoding)", f"{r['peek_s']:.2f} s  {r['peek_changes_per_s']:,.0f} changes/s "
                                            f"({r['peek_messages']} messages; runs {r['peek_runs_s']})"),
        ("peek + pgoutput.decode (driver)", f"{r['decoder_s']:.2f} s  {r['decoder_changes_per_s']:,.0f} changes/s "
                                            f"(runs {r['decoder_runs_s']})"),
        ("pg_recvlogical -> /dev/null", f"{r['recvlogical_s']:.2f} s  {r['recvlogical_changes_per_s']:,.0f} "
                                        "changes/s"),
        ("ratio end-to-end / pg_recvlogical", r["ratio_end_to_end_vs_recvlogical"]),
        ("ratio end-to-end / peek", r["ratio_end_to_end_vs_peek"]),
        ("lake = source", f"{r['lake_equals_source']}: {r['compare']}"),
    ])
    print(f"\ntotal {results['total_s']} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"wrote {out}")
    return 0 if r["lake_equals_source"] else 1


if __name__ == "__main__":
    sys.exit(main())
