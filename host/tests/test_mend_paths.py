#!/usr/bin/python3
"""host/mend-paths' choice of what to re-announce, without a network.

mend-paths acts on "ip mptcp monitor" events; here its watch loop reads
events from a pipe, and the commands it runs (ip, pg_lsclusters) and its
probes are replaced, so the test sees which endpoints it deletes and adds
back.  Checked: a subflow lost on a port that is not PostgreSQL's is left
alone; one lost on a cluster's port, on a --port port, or on a signal
endpoint's own port is re-announced once its path answers; a closure
without an error, and a subflow established again before the probe, are
left alone.

usage: test_mend_paths.py [PATH-TO-mend-paths]; prints "ok"/"FAIL" lines
and "mend-paths filter: N passed, M failed"; exit 1 if any failed.
"""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "mend-paths")


def load():
    loader = importlib.machinery.SourceFileLoader("mend_paths", SCRIPT)
    spec = importlib.util.spec_from_loader("mend_paths", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def run(events, endpoints, clusters="", ports=(), answers=True):
    """Feed EVENTS to a fresh watch loop; the 'ip' commands it ran."""
    mp = load()
    calls = []

    def ip(*args):
        calls.append(" ".join(args))
        out = endpoints if args[:3] == ("mptcp", "endpoint", "show") else ""
        return subprocess.CompletedProcess(args, 0, out, "")

    real_run = subprocess.run

    def fake_run(cmd, *a, **kw):
        if cmd and cmd[0] == "pg_lsclusters":
            return subprocess.CompletedProcess(cmd, 0, clusters, "")
        return real_run(cmd, *a, **kw)

    mp.ip = ip
    mp.subprocess = types.SimpleNamespace(run=fake_run, TimeoutExpired=subprocess.TimeoutExpired,
                                          CompletedProcess=subprocess.CompletedProcess)
    mp.echo_answers = lambda src, dst: answers
    mp.tcp_answers = lambda src, dst, port: answers
    mp.log = lambda msg: None
    r, w = os.pipe()
    os.write(w, "".join(e + "\n" for e in events).encode())
    os.close(w)
    mon = types.SimpleNamespace(stdout=os.fdopen(r, "r"))
    rc = mp.watch(mon, 0.01, [str(p) for p in ports])
    mon.stdout.close()
    return rc, [c for c in calls if c.split()[2:3] in (["delete"], ["add"])]


def closed(port, error=110, token="1", saddr="198.18.1.1"):
    return (f"[      SF_CLOSED] token={token} remid=1 locid=1 saddr4={saddr} daddr4=198.18.1.2 "
            f"sport={port} dport=40000 backup=0 error={error}")


EPS = "198.18.1.1 id 1 signal dev veth1\n198.18.2.1 id 2 signal dev veth2\n"
CLUSTER = "17  main    5432 online postgres /var/lib/postgresql/17/main /var/log/x.log\n"
REANNOUNCED = ["mptcp endpoint delete id 1", "mptcp endpoint add 198.18.1.1 dev veth1 id 1 signal"]

CASES = [
    ("a subflow lost on another service's port (8080) is left alone",
     dict(events=[closed(8080)], endpoints=EPS, clusters=CLUSTER), []),
    ("a subflow lost on a cluster's port (pg_lsclusters: 5432) is re-announced",
     dict(events=[closed(5432)], endpoints=EPS, clusters=CLUSTER), REANNOUNCED),
    ("a subflow lost on a --port port (5433) is re-announced",
     dict(events=[closed(5433)], endpoints=EPS, ports=[5433]), REANNOUNCED),
    ("a subflow lost on a signal endpoint's own port (7001) is re-announced",
     dict(events=[closed(7001)], endpoints=EPS.replace("id 1 signal", "port 7001 id 1 signal")),
     ["mptcp endpoint delete id 1", "mptcp endpoint add 198.18.1.1 port 7001 dev veth1 id 1 signal"]),
    ("another service's port among PostgreSQL's: only PostgreSQL's address is re-announced",
     dict(events=[closed(8080, saddr="198.18.2.1", token="2"), closed(5432)], endpoints=EPS,
          clusters=CLUSTER), REANNOUNCED),
    ("a subflow closed without an error is left alone",
     dict(events=[closed(5432, error=0)], endpoints=EPS, clusters=CLUSTER), []),
    ("a path that does not answer is not re-announced",
     dict(events=[closed(5432)], endpoints=EPS, clusters=CLUSTER, answers=False), []),
]


def main():
    passed = failed = 0
    for name, kw, want in CASES:
        rc, got = run(**kw)
        if got == want and rc == 1:
            print(f"ok: {name}")
            passed += 1
        else:
            print(f"FAIL: {name}: ran {got}, wanted {want} (watch returned {rc}, wanted 1 at the end of events)")
            failed += 1
    print(f"mend-paths filter: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
