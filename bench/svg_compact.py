#!/usr/bin/python3
"""Rewrite an SVG's <polyline points="x,y x,y ..."> as <path d="Mx,y l dx,dy ...">.

usage: svg_compact.py FILE...

The same drawing in about half the bytes: the plots of bench/results are
mostly long polylines of small steps, and bench/results must stay under
2 MB (tools/tests/test_pages.py).  Points are kept as written; only their
notation changes (relative steps, numbers as short as they print).
"""

import re
import sys

POLY = re.compile(r'<polyline points="([^"]*)"')


def num(v):
    s = ("%.2f" % v).rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def path(points):
    pts = [tuple(float(c) for c in p.split(",")) for p in points.split()]
    if not pts:
        return '<path d=""'
    out = ["M%s,%s" % (num(pts[0][0]), num(pts[0][1]))]
    steps = ["%s,%s" % (num(b[0] - a[0]), num(b[1] - a[1])) for a, b in zip(pts, pts[1:])]
    if steps:
        out.append("l" + " ".join(steps))
    # (fill and stroke attributes stay as they were: a path takes them
    # as a polyline does)
    return '<path d="%s"' % "".join(out)


for name in sys.argv[1:]:
    with open(name) as f:
        text = f.read()
    new = POLY.sub(lambda m: path(m.group(1)), text)
    if new != text:
        with open(name, "w") as f:
            f.write(new)
