#!/usr/bin/env python3
"""Turn the benchmark's raw figures into a markdown table and an SVG plot.

Usage: report.py RESULTS_DIR

Reads transfers.csv and costs.csv written by bench.sh; writes results.md
and speedup.svg next to them.  The speedup of a run is TCP time / MPTCP
time of the same run (measured one after the other, same data, same lab);
figures are medians over the runs.
"""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

LABELS = {
    "copy_to": "COPY TO",
    "copy_from": "COPY FROM",
    "basebackup": "pg_basebackup",
    "catchup": "standby catch-up",
}
COLORS = {
    "copy_to": "#1f77b4",
    "copy_from": "#ff7f0e",
    "basebackup": "#2ca02c",
    "catchup": "#d62728",
}


def read_csv(path):
    """Rows of a CSV file, and its leading '#' comment lines."""
    with open(path) as f:
        lines = f.readlines()
    comments = [l[1:].strip() for l in lines if l.startswith("#")]
    rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
    return rows, comments


def transfers(results):
    rows, comments = read_csv(results / "transfers.csv")
    times = defaultdict(dict)  # (workload, paths, run) -> mode -> seconds
    for r in rows:
        key = (r["workload"], int(r["paths"]), int(r["run"]))
        times[key][r["mode"]] = float(r["seconds"])
    table = defaultdict(lambda: defaultdict(list))  # workload -> paths -> [(tcp, mptcp, ratio)]
    for (w, n, _), modes in times.items():
        if "disable" in modes and "require" in modes:
            table[w][n].append((modes["disable"], modes["require"], modes["disable"] / modes["require"]))
    return table, comments


def svg_plot(table, out, title):
    width, height, left, bottom, top, right = 640, 420, 60, 50, 40, 170
    paths = sorted({n for w in table for n in table[w]})
    xmax = max(paths)
    ymax = xmax
    def x(n):
        return left + (n - 0.5) / (xmax + 0.5 - 0.5) * (width - left - right) if xmax > 1 else left
    def y(v):
        return height - bottom - v / ymax * (height - bottom - top)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2 - right / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
    ]
    # axes and grid
    for v in range(0, ymax + 1):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v}x</text>')
    for n in paths:
        parts.append(f'<text x="{x(n):.1f}" y="{height - bottom + 18}" text-anchor="middle">{n}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 10}" text-anchor="middle">'
                 'network paths (MPTCP subflows)</text>')
    parts.append(f'<text x="16" y="{(top + height - bottom) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {(top + height - bottom) / 2})">speedup over plain TCP</text>')
    parts.append(f'<line x1="{left}" x2="{left}" y1="{y(0)}" y2="{y(ymax)}" stroke="black"/>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(0)}" y2="{y(0)}" stroke="black"/>')
    # ideal line: speedup = number of paths
    pts = " ".join(f"{x(n):.1f},{y(n):.1f}" for n in paths)
    parts.append(f'<polyline points="{pts}" fill="none" stroke="gray" stroke-dasharray="6,4"/>')
    legend_y = top + 10
    parts.append(f'<line x1="{width - right + 15}" x2="{width - right + 45}" y1="{legend_y}" y2="{legend_y}" '
                 'stroke="gray" stroke-dasharray="6,4"/>')
    parts.append(f'<text x="{width - right + 50}" y="{legend_y + 4}">ideal (N)</text>')
    for i, w in enumerate(w for w in LABELS if w in table):
        med = [(n, statistics.median(r for _, _, r in table[w][n])) for n in sorted(table[w])]
        pts = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v in med)
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[w]}" stroke-width="2"/>')
        for n, v in med:
            parts.append(f'<circle cx="{x(n):.1f}" cy="{y(v):.1f}" r="3" fill="{COLORS[w]}"/>')
        ly = legend_y + 20 * (i + 1)
        parts.append(f'<line x1="{width - right + 15}" x2="{width - right + 45}" y1="{ly}" y2="{ly}" '
                     f'stroke="{COLORS[w]}" stroke-width="2"/>')
        parts.append(f'<text x="{width - right + 50}" y="{ly + 4}">{LABELS[w]}</text>')
    parts.append("</svg>")
    out.write_text("\n".join(parts) + "\n")


def main():
    results = Path(sys.argv[1])
    table, comments = transfers(results)
    md = ["# Benchmark: plain TCP vs MPTCP", ""]
    md += [f"- {c}" for c in comments]
    md += ["- speedup = TCP time / MPTCP time of the same run; medians over the runs", ""]
    md += ["| workload | paths | TCP s (median) | MPTCP s (median) | speedup (median) | runs |",
           "|---|---:|---:|---:|---:|---:|"]
    for w in LABELS:
        for n in sorted(table.get(w, {})):
            runs = table[w][n]
            md.append(f"| {LABELS[w]} | {n} | {statistics.median(t for t, _, _ in runs):.2f} | "
                      f"{statistics.median(m for _, m, _ in runs):.2f} | "
                      f"{statistics.median(r for _, _, r in runs):.2f}x | {len(runs)} |")
    costs_file = results / "costs.csv"
    if costs_file.exists():
        rows, _ = read_csv(costs_file)
        by = defaultdict(list)
        for r in rows:
            if r["value"]:
                by[r["figure"]].append(float(r["value"]))
        med = {k: statistics.median(v) for k, v in by.items()}
        md += ["", "## Costs on an unshaped path (loopback; pgbench -S with 4 clients)", "",
               "| figure | median | runs |", "|---|---:|---:|"]
        names = {
            "tcp_clients_listen_off": "TPS, plain TCP clients, listen_mptcp = off",
            "tcp_clients_listen_on": "TPS, plain TCP clients, listen_mptcp = on",
            "mptcp_clients": "TPS, MPTCP clients (listen_mptcp = on)",
            "connect_ms_disable": "connection setup ms, plain TCP (pgbench -C)",
            "connect_ms_require": "connection setup ms, MPTCP (pgbench -C)",
            "view_ms_100_clients": "ms per SELECT * FROM pg_stat_mptcp, 100 MPTCP clients",
            "subflows_ms_100_clients": "ms per SELECT * FROM pg_stat_mptcp_subflows, 100 MPTCP clients",
            "activity_ms_100_clients": "ms per SELECT * FROM pg_stat_activity (reference), same",
        }
        for k, label in names.items():
            if k in med:
                md.append(f"| {label} | {med[k]:.2f} | {len(by[k])} |")
        if "tcp_clients_listen_off" in med and "tcp_clients_listen_on" in med:
            md += ["", f"Plain TCP clients with listen_mptcp = on: "
                   f"{(med['tcp_clients_listen_on'] / med['tcp_clients_listen_off'] - 1) * 100:+.1f}% TPS."]
        if "mptcp_clients" in med and "tcp_clients_listen_on" in med:
            md += [f"MPTCP clients vs plain TCP clients: "
                   f"{(med['mptcp_clients'] / med['tcp_clients_listen_on'] - 1) * 100:+.1f}% TPS."]
    md += ["", "![speedup](speedup.svg)", ""]
    (results / "results.md").write_text("\n".join(md))
    title = "MPTCP speedup over plain TCP"
    svg_plot(table, results / "speedup.svg", title)
    print("\n".join(md))


if __name__ == "__main__":
    main()
