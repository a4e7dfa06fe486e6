#!/usr/bin/env python3
"""The failover-stall figure: per-run analysis and the report.

Usage:
  stall_report.py analyse MODE ROUND T_FAIL T0 SECONDS RELEASED PATH
      SUBFLOWS FAILED ERRORS RESTARTS SENDER_HOST LOAD RUNS_CSV
      TIMELINE_CSV PGBENCH_LOG...
  stall_report.py report RESULTS_DIR

"analyse" reads pgbench's per-transaction latency logs of one run
(-l: "client tx latency_us script epoch_s epoch_us [lag_us]", the
latency counted from the transaction's scheduled start, so it includes the
wait for a stalled predecessor) and appends one line to runs.csv and the
commits and the slowest commit per 0.1 s around the failure to timeline.csv:

- max_latency_ms: the slowest transaction of the run;
- max_gap_ms: the longest time without any commit (from 5 s into the run);
- slow_commits: transactions slower than 1 s;
- recovery_s: from the failure to the start of the first 0.5 s bin from
  which on 4 bins in a row (2 s) each have at least 80% of the commits per
  second before the failure (0.5 s resolution);
- capped: the run ended with commits still waiting (released by emptying
  synchronous_standby_names) or the rate never came back before the end:
  the longest commit and gap are then lower bounds; recovery_s = cap_s
  (the run's time left after the failure) when the rate never came back.
  recovery_s looks at the first dip after the failure only: a later stall
  shows in the longest commit and gap.

"report" writes results.md (per-run table, per-mode medians and ranges),
stall.svg (the slowest commit per 0.1 s around the failure, every run) and
rate.svg (commits per second), and PNGs of both where rsvg-convert is
installed.
"""

import csv
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

MODES = ["mptcp", "mptcp_hostlist", "mptcp_stale1", "mptcp_stale2", "mptcp_stale3", "mptcp_rtomax", "mptcp_retries2",
         "mptcp_keepalive", "mptcp_backup", "mptcp_guide", "mptcp_defaults", "mptcp_hostwide", "tcp", "tcp_tuned"]
LABELS = {
    "mptcp": "MPTCP, 4 subflows, kernel defaults",
    "mptcp_hostlist": "MPTCP, host=a,b,c,d, kernel defaults",
    "mptcp_stale1": "MPTCP, net.mptcp.stale_loss_cnt = 1",
    "mptcp_stale2": "MPTCP, net.mptcp.stale_loss_cnt = 2",
    "mptcp_stale3": "MPTCP, net.mptcp.stale_loss_cnt = 3",
    "mptcp_rtomax": "MPTCP, net.ipv4.tcp_rto_max_ms = 1000",
    "mptcp_retries2": "MPTCP, net.ipv4.tcp_retries2 = 5",
    "mptcp_keepalive": "MPTCP, keepalives 1 s / 1 s / 2",
    "mptcp_backup": "MPTCP, path 4 a backup endpoint",
    "mptcp_guide": "MPTCP, guide/failover's files and a host list",
    "mptcp_defaults": "MPTCP, the same without host-setup (kernel timeouts)",
    "mptcp_hostwide": "MPTCP, the guide's host-wide fallback",
    "tcp": "TCP, host=a,b,c,d, default timeouts",
    "tcp_tuned": "TCP, host=a,b,c,d, tuned timeouts",
}
COLORS = {"mptcp": "#1f77b4", "mptcp_hostlist": "#aec7e8", "mptcp_stale1": "#2ca02c", "mptcp_stale2": "#17becf", "mptcp_stale3": "#bcbd22",
          "mptcp_rtomax": "#9467bd", "mptcp_retries2": "#8c564b",
          "mptcp_keepalive": "#e377c2", "mptcp_backup": "#7f7f7f", "mptcp_guide": "#000000",
          "mptcp_defaults": "#ff9896", "mptcp_hostwide": "#c49c94",
          "tcp": "#d62728", "tcp_tuned": "#ff7f0e"}
# counters drawn under the stall in mechanism.svg: (side, name, colour)
EVENTS = [("server", "MPTCPRetrans", "#d62728"), ("server", "SubflowStale", "#2ca02c"),
          ("server", "SubflowRecover", "#1f77b4"), ("server", "RmSubflow", "#8c564b"),
          ("server", "MPRstTx", "#9467bd"), ("server", "RetransSegs", "#aaaaaa")]
BIN = 0.5


