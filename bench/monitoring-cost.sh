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
# BENCH_PATHS=2: the remote clients have two subflows each (the lab's
# second path), whose ends only a dump or a report can tell the first
# time.  BENCH_CONNS (default "10 100 1000"), BENCH_ROUNDS (5), BENCH_QUERIES
# (20 a view and round), BENCH_TPS_SECONDS (20; BENCH_TPS=0: no
# throughput runs).  BENCH_TCP_NOISE=N: N idle plain-TCP connections of
# another program on the server's loopback meanwhile (bench/tcp_noise.py),
# which a TCP dump walks past.  Each round also measures, right after
# the views, the kernel's floor for the same connections
# (bench/kernel-repro/sock-diag-cost.c --floor: the cheapest description of
# the server port's TCP sockets, and the MPTCP dump), as the view "floor";
# the summary gives each view's ratio to it.  Writes OUTDIR/views.csv,
# OUTDIR/first.csv (each view's first query in a new session: its time, the
# second query's, and how much the backend's peak memory grew),
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
max_conns=$(printf '%s\n' $CONNS 100 | sort -n | tail -1)

# (the idle clients are found by their command line: in the client
# namespace, $! is the lab's wrapper, not pgbench)
IDLE_MARK="-T 7201"
idle_pids=()
stop_idle() {
	pkill -f -- "pgbench -n -c [0-9]+ -j 4 $IDLE_MARK" 2>/dev/null || true
	wait "${idle_pids[@]}" 2>/dev/null || true
	idle_pids=()
}
noise_pid=
stop_noise() { [ -z "$noise_pid" ] || { kill "$noise_pid" 2>/dev/null; pkill -f tcp_noise.py 2>/dev/null; wait "$noise_pid" 2>/dev/null; } || true; }
trap 'stop_idle; stop_noise; cleanup' EXIT
# A quiet machine to begin with (the load average lags a minute behind
# whatever ran before): at most 5 minutes' wait.
for i in $(seq 1 60); do
	awk -v c="$(nproc)" '{ exit !($1 < c / 2) }' /proc/loadavg && break
	[ "$i" = 1 ] && say "waiting for the load average ($(cut -d' ' -f1 /proc/loadavg)) to fall below $(($(nproc) / 2))"
	sleep 5
done
lab_up "${BENCH_PATHS:-1}" none >/dev/null
if [ "${BENCH_TCP_NOISE:-0}" -gt 0 ]; then
	python3 "$(dirname "$0")/tcp_noise.py" "$BENCH_TCP_NOISE" 7200 >"$WORK/noise.out" &
	noise_pid=$!
	for i in $(seq 1 300); do grep -q ready "$WORK/noise.out" && break; sleep 0.2; done
	grep -q ready "$WORK/noise.out" || { say "tcp_noise.py did not get ready"; exit 1; }
	say "$BENCH_TCP_NOISE idle plain-TCP connections on loopback ($(ss -tnH | wc -l) TCP sockets)"
fi
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
	# (not longer: pgbench 18 spins on a \sleep of 3600 s, as if it
	# overflowed, and would be the load it is meant not to be)
	printf '\\sleep 600 s\n' >"$WORK/sleep.sql"
	"${run[@]}" pgbench -n -c "$n" -j 4 $IDLE_MARK -f "$WORK/sleep.sql" \
		"host=$host port=$PGPORT_LAB dbname=postgres user=postgres mptcp=1" >/dev/null 2>&1 &
	idle_pids+=($!)
	for i in $(seq 1 600); do
		[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'")" -ge "$n" ] && return 0
		sleep 0.2
	done
	say "only $(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'") of $n idle clients connected"
	return 1
}

# what each view's query counts: the idle clients (and their subflows)
declare -A VIEW_SQL=(
	[activity]="SELECT count(*) FROM pg_stat_activity WHERE client_port IS NOT NULL"
	[mptcp]="SELECT count(*) FROM pg_stat_mptcp WHERE mptcp"
	[subflows]="SELECT count(*) FROM pg_stat_mptcp_subflows WHERE local_port IS NOT NULL")

