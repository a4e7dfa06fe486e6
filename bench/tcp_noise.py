#!/usr/bin/env python3
"""Hold N idle plain-TCP connections on loopback, as other programs of a busy
host do: what the TCP dump of pg_stat_mptcp_subflows walks past.

    tcp_noise.py N [SECONDS]

Worker processes (1,000 connections each, both ends: 2,000 descriptors)
each listen on their own port and connect to it.  Prints "ready N" once
every connection is up, then holds them for SECONDS (default 3600) or until
killed.  Bounded: at most 50,000 connections, loopback only.
"""
import os
import resource
import socket
import sys
import time

PER_WORKER = 1000


def worker(n, r, seconds):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2 * n + 100), hard))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(n)
    keep = []
    for _ in range(n):
        c = socket.create_connection(listener.getsockname())
        a, _ = listener.accept()
        keep += [c, a]
    os.write(r, b"1")
    time.sleep(seconds)


def main():
    total = min(int(sys.argv[1]), 50000)
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3600
    r, w = os.pipe()
    pids = []
    for start in range(0, total, PER_WORKER):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            worker(min(PER_WORKER, total - start), w, seconds)
            os._exit(0)
        pids.append(pid)
    os.close(w)
    for _ in pids:
        if os.read(r, 1) != b"1":
            sys.exit("a worker failed")
    print("ready", total, flush=True)
    for pid in pids:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
