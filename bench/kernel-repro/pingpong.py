#!/usr/bin/env python3
"""Client/server for mptcp-dead-subflow-stall.sh (python3, stdlib only).

The server is the sender (a synchronous primary's walsender), the client the
receiver (its standby).  Everything on the wire is a 4096-byte frame:

    header "!QdI": seq (u64), send time (f64, CLOCK_MONOTONIC of the
    server, opaque to the client), kind (u32); zero padding.

    kind 0  record: seq 1, 2, 3, ... one every PERIOD during the loop
    kind 1  burst filler (carries the seq of the last record before it)
    kind 2  bulk
    kind 3  last bulk frame

The client speaks first (an ack of 0, as a standby sends START_REPLICATION)
and answers with 8-byte acks ("!Q"): after each read, the highest
record seq it has received completely (the standby's flush feedback), and
BULK_ACK once it has the last bulk frame.

server: accept one MPTCP connection (IPPROTO_MPTCP = 262); wait for the
file STATE/go (the script creates it once the connection has its 4
subflows); send BULK_MB of bulk frames as fast as possible; wait for
BULK_ACK; then for DURATION s enqueue a record every PERIOD and send with
non-blocking I/O (an application-level output buffer: the clock never
blocks).  The script blackholes path 1 and writes the time (CLOCK_REALTIME)
to STATE/cut; at each of the BURST_AT times after it (seconds, one or more:
"20" or "6,12,18") the server appends BURST_KB of filler to its output
buffer in one go.  Every 0.5 s it writes STATE/status ("seconds
since the cut, age of the oldest unacked record, bursts sent").  At the end it
prints one result line; records never acked are reported as HUNG with their
wait so far, never dropped.  Per-record latencies go to STATE/records.csv.
"""

import argparse
import os
import select
import socket
import struct
import sys
import time

IPPROTO_MPTCP = 262
FRAME = 4096
HDR = struct.Struct("!QdI")
ACK = struct.Struct("!Q")
BULK_ACK = 2**64 - 1
K_RECORD, K_BURST, K_BULK, K_BULK_END = 0, 1, 2, 3


def frame(seq, t, kind):
    return HDR.pack(seq, t, kind).ljust(FRAME, b"\0")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def read_float(path):
    try:
        with open(path) as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def wait_file(path, timeout):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit(f"server: no {path} after {timeout} s")
        time.sleep(0.05)


