#!/bin/bash
# What mptcpinfo's views cost beside pg_stat_activity (issue 34): their
# latency with 10, 100 and 1000 idle MPTCP clients on loopback and from
# the lab's client namespace, mptcpinfo preloaded or not; the subflows view
# from the kernel's dump and from the server processes' reports (the path
# of kernels before 6.15); and pgbench -S throughput with and without an
# exporter querying both views every second.
#
#   make bench BENCH_SCENARIOS=monitoring-cost   (runs this in the lab)
#   bench/monitoring-cost.sh BIN WORK LAB OUTDIR
#
# BENCH_BIN_B=DIR: a second installation's bin directory of the same major
# (another commit of mptcpinfo); every measurement then alternates the two,
# labelled BENCH_LABEL_A and BENCH_LABEL_B, on the same data directory.
# BENCH_CONNS (default "10 100 1000"), BENCH_ROUNDS (5), BENCH_QUERIES
# (20 a view and round), BENCH_TPS_SECONDS (20).  Writes OUTDIR/views.csv,
# OUTDIR/tps.csv and OUTDIR/summary.txt (medians over rounds, the spread,
# the ratio to pg_stat_activity in the same round, the load average).
BIN=$1 WORK=$2 LAB=$3 OUT=$4
. "$(dirname "$0")/common.sh"

CONNS=${BENCH_CONNS:-10 100 1000}
ROUNDS=${BENCH_ROUNDS:-5}
QUERIES=${BENCH_QUERIES:-20}
TPS_SECONDS=${BENCH_TPS_SECONDS:-20}
BIN_A=$BIN BIN_B=${BENCH_BIN_B:-}
LABEL_A=${BENCH_LABEL_A:-this} LABEL_B=${BENCH_LABEL_B:-other}
builds=$LABEL_A
[ -z "$BIN_B" ] || builds="$LABEL_A $LABEL_B"
bin_of() { if [ "$1" = "$LABEL_A" ]; then echo "$BIN_A"; else echo "$BIN_B"; fi; }
max_conns=$(echo "$CONNS" | tr ' ' '\n' | sort -n | tail -1)

