#!/usr/bin/python3
"""shown_output.py SHOWN ACTUAL: does ACTUAL contain what the README shows?

Used by the quick-start test (quickstart.sh).  SHOWN is an output block of
README.md, already turned into the lab's addresses and versions.  Each of
its lines must be a whole line of ACTUAL, in the same order; other lines
may come between (the shell's trace, a line the README leaves out).
Spaces are compared collapsed, since psql pads its columns to the widest
value; "..." stands for any text (a process id, a counter), and a line of
only "-" and "+" for any such line (psql's rule under its header, as wide
as its columns).  Exits 1, naming the first line not found, otherwise 0.
"""

import re
import sys


def norm(line):
    return " ".join(line.split())


def pattern(line):
    line = norm(line)
    if line and set(line) <= set("-+"):
        return re.compile(r"[-+]+")
    return re.compile(".*".join(re.escape(p) for p in line.split("...")))


def main(shown_path, actual_path):
    with open(shown_path, encoding="utf-8") as f:
        shown = [line for line in f.read().split("\n") if line.strip()]
    with open(actual_path, encoding="utf-8", errors="replace") as f:
        actual = [norm(line) for line in f.read().split("\n")]
    if not shown:
        print("shown_output: the README shows no output here")
        return 1
    at = 0
    for line in shown:
        want = pattern(line)
        while at < len(actual) and not want.fullmatch(actual[at]):
            at += 1
        if at == len(actual):
            print(f"shown_output: not in the output (in this order): {norm(line)!r}")
            return 1
        at += 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
