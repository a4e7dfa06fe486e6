#!/bin/bash
# The benchmark: plain TCP vs MPTCP, same data, same lab, side by side.
#
# Usage (inside a private user + network namespace; "make bench" does it):
#   bench.sh BIN WORK LAB OUTDIR
#
# Scenarios (BENCH_SCENARIOS, default all, in this order):
#   equal            1, 2, 4 and 8 paths (BENCH_PATHS) of BENCH_RATE each:
#                    COPY TO, COPY FROM, pg_basebackup, standby catch-up
#   unequal          paths of BENCH_UNEQUAL_RATES (50/25/10/5 Mbit/s)
#   fastslow         a fast and a slow path (BENCH_FASTSLOW_RATES, 100 + 2)
#   fastslow_backup  the same, the slow path's server endpoint "backup"
#   fast             BENCH_FAST_PATHS paths of BENCH_FAST_RATE (4 x 500
#                    Mbit/s): where the CPU becomes the limit
#   cc               congestion control on equal paths: BENCH_CC_PATHS
#                    (4 and 8) paths of BENCH_RATE under reno, bbr and bbr
#                    with "congctl lock reno" on the routes (BENCH_CC_LIST),
#                    round by round (BENCH_RUNS rounds), all workloads;
#                    about 8.5 minutes a round
#   none             no transfers: the costs only
#   failover-stall   alone (BENCH_SCENARIOS=failover-stall): a synchronous
#                    primary losing its busiest path, MPTCP against plain
#                    TCP with a host list; bench/failover-stall.sh, results
#                    in bench/results/failover-stall
# Each workload runs over plain TCP (on path 1, the fastest: TCP on the best
# single path) and over MPTCP in turn, BENCH_RUNS times, alternating which
# goes first.  Every run records its time, the payload bytes, the CPU
# seconds of the server process (backend or walsender) and of the client
# program, and the bytes the router carried on each path in each direction.
# Labs faster than BENCH_RATE on their first path move proportionally more
# data (SCALE copies of the table in COPY TO and catch-up), so that the TCP
# runs take about as long in every scenario.  BENCH_CC (reno or bbr, default
# reno) is the congestion control of every namespace of the lab; a
# scenario written NAME:CC (e.g. "fastslow:bbr") uses CC instead.  CC may be
# DEFAULT+route-ROUTE ("bbr+route-reno"): the namespaces' default stays
# DEFAULT and every path's route, on the server's and the client's side,
# gets "congctl lock ROUTE" (the remedy of guide/troubleshooting.md, "Congestion control").  A scenario listed
# again continues its run numbers, so that a list like
#   BENCH_RUNS=1 BENCH_SCENARIOS="equal:reno equal:bbr equal:reno equal:bbr"
# alternates congestion controls round by round.
#
# Then the costs on an unshaped path (loopback): pgbench -S TPS of plain TCP
# clients with listen_mptcp off and on, of MPTCP clients, the connection
# setup time and the cost of the monitoring views (BENCH_COSTS=0 skips).
# Raw figures go to OUTDIR/*.csv; bench/report.py makes the tables and plot.
#
# The defaults are the full run: about 33 minutes on this project's 2-core
# machines (equal paths about 20, the other labs about 10, the costs 3).
# A short check of the machinery, a few minutes:
#   BENCH_OUT=/tmp/smoke BENCH_RUNS=1 BENCH_ROWS=20000 BENCH_FAST_SCALE=5 \
#     PGBENCH_SECONDS=2 make bench
# BENCH_UNEQUAL_RATES and BENCH_FASTSLOW_RATES list the fastest path first:
# TCP runs on path 1.

BIN=$1 WORK=$2 LAB=$3 OUT=$4
. "$(dirname "$0")/common.sh"

RATE=${BENCH_RATE:-25mbit}
RUNS=${BENCH_RUNS:-3}
SCENARIOS=${BENCH_SCENARIOS:-equal unequal fastslow fastslow_backup fast}
PATHS_LIST=${BENCH_PATHS:-1 2 4 8}
WORKLOADS=${BENCH_WORKLOADS:-copy_to copy_from basebackup catchup}
UNEQUAL_RATES=${BENCH_UNEQUAL_RATES:-50mbit,25mbit,10mbit,5mbit}
UNEQUAL_WORKLOADS=${BENCH_UNEQUAL_WORKLOADS:-copy_to basebackup catchup}
FASTSLOW_RATES=${BENCH_FASTSLOW_RATES:-100mbit,2mbit}
FASTSLOW_WORKLOADS=${BENCH_FASTSLOW_WORKLOADS:-copy_to basebackup catchup}
FAST_PATHS=${BENCH_FAST_PATHS:-4}
FAST_RATE=${BENCH_FAST_RATE:-500mbit}
FAST_WORKLOADS=${BENCH_FAST_WORKLOADS:-copy_to copy_from}
CC_PATHS=${BENCH_CC_PATHS:-4 8}
CC_LIST=${BENCH_CC_LIST:-reno bbr bbr+route-reno}
export LAB_CC=${BENCH_CC:-reno}
BENCH_ROWS=${BENCH_ROWS:-80000}	# about 16 MB of COPY text, a backup of about 60 MB
PGBENCH_SECONDS=${PGBENCH_SECONDS:-10}
COST_ROUNDS=${BENCH_COST_ROUNDS:-8}
trap cleanup EXIT
bench_start=$(now)

