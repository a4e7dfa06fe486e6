#!/usr/bin/python3
"""A steady MPTCP stream for host/tests/host-setup.sh: no PostgreSQL.

  mptcp_stream.py serve PORT SECONDS OUT       (in the server's namespace)
  mptcp_stream.py send ADDR PORT SECONDS OUT   (in the client's namespace)

"send" writes a 1 KiB record every 10 ms for SECONDS (as a primary's
commits would), each carrying its sequence number; "serve" accepts one
connection, reads every record and answers each with its sequence number.
Both write one line of JSON to OUT: records sent / received, answers,
the sha256 of every byte they got, and the longest wait for an answer
(send).  The test compares the two sides' counts and checksums.
"""

import hashlib
import json
import select
import socket
import struct
import sys
import time

IPPROTO_MPTCP = 262
RECORD = 1024


def serve(port, seconds, out):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # the wildcard: joins arrive at every signalled address
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(30)
    conn, _ = ls.accept()
    conn.settimeout(seconds + 60)
    digest, buf, records = hashlib.sha256(), b"", 0
    while True:
        try:
            data = conn.recv(65536)
        except (socket.timeout, OSError):
            break
        if not data:
            break
        digest.update(data)
        buf += data
        while len(buf) >= RECORD:
            seq = struct.unpack_from("!I", buf)[0]
            buf = buf[RECORD:]
            records += 1
            conn.sendall(struct.pack("!I", seq))
    conn.close()
    with open(out, "w") as f:
        json.dump({"received": records, "sha256": digest.hexdigest()}, f)


def send(addr, port, seconds, out):
    # the server may still be starting (a loaded or emulated machine): try
    # again for up to 20 s while it refuses
    for attempt in range(40):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
        s.settimeout(10)
        try:
            s.connect((addr, port))
            break
        except ConnectionRefusedError:
            s.close()
            if attempt == 39:
                raise
            time.sleep(0.5)
    s.setblocking(False)
    digest, sent, answered, longest, pending = hashlib.sha256(), 0, 0, 0.0, {}
    start = time.monotonic()
    next_at, error = start, None
    abuf = b""
    while True:
        now = time.monotonic()
        if now - start >= seconds and not pending:
            break
        if now - start >= seconds + 60:
            error = "answers still missing 60 s after the end"
            break
        if now >= next_at and now - start < seconds:
            rec = struct.pack("!I", sent) + bytes((sent + i) % 251 for i in range(RECORD - 4))
            try:
                s.setblocking(True)
                s.settimeout(seconds + 60)
                s.sendall(rec)
                s.setblocking(False)
            except OSError as e:
                error = "send: %s" % e
                break
            digest.update(rec)
            pending[sent] = now
            sent += 1
            next_at += 0.01
        r, _, _ = select.select([s], [], [], max(0.0, min(0.01, next_at - time.monotonic())))
        if r:
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError as e:
                error = "recv: %s" % e
                break
            if not data:
                error = "the server closed the connection"
                break
            abuf += data
            while len(abuf) >= 4:
                seq = struct.unpack_from("!I", abuf)[0]
                abuf = abuf[4:]
                t = pending.pop(seq, None)
                if t is not None:
                    answered += 1
                    longest = max(longest, time.monotonic() - t)
    s.close()
    with open(out, "w") as f:
        json.dump({"sent": sent, "answered": answered, "sha256": digest.hexdigest(),
                   "longest_wait_s": round(longest, 3), "error": error}, f)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"] and len(sys.argv) == 5:
        serve(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    elif sys.argv[1:2] == ["send"] and len(sys.argv) == 6:
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(__doc__.split("\n\n")[1])
