#!/usr/bin/python3
"""Summarize bench/monitoring-cost.sh: OUTDIR/views.csv and OUTDIR/tps.csv.

Views: for each build, preload mode, client place, client count and view,
the median over rounds of each round's median query time, its spread
(min-max of the round medians), and the median over rounds of the ratio to
pg_stat_activity's median in the same round and server.  A view that
counted fewer rows than there were idle clients is flagged.  Throughput:
the median pgbench -S tps, and the median over rounds of the ratio with the
exporter to without it, same build and mode.  Rounds measured at a load
above the core count are left out, and said so.
"""

import csv
import os
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
cores = os.cpu_count() or 1
median = statistics.median

times = defaultdict(list)       # (b, p, w, n, r, view) -> [ms]
rows_short = set()
loads = defaultdict(float)      # (b, p, w, n, r) -> load
with open(os.path.join(out, "views.csv")) as f:
    for row in csv.DictReader(f):
        key = (row["build"], row["preload"], row["where"], int(row["conns"]),
               int(row["round"]))
        times[key + (row["view"],)].append(float(row["ms"]))
        loads[key] = max(loads[key], float(row["load"]))
        if row["view"] != "activity" and int(row["rows"]) < int(row["conns"]):
            rows_short.add(key[:4] + (row["view"],))

discarded = {k for k, v in loads.items() if v > cores}
views = defaultdict(lambda: ([], []))  # (b, p, w, n, view) -> (medians, ratios)
for (b, p, w, n, r, v), ms in times.items():
    if (b, p, w, n, r) in discarded:
        continue
    act = times.get((b, p, w, n, r, "activity"))
    m = median(ms)
    views[(b, p, w, n, v)][0].append(m)
    if act:
        views[(b, p, w, n, v)][1].append(m / median(act))

names = {
    "activity": "pg_stat_activity",
    "mptcp": "pg_stat_mptcp",
    "subflows": "pg_stat_mptcp_subflows",
    "subflows_reports": "pg_stat_mptcp_subflows, reports",
}
print(f"Latency of one query (ms): median of the rounds' medians [min-max],"
      f" and x pg_stat_activity (median of the rounds' ratios); {cores} cores")
print(f"{'build':8} {'preload':9} {'clients':8} {'conns':>5}  {'view':34} "
      f"{'ms':>8} {'spread':>15} {'ratio':>7} rounds")
for key in sorted(views, key=lambda k: (k[3], k[2], k[0], k[1],
                                        list(names).index(k[4]))):
    b, p, w, n, v = key
    meds, ratios = views[key]
    flag = "  ROWS SHORT" if (b, p, w, n, v) in rows_short else ""
    ratio = f"{median(ratios):.1f}x" if ratios and v != "activity" else ""
    print(f"{b:8} {p:9} {w:8} {n:>5}  {names[v]:34} {median(meds):>8.2f} "
          f"{min(meds):>7.2f}-{max(meds):<7.2f} {ratio:>7} {len(meds)}{flag}")
if discarded:
    print(f"left out, load above {cores}: " + ", ".join(
        f"{b}/{p}/{w}/{n} round {r} ({loads[(b, p, w, n, r)]})"
        for b, p, w, n, r in sorted(discarded)))
print(f"highest load in the rounds kept: "
      f"{max((v for k, v in loads.items() if k not in discarded), default=0)}")

path = os.path.join(out, "tps.csv")
if os.path.exists(path):
    tps = defaultdict(dict)     # (b, p, round) -> {exporter: tps}
    tps_load = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            k = (row["build"], row["preload"], int(row["round"]))
            tps[k][row["exporter"]] = float(row["tps"])
            tps_load[k + (row["exporter"],)] = float(row["load"])
    print()
    print("pgbench -S -c 4 over MPTCP, 100 idle MPTCP clients: tps median"
          " [min-max], with an exporter querying both views every second"
          " against without, ratio median [min-max]")
    groups = defaultdict(lambda: defaultdict(list))
    for (b, p, r), by in tps.items():
        if any(tps_load.get((b, p, r, e), 0) > cores for e in by):
            continue
        for e, t in by.items():
            groups[(b, p)][e].append(t)
        if "none" in by and "every_1s" in by and by["none"] > 0:
            groups[(b, p)]["ratio"].append(by["every_1s"] / by["none"])
    for (b, p), g in sorted(groups.items()):
        for e in ("none", "every_1s"):
            if g[e]:
                print(f"{b:8} {p:9} exporter {e:9} {median(g[e]):>9.0f} "
                      f"[{min(g[e]):.0f}-{max(g[e]):.0f}] {len(g[e])} rounds")
        if g["ratio"]:
            print(f"{b:8} {p:9} exporter/none      {median(g['ratio']):.3f} "
                  f"[{min(g['ratio']):.3f}-{max(g['ratio']):.3f}]")
