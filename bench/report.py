#!/usr/bin/env python3
"""Turn the benchmark's raw figures into markdown tables and an SVG plot.

Usage: report.py RESULTS_DIR

Reads transfers.csv, paths.csv and costs.csv written by bench.sh; writes
results.md and speedup.svg next to them.

- speedup of a run: TCP time / MPTCP time of the same run (measured one
  after the other, same data, same lab); TCP uses path 1, the fastest path
  of every lab, so this is the speedup against TCP on the best single path;
- efficiency: goodput (payload bits / time) divided by the sum of the path
  rates (MPTCP), or by path 1's rate (TCP);
- CPU s/GB: CPU seconds of the server process (backend or walsender, from
  the postmaster's cutime + cstime) or of the client program, per GB of
  payload;
- per-path share: the bytes the router carried toward the receiver on each
  path, from its interface counters.
Figures are medians over the runs.
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
SCENARIOS = {
    "equal": "equal paths",
    "unequal": "unequal paths",
    "fastslow": "fast + slow",
    "fastslow_backup": "fast + slow, slow = backup",
    "fast": "fast paths (CPU limit)",
}
# which way the payload goes: COPY FROM is the only upload
TO_SERVER = {"copy_from"}


def read_csv(path):
    """Rows of a CSV file, and its leading '#' comment lines."""
    with open(path) as f:
        lines = f.readlines()
    comments = [l[1:].strip() for l in lines if l.startswith("#")]
    rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
    return rows, comments


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fnum(v, fmt="{:.2f}"):
    return "" if v is None else fmt.format(v)


def pct(v):
    return "" if v is None else f"{v * 100:.0f}%"


def as_float(s):
    return float(s) if s not in (None, "", "-") else None


class Case:
    """One (scenario, paths, workload): the runs with both modes."""

    def __init__(self, scenario, paths, workload, rates, backup, cc, scale):
        self.scenario, self.paths, self.workload = scenario, paths, workload
        self.rates = [float(r) for r in rates.split("/")]
        self.backup, self.cc, self.scale = backup, cc, scale
        self.runs = defaultdict(dict)  # run -> mode -> row

    def pairs(self):
        return [m for m in self.runs.values() if "disable" in m and "require" in m]

    def median(self, mode, field):
        return med(as_float(m[mode][field]) for m in self.pairs())

    def speedups(self):
        return [float(m["disable"]["seconds"]) / float(m["require"]["seconds"]) for m in self.pairs()]

    def speedup(self):
        return med(self.speedups())

    def efficiencies(self, mode):
        total = sum(self.rates) if mode == "require" else self.rates[0]
        if not total:
            return []  # unshaped
        return [float(m[mode]["bytes"]) * 8 / float(m[mode]["seconds"]) / 1e6 / total
                for m in self.pairs()]

    def efficiency(self, mode):
        return med(self.efficiencies(mode))

    def cpu_per_gb(self, mode, who):
        vals = []
        for m in self.pairs():
            cpu = as_float(m[mode][f"{who}_cpu_s"])
            if cpu is not None:
                vals.append(cpu / (float(m[mode]["bytes"]) / 1e9))
        return med(vals)

    def rates_label(self):
        if len(set(self.rates)) == 1:
            return f"{len(self.rates)} x {self.rates[0]:g}"
        return " + ".join(f"{r:g}" for r in self.rates)


def load(results):
    rows, comments = read_csv(results / "transfers.csv")
    cases = {}
    for r in rows:
        key = (r["scenario"], int(r["paths"]), r["workload"], r["cc"])
        if key not in cases:
            cases[key] = Case(r["scenario"], int(r["paths"]), r["workload"], r["rates"],
                              r["backup"], r["cc"], r["scale"])
        cases[key].runs[int(r["run"])][r["mode"]] = r
    shares = defaultdict(lambda: defaultdict(list))  # key -> path -> [(share, mbit/s)]
    pfile = results / "paths.csv"
    if pfile.exists():
        prows, _ = read_csv(pfile)
        per_run = defaultdict(dict)  # (key, mode, run) -> path -> (bytes, rate)
        for r in prows:
            key = (r["scenario"], int(r["paths"]), r["workload"], r.get("cc", ""))
            col = "to_server_bytes" if r["workload"] in TO_SERVER else "to_client_bytes"
            per_run[(key, r["mode"], int(r["run"]))][int(r["path"])] = (int(r[col]), float(r["rate_mbit"]))
        for (key, mode, run), paths in per_run.items():
            if mode != "require" or key not in cases:
                continue
            row = cases[key].runs.get(run, {}).get("require")
            total = sum(b for b, _ in paths.values())
            if not row or not total:
                continue
            secs = float(row["seconds"])
            for p, (b, rate) in paths.items():
                shares[key][p].append((b / total, b * 8 / secs / 1e6, rate))
    return cases, shares, comments


def svg_plot(cases, out):
    """Two panels against the number of equal paths: speedup (ideal N) and
    efficiency (ideal 100%)."""
    # one curve per workload: the equal-path runs of the first congestion
    # control (alphabetically) that has them
    ccs = sorted({k[3] for k in cases if k[0] == "equal"})
    equal = {k[:3]: c for k, c in cases.items()
             if k[0] == "equal" and c.pairs() and ccs and k[3] == ccs[0]}
    paths = sorted({k[1] for k in equal}) or [1]
    workloads = [w for w in LABELS if any(k[2] == w for k in equal)]
    pw, ph, left, bottom, top, gap, legend = 330, 330, 55, 50, 45, 70, 150
    width = left + pw + gap + pw + legend
    height = top + ph + bottom
    xmax = max(paths)

    def x(panel, n):
        x0 = left + panel * (pw + gap)
        return x0 + (n - 0.5) / (xmax + 0.5 - 0.5 + 1e-9) * pw if xmax > 1 else x0 + pw / 2

    def y(v, vmax):
        return top + ph - v / vmax * ph

    rates = sorted({c.rates[0] for c in equal.values()})
    cc = sorted({c.cc for c in equal.values()})
    title = (f"MPTCP vs plain TCP, equal paths of {', '.join(f'{r:g}' for r in rates)} Mbit/s "
             f"(congestion control {', '.join(cc)})")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{(width - legend) / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
    ]
    panels = [
        ("speedup over TCP on one path", xmax, lambda v: f"{v:g}x", list(range(0, xmax + 1)),
         lambda c: c.speedup(), lambda n: n, "ideal (N)"),
        ("efficiency: goodput / sum of path rates", 1.0, lambda v: f"{v * 100:.0f}%",
         [i / 5 for i in range(6)], lambda c: c.efficiency("require"), lambda n: 1.0, "ideal (100%)"),
    ]
    for pi, (label, vmax, fmt, ticks, value, ideal, ideal_label) in enumerate(panels):
        x0 = left + pi * (pw + gap)
        for v in ticks:
            parts.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y(v, vmax):.1f}" y2="{y(v, vmax):.1f}" stroke="#ddd"/>')
            parts.append(f'<text x="{x0 - 6}" y="{y(v, vmax) + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
        for n in paths:
            parts.append(f'<text x="{x(pi, n):.1f}" y="{top + ph + 18}" text-anchor="middle">{n}</text>')
        parts.append(f'<text x="{x0 + pw / 2}" y="{top + ph + 38}" text-anchor="middle">network paths</text>')
        parts.append(f'<text x="{x0 + pw / 2}" y="{top - 8}" text-anchor="middle">{label}</text>')
        parts.append(f'<line x1="{x0}" x2="{x0}" y1="{top}" y2="{top + ph}" stroke="black"/>')
        parts.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{top + ph}" y2="{top + ph}" stroke="black"/>')
        pts = " ".join(f"{x(pi, n):.1f},{y(ideal(n), vmax):.1f}" for n in paths)
        parts.append(f'<polyline points="{pts}" fill="none" stroke="gray" stroke-dasharray="6,4"/>')
        for w in workloads:
            pts_v = [(n, value(equal[("equal", n, w)])) for n in paths if ("equal", n, w) in equal]
            pts_v = [(n, v) for n, v in pts_v if v is not None]
            pts = " ".join(f"{x(pi, n):.1f},{y(v, vmax):.1f}" for n, v in pts_v)
            parts.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[w]}" stroke-width="2"/>')
            for n, v in pts_v:
                parts.append(f'<circle cx="{x(pi, n):.1f}" cy="{y(v, vmax):.1f}" r="3" fill="{COLORS[w]}"/>')
    lx = left + 2 * pw + gap + 20
    ly = top + 10
    parts.append(f'<line x1="{lx}" x2="{lx + 30}" y1="{ly}" y2="{ly}" stroke="gray" stroke-dasharray="6,4"/>')
    parts.append(f'<text x="{lx + 35}" y="{ly + 4}">ideal</text>')
    for i, w in enumerate(workloads):
        yy = ly + 20 * (i + 1)
        parts.append(f'<line x1="{lx}" x2="{lx + 30}" y1="{yy}" y2="{yy}" stroke="{COLORS[w]}" stroke-width="2"/>')
        parts.append(f'<text x="{lx + 35}" y="{yy + 4}">{LABELS[w]}</text>')
    parts.append("</svg>")
    out.write_text("\n".join(parts) + "\n")


def main():
    results = Path(sys.argv[1])
    cases, shares, comments = load(results)
    md = ["# Benchmark: plain TCP vs MPTCP", ""]
    md += [f"- {c}" for c in comments]
    md += ["- TCP runs use path 1, the fastest path of every lab: speedup = TCP time / MPTCP time "
           "of the same run, against TCP on the best single path",
           "- efficiency = goodput / sum of the path rates (MPTCP) or / path 1's rate (TCP); "
           "goodput = payload bits / time (COPY text, backup files, WAL bytes)",
           "- medians over the runs", ""]

    def order(k):
        return (list(SCENARIOS).index(k[0]) if k[0] in SCENARIOS else 99, k[3], k[1],
                list(LABELS).index(k[2]) if k[2] in LABELS else 99)

    keys = sorted((k for k in cases if cases[k].pairs()), key=order)
    md += ["## Transfers", "",
           "| scenario | workload | paths (Mbit/s) | cc | MB | TCP s | MPTCP s | speedup | "
           "TCP efficiency | MPTCP efficiency | runs |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for k in keys:
        c = cases[k]
        mb = c.median("require", "bytes") / 1e6
        md.append(f"| {SCENARIOS.get(c.scenario, c.scenario)} | {LABELS.get(c.workload, c.workload)} | "
                  f"{c.rates_label()}{' (backup: path ' + c.backup + ')' if c.backup else ''} | {c.cc} | "
                  f"{mb:.0f} | {fnum(c.median('disable', 'seconds'))} | {fnum(c.median('require', 'seconds'))} | "
                  f"{fnum(c.speedup())}x | {pct(c.efficiency('disable'))} | "
                  f"{pct(c.efficiency('require'))} | {len(c.pairs())} |")

    # the same lab under several congestion controls: medians and spread
    multi_cc = sorted({k[:3] for k in keys if len({kk[3] for kk in keys if kk[:3] == k[:3]}) > 1},
                      key=lambda k: order(k + ("",)))
    if multi_cc:
        def spread(vals, fmt):
            return f"{fmt(med(vals))} ({fmt(min(vals))}–{fmt(max(vals))})" if vals else ""
        md += ["", "## Congestion control: the same lab, median (min–max) over the runs", "",
               "| scenario | workload | paths (Mbit/s) | cc | speedup | TCP efficiency | "
               "MPTCP efficiency | runs |",
               "|---|---|---|---|---:|---:|---:|---:|"]
        for k3 in multi_cc:
            for k in (k for k in keys if k[:3] == k3):
                c = cases[k]
                md.append(f"| {SCENARIOS.get(c.scenario, c.scenario)} | {LABELS.get(c.workload, c.workload)} | "
                          f"{c.rates_label()} | {c.cc} | {spread(c.speedups(), lambda v: f'{v:.2f}x')} | "
                          f"{spread(c.efficiencies('disable'), pct)} | "
                          f"{spread(c.efficiencies('require'), pct)} | {len(c.pairs())} |")

    cpu_keys = [k for k in keys if cases[k].median("require", "server_cpu_s") is not None
                and k[0] in ("fast", "equal") and (k[0] == "fast" or k[1] == max(
                    kk[1] for kk in keys if kk[0] == "equal"))]
    if cpu_keys:
        md += ["", "## CPU per GB of payload (server process: backend or walsender; client program)", "",
               "| scenario | workload | paths (Mbit/s) | MPTCP Mbit/s | server TCP | server MPTCP | "
               "client TCP | client MPTCP |",
               "|---|---|---|---:|---:|---:|---:|---:|"]
        for k in cpu_keys:
            c = cases[k]
            gp = med(float(m["require"]["bytes"]) * 8 / float(m["require"]["seconds"]) / 1e6 for m in c.pairs())
            md.append(f"| {SCENARIOS.get(c.scenario, c.scenario)} | {LABELS.get(c.workload, c.workload)} | "
                      f"{c.rates_label()} | {gp:.0f} | "
                      f"{fnum(c.cpu_per_gb('disable', 'server'))} | {fnum(c.cpu_per_gb('require', 'server'))} | "
                      f"{fnum(c.cpu_per_gb('disable', 'client'))} | {fnum(c.cpu_per_gb('require', 'client'))} |")

    # every unequal or fast lab; of the equal ones the widest, COPY TO only
    share_keys = [k for k in keys if k in shares and (k[0] != "equal" or (k[2] == "copy_to" and k[1] == max(
        kk[1] for kk in keys if kk[0] == "equal")))]
    if share_keys:
        md += ["", "## MPTCP per path (bytes the router carried toward the receiver)", "",
               "| scenario | workload | path | rate Mbit/s | share of bytes | Mbit/s | % of rate |",
               "|---|---|---:|---:|---:|---:|---:|"]
        for k in share_keys:
            for p in sorted(shares[k]):
                v = shares[k][p]
                share, mbit, rate = med(s for s, _, _ in v), med(b for _, b, _ in v), v[0][2]
                md.append(f"| {SCENARIOS.get(k[0], k[0])} {k[1]}, {k[3]} | {LABELS.get(k[2], k[2])} | {p} | {rate:g} | "
                          f"{share * 100:.1f}% | {mbit:.1f} | {pct(mbit / rate if rate else None)} |")

    costs_file = results / "costs.csv"
    if costs_file.exists():
        rows, _ = read_csv(costs_file)
        by = defaultdict(list)
        for r in rows:
            if r["value"]:
                by[r["figure"]].append(float(r["value"]))
        medc = {k: statistics.median(v) for k, v in by.items()}
        md += ["", "## Costs on an unshaped path (loopback; pgbench -S, 4 clients)", "",
               "| figure | median | min | max | rounds |", "|---|---:|---:|---:|---:|"]
        names = {
            "tcp_clients_listen_off": "TPS, plain TCP clients, listen_mptcp = off",
            "tcp_clients_listen_on": "TPS, plain TCP clients, listen_mptcp = on",
            "mptcp_clients": "TPS, MPTCP clients (listen_mptcp = on)",
            "connect_ms_disable": "connection setup ms, plain TCP (pgbench -C)",
            "connect_ms_require": "connection setup ms, MPTCP (pgbench -C)",
        }
        for view in ("pg_stat_mptcp", "pg_stat_mptcp_subflows", "pg_mptcp_endpoints",
                     "pg_mptcp_settings", "pg_stat_mptcp_counters", "pg_stat_activity"):
            names[f"{view}_ms_100_clients"] = (f"ms per SELECT * FROM {view}, 100 MPTCP clients connected"
                                               + (" (reference)" if view == "pg_stat_activity" else ""))
        for k, label in names.items():
            if k in medc:
                md.append(f"| {label} | {medc[k]:.2f} | {min(by[k]):.2f} | {max(by[k]):.2f} | {len(by[k])} |")

        # ratios round by round: both figures of a round ran side by side
        per_round = defaultdict(dict)
        for r in rows:
            if r["value"]:
                per_round[r["round"]][r["figure"]] = float(r["value"])

        def ratio_line(label, num, den):
            v = sorted(d[num] / d[den] for d in per_round.values() if num in d and den in d and d[den])
            if v:
                md.append(f"| {label} | {statistics.median(v):.3f} | {v[0]:.3f} | {v[-1]:.3f} | {len(v)} |")

        md += ["", "| ratio, round by round | median | min | max | rounds |", "|---|---:|---:|---:|---:|"]
        ratio_line("plain TCP clients: listen_mptcp on / off (TPS)", "tcp_clients_listen_on", "tcp_clients_listen_off")
        ratio_line("MPTCP clients / plain TCP clients, same server (TPS)", "mptcp_clients", "tcp_clients_listen_on")
        ratio_line("connection setup: MPTCP / plain TCP (ms)", "connect_ms_require", "connect_ms_disable")
    md += ["", "![speedup and efficiency against equal paths](speedup.svg)", ""]
    (results / "results.md").write_text("\n".join(md))
    svg_plot(cases, results / "speedup.svg")
    print("\n".join(md))


if __name__ == "__main__":
    main()