# time_views BUILD PRELOAD WHERE N ROUND: QUERIES of each view, in turn,
# in one session; one CSV line per query: its time in ms and the rows it
# counted (the report checks that each view saw the N clients)
time_views() {
	local build=$1 preload=$2 where=$3 n=$4 round=$5 script=$WORK/views.sql q
	local -A views
	for q in "${!VIEW_SQL[@]}"; do views[$q]=${VIEW_SQL[$q]}; done
	local order="activity mptcp subflows"
	if [ "$preload" = preloaded ] && [ "$build" = "$LABEL_A" ]; then
		views[subflows_reports]=${VIEW_SQL[subflows]}
		order="$order subflows_reports"
	fi
	{
		echo '\timing on'
		for q in $(seq 1 "$QUERIES"); do
			for v in $order; do
				[ "$v" != subflows_reports ] || continue
				echo "\\echo view $v"
				echo "${views[$v]};"
			done
		done
		# The reports' path, with their reuse defeated (every query asks
		# every process), after the others: a query after an idle second
		# runs slower, and must not slow down the others' figures.
		if [ -n "${views[subflows_reports]:-}" ]; then
			echo "SET mptcpinfo.subflow_source = 'processes';"
			for q in $(seq 1 "$QUERIES"); do
				echo "SELECT pg_sleep(1.05);"
				echo "\\echo view subflows_reports"
				echo "${views[subflows_reports]};"
			done
		fi
	} >"$script"
	# the CPU's run queue while this runs (/proc/loadavg's runnable tasks):
	# the load average lags a minute behind, and connecting 1000 clients
	# has just raised it
	( while read -r _ _ _ runnable _ </proc/loadavg; do echo "${runnable%/*}"; sleep 0.2; done ) >"$WORK/runq" &
	local sampler=$!
	psql -X -q -At -h "$WORK" -p "$PGPORT_LAB" -U postgres -v ON_ERROR_STOP=1 -f "$script" >"$WORK/views.out" 2>"$WORK/views.err"
	# the kernel's floor for the same connections, as many times: the
	# cheapest description of the server port's subflows, and the MPTCP dump
	"$WORK/sock-diag-cost" --floor "$PGPORT_LAB" "$QUERIES" >"$WORK/floor.out" 2>&1 ||
		say "sock-diag-cost --floor: $(tail -1 "$WORK/floor.out")"
	kill "$sampler"
	wait "$sampler" 2>/dev/null || true
	local runq
	# (besides the sampler, psql and its backend)
	runq=$(awk '{ r = $1 - 3; s += r > 0 ? r : 0; n++ } END { printf "%.2f", n ? s / n : 0 }' "$WORK/runq")
	awk -v b="$build" -v p="$preload" -v w="$where" -v n="$n" -v r="$round" -v load="$runq" '
		/^view / { v = $2; getline; rows = $1; next }
		/^Time: / && v != "" { printf "%s,%s,%s,%d,%d,%s,%s,%d,%s\n", b, p, w, n, r, v, $2, rows, load; v = "" }' \
		"$WORK/views.out" >>"$OUT/views.csv"
	awk -v b="$build" -v p="$preload" -v w="$where" -v n="$n" -v r="$round" -v load="$runq" '
		/^[0-9.]+ [0-9.]+ [0-9.]+ [0-9]+$/ { printf "%s,%s,%s,%d,%d,floor,%s,%d,%s\n", b, p, w, n, r, $1, $4, load }' \
		"$WORK/floor.out" >>"$OUT/views.csv"
	if [ -s "$WORK/views.err" ] && grep -v -e '^Time' "$WORK/views.err" | grep -q .; then
		say "psql said: $(head -3 "$WORK/views.err")"
	fi
}

# first_queries BUILD PRELOAD WHERE N ROUND: in 5 new sessions a view
# each, its first query, then a second; the backend's peak resident memory
# (VmHWM) before and after.  One CSV line per session.
first_queries() {
	local build=$1 preload=$2 where=$3 n=$4 round=$5 v s out
	local hwm="SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s+(\\d+)');"
	for s in 1 2 3 4 5; do
		for v in activity mptcp subflows; do
			out=$(printf '%s\n' "$hwm" '\timing on' "${VIEW_SQL[$v]};" "${VIEW_SQL[$v]};" '\timing off' "$hwm" |
				psql -X -q -At -h "$WORK" -p "$PGPORT_LAB" -U postgres -v ON_ERROR_STOP=1 2>&1) || { say "psql: $out"; continue; }
			awk -v b="$build" -v p="$preload" -v w="$where" -v n="$n" -v r="$round" -v v="$v" '
				/^Time: / { t[++k] = $2; next }
				/^[0-9]+$/ { x[++j] = $1 }
				END { printf "%s,%s,%s,%d,%d,%s,%s,%s,%d,%d\n", b, p, w, n, r, v, t[1], t[2], x[2], x[4] - x[1] }' \
				<<<"$out" >>"$OUT/first.csv"
		done
	done
}

mkdir -p "$OUT"
cc -O2 -Wall -o "$WORK/sock-diag-cost" "$(dirname "$0")/kernel-repro/sock-diag-cost.c" ||
	{ say "could not build bench/kernel-repro/sock-diag-cost.c"; exit 1; }
echo "build,preload,where,conns,round,view,first_ms,second_ms,rows,hwm_growth_kb" >"$OUT/first.csv"
echo "build,preload,where,conns,round,view,ms,rows,runq" >"$OUT/views.csv"
echo "build,preload,exporter,round,tps,load" >"$OUT/tps.csv"
# (BENCH_VIEWS=0: no latency runs)
[ "${BENCH_VIEWS:-1}" = 1 ] || CONNS=

start "$LABEL_A" off
pgbench -i -s 10 -q -h "$WORK" -p "$PGPORT_LAB" -U postgres >/dev/null 2>&1
sql 'CREATE EXTENSION mptcpinfo'
stop