mkdir -p "$OUT"
raw=$OUT/transfers.csv
pathcsv=$OUT/paths.csv
costs=$OUT/costs.csv
{
	echo "# kernel: $(uname -sr); congestion control: $LAB_CC unless the cc column says otherwise; runs: $RUNS per listed scenario; rows: $BENCH_ROWS"
	echo "# lab: router namespace, one bridge per path, tbf rate R burst 32kb latency 50ms on its egress both ways"
	echo "scenario,paths,rates,backup,cc,scale,workload,mode,run,seconds,bytes,server_cpu_s,client_cpu_s"
} >"$raw"
echo "scenario,paths,cc,workload,mode,run,path,rate_mbit,to_client_bytes,to_server_bytes" >"$pathcsv"

server_init
server_start on
load_data
say "data: $BENCH_ROWS rows, $(sql "SELECT pg_size_pretty(pg_total_relation_size('t_bench'))") table, backup $(sql "SELECT pg_size_pretty(sum(pg_database_size(oid))) FROM pg_database")"
prepared=

# run_scenario NAME NPATHS RATES BACKUP WORKLOADS
run_scenario() {
	local name=$1 n=$2 rates=$3 backup=$4 workloads=$5 scale first mbits run order w mode r
	local s bytes scpu ccpu before after
	lab_up "$n" "$rates" ${backup:+backup=$backup}
	if [ -z "$prepared" ]; then
		standby_prepare
		prepared=1
	fi
	mbits=$(lab info | sed -n 's/.*rates=\([^ ]*\).*/\1/p' | tr , '\n' |
		while read -r r; do rate_mbit "$r"; echo; done | paste -sd/)
	first=${mbits%%/*}
	scale=$(awk -v f="$first" -v b="$(rate_mbit "$RATE")" 'BEGIN { s = int(f / b + 0.5); print (s < 1 ? 1 : s) }')
	# the fast lab: 10 copies (about 200 MB of COPY text) unless told
	[ "$name" = fast ] && scale=${BENCH_FAST_SCALE:-10}
	say "lab: $name, $n path(s) of $mbits Mbit/s${backup:+, backup path $backup}, $(lab info | sed 's/.* cc=/cc=/'), scale $scale ($(elapsed "$bench_start") s so far)"
	local done_key="$name,$n,$cc_label"
	local first_run=$((${runs_done[$done_key]:-0} + 1))
	runs_done[$done_key]=$((first_run + RUNS - 1))
	for run in $(seq "$first_run" "${runs_done[$done_key]}"); do
		# alternate which mode goes first, so that neither always
		# inherits what the previous workload left behind
		order="disable require"
		[ $((run % 2)) -eq 0 ] && order="require disable"
		for w in $workloads; do
			for mode in $order; do
				rm -f "$WORK/paths.before" "$WORK/paths.after"
				before=$(path_bytes)
				r=$(SCALE=$scale $w $mode)
				after=$(path_bytes)
				# a workload may count only its timed part (catchup)
				[ -f "$WORK/paths.before" ] && before=$(cat "$WORK/paths.before")
				[ -f "$WORK/paths.after" ] && after=$(cat "$WORK/paths.after")
				read -r s bytes scpu ccpu <<<"$r"
				[ "$scpu" = - ] && scpu=
				[ "$ccpu" = - ] && ccpu=
				echo "$name,$n,$mbits,$backup,$cc_label,$scale,$w,$mode,$run,$s,$bytes,$scpu,$ccpu" >>"$raw"
				join <(echo "$before") <(echo "$after") |
					awk -v p="$name,$n,$cc_label,$w,$mode,$run" -v m="$mbits" \
						'BEGIN { split(m, rate, "/") } { print p "," $1 "," rate[$1] "," $4 - $2 "," $5 - $3 }' >>"$pathcsv"
				say "  $name $n paths, run $run: $w over $([ $mode = disable ] && echo TCP || echo MPTCP): $s s, $bytes bytes${scpu:+, server CPU $scpu s, client CPU $ccpu s}"
			done
		done
	done
}

default_cc=$LAB_CC
declare -A runs_done=()
# "cc": one round of every congestion control after another, so that a
# drift of the machine spreads over all of them
expanded=
for sc in $SCENARIOS; do
	if [ "$sc" = cc ]; then
		for _ in $(seq "$RUNS"); do
			for c in $CC_LIST; do expanded+=" cc_equal:$c"; done
		done
	else
		expanded+=" $sc"
	fi
done
for sc in $expanded; do
	# NAME:CC runs a scenario with another congestion control;
	# CC = DEFAULT+route-ROUTE sets ROUTE on the paths' routes
	cc_label=$default_cc
	[ "${sc#*:}" != "$sc" ] && cc_label=${sc#*:}
	sc=${sc%%:*}
	export LAB_CC=${cc_label%%+route-*} LAB_ROUTE_CC=
	[ "$cc_label" != "$LAB_CC" ] && LAB_ROUTE_CC=${cc_label#*+route-}
	case $sc in
	equal)
		for n in $PATHS_LIST; do run_scenario equal "$n" "$RATE" "" "$WORKLOADS"; done ;;
	cc_equal)
		for n in $CC_PATHS; do RUNS=1 run_scenario equal "$n" "$RATE" "" "$WORKLOADS"; done ;;
	unequal)
		run_scenario unequal "$(echo "$UNEQUAL_RATES" | tr , '\n' | wc -l)" "$UNEQUAL_RATES" "" "$UNEQUAL_WORKLOADS" ;;
	fastslow)
		run_scenario fastslow 2 "$FASTSLOW_RATES" "" "$FASTSLOW_WORKLOADS" ;;
	fastslow_backup)
		run_scenario fastslow_backup 2 "$FASTSLOW_RATES" 2 "$FASTSLOW_WORKLOADS" ;;
	fast)
		run_scenario fast "$FAST_PATHS" "$FAST_RATE" "" "$FAST_WORKLOADS" ;;
	none) ;; # the costs only
	*)
		say "unknown scenario $sc"; exit 1 ;;
	esac
done
standby_stop
lab down
say "transfers done after $(elapsed "$bench_start") s"

if [ "${BENCH_COSTS:-1}" = 0 ]; then
	python3 "$(dirname "$0")/report.py" "$OUT" >/dev/null
	exit 0
fi

# Costs on an unshaped path: loopback in the server namespace.  Short
# queries are where MPTCP costs most (per-packet work, no bandwidth to win),
# so this is the worst case.  Each round compares, side by side, a server
# with listen_mptcp off and one with it on (plain TCP clients both times),
# and on the latter MPTCP clients against plain TCP clients; the order
# alternates between rounds, and the report takes each round's ratio.
say "costs: pgbench -S on loopback, $COST_ROUNDS rounds of $PGBENCH_SECONDS s per figure"
echo "figure,round,value" >"$costs"
# (the lab brings loopback up in this namespace; without a lab, do it here)
PATH=$PATH:/usr/sbin:/sbin ip link set lo up
pgbench -q -i -s 10 -h 127.0.0.1 -p "$PGPORT_LAB" postgres >/dev/null 2>&1
tps() { sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
conn_ms() { sed -n 's/^average connection time = \([0-9.]*\) ms/\1/p'; }
pgbench_tps() { PGMPTCP=$1 pgbench -n -S -c 4 -j 2 -T "$PGBENCH_SECONDS" -h 127.0.0.1 -p "$PGPORT_LAB" postgres 2>/dev/null | tps; }
for round in $(seq "$COST_ROUNDS"); do
	listens="off on" clients="disable require"
	[ $((round % 2)) -eq 0 ] && listens="on off" clients="require disable"
	for listen in $listens; do
		server_stop
		server_start $listen
		pgbench -n -S -c 4 -j 2 -T 1 -h 127.0.0.1 -p "$PGPORT_LAB" postgres >/dev/null 2>&1 # warm-up
		if [ $listen = off ]; then
			v=$(pgbench_tps disable)
			echo "tcp_clients_listen_off,$round,$v" >>"$costs"
			say "  round $round: TCP clients, listen_mptcp=off: $v TPS"
			continue
		fi
		for mode in $clients; do
			v=$(pgbench_tps $mode)
			if [ $mode = disable ]; then
				echo "tcp_clients_listen_on,$round,$v" >>"$costs"
				say "  round $round: TCP clients, listen_mptcp=on: $v TPS"
			else
				echo "mptcp_clients,$round,$v" >>"$costs"
				say "  round $round: MPTCP clients: $v TPS"
			fi
		done
		for mode in $clients; do
			v=$(PGMPTCP=$mode pgbench -n -S -C -c 2 -j 2 -T 5 -h 127.0.0.1 -p "$PGPORT_LAB" postgres 2>/dev/null | conn_ms)
			echo "connect_ms_$mode,$round,$v" >>"$costs"
			say "  round $round: connection setup, mptcp=$mode: $v ms"
		done
	done
done
# The cost of the monitoring views with 100 MPTCP clients connected.
say "costs: SELECT * FROM each mptcpinfo view with 100 MPTCP clients"
for i in $(seq 100); do
	PGMPTCP=require psql -X -q -h 127.0.0.1 -p "$PGPORT_LAB" -c 'SELECT pg_sleep(120)' >/dev/null 2>&1 &
done
for _ in $(seq 200); do
	[ "$(sql "SELECT count(*) FROM pg_stat_mptcp WHERE mptcp")" -ge 100 ] && break
	sleep 0.1
done
views="pg_stat_mptcp pg_stat_mptcp_subflows pg_mptcp_endpoints pg_mptcp_settings pg_stat_mptcp_counters pg_stat_activity"
for v in $views; do echo "SELECT * FROM $v;" >"$WORK/$v.sql"; done
for round in $(seq "$RUNS"); do
	for q in $views; do
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
say "table: $OUT/results.md, plot: $OUT/speedup.svg; $(elapsed "$bench_start") s in all"