def analyse(args):
    (mode, rnd, t_fail, t0, seconds, released, path, subflows, failed,
     errors, restarts, sender, load, runs_csv, timeline_csv) = args[:15]
    logs = args[15:]
    t_fail, t0, seconds = float(t_fail), float(t0), float(seconds)
    tx = []  # (completion time, latency ms)
    for log in logs:
        with open(log) as f:
            for line in f:
                p = line.split()
                if len(p) < 6:
                    continue
                tx.append((int(p[4]) + int(p[5]) / 1e6, int(p[2]) / 1000.0))
    tx.sort()
    end = t0 + seconds
    cap = end - t_fail
    before = [t for t, _ in tx if t0 + 5 <= t < t_fail]
    baseline = len(before) / (t_fail - t0 - 5) if t_fail > t0 + 5 else 0
    max_lat = max((l for _, l in tx), default=0)
    times = [t for t, _ in tx if t >= t0 + 5]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # a run that ends stalled: the gap runs to the end at least
    if times and released == "1":
        gaps.append(max(0, end - max(t for t in times if t <= end + 1)))
    max_gap = max(gaps, default=0) * 1000
    slow = sum(1 for _, l in tx if l > 1000)
    nbins = int(cap / BIN)
    counts = [0] * nbins
    for t, _ in tx:
        k = int((t - t_fail) / BIN)
        if t >= t_fail and k < nbins:
            counts[k] += 1
    need = 0.8 * baseline * BIN
    recovery = None
    for k in range(nbins - 3):
        if all(c >= need for c in counts[k:k + 4]):
            recovery = k * BIN
            break
    capped = released == "1" or recovery is None
    if recovery is None:
        recovery = cap
    with open(runs_csv, "a") as f:
        f.write(",".join(str(v) for v in [
            mode, rnd, path, subflows, f"{baseline:.1f}", f"{max_lat:.0f}",
            f"{max_gap:.0f}", slow, f"{recovery:.1f}", int(capped),
            f"{cap:.1f}", len(tx), failed, errors, restarts, sender, load]) + "\n")
    fine = 0.1
    lo = -5.0
    n = int((cap - lo) / fine)
    tl = [0] * n
    tlat = [0.0] * n
    for t, l in tx:
        k = int((t - t_fail - lo) / fine)
        if t - t_fail >= lo and k < n:
            tl[k] += 1
            tlat[k] = max(tlat[k], l)
    with open(timeline_csv, "a") as f:
        for k, c in enumerate(tl):
            f.write(f"{mode},{rnd},{lo + k * fine:.1f},{c},{tlat[k]:.1f}\n")


def read_runs(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("#")]
    with open(path) as f:
        comments = [l[1:].strip() for l in f if l.startswith("#")]
    return list(csv.DictReader(lines)), comments


def fmt(values, capped, unit="", digits=0):
    """median (min-max); '>=' where a capped run reaches the figure"""
    def one(v, c):
        s = f"{v:.{digits}f}{unit}"
        return ("≥ " + s) if c else s
    pairs = sorted(zip(values, capped))
    m = statistics.median(values)
    # the median is a lower bound when a capped run lies at or below it
    mc = any(c and v <= m for v, c in pairs)
    if len(pairs) == 1:
        return one(*pairs[0])
    return f"{one(m, mc)} ({one(*pairs[0])}–{one(*pairs[-1])})"


def cut_maxima(out):
    """the slowest commit after the cut and in the 5 s before it, per
    (mode, round), in ms, from timeline.csv: the run's own maximum also
    counts the first seconds of a freshly started primary"""
    after, before = {}, {}
    with open(out / "timeline.csv") as f:
        for r in csv.DictReader(f):
            if int(r["commits"]) == 0:
                continue
            key, lat = (r["mode"], r["round"]), float(r["max_latency_ms"])
            side = after if float(r["t"]) >= 0 else before
            side[key] = max(side.get(key, 0.0), lat)
    return after, before


