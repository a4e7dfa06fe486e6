#!/usr/bin/python3
"""Summarize bench/monitoring-cost.sh: OUTDIR/views.csv and OUTDIR/tps.csv.

Views: for each build, preload mode, client place, client count and view,
the median over rounds of each round's median query time, its spread
(min-max of the round medians), and the median over rounds of the ratio to
pg_stat_activity's median in the same round and server.  A view that
counted fewer rows than there were idle clients is flagged; rounds of
views measured while the CPU's run queue held more tasks than there are
cores besides the measurement's own (psql, its backend, the sampler; mean
of samples every 0.2 s) are left out, and said so.
Throughput: the median pgbench -S tps, and the median over rounds of the
ratio with the exporter to without it, same build and mode (the load is
shown: pgbench's own clients are most of it).
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
        loads[key] = max(loads[key], float(row.get("runq", row.get("load"))))
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
    "floor": "kernel floor (port dump + MPTCP dump)",
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
    print(f"left out, run queue above {cores}: " + ", ".join(
        f"{b}/{p}/{w}/{n} round {r} ({loads[(b, p, w, n, r)]})"
        for b, p, w, n, r in sorted(discarded)))
print(f"highest mean run queue in the rounds kept (other tasks than the measurement's): "
      f"{max((v for k, v in loads.items() if k not in discarded), default=0)}")

# the views against the kernel's floor for the same connections, measured
# right after them in the same round (bench/kernel-repro/sock-diag-cost.c
# --floor: the cheapest description of the server port's TCP sockets, plus
# the MPTCP dump)
floor_ratios = defaultdict(list)  # (b, p, w, n, view) -> [ratio a round]
for (b, p, w, n, r, v), ms in times.items():
    fl = times.get((b, p, w, n, r, "floor"))
    if (b, p, w, n, r) in discarded or not fl or v in ("floor", "activity"):
        continue
    floor_ratios[(b, p, w, n, v)].append(median(ms) / median(fl))
if floor_ratios:
    print()
    print("x the kernel's floor for the same connections, same round"
          " (median of the rounds' ratios [min-max])")
    for key in sorted(floor_ratios, key=lambda k: (k[3], k[2], k[0], k[1],
                                                   list(names).index(k[4]))):
        b, p, w, n, v = key
        r = floor_ratios[key]
        print(f"{b:8} {p:9} {w:8} {n:>5}  {names[v]:34} {median(r):>6.2f}x "
              f"[{min(r):.2f}-{max(r):.2f}] {len(r)} rounds")

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
          " against without, ratio median [min-max]; every_1s_reports: the"
          " subflows from the processes' reports, as before Linux 6.15")
    groups = defaultdict(lambda: defaultdict(list))
    for (b, p, r), by in tps.items():
        for e, t in by.items():
            groups[(b, p)][e].append(t)
        for e in ("every_1s", "every_1s_reports"):
            if "none" in by and e in by and by["none"] > 0:
                groups[(b, p)]["ratio " + e].append(by[e] / by["none"])
    for (b, p), g in sorted(groups.items()):
        for e in ("none", "every_1s", "every_1s_reports"):
            if g[e]:
                print(f"{b:8} {p:9} exporter {e:16} {median(g[e]):>9.0f} "
                      f"[{min(g[e]):.0f}-{max(g[e]):.0f}] {len(g[e])} rounds")
        for e in ("every_1s", "every_1s_reports"):
            r = g["ratio " + e]
            if r:
                print(f"{b:8} {p:9} {e + '/none':25} {median(r):.3f} "
                      f"[{min(r):.3f}-{max(r):.3f}]")
    if tps_load:
        print(f"load after each run (pgbench's own 4 clients included): "
              f"{min(tps_load.values()):.2f}-{max(tps_load.values()):.2f}")


def svg_plot(path):
    """latency.svg: ms against clients, log-log, one panel per client place."""
    series = [  # (label, build, preload, view, colour, dashed)
        ("pg_stat_activity", None, "preloaded", "activity", "#444", False),
        ("pg_stat_mptcp", "A", "preloaded", "mptcp", "#1f77b4", False),
        ("pg_stat_mptcp, before", "B", "preloaded", "mptcp", "#1f77b4", True),
        ("subflows, preloaded", "A", "preloaded", "subflows", "#d62728", False),
        ("subflows, preloaded, before", "B", "preloaded", "subflows", "#d62728", True),
        ("subflows from reports", "A", "preloaded", "subflows_reports", "#2ca02c", False),
    ]
    builds = sorted({k[0] for k in views})
    label_a = builds[0] if len(builds) == 1 else sys.argv[2] if len(sys.argv) > 2 else "new"
    label_b = next((b for b in builds if b != label_a), None)
    places = sorted({k[2] for k in views})
    conns = sorted({k[3] for k in views})
    vals = [median(m) for m, _ in views.values() if m]
    if not vals or len(conns) < 2:
        return
    import math
    lo, hi = math.log10(min(vals) / 1.5), math.log10(max(vals) * 1.5)
    W, H, pad = 420, 300, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(places) + 220}" height="{H + 40}" font-family="sans-serif" font-size="11">']
    for i, place in enumerate(places):
        x0 = i * W
        def X(n): return x0 + pad + (math.log10(n) - math.log10(conns[0])) / (math.log10(conns[-1]) - math.log10(conns[0])) * (W - 2 * pad)
        def Y(ms): return H - pad + 20 - (math.log10(ms) - lo) / (hi - lo) * (H - 2 * pad)
        out.append(f'<text x="{x0 + W / 2}" y="15" text-anchor="middle">{place} clients (ms per query, log scale)</text>')
        out.append(f'<rect x="{x0 + pad}" y="{Y(10 ** hi)}" width="{W - 2 * pad}" height="{Y(10 ** lo) - Y(10 ** hi)}" fill="none" stroke="#999"/>')
        for n in conns:
            out.append(f'<text x="{X(n)}" y="{Y(10 ** lo) + 14}" text-anchor="middle">{n}</text>')
        for e in range(math.ceil(lo), math.floor(hi) + 1):
            out.append(f'<text x="{x0 + pad - 4}" y="{Y(10 ** e) + 4}" text-anchor="end">{10 ** e:g}</text>')
        for label, b, p, v, colour, dashed in series:
            build = label_a if b in (None, "A") else label_b
            pts = [(n, views.get((build, p, place, n, v))) for n in conns]
            pts = [(n, median(m[0])) for n, m in pts if m and m[0]]
            if len(pts) < 2:
                continue
            d = " ".join(f"{X(n):.1f},{Y(ms):.1f}" for n, ms in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="2"'
                       + (' stroke-dasharray="5,4"' if dashed else '') + '/>')
    for j, (label, b, p, v, colour, dashed) in enumerate(series):
        if b == "B" and not label_b:
            continue
        y = 40 + j * 16
        x = W * len(places) + 10
        out.append(f'<line x1="{x}" y1="{y}" x2="{x + 25}" y2="{y}" stroke="{colour}" stroke-width="2"'
                   + (' stroke-dasharray="5,4"' if dashed else '') + '/>')
        out.append(f'<text x="{x + 30}" y="{y + 4}">{label.replace("before", label_b or "")}</text>')
    out.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


svg_plot(os.path.join(out, "latency.svg"))

path = os.path.join(out, "exporter-cpu.csv")
if os.path.exists(path):
    cpu = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            cpu[(row["build"], row["preload"], row["exporter"])].append(
                float(row["cpu_ms_per_s"]))
    if cpu:
        print()
        print(f"Server CPU of an exporter querying both views every second, 100"
              f" idle MPTCP clients, nothing else running: ms of CPU per second,"
              f" median [min-max], and the share of {cores} cores")
        for (b, p, e), v in sorted(cpu.items()):
            print(f"{b:8} {p:9} {e:16} {median(v):>7.2f} [{min(v):.2f}-{max(v):.2f}]"
                  f" {median(v) / (10 * cores):.2f}% {len(v)} rounds")

# First queries (OUTDIR/first.csv): each view's first query in a new
# session, the second one, and the growth of the backend's peak memory;
# medians over sessions and rounds, and the first query's ratio to
# pg_stat_activity's first query in the same round and server.
first_path = os.path.join(out, "first.csv")
if os.path.exists(first_path):
    first = defaultdict(lambda: ([], [], [], []))  # key -> lists
    act_first = defaultdict(list)
    with open(first_path) as f:
        rows = [r for r in csv.DictReader(f) if r["first_ms"]]
    for r in rows:
        if r["view"] == "activity":
            act_first[(r["build"], r["preload"], r["where"], r["conns"], r["round"])].append(float(r["first_ms"]))
    for r in rows:
        k = (r["build"], r["preload"], r["where"], int(r["conns"]), r["view"])
        a = act_first.get((r["build"], r["preload"], r["where"], r["conns"], r["round"]))
        first[k][0].append(float(r["first_ms"]))
        first[k][1].append(float(r["second_ms"]))
        first[k][2].append(int(r["hwm_growth_kb"]))
        if a:
            first[k][3].append(float(r["first_ms"]) / median(a))
    print()
    print("First query of a new session (ms), the second, the backend's peak"
          " memory growth (kB): medians over sessions and rounds")
    print(f"{'build':8} {'preload':9} {'clients':8} {'conns':>5}  {'view':24} "
          f"{'first':>8} {'x act.':>7} {'second':>8} {'peak+kB':>8} n")
    for k in sorted(first, key=lambda k: (k[3], k[2], k[0], k[1], k[4])):
        fm, sm, hw, ra = first[k]
        print(f"{k[0]:8} {k[1]:9} {k[2]:8} {k[3]:5}  {names.get(k[4], k[4]):24} "
              f"{median(fm):8.2f} {median(ra) if ra else float('nan'):6.1f}x "
              f"{median(sm):8.2f} {int(median(hw)):8d} {len(fm)}")
