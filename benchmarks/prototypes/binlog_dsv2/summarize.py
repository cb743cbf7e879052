# ruff: noqa: SIM115, E501, E741  (a measured prototype, kept as it ran: REPORT.md)
"""Table of all results/all-*.json runs."""

import glob
import json

rows = []
for p in sorted(glob.glob("/tmp/jdsv2/results/all-*.json")):
    r = json.load(open(p))
    if "local1" not in r:
        continue
    l1, l2 = r["local1"], r["local2"]

    def best(x):
        return min(x)

    rows.append(
        (
            p.split("/")[-1],
            r["plan"]["splits"].__len__(),
            l1["rows"],
            f"{l1['count_rows_per_s']:,.0f}",
            f"{l2['count_rows_per_s']:,.0f}",
            f"{r['speedup_count']:.2f}",
            f"{best(l1['count_s']) / best(l2['count_s']):.2f}",
            f"{l1['write_rows_per_s']:,.0f}",
            f"{l2['write_rows_per_s']:,.0f}",
            f"{r['speedup_write']:.2f}",
            f"{l1.get('count_jvm_cpu_med_s', float('nan')):.2f}/{l2.get('count_jvm_cpu_med_s', float('nan')):.2f}",
            f"{l1.get('count_mariadbd_cpu_med_s', float('nan')):.2f}/{l2.get('count_mariadbd_cpu_med_s', float('nan')):.2f}",
            f"{r['plan']['plan_s']:.2f}",
            f"{len(r['local1']['count_s'])}",
            "ok"
            if all(l[k] for l in (l1, l2) for k in ("count_ok", "per_split_ok", "per_op_ok"))
            and not l1["failures"]
            and not l2["failures"]
            else "FAIL",
        )
    )
hdr = (
    "run",
    "splits",
    "rows",
    "count r/s L1",
    "count r/s L2",
    "speedup (median)",
    "speedup (best)",
    "write r/s L1",
    "write r/s L2",
    "write speedup",
    "JVM CPU s/count L1/L2",
    "mariadbd CPU s/count L1/L2",
    "plan s",
    "reps",
    "checks",
)
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
for r in rows:
    print("| " + " | ".join(map(str, r)) + " |")