idle_pids=()
stop_idle() {
	[ ${#idle_pids[@]} = 0 ] || kill "${idle_pids[@]}" 2>/dev/null || true
	wait "${idle_pids[@]}" 2>/dev/null || true
	idle_pids=()
}
trap 'stop_idle; cleanup' EXIT
lab_up 1 none >/dev/null
server_init
cat >>"$PGDATA_LAB/postgresql.conf" <<EOF
max_connections = $((max_conns + 50))
include_if_exists = 'mode.conf'
EOF

# start BUILD PRELOAD: the server of that build, mptcpinfo preloaded or not
start() {
	if [ "$2" = preloaded ]; then
		echo "shared_preload_libraries = 'mptcpinfo'" >"$PGDATA_LAB/mode.conf"
	else
		: >"$PGDATA_LAB/mode.conf"
	fi
	PATH="$(bin_of "$1"):$PATH" server_start
}
stop() { server_stop; }

# idle N WHERE: N idle MPTCP clients (pgbench sleeping), on loopback or
# from the client namespace; waits until the server has them all
idle() {
	local n=$1 where=$2 host=127.0.0.1 run=() i
	[ "$where" = loopback ] || { host=$SERVER_ADDR; run=(client); }
	printf '\\sleep 3600 s\n' >"$WORK/sleep.sql"
	"${run[@]}" pgbench -n -c "$n" -j 4 -T 7200 -f "$WORK/sleep.sql" \
		"host=$host port=$PGPORT_LAB dbname=postgres user=postgres mptcp=1" >/dev/null 2>&1 &
	idle_pids+=($!)
	for i in $(seq 1 600); do
		[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'")" -ge "$n" ] && return 0
		sleep 0.2
	done
	say "only $(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'") of $n idle clients connected"
	return 1
}

# time_views BUILD PRELOAD WHERE N ROUND: QUERIES of each view, in turn,
# in one session; one CSV line per query: its time in ms and the rows it
# counted (the report checks that each view saw the N clients)
time_views() {
	local build=$1 preload=$2 where=$3 n=$4 round=$5 script=$WORK/views.sql q
	local -A views=(
		[activity]="SELECT count(*) FROM pg_stat_activity WHERE client_port IS NOT NULL"
		[mptcp]="SELECT count(*) FROM pg_stat_mptcp WHERE mptcp"
		[subflows]="SELECT count(*) FROM pg_stat_mptcp_subflows WHERE local_port IS NOT NULL")
	local order="activity mptcp subflows"
	if [ "$preload" = preloaded ] && [ "$build" = "$LABEL_A" ]; then
		views[subflows_reports]="SELECT count(*) FROM pg_stat_mptcp_subflows WHERE local_port IS NOT NULL"
		order="$order subflows_reports"
	fi
	{
		echo '\timing on'
		for q in $(seq 1 "$QUERIES"); do
			for v in $order; do
				if [ "$v" = subflows_reports ]; then
					# the reports' path, with reuse defeated: every
					# query asks every process
					echo "SET mptcpinfo.subflow_source = 'processes';"
					echo "\\echo view $v"
					echo "${views[$v]};"
					echo "RESET mptcpinfo.subflow_source;"
					echo "SELECT pg_sleep(1.05);"
				else
					echo "\\echo view $v"
					echo "${views[$v]};"
				fi
			done
		done
	} >"$script"
	psql -X -q -At -h "$WORK" -p "$PGPORT_LAB" -U postgres -v ON_ERROR_STOP=1 -f "$script" 2>"$WORK/views.err" |
		awk -v b="$build" -v p="$preload" -v w="$where" -v n="$n" -v r="$round" -v load="$(cut -d' ' -f1 /proc/loadavg)" '
			/^view / { v = $2; getline; rows = $1; next }
			/^Time: / && v != "" { printf "%s,%s,%s,%d,%d,%s,%s,%d,%s\n", b, p, w, n, r, v, $2, rows, load; v = "" }' \
		>>"$OUT/views.csv"
	if [ -s "$WORK/views.err" ] && grep -v -e '^Time' "$WORK/views.err" | grep -q .; then
		say "psql said: $(head -3 "$WORK/views.err")"
	fi
}

mkdir -p "$OUT"
echo "build,preload,where,conns,round,view,ms,rows,load" >"$OUT/views.csv"
echo "build,preload,exporter,round,tps,load" >"$OUT/tps.csv"

start "$LABEL_A" off
pgbench -i -s 10 -q -h "$WORK" -p "$PGPORT_LAB" -U postgres >/dev/null 2>&1
sql 'CREATE EXTENSION mptcpinfo'
stop

say "views: $ROUNDS rounds of $QUERIES queries each, builds $builds, clients $CONNS"
for n in $CONNS; do
	for where in loopback remote; do
		for round in $(seq 1 "$ROUNDS"); do
			# alternate the order of the modes, so that drift hits all
			modes=()
			for b in $builds; do for p in off preloaded; do modes+=("$b:$p"); done; done
			[ $((round % 2)) = 1 ] || mapfile -t modes < <(printf '%s\n' "${modes[@]}" | tac)
			for mode in "${modes[@]}"; do
				start "${mode%%:*}" "${mode#*:}"
				idle "$n" "$where" || { stop_idle; stop; exit 1; }
				time_views "${mode%%:*}" "${mode#*:}" "$where" "$n" "$round"
				stop_idle
				stop
			done
			say "$n $where round $round done (load $(cut -d' ' -f1 /proc/loadavg))"
		done
	done
done

# Throughput with 100 idle MPTCP clients on loopback: pgbench -S over MPTCP
# alone, and beside an exporter that queries both views every second.
exporter_loop() {
	local i
	for i in $(seq 1 $((TPS_SECONDS + 5))); do
		sql "SELECT count(*) FROM pg_stat_mptcp; SELECT count(*) FROM pg_stat_mptcp_subflows" >/dev/null
		sleep 1
	done
}
say "throughput: $ROUNDS rounds of ${TPS_SECONDS} s"
for round in $(seq 1 "$ROUNDS"); do
	modes=()
	for b in $builds; do for p in off preloaded; do for e in none every_1s; do modes+=("$b:$p:$e"); done; done; done
	[ $((round % 2)) = 1 ] || mapfile -t modes < <(printf '%s\n' "${modes[@]}" | tac)
	for mode in "${modes[@]}"; do
		IFS=: read -r b p e <<<"$mode"
		start "$b" "$p"
		idle 100 loopback || { stop_idle; stop; exit 1; }
		exp_pid=
		if [ "$e" = every_1s ]; then exporter_loop & exp_pid=$!; fi
		tps=$(pgbench -n -S -c 4 -j 2 -T "$TPS_SECONDS" \
			"host=127.0.0.1 port=$PGPORT_LAB dbname=postgres user=postgres mptcp=1" 2>/dev/null |
			sed -n 's/^tps = \([0-9.]*\).*/\1/p')
		[ -z "$exp_pid" ] || { kill "$exp_pid" 2>/dev/null; wait "$exp_pid" 2>/dev/null || true; }
		echo "$b,$p,$e,$round,${tps:-0},$(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/tps.csv"
		stop_idle
		stop
	done
	say "throughput round $round done"
done

python3 "$(dirname "$0")/monitoring_report.py" "$OUT" | tee "$OUT/summary.txt"
