#!/usr/bin/python3
#
# src/test/mptcp/clients/pyclient.py
#
# A Python client for "make deb-test-clients" (tools/lib/clients.sh), with
# one of two drivers:
#   psycopg  psycopg 3, which loads the system libpq (libpq.so.5): with our
#            libpq5 it knows "mptcp", so mptcp=require goes in the conninfo
#   pg8000   pure Python, its own protocol code and a plain socket: no way to
#            ask for MPTCP, so "mptcpize run" (Debian's mptcpize package)
#            makes its TCP socket an MPTCP one from outside
#
# Usage: pyclient.py psycopg|pg8000 CONNINFO   (CONNINFO: key=value ...)
#
# Prints the lines pgx/main.go prints (see there), after one "client" line
# saying what the client side sees.
import hashlib
import socket
import sys

WAIT_SQL = ("DO $$BEGIN FOR i IN 1..50 LOOP EXIT WHEN (SELECT subflows FROM pg_stat_mptcp "
            "WHERE pid = pg_backend_pid()) >= 2; PERFORM pg_sleep(0.2); END LOOP; END$$")
STATUS_SQL = ("SELECT mptcp::text || ' ' || coalesce(subflows::text, '-') FROM pg_stat_mptcp "
              "WHERE pid = pg_backend_pid()")
TCP_IS_MPTCP = 43        # Linux 6.10
IPPROTO_MPTCP = 262


def socket_view(fd):
    """What the kernel says about the client's socket: its protocol, and
    (6.10+) whether it is MPTCP now, i.e. did not fall back to TCP."""
    s = socket.socket(fileno=socket.dup(fd))
    try:
        proto = s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL)
        try:
            is_mptcp = s.getsockopt(socket.IPPROTO_TCP, TCP_IS_MPTCP)
        except OSError:
            is_mptcp = "?"
    finally:
        s.close()
    return "SO_PROTOCOL %s%s, TCP_IS_MPTCP %s" % (
        proto, " (MPTCP)" if proto == IPPROTO_MPTCP else " (TCP)", is_mptcp)


def connect(driver, conninfo):
    if driver == "psycopg":
        import psycopg
        conn = psycopg.connect(conninfo, autocommit=True)
        info = "psycopg %s (pq implementation %s, libpq %s)" % (
            psycopg.__version__, psycopg.pq.__impl__, psycopg.pq.version())
        fd = conn.pgconn.socket
    elif driver == "pg8000":
        import pg8000.dbapi
        args = dict(kv.split("=", 1) for kv in conninfo.split())
        conn = pg8000.dbapi.connect(user=args.get("user", "postgres"), host=args["host"],
                                    port=int(args.get("port", 5432)),
                                    database=args.get("dbname", "postgres"))
        conn.autocommit = True
        info = "pg8000 %s" % pg8000.__version__
        fd = conn._usock.fileno()
    else:
        sys.exit("usage: pyclient.py psycopg|pg8000 CONNINFO")
    return conn, "%s; %s" % (info, socket_view(fd))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pyclient.py psycopg|pg8000 CONNINFO")
    conn, info = connect(sys.argv[1], sys.argv[2])
    print("client", info)
    cur = conn.cursor()
    cur.execute(WAIT_SQL)
    cur.execute(STATUS_SQL)
    print("multipath", cur.fetchone()[0])

    # Rows read over the connection, summed here.
    cur.execute("SELECT id, t FROM items ORDER BY id")
    h = hashlib.md5()
    n = 0
    for row in cur.fetchall():
        h.update(("%d:%s\n" % (row[0], row[1])).encode())
        n += 1
    print("read", n, h.hexdigest())

    # Data sent over the connection, summed by the server.
    payload = "".join("%d\n" % i for i in range(1, 100001))
    cur.execute("SELECT octet_length(%s::text) || ' ' || md5(%s::text)", (payload, payload))
    print("echo", cur.fetchone()[0])
    conn.close()


if __name__ == "__main__":
    main()
