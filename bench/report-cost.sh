#!/bin/bash
# What mptcpinfo's subflow reports cost (issue 25): pgbench with and without
# mptcpinfo preloaded, and the latency of the views with 100 connections.
#
#   bench/report-cost.sh PREFIX [OUTDIR]
#
# PREFIX: a production installation (make install, or build-release).  Runs
# as the calling user (not root: postgres refuses), on loopback only, every
# client with PGMPTCP=1.  Rounds alternate the two modes (BENCH_ROUNDS,
# default 5; BENCH_SECONDS per pgbench run, default 15).  Writes
# OUTDIR/pgbench.csv, OUTDIR/latency.csv and OUTDIR/summary.txt.
set -euo pipefail
PREFIX=${1:?usage: report-cost.sh PREFIX [OUTDIR]}
OUT=${2:-$(dirname "$0")/results/report-cost}
ROUNDS=${BENCH_ROUNDS:-5}
SECS=${BENCH_SECONDS:-15}
PORT=${BENCH_PORT:-55432}
export PATH=$PREFIX/bin:/usr/bin:/bin
export LD_LIBRARY_PATH=$PREFIX/lib/x86_64-linux-gnu:$PREFIX/lib
export PGHOST=127.0.0.1 PGPORT=$PORT PGDATABASE=postgres PGMPTCP=1
mkdir -p "$OUT"
D=$(mktemp -d)
cleanup() {
	pkill -f "pgbench.*-p $PORT" 2>/dev/null || true
	pg_ctl -D "$D/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT

initdb -D "$D/data" -A trust >/dev/null
cat >>"$D/data/postgresql.conf" <<EOF
listen_mptcp = on
listen_addresses = '127.0.0.1'
port = $PORT
max_connections = 130
unix_socket_directories = '$D'
EOF
start() {
	# $1: preloaded or not
	if [ "$1" = preloaded ]; then
		echo "shared_preload_libraries = 'mptcpinfo'" >"$D/data/mode.conf"
	else
		: >"$D/data/mode.conf"
	fi
	grep -q "include_if_exists = 'mode.conf'" "$D/data/postgresql.conf" ||
		echo "include_if_exists = 'mode.conf'" >>"$D/data/postgresql.conf"
	pg_ctl -D "$D/data" -l "$D/log" -w start >/dev/null
}
stop() { pg_ctl -D "$D/data" -m fast -w stop >/dev/null; }

start off
pgbench -i -s 10 -q >/dev/null 2>&1
psql -qXc 'CREATE EXTENSION mptcpinfo' >/dev/null
stop

echo "round,mode,tps" >"$OUT/pgbench.csv"
for r in $(seq 1 "$ROUNDS"); do
	# alternate which mode goes first, so drift hits both
	if [ $((r % 2)) = 1 ]; then modes="off preloaded"; else modes="preloaded off"; fi
	for m in $modes; do
		start "$m"
		tps=$(pgbench -S -c 4 -j 2 -T "$SECS" -n 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
		echo "$r,$m,$tps" >>"$OUT/pgbench.csv"
		stop
	done
done

# The views' latency: 100 idle MPTCP connections (pgbench holding them with
# \sleep), then the same with 100 busy ones (select-only, as fast as they
# go).  Each figure: a psql session running the query 20 times, \timing.
start preloaded
echo '\sleep 600 s' >"$D/idle.sql"
echo "connections,state,view,run,ms" >"$OUT/latency.csv"
measure() {
	local state=$1 view q
	for view in pg_stat_mptcp pg_stat_mptcp_subflows; do
		q="SELECT count(*) FROM $view"
		for _ in $(seq 1 20); do echo "$q;"; done |
			psql -qX -v ON_ERROR_STOP=1 -c '\timing on' -f - 2>/dev/null |
			sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | awk -v s="$state" -v v="$view" '{ print 100 "," s "," v "," NR "," $1 }' >>"$OUT/latency.csv"
	done
}
pgbench -c 100 -j 4 -T 120 -n -f "$D/idle.sql" >/dev/null 2>&1 &
for _ in $(seq 1 120); do
	[ "$(psql -qXAtc "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")" -ge 101 ] && break
	sleep 0.5
done
rows=$(psql -qXAtc "SELECT count(*) || ' rows, ' || count(local_addr) || ' with addresses' FROM pg_stat_mptcp_subflows")
measure idle
pkill -f "pgbench.*-f $D/idle.sql" || true
wait || true
pgbench -S -c 100 -j 4 -T 60 -n >/dev/null 2>&1 &
sleep 5
measure busy
pkill -f "pgbench -S -c 100" || true
wait || true
stop

python3 - "$OUT" "$rows" <<'PY' | tee "$OUT/summary.txt"
import csv, statistics, sys, platform
out, rows = sys.argv[1], sys.argv[2]
tps = {}
for r in csv.DictReader(open(f"{out}/pgbench.csv")):
    tps.setdefault(r["round"], {})[r["mode"]] = float(r["tps"])
ratios = [v["preloaded"] / v["off"] for v in tps.values() if "off" in v and "preloaded" in v]
print(f"kernel {platform.release()}; loopback, every client MPTCP (one subflow)")
print(f"pgbench -S -c 4, {len(ratios)} rounds alternating: tps with mptcpinfo preloaded / without:"
      f" median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")
for mode in ("off", "preloaded"):
    v = [x[mode] for x in tps.values() if mode in x]
    print(f"  {mode:9s} tps median {statistics.median(v):.0f} (min {min(v):.0f}, max {max(v):.0f})")
lat = {}
for r in csv.DictReader(open(f"{out}/latency.csv")):
    lat.setdefault((r["state"], r["view"]), []).append(float(r["ms"]))
print(f"100 MPTCP connections ({rows} in pg_stat_mptcp_subflows while idle); SELECT count(*), 20 runs each:")
for (state, view), v in sorted(lat.items()):
    print(f"  {state:4s} {view:24s} median {statistics.median(v):7.1f} ms (min {min(v):.1f}, max {max(v):.1f})")
PY
