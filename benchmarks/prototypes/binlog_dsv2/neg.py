# ruff: noqa: SIM115  (a measured prototype, kept as it ran: REPORT.md)
"""Negative checks: splits that must make the task fail."""

import json

import pymysql
from pyspark.sql import SparkSession

info = json.load(open("/tmp/jdsv2/info-250000.json"))
good = json.load(open("/tmp/jdsv2/results/plan-smoke.json"))["splits"]
s0, s1 = good[0], good[1]
c = pymysql.connect(host="127.0.0.1", port=info["port"], user=info["cdc_user"], password=info["cdc_password"])
cur = c.cursor()
cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {s1['start']} LIMIT 0, 6", (s1["file"],))
ev = cur.fetchall()
for r in ev:
    print(r[1], r[2], r[4], str(r[5])[:60])
tm = next(r for r in ev if r[2] == "Table_map")
rows = next(r for r in ev if r[2].endswith("_rows_v1"))

cases = {
    "start+1 (not an event boundary)": {"file": s1["file"], "start": s1["start"] + 1, "end": s1["end"]},
    "start at Table_map (mid-transaction)": {"file": s1["file"], "start": int(tm[1]), "end": s1["end"]},
    "start at Rows event (TABLE_MAP before start)": {"file": s1["file"], "start": int(rows[1]), "end": s1["end"]},
    "end inside a transaction (at a Rows event end)": {"file": s1["file"], "start": s1["start"], "end": int(rows[4])},
    "end not an event boundary (gtid+1)": {"file": s0["file"], "start": s0["start"], "end": s1["start"] + 1},
    "start beyond EOF of file": {"file": "mysql-bin.000003", "start": 342, "end": 10_000},
    "control: good split": s1,
}
spark = (
    SparkSession.builder.master("local[1]")
    .config(
        "spark.jars", "/tmp/jdsv2/jars/mysql-binlog-connector-java-0.30.1.jar,/tmp/jdsv2/jars/binlog-dsv2-proto.jar"
    )
    .config("spark.ui.enabled", "false")
    .config("spark.task.maxFailures", "1")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("OFF")
for name, sp in cases.items():
    try:
        n = (
            spark.read.format("cdclake-binlog-proto")
            .options(
                host="127.0.0.1",
                port=str(info["port"]),
                user=info["cdc_user"],
                password=info["cdc_password"],
                splits=json.dumps([sp]),
                server_id_base="60000",
            )
            .load()
            .count()
        )
        print(f"{name}: {sp['start']}..{sp['end']} -> OK count={n}")
    except Exception as e:
        msg = str(e)
        i = msg.find("binlog split")
        print(f"{name}: {sp['start']}..{sp['end']} -> FAILED: {msg[i : i + 260] if i >= 0 else msg[:300]}")
