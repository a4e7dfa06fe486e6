#!/bin/bash
# The benchmark: plain TCP vs MPTCP, same data, same lab, side by side.
#
# Usage (inside a private user + network namespace; "make bench" does it):
#   bench.sh BIN WORK LAB OUTDIR
#
# For 1, 2, 4 and 8 paths of BENCH_RATE each: COPY TO, COPY FROM,
# pg_basebackup and a streaming standby's catch-up, each run over plain
# TCP and over MPTCP in turn, BENCH_RUNS times.  Then the costs on an
# unshaped path (loopback): pgbench -S TPS of plain TCP clients with
# listen_mptcp off and on, of MPTCP clients, and the connection setup time.
# Raw figures go to OUTDIR/*.csv; bench/report.py makes the table and plot.

BIN=$1 WORK=$2 LAB=$3 OUT=$4
. "$(dirname "$0")/common.sh"

RATE=${BENCH_RATE:-25mbit}
RUNS=${BENCH_RUNS:-3}
PATHS_LIST=${BENCH_PATHS:-1 2 4 8}
WORKLOADS=${BENCH_WORKLOADS:-copy_to copy_from basebackup catchup}
BENCH_ROWS=${BENCH_ROWS:-100000}	# about 19 MB of COPY text
PGBENCH_SECONDS=${PGBENCH_SECONDS:-15}
trap cleanup EXIT

mkdir -p "$OUT"
raw=$OUT/transfers.csv
costs=$OUT/costs.csv
{
	echo "# kernel: $(uname -sr); rate per path: $RATE; runs: $RUNS"
	echo "workload,paths,mode,run,seconds"
} >"$raw"

server_init
first=1
for n in $PATHS_LIST; do
	say "lab: $n path(s) of $RATE"
	lab_up "$n" "$RATE"
	if [ -n "$first" ]; then
		server_start on
		load_data
		say "data: $(sql "SELECT pg_size_pretty(pg_total_relation_size('t_bench'))") table, backup $(sql "SELECT pg_size_pretty(sum(pg_database_size(oid))) FROM pg_database")"
		standby_prepare
		first=
	fi
	for run in $(seq "$RUNS"); do
		# alternate which mode goes first, so that neither always
		# inherits what the previous workload left behind
		order="disable require"
		[ $((run % 2)) -eq 0 ] && order="require disable"
		for w in $WORKLOADS; do
			for mode in $order; do
				s=$($w $mode)
				echo "$w,$n,$mode,$run,$s" >>"$raw"
				say "  $n paths, run $run: $w over $([ $mode = disable ] && echo TCP || echo MPTCP): $s s"
			done
		done
	done
done
standby_stop
lab down

if [ "${BENCH_COSTS:-1}" = 0 ]; then
	python3 "$(dirname "$0")/report.py" "$OUT" >/dev/null
	exit 0
fi

# Costs on an unshaped path: loopback in the server namespace.
say "costs: pgbench on loopback, $PGBENCH_SECONDS s per figure"
echo "figure,round,value" >"$costs"
pgbench -q -i -s 10 -h 127.0.0.1 -p "$PGPORT_LAB" postgres >/dev/null 2>&1
tps() { sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
conn_ms() { sed -n 's/^average connection time = \([0-9.]*\) ms/\1/p'; }
for round in $(seq "$RUNS"); do
	for listen in off on; do
		server_stop
		server_start $listen
		v=$(pgbench -n -S -c 4 -j 2 -T "$PGBENCH_SECONDS" -h 127.0.0.1 -p "$PGPORT_LAB" postgres 2>/dev/null | tps)
		echo "tcp_clients_listen_$listen,$round,$v" >>"$costs"
		say "  round $round: TCP clients, listen_mptcp=$listen: $v TPS"
	done
	v=$(PGMPTCP=require pgbench -n -S -c 4 -j 2 -T "$PGBENCH_SECONDS" -h 127.0.0.1 -p "$PGPORT_LAB" postgres 2>/dev/null | tps)
	echo "mptcp_clients,$round,$v" >>"$costs"
	say "  round $round: MPTCP clients: $v TPS"
	for mode in disable require; do
		v=$(PGMPTCP=$mode pgbench -n -S -C -c 2 -j 2 -T 5 -h 127.0.0.1 -p "$PGPORT_LAB" postgres 2>/dev/null | conn_ms)
		echo "connect_ms_$mode,$round,$v" >>"$costs"
		say "  round $round: connection setup, mptcp=$mode: $v ms"
	done
done
# The cost of the monitoring view with 100 MPTCP clients connected.
say "costs: SELECT * FROM pg_stat_mptcp with 100 MPTCP clients"
for i in $(seq 100); do
	PGMPTCP=require psql -X -q -h 127.0.0.1 -p "$PGPORT_LAB" -c 'SELECT pg_sleep(120)' >/dev/null 2>&1 &
done
for _ in $(seq 200); do
	[ "$(sql "SELECT count(*) FROM pg_stat_mptcp WHERE mptcp")" -ge 100 ] && break
	sleep 0.1
done
echo 'SELECT * FROM pg_stat_mptcp;' >"$WORK/view.sql"
echo 'SELECT * FROM pg_stat_mptcp_subflows;' >"$WORK/subflows.sql"
echo 'SELECT * FROM pg_stat_activity;' >"$WORK/activity.sql"
for round in $(seq "$RUNS"); do
	for q in view subflows activity; do
		v=$(pgbench -n -f "$WORK/$q.sql" -c 1 -T 5 -h "$WORK" -p "$PGPORT_LAB" postgres 2>/dev/null |
			sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
		echo "${q}_ms_100_clients,$round,$v" >>"$costs"
		say "  round $round: SELECT * FROM $q (100 MPTCP clients): $v ms"
	done
done
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(120)%'" >/dev/null
wait
say "raw figures in $OUT"
python3 "$(dirname "$0")/report.py" "$OUT" >/dev/null
say "table: $OUT/results.md, plot: $OUT/speedup.svg"