def report(outdir):
    out = Path(outdir)
    runs, comments = read_runs(out / "runs.csv")
    after, before = cut_maxima(out)
    # a run at a load above the core count measured the CPU: flagged
    cores = next((int(c.split(";")[-1].split()[0]) for c in comments
                  if c.rstrip().endswith("cores") and ";" in c), None)
    over = [r for r in runs if cores and float(r["load1"] or 0) > cores]
    for r in runs:
        key = (r["mode"], r["round"])
        # a run still stalled at its end: its whole maximum is the figure
        r["after_ms"] = (r["max_latency_ms"] if r["capped"] == "1"
                         else f"{after.get(key, 0.0):.0f}")
        r["before_ms"] = f"{before.get(key, 0.0):.0f}"
    modes = [m for m in MODES if any(r["mode"] == m for r in runs)]
    md = ["# Failover stall: losing the busiest path under a synchronous primary", ""]
    md += [f"- {c}" for c in comments]
    md += ["", "Median (min–max) over the rounds; ≥ marks a run that ended"
           " still stalled (the figure is a lower bound: the run's time"
           " left after the failure).", ""]
    md += ["| mode | rounds | longest commit after the cut | longest commit,"
           " 5 s before the cut | longest gap without commits"
           " | commits > 1 s | rate back after | errors (pgbench) |"
           " walreceiver restarts |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in modes:
        rs = [r for r in runs if r["mode"] == m]
        cap = [r["capped"] == "1" for r in rs]
        lat = [float(r["after_ms"]) / 1000 for r in rs]
        pre = [float(r["before_ms"]) / 1000 for r in rs]
        gap = [float(r["max_gap_ms"]) / 1000 for r in rs]
        slow = [int(r["slow_commits"]) for r in rs]
        rec = [float(r["recovery_s"]) for r in rs]
        # the rate never came back before the end of the run
        never = [float(r["recovery_s"]) >= float(r["cap_s"]) - 0.05 for r in rs]
        err = sum(int(r["failed_tx"] or 0) + int(r["pgbench_errors"] or 0) for r in rs)
        rst = [int(r["walreceiver_restarts"]) for r in rs]
        md.append(f"| {LABELS[m]} | {len(rs)} | {fmt(lat, cap, ' s', 2)} | "
                  f"{fmt(pre, [False] * len(rs), ' s', 2)} | "
                  f"{fmt(gap, cap, ' s', 2)} | {fmt(slow, [False] * len(rs))} | "
                  f"{fmt(rec, never, ' s', 1)} | {err} | "
                  f"{fmt(rst, [False] * len(rs))} |")
    md += ["", (f"**{len(over)} run(s) at a load above the {cores} cores**"
                f" (marked ⚠ below): they measured the CPU as much as the"
                f" failover; discard them." if over else
                f"Every run at a load at or below the {cores or '?'} cores.")]
    md += ["", "Every run:", "",
           "| mode | round | path cut | subflows at the cut | TPS before | longest commit"
           " after the cut (ms) | 5 s before (ms) | whole run (ms) | longest gap"
           " (ms) | commits > 1 s | rate back (s) | hung at the end |"
           " commits | failed / errors | walreceiver restarts | standby on"
           " (end) | load |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in runs:
        md.append(f"| {r['mode']} | {r['round']} | {r['blackholed_path']} | "
                  f"{r['subflows']} | {r['baseline_tps']} | {r['after_ms']} | "
                  f"{r['before_ms']} | {r['max_latency_ms']}"
                  f" | {r['max_gap_ms']} | {r['slow_commits']} | "
                  f"{r['recovery_s']} | {'**hung**' if r['capped'] == '1' else 'no'} |"
                  f" {r['commits']} | {r['failed_tx']} / {r['pgbench_errors']} | "
                  f"{r['walreceiver_restarts']} | {r['sender_host_after']} | "
                  f"{r['load1']}{' ⚠' if r in over else ''} |")
    md += ["", "![the slowest commit per 0.1 s around the failure](stall.svg)", "",
           "![commits per second around the failure](rate.svg)", "",
           "The slowest commit beside the primary's counters, the worst round"
           " of each mode: `mechanism.svg` (regenerated by the bench, not committed).", ""]
    (out / "results.md").write_text("\n".join(md) + "\n")
    plot(out, modes)
    if (out / "counters.csv").exists():
        mechanism(out, modes, runs)
    print("\n".join(md))


def svg_panels(out, name, modes, binned, title, ylabel, ymin, ymax, log, ref=None,
               gap=0.1):
    """one panel per mode, every round a line; binned[(mode, round)] =
    [(t, value)]"""
    import math
    W, PH, L, R, T, B = 760, 150, 62, 20, 44, 40
    H = T + len(modes) * (PH + 30) + B
    tmin = -5.0
    tmax = max((t for b in binned.values() for t, _ in b), default=60)
    x = lambda t: L + (t - tmin) / (tmax - tmin) * (W - L - R)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>']
    for i, m in enumerate(modes):
        top = T + i * (PH + 30)
        if log:
            lo, hi = math.log10(ymin), math.log10(ymax)
            y = lambda v: top + PH - (math.log10(min(max(v, ymin), ymax)) - lo) / (hi - lo) * PH
            ticks = [10 ** e for e in range(int(lo), int(hi) + 1)]
        else:
            y = lambda v: top + PH - min(v, ymax) / ymax * PH
            ticks = list(range(0, int(ymax) + 1, max(100, int(ymax) // 4 // 100 * 100)))
        s.append(f'<text x="{L}" y="{top - 5}" font-weight="bold">{LABELS[m]}</text>')
        s.append(f'<rect x="{L}" y="{top}" width="{W - L - R}" height="{PH}" '
                 'fill="none" stroke="#888"/>')
        for v in ticks:
            lab = (f"{v / 1000:g} s" if v >= 1000 else f"{v:g} ms") if log else f"{v:g}"
            s.append(f'<line x1="{L}" x2="{W - R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
            s.append(f'<text x="{L - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{lab}</text>')
        if ref is not None:
            s.append(f'<line x1="{L}" x2="{W - R}" y1="{y(ref):.1f}" y2="{y(ref):.1f}" '
                     'stroke="#999" stroke-dasharray="6,3"/>')
        step = 5 if tmax <= 60 else 10
        for t in range(-5 if step == 5 else 0, int(tmax) + 1, step):
            s.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{top + PH}" stroke="#eee"/>')
            s.append(f'<text x="{x(t):.1f}" y="{top + PH + 13}" text-anchor="middle">{t}</text>')
        s.append(f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{top}" y2="{top + PH}" '
                 'stroke="black" stroke-dasharray="4,3"/>')
        rounds = sorted((r for (mm, r) in binned if mm == m), key=int)
        for r in rounds:
            # a line breaks where bins are missing (no commits there)
            segs, prev = [], None
            for t, v in binned[(m, r)]:
                if prev is None or t - prev > gap + 1e-6:
                    segs.append([])
                segs[-1].append((t, v))
                prev = t
            for seg in segs:
                pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in seg)
                if len(seg) == 1:
                    s.append(f'<circle cx="{x(seg[0][0]):.1f}" cy="{y(seg[0][1]):.1f}" r="1.5" '
                             f'fill="{COLORS[m]}"/>')
                else:
                    s.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[m]}" '
                             'stroke-width="1.2" opacity="0.7"/>')
    s.append(f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">seconds since '
             f'the path was blackholed; {ylabel}; each line one round</text>')
    s.append("</svg>")
    (out / f"{name}.svg").write_text("\n".join(s) + "\n")
    # a PNG as well where librsvg's converter is at hand
    conv = shutil.which("rsvg-convert")
    if conv:
        subprocess.run([conv, "-o", str(out / f"{name}.png"), str(out / f"{name}.svg")],
                       check=False)


def plot(out, modes):
    """stall.svg: the slowest commit per 0.1 s (log scale) against the
    time since the failure; rate.svg: commits per second (0.5 s bins)"""
    fine = {}
    with open(out / "timeline.csv") as f:
        for r in csv.DictReader(f):
            fine.setdefault((r["mode"], r["round"]), []).append(
                (float(r["t"]), int(r["commits"]), float(r["max_latency_ms"])))
    lat, rate = {}, {}
    for key, pts in fine.items():
        # a bin without commits: the stall goes on; draw nothing there
        lat[key] = [(t + 0.05, l) for t, c, l in pts if c > 0]
        agg = {}
        for t, c, _ in pts:
            k = round((t + 5.0) // BIN)
            agg[k] = agg.get(k, 0) + c
        rate[key] = [(-5.0 + k * BIN + BIN / 2, c / BIN) for k, c in sorted(agg.items())]
    svg_panels(out, "stall", modes, lat,
               "Slowest commit per 0.1 s when the busiest of 4 paths is blackholed at t = 0",
               "latency from the scheduled start, log scale; gaps: no commit",
               1, 100000, True, ref=1000, gap=0.1)
    top = max((v for b in rate.values() for _, v in b), default=0)
    svg_panels(out, "rate", modes, rate,
               "Commits per second (0.5 s bins) when the busiest of 4 paths is blackholed at t = 0",
               "commits per second", 0, max(100, (int(top / 100) + 1) * 100), False,
               gap=BIN)


def mechanism(out, modes, runs):
    """mechanism.svg: per mode, its round with the longest commit: the
    slowest commit per 0.1 s (log scale, as stall.svg) and under it one row
    per counter of the primary, a tick wherever it grew (0.5 s samples),
    with the total it reached after the cut"""
    import math
    lat, ev = {}, {}
    with open(out / "timeline.csv") as f:
        for r in csv.DictReader(f):
            if int(r["commits"]) > 0:
                lat.setdefault((r["mode"], r["round"]), []).append(
                    (float(r["t"]) + 0.05, float(r["max_latency_ms"])))
    with open(out / "counters.csv") as f:
        for r in csv.DictReader(f):
            ev.setdefault((r["mode"], r["round"], r["side"], r["name"]), []).append(
                (float(r["t"]), int(r["value"])))
    worst = {}
    for r in runs:
        if r["mode"] in modes and (r["mode"] not in worst or
                                   float(r["after_ms"]) > float(worst[r["mode"]]["after_ms"])):
            worst[r["mode"]] = r
    W, PH, RH, L, R, T, B = 760, 110, 11, 96, 60, 44, 40
    block = PH + RH * len(EVENTS) + 34
    H = T + len(worst) * block + B
    tmin = -5.0
    tmax = max((float(r["cap_s"]) for r in worst.values()), default=60)
    x = lambda t: L + (min(max(t, tmin), tmax) - tmin) / (tmax - tmin) * (W - L - R)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">The stall beside '
         'the primary\'s counters: the round with the longest commit of each mode</text>']
    for i, m in enumerate(mm for mm in modes if mm in worst):
        r = worst[m]
        top = T + i * block
        lo, hi = 0.0, 5.0
        y = lambda v: top + PH - (math.log10(min(max(v, 1), 1e5)) - lo) / (hi - lo) * PH
        s.append(f'<text x="{L}" y="{top - 5}" font-weight="bold">{LABELS[m]}, round '
                 f'{r["round"]}: longest commit after the cut {float(r["after_ms"]) / 1000:.2f} s</text>')
        s.append(f'<rect x="{L}" y="{top}" width="{W - L - R}" height="{PH}" fill="none" stroke="#888"/>')
        for v in (1, 100, 1000, 100000):
            s.append(f'<line x1="{L}" x2="{W - R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
            s.append(f'<text x="{L - 4}" y="{y(v) + 4:.1f}" text-anchor="end">'
                     f'{(f"{v / 1000:g} s" if v >= 1000 else f"{v:g} ms")}</text>')
        s.append(f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{top}" y2="{top + PH + RH * len(EVENTS)}" '
                 'stroke="black" stroke-dasharray="4,3"/>')
        pts = lat.get((m, r["round"]), [])
        for t, v in pts:
            s.append(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="1.3" fill="{COLORS[m]}"/>')
        for j, (side, name, colour) in enumerate(EVENTS):
            ry = top + PH + 4 + j * RH
            s.append(f'<text x="{L - 4}" y="{ry + 8}" text-anchor="end" font-size="9">{name}</text>')
            samples = ev.get((m, r["round"], side, name), [])
            prev = None
            for t, v in samples:
                if prev is not None and v > prev and t >= tmin:
                    s.append(f'<rect x="{x(t) - 1:.1f}" y="{ry}" width="2.5" height="{RH - 2}" fill="{colour}"/>')
                prev = v
            after = [v for t, v in samples if t >= 0]
            before = [v for t, v in samples if t < 0]
            grew = (after[-1] - (before[-1] if before else 0)) if after else 0
            s.append(f'<text x="{W - R + 4}" y="{ry + 8}" font-size="9">+{grew}</text>')
        for t in range(0, int(tmax) + 1, 10):
            s.append(f'<text x="{x(t):.1f}" y="{top + PH + RH * len(EVENTS) + 14}" text-anchor="middle">{t}</text>')
    s.append(f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">seconds since the path was '
             'blackholed; dots: slowest commit per 0.1 s; ticks: the primary\'s counter grew '
             '(0.5 s samples); right: its growth after the cut</text>')
    s.append("</svg>")
    (out / "mechanism.svg").write_text("\n".join(s) + "\n")
    conv = shutil.which("rsvg-convert")
    if conv:
        subprocess.run([conv, "-o", str(out / "mechanism.png"), str(out / "mechanism.svg")],
                       check=False)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "analyse":
        analyse(sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