say "views: $ROUNDS rounds of $QUERIES queries each, builds $builds, clients $CONNS"
for n in $CONNS; do
	for where in ${BENCH_WHERE:-loopback remote}; do
		for round in $(seq 1 "$ROUNDS"); do
			# alternate the order of the modes, so that drift hits all
			modes=()
			for b in $builds; do for p in off preloaded; do modes+=("$b:$p"); done; done
			[ $((round % 2)) = 1 ] || mapfile -t modes < <(printf '%s\n' "${modes[@]}" | tac)
			for mode in "${modes[@]}"; do
				start "${mode%%:*}" "${mode#*:}"
				idle "$n" "$where" || { stop_idle; stop; exit 1; }
				first_queries "${mode%%:*}" "${mode#*:}" "$where" "$n" "$round"
				time_views "${mode%%:*}" "${mode#*:}" "$where" "$n" "$round"
				stop_idle
				stop
			done
			say "$n $where round $round done (load $(cut -d' ' -f1 /proc/loadavg))"
		done
	done
done

# An exporter: one session querying both views every second, as
# postgres_exporter's queries do at each scrape (every_1s_reports: the
# subflows from the processes' reports, as on kernels before 6.15).
exporter_loop() {
	local i
	{
		[ "$1" != every_1s_reports ] || echo "SET mptcpinfo.subflow_source = 'processes';"
		for i in $(seq 1 "$2"); do
			echo "SELECT count(*) FROM pg_stat_mptcp; SELECT count(*) FROM pg_stat_mptcp_subflows; SELECT pg_sleep(1);"
		done
	} | psql -X -q -At -h "$WORK" -p "$PGPORT_LAB" -U postgres >/dev/null
}
# CPU ticks used so far by the server: the postmaster and its children
server_ticks() {
	local pm
	pm=$(postmaster_pid)
	# (the postmaster's own, and its reaped children's: the exporter's
	# backend has exited by the second reading)
	{
		cut -d' ' -f14-17 "/proc/$pm/stat"
		pgrep -P "$pm" | while read -r p; do cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null; done
	} | awk '{ for (i = 1; i <= NF; i++) s += $i } END { print s + 0 }'
}
exporter_modes() {
	local b
	for b in $builds; do
		echo "$b:off:every_1s"
		echo "$b:preloaded:every_1s"
	done
	echo "$LABEL_A:preloaded:every_1s_reports"
}

# 1. What the exporter costs the server: its CPU with 100 idle MPTCP
# clients and nothing else running, in ms per second (of 2 cores' 2000).
[ "${BENCH_TPS:-1}" = 1 ] || ROUNDS=0
[ "$ROUNDS" = 0 ] || say "exporter CPU: $ROUNDS rounds of ${TPS_SECONDS} s"
echo "build,preload,exporter,round,cpu_ms_per_s" >"$OUT/exporter-cpu.csv"
hz=$(getconf CLK_TCK)
for round in $(seq 1 "$ROUNDS"); do
	mapfile -t modes < <(exporter_modes)
	[ $((round % 2)) = 1 ] || mapfile -t modes < <(printf '%s\n' "${modes[@]}" | tac)
	for mode in "${modes[@]}"; do
		IFS=: read -r b p e <<<"$mode"
		start "$b" "$p"
		idle 100 loopback || { stop_idle; stop; exit 1; }
		sleep 2
		t0=$(server_ticks) s0=$(now)
		exporter_loop "$e" "$TPS_SECONDS"
		t1=$(server_ticks)
		echo "$b,$p,$e,$round,$(awk -v t="$((t1 - t0))" -v hz="$hz" -v s="$(elapsed "$s0")" 'BEGIN { printf "%.2f", t * 1000 / hz / s }')" >>"$OUT/exporter-cpu.csv"
		stop_idle
		stop
	done
	say "exporter CPU round $round done"
done

# 2. Throughput: pgbench -S over MPTCP with 100 idle MPTCP clients, alone
# and beside the exporter (this build only; rounds alternate the order).
[ "$ROUNDS" = 0 ] || say "throughput: $ROUNDS rounds of ${TPS_SECONDS} s"
for round in $(seq 1 "$ROUNDS"); do
	modes=("$LABEL_A:preloaded:none" "$LABEL_A:preloaded:every_1s" "$LABEL_A:preloaded:every_1s_reports")
	[ $((round % 2)) = 1 ] || mapfile -t modes < <(printf '%s\n' "${modes[@]}" | tac)
	for mode in "${modes[@]}"; do
		IFS=: read -r b p e <<<"$mode"
		start "$b" "$p"
		idle 100 loopback || { stop_idle; stop; exit 1; }
		exp_pid=
		if [ "$e" != none ]; then exporter_loop "$e" $((TPS_SECONDS + 3)) & exp_pid=$!; fi
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

python3 "$(dirname "$0")/monitoring_report.py" "$OUT" "$LABEL_A" | tee "$OUT/summary.txt"
