# ruff: noqa: SIM115, E501, E741, B007, B023  (a measured prototype, kept as it ran: REPORT.md)
"""PROTOTYPE driver: plan binlog splits on the driver, decode them in Spark tasks (DSv2 reader proto.BinlogSource).

run.py all   [--events 250000] [--splits 8] [--reps 3] [--info info.json]   # server (or attach) + plan + check + bench 1 & 2
run.py bench --cores N --info info.json --plan plan.json [--reps 3]          # one Spark session (called by `all`)
"""

import argparse
import json
import os
import statistics
import subprocess
import time

import pymysql

D = "/tmp/jdsv2"
PY = "/work/main/.venv/bin/python"
JARS = [f"{D}/jars/mysql-binlog-connector-java-0.30.1.jar", f"{D}/jars/binlog-dsv2-proto.jar"]
FMT = "proto.BinlogSource"


def log(m):
    print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True)


def connect(info):
    return pymysql.connect(host="127.0.0.1", port=info["port"], user=info["cdc_user"], password=info["cdc_password"])


# ---- planning ------------------------------------------------------------------------------------------


def first_gtid(cur, f, pos, offset, limit_end, window=20):
    """Pos of the first 'Gtid' event at or after event #offset counted FROM pos, or None if past limit_end/EOF."""
    while True:
        cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {int(offset)}, {int(window)}", (f,))
        rows = cur.fetchall()  # Log_name, Pos, Event_type, Server_id, End_log_pos, Info
        if not rows:
            return None
        for r in rows:
            if int(r[1]) >= limit_end:
                return None
            if r[2] == "Gtid":
                return int(r[1])
        offset += len(rows)
        window = min(window * 4, 5000)


def plan_splits(info, n_splits, bytes_per_event_guess=160.0):
    """Window = [start_file:start_pos, end_file:end_pos). Splits are per file, sub-split by chained LIMIT probes:
    probe i runs FROM the previous split point, so the server scans each file about once in total."""
    t0 = time.perf_counter()
    c = connect(info)
    cur = c.cursor()
    cur.execute("SHOW BINARY LOGS")
    files = [(r[0], int(r[1])) for r in cur.fetchall()]
    ranges = []
    inside = False
    for f, size in files:
        if f == info["start_file"]:
            inside = True
        if not inside:
            continue
        lo = info["start_pos"] if f == info["start_file"] else 4
        hi = info["end_pos"] if f == info["end_file"] else size
        if hi > lo:
            ranges.append((f, lo, hi))
        if f == info["end_file"]:
            break
    total = sum(hi - lo for _, lo, hi in ranges)
    splits, probes = [], 0
    bpe = bytes_per_event_guess
    for f, lo, hi in ranges:
        k = max(1, round(n_splits * (hi - lo) / total))
        target = (hi - lo) / k
        s = first_gtid(cur, f, lo, 0, hi)
        probes += 1
        if s is None:
            continue
        points = [s]
        for i in range(1, k):
            want = lo + i * target
            off = max(1, int((want - points[-1]) / bpe))
            p = first_gtid(cur, f, points[-1], off, hi)
            probes += 1
            if p is None:
                break
            bpe = (p - points[-1]) / off  # refine bytes/event from what we saw
            points.append(p)
        points.append(hi)
        splits += [{"file": f, "start": a, "end": b} for a, b in zip(points, points[1:])]
    took = time.perf_counter() - t0
    c.close()
    return {"splits": splits, "plan_s": took, "probes": probes, "ranges": ranges}


# ---- independent reference: mariadb-binlog on the local file ----------------------------------------------