def server(a):
    st = a.state
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.port))
    ls.listen(1)
    ls.settimeout(a.accept_timeout)
    try:
        conn, peer = ls.accept()
    except socket.timeout:
        sys.exit("server: no connection")
    # keep listening: the client's MP_JOIN SYNs to the announced addresses
    # (same port) are answered by this listener; closed, they get a RST
    log(f"server: connection from {peer[0]}:{peer[1]}")
    wait_file(os.path.join(st, "go"), a.accept_timeout)

    # the bulk, as fast as possible
    t_bulk = time.monotonic()
    conn.settimeout(a.bulk_timeout)
    nframes = max(1, a.bulk_mb * 1024 * 1024 // FRAME)
    chunk = frame(0, 0.0, K_BULK) * 256  # 1 MB
    left = nframes
    try:
        while left > 256:
            conn.sendall(chunk)
            left -= 256
        conn.sendall(frame(0, 0.0, K_BULK) * (left - 1) + frame(0, 0.0, K_BULK_END))
        # ... and its application-level ack
        got = b""
        while True:
            d = conn.recv(4096)
            if not d:
                sys.exit("server: connection closed during the bulk")
            got += d
            n = len(got) // ACK.size * ACK.size
            if any(ACK.unpack_from(got, i)[0] == BULK_ACK for i in range(0, n, ACK.size)):
                break
            got = got[n:]
    except socket.timeout:
        sys.exit(f"server: bulk not acked within {a.bulk_timeout} s")
    bulk_s = time.monotonic() - t_bulk
    log(f"server: bulk {nframes * FRAME / 1e6:.1f} MB acked in {bulk_s:.1f} s "
        f"({nframes * FRAME * 8 / bulk_s / 1e6:.0f} Mbit/s)")

    # the record loop
    conn.setblocking(False)
    t0 = time.monotonic()
    wall_off = time.time() - t0  # CLOCK_REALTIME - CLOCK_MONOTONIC
    write_atomic(os.path.join(st, "loop_start"), f"{t0 + wall_off:.6f}\n")
    t_end = t0 + a.duration
    out = bytearray()
    seq = 0
    send_t = {}          # seq -> monotonic time the record was enqueued
    lat = {}             # seq -> latency (s)
    acked = 0
    ackbuf = b""
    next_tick = t0
    cut = None           # monotonic time of the cut
    bursts = sorted(a.burst_at)
    burst_ts = []        # monotonic times of the bursts sent
    next_status = t0
    cut_file = os.path.join(st, "cut")
    status_file = os.path.join(st, "status")
    max_out = 0

    while True:
        now = time.monotonic()
        if now >= t_end:
            break
        while now >= next_tick:
            seq += 1
            send_t[seq] = now
            out += frame(seq, now, K_RECORD)
            next_tick += a.period
        if cut is None and now >= t0 + a.t_cut - 1:
            w = read_float(cut_file)
            if w is not None:
                cut = w - wall_off
        if len(burst_ts) < len(bursts) and cut is not None and now >= cut + bursts[len(burst_ts)]:
            burst_ts.append(now)
            out += frame(seq, now, K_BURST) * max(1, a.burst_kb * 1024 // FRAME)
            log(f"server: burst of {a.burst_kb} KB at +{now - cut:.2f} s after the cut")
        if out:
            try:
                n = conn.send(out)
                del out[:n]
            except (BlockingIOError, InterruptedError):
                pass
        max_out = max(max_out, len(out))
        if now >= next_status:
            ref = cut if cut is not None else t0 + a.t_cut
            oldest = now - send_t[acked + 1] if acked < seq else 0.0
            write_atomic(status_file, f"{now - ref:.2f} {oldest:.2f} {len(burst_ts)}\n")
            next_status += 0.5
        timeout = max(0.0, min(next_tick, t_end) - time.monotonic())
        r, _, _ = select.select([conn], [conn] if out else [], [], timeout)
        if r:
            try:
                d = conn.recv(65536)
            except (BlockingIOError, InterruptedError):
                d = None
            if d == b"":
                log("server: client closed the connection")
                break
            if d:
                t_ack = time.monotonic()
                ackbuf += d
                n = len(ackbuf) // ACK.size * ACK.size
                hi = max(ACK.unpack_from(ackbuf, i)[0] for i in range(0, n, ACK.size)) if n else 0
                ackbuf = ackbuf[n:]
                if hi != BULK_ACK and hi > acked:
                    for s in range(acked + 1, min(hi, seq) + 1):
                        lat[s] = t_ack - send_t[s]
                    acked = min(hi, seq)

    now = time.monotonic()
    if cut is None:
        log("server: the script never cut path 1 (no STATE/cut)")
        cut = t0 + a.t_cut
    # every record, acked or not (hung ones with their wait so far)
    rows = []
    for s in range(1, seq + 1):
        if s in lat:
            rows.append((s, send_t[s] - cut, lat[s], False))
        else:
            rows.append((s, send_t[s] - cut, now - send_t[s], True))
    with open(os.path.join(st, "records.csv"), "w") as f:
        f.write("seq,sent_rel_cut_s,latency_s,hung\n")
        for s, rel, l, h in rows:
            f.write(f"{s},{rel:.4f},{l:.4f},{int(h)}\n")
    after = [r for r in rows if r[1] >= 0]
    before = [r for r in rows if r[1] < 0]
    hung = [r for r in rows if r[3]]
    worst = max(after, key=lambda r: r[2]) if after else None
    over1 = sum(1 for r in after if r[2] > 1.0)
    pre = max((r[2] for r in before if not r[3]), default=0.0)
    burst_rel = ",".join(f"+{t - cut:.1f}" for t in burst_ts) or "none"
    if worst:
        wtxt = (f"{'>=' if worst[3] else ''}{worst[2]:.3f} s, record sent at "
                f"+{worst[1]:.2f} s after the cut (acked at +{worst[1] + worst[2]:.2f} s)")
    else:
        wtxt = "none"
    htxt = (f"HUNG: {len(hung)} records unacked, the oldest waiting {hung[0][2]:.1f} s "
            f"(sent at +{hung[0][1]:.2f} s)") if hung else "not hung"
    print(f"RESULT longest latency after cut {wtxt}; records over 1 s: {over1}; {htxt}; "
          f"records {seq}, burst {a.burst_kb} KB at {burst_rel} s, max before cut {pre * 1000:.1f} ms, "
          f"bulk {bulk_s:.1f} s, max app backlog {max_out // 1024} KB", flush=True)
    # no graceful close: the script deletes the namespaces
    os._exit(0)


def client(a):
    end = time.monotonic() + a.connect_timeout
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
        try:
            s.connect((a.addr, a.port))
            break
        except OSError as e:
            s.close()
            if time.monotonic() > end:
                sys.exit(f"client: connect: {e}")
            time.sleep(0.1)
    log("client: connected")
    # the client speaks first (a standby sends START_REPLICATION): an ack of
    # record 0, which the server ignores
    s.sendall(ACK.pack(0))
    buf = bytearray()
    maxseq = 0
    while True:
        d = s.recv(262144)
        if not d:
            break
        buf += d
        n = len(buf) // FRAME
        new = maxseq
        bulk_end = False
        for i in range(n):
            seq, _, kind = HDR.unpack_from(buf, i * FRAME)
            if kind == K_RECORD:
                if seq != new + 1:
                    log(f"client: record {seq} after {new}")
                new = max(new, seq)
            elif kind == K_BULK_END:
                bulk_end = True
        del buf[: n * FRAME]
        if bulk_end:
            s.sendall(ACK.pack(BULK_ACK))
        if new > maxseq:
            maxseq = new
            s.sendall(ACK.pack(maxseq))
    log(f"client: end of stream after record {maxseq}")


def seconds_list(text):
    return [float(x) for x in text.replace(",", " ").split()]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="role", required=True)
    sv = sub.add_parser("server")
    sv.add_argument("--port", type=int, required=True)
    sv.add_argument("--state", required=True, help="directory shared with the script")
    sv.add_argument("--bulk-mb", type=int, default=60)
    sv.add_argument("--duration", type=float, default=80)
    sv.add_argument("--period", type=float, default=0.005)
    sv.add_argument("--t-cut", type=float, default=15)
    sv.add_argument("--burst-at", type=seconds_list, default=[20.0],
                    help="seconds after the cut, one or more (comma-separated)")
    sv.add_argument("--burst-kb", type=int, default=400)
    sv.add_argument("--accept-timeout", type=float, default=20)
    sv.add_argument("--bulk-timeout", type=float, default=40)
    cl = sub.add_parser("client")
    cl.add_argument("--addr", required=True)
    cl.add_argument("--port", type=int, required=True)
    cl.add_argument("--connect-timeout", type=float, default=10)
    a = p.parse_args()
    server(a) if a.role == "server" else client(a)


if __name__ == "__main__":
    main()
