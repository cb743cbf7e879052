# ruff: noqa: SIM115  (a measured prototype, kept as it ran: REPORT.md)
"""Throwaway MariaDB + sysbench workload; writes info-<events>.json and stays up until STOP-<events> exists.
Usage: server.py EVENTS"""

import json
import os
import sys
import time

sys.path.insert(0, "/work/main/lib")
sys.path.insert(0, "/work/main/benchmarks")
from cdclake.testing.mariadb import MariaDBServer
from run_mysql_bench import sysbench

EV = int(sys.argv[1]) if len(sys.argv) > 1 else 250000
D = "/tmp/jdsv2"
OUT, STOP = f"{D}/info-{EV}.json", f"{D}/STOP-{EV}"
with MariaDBServer(extra_args=["--innodb-buffer-pool-size=1G"], base_dir=D) as db:
    print("server", db, flush=True)
    db.execute("CREATE DATABASE sbtest")
    t = sysbench(db, "oltp_read_write", "prepare", "--table-size=200000")
    print(f"prepare {t:.1f}s", flush=True)
    db.flush_logs()
    start = db.current_binlog()
    t = sysbench(
        db,
        "oltp_write_only",
        "run",
        "--table-size=200000",
        f"--events={EV}",
        "--time=0",
        "--threads=2",
        "--rand-seed=42",
    )
    db.flush_logs()  # close the measured file so SHOW BINARY LOGS gives its final size
    end = db.current_binlog()
    print(f"run {t:.1f}s {start} -> {end}", flush=True)
    info = dict(
        events=EV,
        port=db.port,
        root_password=db.root_password,
        cdc_user=db.cdc_user,
        cdc_password=db.cdc_password,
        datadir=str(db.datadir),
        start_file=start[0],
        start_pos=start[1],
        end_file=end[0],
        end_pos=end[1],
        sysbench_run_s=t,
        binlogs=db.binlog_files(),
    )
    json.dump(info, open(OUT, "w"), indent=1, default=str)
    print(json.dumps(info, default=str), flush=True)
    while not os.path.exists(STOP):
        time.sleep(2)