def reference_counts(info, splits):
    out = []
    for sp in splits:
        path = os.path.join(info["datadir"], sp["file"])
        p = subprocess.run(
            [
                "mariadb-binlog",
                "--no-defaults",
                "-v",
                "--base64-output=DECODE-ROWS",
                f"--start-position={sp['start']}",
                f"--stop-position={sp['end']}",
                path,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        cnt = {"c": 0, "u": 0, "d": 0}
        gtids = 0
        for line in p.stdout.splitlines():
            if line.startswith("### INSERT INTO"):
                cnt["c"] += 1
            elif line.startswith("### UPDATE"):
                cnt["u"] += 1
            elif line.startswith("### DELETE FROM"):
                cnt["d"] += 1
            elif line.startswith("#") and "GTID " in line:
                gtids += 1
        out.append({**cnt, "rows": sum(cnt.values()), "gtids": gtids})
    return out


# ---- Spark bench ------------------------------------------------------------------------------------------


def bench(args):
    info = json.load(open(args.info))
    plan = json.load(open(args.plan))
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master(f"local[{args.cores}]")
        .appName(f"jdsv2-local{args.cores}")
        .config("spark.jars", ",".join(JARS))
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(args.cores))
        .config("spark.driver.extraJavaOptions", args.java_opts)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    stats = f"{D}/results/tasks-local{args.cores}.jsonl"
    if os.path.exists(stats):
        os.remove(stats)
    opts = dict(
        host="127.0.0.1",
        port=str(info["port"]),
        user=info["cdc_user"],
        password=info["cdc_password"],
        splits=json.dumps(plan["splits"]),
        server_id_base=str(args.server_id_base),
        handoff=args.handoff,
        stats_path=stats,
    )

    def df():
        return spark.read.format(FMT).options(**opts).load()

    res = {"cores": args.cores, "splits": len(plan["splits"]), "handoff": args.handoff}

    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    srv_pid = int(open(os.path.join(os.path.dirname(info["datadir"]), "mysqld.pid")).read().split()[0])
    tck = os.sysconf("SC_CLK_TCK")

    def cpu(pid):  # utime+stime of the whole process (all threads: tasks, GC, JIT, network)
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tck

    cpu_log = res["cpu"] = []

    def busy():  # non-idle CPU seconds of the whole machine
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return (sum(f[:8]) - f[3] - f[4]) / tck

    def timed(fn, label=""):
        j0, s0, b0 = cpu(jvm_pid), cpu(srv_pid), busy()
        t0 = time.perf_counter()
        v = fn()
        dt = time.perf_counter() - t0
        j, sv = cpu(jvm_pid) - j0, cpu(srv_pid) - s0
        cpu_log.append(
            {"action": label, "wall_s": dt, "jvm_cpu_s": j, "mariadbd_cpu_s": sv, "other_cpu_s": busy() - b0 - j - sv}
        )
        return v, dt

    res["warmup_count_s"] = []
    for i in range(args.warmups):  # JVM/JIT warm-up, untimed in the headline
        n, t = timed(lambda: df().count(), "warmup")
        res["warmup_count_s"].append(t)
        log(f"local[{args.cores}] warm-up count={n} {t:.2f}s")
    counts = []
    for i in range(args.reps):
        n2, t = timed(lambda: df().count(), "count")
        counts.append(t)
        assert n2 == n, (n2, n)
        c = cpu_log[-1]
        log(
            f"local[{args.cores}] count={n2} {t:.2f}s  {n2 / t:,.0f} rows/s  jvm_cpu={c['jvm_cpu_s']:.2f}s mariadbd_cpu={c['mariadbd_cpu_s']:.2f}s other_cpu={c['other_cpu_s']:.2f}s"
        )
    writes = []
    for i in range(args.reps):
        out = f"{D}/out/local{args.cores}-{i}.parquet"
        subprocess.run(["rm", "-rf", out])
        _, t = timed(lambda: df().write.mode("overwrite").parquet(out), "write")
        writes.append(t)
        c = cpu_log[-1]
        log(
            f"local[{args.cores}] parquet write {t:.2f}s  {n / t:,.0f} rows/s  jvm_cpu={c['jvm_cpu_s']:.2f}s mariadbd_cpu={c['mariadbd_cpu_s']:.2f}s other_cpu={c['other_cpu_s']:.2f}s"
        )
    # content checks on the last parquet output (not timed)
    pq = spark.read.parquet(out)
    per_op = {r["op"]: r["count"] for r in pq.groupBy("op").count().collect()}
    agg = (
        pq.agg(
            F.count("*").alias("rows"),
            F.countDistinct("txid").alias("txids"),
            F.countDistinct("position").alias("positions"),
            F.sum(F.when(F.col("before").isNull() & (F.col("op") != "c"), 1).otherwise(0)).alias("bad_before"),
            F.sum(F.when(F.col("after").isNull() & (F.col("op") != "d"), 1).otherwise(0)).alias("bad_after"),
        )
        .collect()[0]
        .asDict()
    )
    dup = pq.groupBy("txid", "row_index").count().filter("count > 1").count()
    res.update(
        rows=n,
        count_s=counts,
        write_s=writes,
        count_med_s=statistics.median(counts),
        write_med_s=statistics.median(writes),
        per_op=per_op,
        content=agg,
        dup_txid_row_index=dup,
        sample=[r.asDict() for r in pq.orderBy("commit_position", "row_index").limit(3).collect()],
    )
    res["count_rows_per_s"] = n / res["count_med_s"]
    res["write_rows_per_s"] = n / res["write_med_s"]
    res["tasks"] = [json.loads(l) for l in open(stats)]
    spark.stop()
    for kind in ("count", "write"):
        sel = [c for c in cpu_log if c["action"] == kind]
        res[f"{kind}_jvm_cpu_med_s"] = statistics.median(c["jvm_cpu_s"] for c in sel)
        res[f"{kind}_mariadbd_cpu_med_s"] = statistics.median(c["mariadbd_cpu_s"] for c in sel)
        res[f"{kind}_other_cpu_max_s"] = max(c.get("other_cpu_s", 0) for c in sel)
    json.dump(res, open(f"{D}/results/bench-local{args.cores}.json", "w"), indent=1, default=str)
    print(json.dumps({k: v for k, v in res.items() if k not in ("tasks", "sample")}, default=str))


def main_all(args):
    srv = None
    info_path = args.info or f"{D}/info-{args.events}.json"
    if not args.info:
        if os.path.exists(info_path):
            os.remove(info_path)
        stop = f"{D}/STOP-{args.events}"
        if os.path.exists(stop):
            os.remove(stop)
        srv = subprocess.Popen(
            [PY, f"{D}/server.py", str(args.events)],
            stdout=open(f"{D}/server-{args.events}.log", "w"),
            stderr=subprocess.STDOUT,
        )
        while not os.path.exists(info_path):
            if srv.poll() is not None:
                raise SystemExit("server.py died, see server log")
            time.sleep(1)
    info = json.load(open(info_path))
    plan_path = f"{D}/results/plan-{args.events}-{args.splits}.json"
    old = json.load(open(plan_path)) if args.info and os.path.exists(plan_path) else None
    plan = plan_splits(info, args.splits)
    log(f"planned {len(plan['splits'])} splits with {plan['probes']} probes in {plan['plan_s']:.3f}s")
    plan2 = plan_splits(info, args.splits)
    plan["plan_s_rerun"] = plan2["plan_s"]
    if old and [(a["file"], a["start"], a["end"]) for a in old["splits"]] == [
        (a["file"], a["start"], a["end"]) for a in plan["splits"]
    ]:
        ref = [a["ref"] for a in old["splits"]]
        plan["reference_s"] = old["reference_s"]
        log("reference counts reused")
    else:
        t0 = time.perf_counter()
        ref = reference_counts(info, plan["splits"])
        plan["reference_s"] = time.perf_counter() - t0
    for sp, r in zip(plan["splits"], ref):
        sp["ref"] = r
    plan["ref_rows"] = sum(r["rows"] for r in ref)
    plan["ref_gtids"] = sum(r["gtids"] for r in ref)
    log(
        f"reference (mariadb-binlog, per split): rows={plan['ref_rows']} gtids={plan['ref_gtids']} "
        f"{[r['rows'] for r in ref]}"
    )
    json.dump(plan, open(plan_path, "w"), indent=1)
    results = {"info": {k: v for k, v in info.items() if "password" not in k}, "plan": plan}
    for cores in (1, 2):
        cmd = [
            PY,
            __file__,
            "bench",
            "--cores",
            str(cores),
            "--info",
            info_path,
            "--plan",
            plan_path,
            "--reps",
            str(args.reps),
            "--handoff",
            args.handoff,
            "--warmups",
            str(args.warmups),
            f"--java-opts={args.java_opts}",
            "--server-id-base",
            str(args.server_id_base),
        ]
        log("$ " + " ".join(cmd))
        subprocess.run(cmd, check=True)
        b = json.load(open(f"{D}/results/bench-local{cores}.json"))
        per_split = {t["split"]: t["rows"] for t in b["tasks"]}
        b["per_split_ok"] = all(per_split.get(i) == sp["ref"]["rows"] for i, sp in enumerate(plan["splits"]))
        b["count_ok"] = b["rows"] == plan["ref_rows"]
        b["per_op_ok"] = b["per_op"] == {
            k: sum(sp["ref"][k] for sp in plan["splits"]) for k in "cud" if sum(sp["ref"][k] for sp in plan["splits"])
        }
        b["failures"] = [t for t in b["tasks"] if t["failure"]]
        results[f"local{cores}"] = b
    l1, l2 = results["local1"], results["local2"]
    results["speedup_count"] = l1["count_med_s"] / l2["count_med_s"]
    results["speedup_write"] = l1["write_med_s"] / l2["write_med_s"]
    out = f"{D}/results/all-{args.events}-{args.splits}-{args.handoff}{args.tag}.json"
    json.dump(results, open(out, "w"), indent=1, default=str)
    log(
        f"count: local[1] {l1['count_rows_per_s']:,.0f} rows/s, local[2] {l2['count_rows_per_s']:,.0f} rows/s, "
        f"speedup {results['speedup_count']:.2f}x; write: {l1['write_rows_per_s']:,.0f} vs {l2['write_rows_per_s']:,.0f}, "
        f"speedup {results['speedup_write']:.2f}x; checks count={l1['count_ok']},{l2['count_ok']} "
        f"per_split={l1['per_split_ok']},{l2['per_split_ok']} per_op={l1['per_op_ok']},{l2['per_op_ok']} -> {out}"
    )
    if srv is not None and not args.keep_server:
        open(f"{D}/STOP-{args.events}", "w").close()
        srv.wait(60)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["all", "bench", "plan"])
    ap.add_argument("--events", type=int, default=250000)
    ap.add_argument("--splits", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--info")
    ap.add_argument("--plan")
    ap.add_argument("--handoff", default="lockstep", choices=["lockstep", "pipelined"])
    ap.add_argument("--server-id-base", type=int, default=50000)
    ap.add_argument("--keep-server", action="store_true")
    ap.add_argument("--warmups", type=int, default=2)
    ap.add_argument("--java-opts", default="")
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    if a.mode == "bench":
        bench(a)
    elif a.mode == "plan":
        p = plan_splits(json.load(open(a.info)), a.splits)
        print(json.dumps(p, indent=1))
    else:
        main_all(a)
