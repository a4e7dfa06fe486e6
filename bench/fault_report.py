#!/usr/bin/python3
"""The fault family's table, from failover-stall runs (bench/failover-stall.sh).

usage: fault_report.py DIR...

Each DIR is one "make bench BENCH_SCENARIOS=failover-stall" output with
BENCH_STALL_FAULT set (runs.csv, fault.csv, path-back.csv, kernel.txt from
a guest).  Prints a Markdown table, one row per directory and mode: every
run's longest commit (">=": a run whose commits were still waiting when
it ended; a run that never finished has no line in runs.csv, so compare
the count with the rounds asked for), commits over 1 s, walreceiver restarts, subflows
closed on a timeout (both hosts; the program's closes included) and the
closes the program asked for (some are taken back when the subflow is
acknowledged first), the bulk rate (median and range), and how soon a
restored path had a subflow again.
"""

import csv
import statistics
import sys
from pathlib import Path


def rows(path):
    if not path.exists():
        return []
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def header(path):
    with open(path) as f:
        first = f.readline()
    return first[2:].strip() if first.startswith("#") else ""


def kernel(d):
    k = d / "kernel.txt"
    if k.exists():
        return k.read_text().split()[1] if k.read_text().startswith("release") else k.read_text().strip()
    h = header(d / "runs.csv")
    return h.split("kernel: ")[1].split(";")[0] if "kernel: " in h else "?"


def rng(values, fmt="%.2f"):
    if not values:
        return "–"
    if len(values) == 1:
        return fmt % values[0]
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(values), min(values), max(values))


def main(dirs):
    print("| kernel | fault | mode | runs | longest commit per run, s | over 1 s | walreceiver restarts | "
          "closed on a timeout (both hosts) | close requests by host-setup | bulk Mbit/s, median (range) | path back after, s |")
    print("|---|---|---|---:|---|---:|---:|---:|---:|---|---|")
    for d in map(Path, dirs):
        runs = rows(d / "runs.csv")
        faults = {(r["mode"], r["round"]): r for r in rows(d / "fault.csv")}
        back = {(r["mode"], r["round"]): r for r in rows(d / "path-back.csv")}
        modes = []
        for r in runs:
            if r["mode"] not in modes:
                modes.append(r["mode"])
        for m in modes:
            rs = [r for r in runs if r["mode"] == m]
            fs = [faults.get((m, r["round"]), {}) for r in rs]
            fault = next((f["fault"] for f in fs if f.get("fault")), "cut")
            longest = " ".join((">=" if r["capped"] == "1" else "") + "%.2f" % (float(r["max_latency_ms"]) / 1000)
                               for r in rs)
            over = sum(1 for r in rs if float(r["max_latency_ms"]) > 1000)
            restarts = sum(int(r["walreceiver_restarts"] or 0) for r in rs)
            aborts = sum(int(f.get("abort_on_timeout_primary") or 0) + int(f.get("abort_on_timeout_standby") or 0)
                         for f in fs)
            closed = [f.get("hs_closed_dead_path") for f in fs]
            closed = str(sum(int(c) for c in closed if c)) if any(closed) else "–"
            bulk = [float(f["bulk_mbit_s"]) for f in fs if f.get("bulk_mbit_s")]
            missing_bulk = sum(1 for f in fs if f.get("bulk_mb") not in (None, "", "0") and not f.get("bulk_mbit_s"))
            bulk_s = rng(bulk, "%.1f") + (" (%d copies failed)" % missing_bulk if missing_bulk else "")
            pb = [back.get((m, r["round"]), {}).get("back_after_s") for r in rs]
            pb = " ".join(p if p else "never" for p in pb) if any(k[0] == m for k in back) else "–"
            print("| %s | %s | %s | %d | %s | %d | %d | %d | %s | %s | %s |" %
                  (kernel(d), fault, m, len(rs), longest, over, restarts, aborts, closed, bulk_s, pb))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    main(sys.argv[1:])
