#!/bin/bash
# The failover-stall figure: what losing a path costs a synchronous primary.
#
# Usage (inside a private user + network namespace, as the unprivileged test
# user; "make bench BENCH_SCENARIOS=failover-stall" does it):
#   failover-stall.sh BIN WORK LAB OUTDIR
#
# The primary runs in this namespace, one synchronous standby
# (synchronous_commit = on, synchronous_standby_names = 'bench_standby') in
# the lab's client namespace, 4 paths of BENCH_RATE (25 Mbit/s) between them
# through the router.  pgbench (TPC-B like, BENCH_STALL_CLIENTS clients)
# runs on the primary over its Unix socket at a fixed rate
# (-R BENCH_STALL_TPS, default 200) for BENCH_STALL_SECONDS (80) with a
# per-transaction latency log (-l).  At BENCH_STALL_FAIL_AT (15 s) the path
# that carried the most bytes in the 3 s before is blackholed (the router
# drops everything on it both ways: "pfifo limit 0").  Modes
# (BENCH_STALL_MODES, in this order every round, the order reversed every
# other round):
#   mptcp      primary_conninfo host=198.18.1.1 mptcp=1: one MPTCP
#              connection, 4 subflows (the lab's signal endpoints); the
#              default timeouts
#   mptcp_hostlist
#              the same with the primary's 4 addresses as a host list
#              (host=198.18.1.1,...,198.18.4.1 mptcp=1), as the "tcp" mode
#              has them: the kernel's defaults, what issue 58's patched
#              kernel is measured with (a standby that reconnects has
#              another address to try)
#   mptcp_stale1, mptcp_stale2, mptcp_stale3
#              the same with net.mptcp.stale_loss_cnt = 1 (2, 3) on both
#              hosts (kernel default 4)
#   mptcp_rtomax
#              the same with net.ipv4.tcp_rto_max_ms = 1000 on both hosts
#              (6.15+; default 120000): a subflow's retransmission timer
#              backs off to 1 s at most.  A socket takes the value when it
#              is created, and an accepted one from its listener: every run
#              restarts the primary after setting the mode's sysctls
#   mptcp_retries2
#              the same with net.ipv4.tcp_retries2 = 5 on both hosts
#              (default 15): a subflow without an ACK for about 12.6 s of
#              retransmissions is reset, and MPTCP drops it
#   mptcp_keepalive
#              the same with TCP keepalives of 1 s / 1 s / 2 probes on both
#              sides (the primary's tcp_keepalives_*, the conninfo's
#              keepalives_*); MPTCP passes them to every subflow
#   mptcp_backup
#              the same with path 4's server endpoint "signal backup"
#   mptcp_guide
#              what guide/failover.md recommends, read from its files:
#              host/sysctl.conf on both hosts (net.mptcp only),
#              guide/failover/primary.conf on the primary,
#              guide/failover/standby.conf on the standby, a
#              primary_conninfo with the primary's 4 addresses,
#              mptcp=require, and host/host-setup on the lab's
#              cgroup: "make bench" runs the lab in a cgroup with it when
#              this is the only mode (BENCH_HOST_SETUP; root only), and
#              this mode refuses to run without it unless
#              BENCH_HOST_SETUP=none; a signal endpoint on the primary's
#              first address too, the standby's limits of README.md's
#              quick start (4 and 4), and host/mend-paths running
#              on both hosts (it re-announces a path that comes back)
#   mptcp_defaults
#              mptcp_guide without host-setup: the same files, endpoints,
#              limits and mend-paths, the kernel's own timeouts; the
#              baseline host-setup is measured against in the same run
#              ("make bench" detaches host-setup's program for every mode
#              but mptcp_guide, through bench/host-setup-switch.sh)
#   mptcp_hostwide
#              the guide's fallback: the same, with
#              guide/failover/sysctl-host-wide.conf instead of sysctl.conf
#              and no host-setup
#   tcp        host=198.18.1.1,198.18.2.1,198.18.3.1,198.18.4.1 (the
#              primary's 4 addresses), plain TCP, default
#              wal_receiver_timeout / wal_sender_timeout (60 s)
#   tcp_tuned  the same host list, wal_receiver_timeout = 2s,
#              wal_sender_timeout = 2s, wal_retrieve_retry_interval = 1s,
#              and in the conninfo connect_timeout=2 keepalives=1
#              keepalives_idle=1 keepalives_interval=1 keepalives_count=2
#              tcp_user_timeout=2000 (the primary's tcp_keepalives_* and
#              tcp_user_timeout likewise)
# BENCH_STALL_LAB selects how the primary and the run are set up:
#   bench      (default) the primary as the other benchmarks make it:
#              fsync, full_page_writes and autovacuum off; the pgbench
#              tables made once, before the standby exists
#   field      as a user's lab is (../shared/field/failover-repro.sh):
#              fsync, full_page_writes and autovacuum at their defaults
#              (on), and every run makes the pgbench tables anew
#              (pgbench -i, synchronous) while the standby streams, then
#              starts the timed run at once.  Autovacuum then writes bursts
#              of WAL (its analyze of the new tables and of the catalogs)
#              about 30 and 60 s later, after the cut.  Those bursts are
#              what separates the labs (bench/results/failover.md, "Why the two
#              labs disagreed").
# BENCH_STALL_RESTART=0 keeps the primary running from run to run (a reload
# only: tcp_rto_max_ms then does not reach its listen sockets) and
# BENCH_STALL_WAIT_JOINS=0 starts pgbench without waiting for the 4
# subflows: the conditions of the runs before 2026-11-25, which waited for
# the joins only in the mptcp mode.
# Every 0.5 s a run samples both hosts' MPTCP counters (MPTcpExt) and TCP
# retransmissions, and every second the walsender's subflows
# (pg_stat_mptcp_subflows) and `ss -tinM` on the primary: logs/, and the
# counters' timeline in counters.csv.
# BENCH_STALL_CUT_PATH=N cuts path N instead of the busiest one.
# BENCH_STALL_FAULT picks the fault that starts at BENCH_STALL_FAIL_AT:
#   cut        (default) the busiest path blackholed (for good, or until
#              BENCH_STALL_RESTORE_AFTER)
#   outage:S   every path drops everything for S seconds (e.g. 1.5), then
#              delivers again, all paths at once (lab.sh outage): a switch
#              reconverging, a VM's migration pause
#   loss:P     every path drops P % of its packets at random, both ways,
#              to the end of the run (nft in the router; e.g. 2 or 0.5)
#   loss1:P    the same on the busiest path only
#   delay:MS[:J]
#              the busiest path gets MS ms more round-trip time (J ms of
#              jitter), the others stay fast (netem: kernels with
#              sch_netem, such as Debian's; not this host's)
# After pgbench, with the fault still on, BENCH_STALL_BULK_MB (default 32
# for loss and delay, 0 otherwise) megabytes are copied from the primary to
# the standby's host over a new MPTCP connection (COPY TO STDOUT from psql
# there): the bulk rate under the fault.  fault.csv then has, per run, the
# subflows closed on a timeout (TcpExtTCPAbortOnTimeout) on each host, the
# MP_JOINs the primary accepted (MPJoinAckRx), the bulk rate, and what
# host-setup's program did (when it was attached).
# BENCH_STALL_RESTORE_AFTER=S brings the cut path back S seconds after the
# cut (default: never), and the run then records, in path-back.csv, how long
# until the walsender's connection has a subflow on that path again (empty
# when it has none by the end of the run).
# BENCH_RUNS (3) rounds.  A run ends at BENCH_STALL_SECONDS: commits still
# waiting then (the standby never came back) are released by emptying
# synchronous_standby_names, so their latency is at least the time left
# after the failure (the cap), and the report says ">=".
#
# Raw figures: OUTDIR/runs.csv (one line per run) and OUTDIR/timeline.csv
# (commits and the slowest commit per 0.1 s around the failure); bench/stall_report.py makes
# README-ready tables and the plots.  About 90 s a run: 3 rounds (9 runs) in
# about 14 minutes, 5 rounds in 22, set-up included.

BIN=$1 WORK=$2 LAB=$3 OUT=$4
. "$(dirname "$0")/common.sh"

RATE=${BENCH_RATE:-25mbit}
RUNS=${BENCH_RUNS:-3}
MODES=${BENCH_STALL_MODES:-mptcp tcp tcp_tuned}
TPS=${BENCH_STALL_TPS:-200}
CLIENTS=${BENCH_STALL_CLIENTS:-4}
SECONDS_RUN=${BENCH_STALL_SECONDS:-80}
FAIL_AT=${BENCH_STALL_FAIL_AT:-15}
SCALE=${BENCH_STALL_SCALE:-4}
RESTORE_AFTER=${BENCH_STALL_RESTORE_AFTER:-0}
FAULT=${BENCH_STALL_FAULT:-cut}
case $FAULT in
cut) BULK_DEFAULT=0 ;;
outage:*) [[ "${FAULT#outage:}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { say "BENCH_STALL_FAULT=outage:SECONDS"; exit 1; }; BULK_DEFAULT=0 ;;
loss:* | loss1:*) [[ "${FAULT#*:}" =~ ^[0-9]+(\.[0-9])?$ ]] || { say "BENCH_STALL_FAULT=loss:PERCENT (0 to 100, one decimal)"; exit 1; }; BULK_DEFAULT=32 ;;
delay:*) [[ "${FAULT#delay:}" =~ ^[0-9]+(:[0-9]+)?$ ]] || { say "BENCH_STALL_FAULT=delay:MS[:JITTER_MS]"; exit 1; }; BULK_DEFAULT=32 ;;
*) say "BENCH_STALL_FAULT must be cut, outage:S, loss:P, loss1:P or delay:MS[:J]"; exit 1 ;;
esac
BULK_MB=${BENCH_STALL_BULK_MB:-$BULK_DEFAULT}
[[ "$BULK_MB" =~ ^[0-9]+$ ]] || { say "BENCH_STALL_BULK_MB must be a whole number"; exit 1; }
[ "$FAULT" = cut ] || [ "$RESTORE_AFTER" = 0 ] || { say "BENCH_STALL_RESTORE_AFTER goes with BENCH_STALL_FAULT=cut only"; exit 1; }
STALL_LAB=${BENCH_STALL_LAB:-bench}
GUIDE=$(cd "$(dirname "$0")/../guide/failover" && pwd)
# (what the pg-mptcp-failover package ships)
HOSTDIR=$(cd "$(dirname "$0")/../host" && pwd)
NPATHS=4
export LAB_CC=${BENCH_CC:-reno}
MENDERS=()
stop_menders() {
	local pid
	for pid in "${MENDERS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${MENDERS[@]}"; do wait "$pid" 2>/dev/null || true; done
	MENDERS=()
}
trap 'stop_menders; cleanup' EXIT
bench_start=$(now)

case $STALL_LAB in bench | field) ;; *) say "BENCH_STALL_LAB must be bench or field"; exit 1 ;; esac
HOST_SETUP=none
# a switch beside the lab (bench/host-setup-switch.sh) attaches the program
# for mptcp_guide only, when the run has that mode; otherwise it is on for
# every mode
SWITCH=
[ -f "$WORK/host-setup.state" ] && [[ " $MODES " == *" mptcp_guide "* ]] && SWITCH=1
if [ -n "${BENCH_HOST_SETUP_CGROUP:-}" ]; then
	HOST_SETUP="$(basename "${BENCH_HOST_SETUP:-?}") on the lab's cgroup, $([ -n "$SWITCH" ] && echo "for mptcp_guide only" || echo "for every mode")"
elif [ "${BENCH_HOST_SETUP:-}" != none ] && [[ " $MODES " == *" mptcp_guide "* ]]; then
	say "mode mptcp_guide needs host/host-setup: run \"make bench\" as root (BENCH_HOST_SETUP=none: without it)"
	exit 1
fi
[ "$FAIL_AT" -ge 8 ] && [ "$SECONDS_RUN" -gt $((FAIL_AT + 5)) ] ||
	{ say "BENCH_STALL_FAIL_AT must be >= 8 and BENCH_STALL_SECONDS > FAIL_AT + 5"; exit 1; }
[[ "$RESTORE_AFTER" =~ ^[0-9]+$ ]] && { [ "$RESTORE_AFTER" = 0 ] || [ $((FAIL_AT + RESTORE_AFTER + 10)) -le "$SECONDS_RUN" ]; } ||
	{ say "BENCH_STALL_RESTORE_AFTER must be a number of seconds, with at least 10 s of the run left after it"; exit 1; }

mkdir -p "$OUT"
runs=$OUT/runs.csv
timeline=$OUT/timeline.csv
addrs=$(seq -s, -f '198.18.%g.1' 1 $NPATHS)
{
	echo "# lab: $STALL_LAB; kernel: $(uname -sr); $NPATHS paths of $RATE through the router lab, cc $LAB_CC; pgbench TPC-B like, scale $SCALE, $CLIENTS clients, -R $TPS, $SECONDS_RUN s a run, fault $FAULT at $FAIL_AT s (cut: the busiest path blackholed); synchronous_commit = on, one synchronous standby; host setup: $HOST_SETUP; $(nproc) cores"
	echo "mode,round,blackholed_path,subflows,baseline_tps,max_latency_ms,max_gap_ms,slow_commits,recovery_s,capped,cap_s,commits,failed_tx,pgbench_errors,walreceiver_restarts,sender_host_after,load1"
} >"$runs"
echo "mode,round,t,commits,max_latency_ms" >"$timeline"
echo "mode,round,t,side,name,value" >"$OUT/counters.csv"
echo "mode,round,path,restored_at_s,back_after_s" >"$OUT/path-back.csv"
echo "mode,round,fault,abort_on_timeout_primary,abort_on_timeout_standby,mp_joins_primary,bulk_mb,bulk_s,bulk_mbit_s,hs_closed_dead_path,hs_rto_sibling_alive,hs_rto_all_silent,walreceiver_restarts,max_latency_ms,slow_commits,load1" >"$OUT/fault.csv"

# The primary: synchronous, one named standby.
server_init
cat >>"$PGDATA_LAB/postgresql.conf" <<EOF
synchronous_commit = on
synchronous_standby_names = 'bench_standby'
EOF
# the field lab: the defaults a user's server has (later lines win), and
# mptcpinfo preloaded as the README's quick start does (before Linux 6.15
# the subflows view needs it: the wait for the joins reads it)
if [ "$STALL_LAB" = field ]; then
	printf "fsync = on\nfull_page_writes = on\nautovacuum = on\nshared_preload_libraries = 'mptcpinfo'\n" >>"$PGDATA_LAB/postgresql.conf"
fi
server_start on
PGOPTIONS='-c synchronous_commit=local' pgbench -q -i -s "$SCALE" -h "$WORK" -p "$PGPORT_LAB" postgres >/dev/null 2>&1
PGOPTIONS="-c synchronous_commit=local" sql "CREATE EXTENSION IF NOT EXISTS mptcpinfo" >/dev/null
lab_up "$NPATHS" "$RATE"
say "failover-stall: standby base backup over path 1 ($(elapsed "$bench_start") s so far)"
standby_prepare
echo "include_if_exists = 'stall_mode.conf'" >>"$STANDBY_DATA/postgresql.conf"
lab down >/dev/null 2>&1

# Settings of a mode: the primary's (ALTER SYSTEM, reloaded) and the
# standby's (stall_mode.conf, read when it starts).
TUNED_CONNINFO="connect_timeout=2 keepalives=1 keepalives_idle=1 keepalives_interval=1 keepalives_count=2 tcp_user_timeout=2000"
set_mode() {
	local mode=$1 conninfo
	case $mode in
	mptcp | mptcp_stale1 | mptcp_stale2 | mptcp_stale3 | mptcp_rtomax | mptcp_retries2 | mptcp_backup)
		conninfo="host=198.18.1.1 port=$PGPORT_LAB mptcp=1" ;;
	mptcp_guide | mptcp_defaults | mptcp_hostwide)
		conninfo="host=$addrs port=$PGPORT_LAB mptcp=require" ;;
	mptcp_hostlist)
		conninfo="host=$addrs port=$PGPORT_LAB mptcp=1" ;;
	mptcp_keepalive)
		conninfo="host=198.18.1.1 port=$PGPORT_LAB mptcp=1 keepalives=1 keepalives_idle=1 keepalives_interval=1 keepalives_count=2" ;;
	tcp)
		conninfo="host=$addrs port=$PGPORT_LAB mptcp=0" ;;
	tcp_tuned)
		conninfo="host=$addrs port=$PGPORT_LAB mptcp=0 $TUNED_CONNINFO" ;;
	*) say "unknown mode $mode"; exit 1 ;;
	esac
	# host settings, per network namespace, on both hosts; every mode
	# sets them all, so that no mode inherits another's
	local stale=4 rto_max=120000 retries2=15
	case $mode in
	mptcp_stale1) stale=1 ;;
	mptcp_stale2) stale=2 ;;
	mptcp_stale3) stale=3 ;;
	mptcp_rtomax) rto_max=1000 ;;
	mptcp_retries2) retries2=5 ;;
	esac
	host_sysctl net/mptcp/stale_loss_cnt "$stale"
	host_sysctl net/ipv4/tcp_rto_max_ms "$rto_max"
	host_sysctl net/ipv4/tcp_retries2 "$retries2"
	host_sysctl net/ipv4/tcp_syn_retries 6
	host_sysctl net/mptcp/blackhole_timeout 3600
	host_sysctl net/mptcp/add_addr_timeout 120
	case $mode in
	mptcp_guide | mptcp_defaults) guide_sysctls "$HOSTDIR/sysctl.conf" ;;
	mptcp_hostwide) guide_sysctls "$GUIDE/sysctl-host-wide.conf" ;;
	esac
	sql "ALTER SYSTEM RESET ALL"
	: >"$STANDBY_DATA/stall_mode.conf"
	if [ "$mode" = tcp_tuned ] || [ "$mode" = mptcp_keepalive ]; then
		sql "ALTER SYSTEM SET tcp_keepalives_idle = 1"
		sql "ALTER SYSTEM SET tcp_keepalives_interval = 1"
		sql "ALTER SYSTEM SET tcp_keepalives_count = 2"
	fi
	if [ "$mode" = tcp_tuned ]; then
		sql "ALTER SYSTEM SET wal_sender_timeout = '2s'"
		sql "ALTER SYSTEM SET tcp_user_timeout = 2000"
		cat >"$STANDBY_DATA/stall_mode.conf" <<-EOF
		wal_receiver_timeout = '2s'
		wal_retrieve_retry_interval = '1s'
		EOF
	fi
	if [[ " mptcp_guide mptcp_defaults mptcp_hostwide " == *" $mode "* ]]; then
		guide_settings "$GUIDE/primary.conf" | while read -r name value; do
			sql "ALTER SYSTEM SET $name = $value"
		done
		cat "$GUIDE/standby.conf" >"$STANDBY_DATA/stall_mode.conf"
	fi
	sql "ALTER SYSTEM SET synchronous_standby_names = 'bench_standby'"
	if [ -n "$SWITCH" ]; then
		if [ "$mode" = mptcp_guide ]; then host_setup_switch attach; else host_setup_switch detach; fi
	fi
	# a restart, not a reload: the listen sockets take tcp_rto_max_ms now
	if [ "${BENCH_STALL_RESTART:-1}" = 1 ]; then
		server_stop
		server_start on
	fi
	echo "primary_conninfo = '$conninfo application_name=bench_standby'" >>"$STANDBY_DATA/stall_mode.conf"
}

# host_setup_switch attach|detach: ask the switch beside the lab, and wait
# (bounded) until it did
host_setup_switch() {
	echo "$1" >"$WORK/host-setup.want"
	for _ in $(seq 150); do
		[ "$(cat "$WORK/host-setup.state" 2>/dev/null)" = "$1" ] && return 0
		sleep 0.1
	done
	say "host-setup did not $1 in 15 s: $(cat "$WORK/host-setup.state" 2>/dev/null)"
	exit 1
}

# host_sysctl PATH VALUE: on the primary's host and the standby's (a sysctl
# the kernel lacks is skipped: tcp_rto_max_ms is 6.11+)
host_sysctl() {
	[ -e "/proc/sys/$1" ] || return 0
	echo "$2" >"/proc/sys/$1"
	client sh -c "echo $2 >/proc/sys/$1"
}

# guide_settings FILE: "name value" for each "name = value" line of one of
# the guide's files (postgresql.conf or sysctl.conf style; comments and
# blank lines skipped, a value ends at white space or "#")
guide_settings() {
	sed -n 's/^[[:space:]]*\([a-z0-9_.]*\)[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1 \2/p' "$1"
}

# guide_sysctls FILE: one of the guide's sysctl files on both hosts (a key
# this kernel lacks is skipped, as host_sysctl does)
guide_sysctls() {
	local key value
	while read -r key value; do
		host_sysctl "$(echo "$key" | tr . /)" "$value"
	done < <(guide_settings "$1")
}

# Bounded wait for a synchronous, streaming standby; prints its walsender's pid.
wait_sync() {
	local pid
	for _ in $(seq 300); do
		pid=$(sql "SELECT pid FROM pg_stat_replication WHERE application_name = 'bench_standby' AND state = 'streaming' AND sync_state = 'sync' LIMIT 1")
		[ -n "$pid" ] && { echo "$pid"; return 0; }
		sleep 0.1
	done
	say "the standby did not become synchronous"
	return 1
}

# counter_values SIDE: "SECTION NAME VALUE" lines of the MPTcpExt
# (/proc/net/netstat) and Tcp (/proc/net/snmp) counters of the primary's
# host (server) or the standby's (client)
counter_values() {
	{ if [ "$1" = server ]; then cat /proc/net/netstat /proc/net/snmp; else client cat /proc/net/netstat /proc/net/snmp; fi; } |
		awk '/^(MPTcpExt|Tcp|TcpExt):/ { if (!($1 in h)) { h[$1] = $0; next } split(h[$1], n); for (i = 2; i <= NF; i++) print $1, n[i], $i }'
}

# The MPTcpExt counters that are not zero, of the primary's namespace and the
# standby's: one line each, "server: NAME=VALUE ..." / "client: ..."
mptcp_counters() {
	local side
	for side in server client; do
		counter_values $side |
			awk -v s="$(date +%T.%N | cut -c1-12) $side:" '$1 == "MPTcpExt:" { if (!p) { printf "%s", s; p = 1 } if ($3 != 0) printf " %s=%s", $2, $3 } END { if (p) print "" }'
	done
}

# still_before EPOCH: true while the clock is before EPOCH (seconds, fractional)
still_before() { awk -v e="$1" -v n="$(now)" 'BEGIN { exit !(n < e) }'; }

# Bytes the router carried per path (both directions): "PATH BYTES" lines.
path_total() { path_bytes | awk '{ print $1, $2 + $3 }'; }

# sample_run MODE ROUND END T0 WALSENDER_PID: until END (epoch seconds), every
# 0.5 s both hosts' MPTcpExt counters and TCP RetransSegs (counters.csv, the
# values that changed since the run began), and every second the
# walsender's subflows from SQL and `ss -tinM` on the primary (logs/)
sample_run() {
	local mode=$1 round=$2 end=$3 t0=$4 k=0 wpid=$5
	local subflows_log=$OUT/logs/subflows.$mode.$round.txt ss_log=$OUT/logs/ss.$mode.$round.txt
	: >"$subflows_log"
	: >"$ss_log"
	while still_before "$end" && [ $k -lt 400 ]; do
		local t side
		t=$(elapsed "$t0")
		for side in server client; do
			counter_values $side |
				awk -v p="$mode,$round,$t,$side" '$2 ~ /^(MPTCPRetrans|SubflowStale|SubflowRecover|DuplicateData|RmSubflow|MPRstTx|MPRstRx|RetransSegs|OFOQueue|MPPrioTx|MPPrioRx)$/ { print p "," $2 "," $3 }'
		done >>"$OUT/counters.raw"
		if [ $((k % 2)) -eq 0 ]; then
			{ echo "t=$t"; sql "SELECT local_addr, remote_addr, remote_port, backup, stalled, rto_timeouts, rto, unacked, total_retrans, extract(epoch FROM last_ack_recv) FROM pg_stat_mptcp_subflows WHERE pid = $wpid ORDER BY remote_addr" 2>&1 || true; } >>"$subflows_log"
			{ echo "t=$t"; ss -tinMH "( sport = :$PGPORT_LAB )" 2>&1 || true; } >>"$ss_log"
		fi
		k=$((k + 1))
		sleep 0.5
	done
}

# watch_path_back MODE ROUND PATH T0 T_FAIL END: brings PATH back at T_FAIL +
# RESTORE_AFTER, then, every 0.5 s to the end of the run, looks for a
# subflow of the walsender's connection on it (the primary's address on
# that path) until END (epoch seconds); one line in path-back.csv
watch_path_back() {
	local mode=$1 round=$2 path=$3 t0=$4 t_fail=$5 end=$6 t_restore back= n
	sleep "$(awk -v f="$t_fail" -v r="$RESTORE_AFTER" -v n="$(now)" 'BEGIN { d = f + r - n; printf "%.3f", (d > 0 ? d : 0) }')"
	lab restore "$path"
	t_restore=$(now)
	say "  $mode round $round: path $path back at $(elapsed "$t0") s"
	while still_before "$end"; do
		n=$(sql "SELECT count(*) FROM pg_stat_mptcp_subflows s JOIN pg_stat_replication r USING (pid) WHERE r.application_name = 'bench_standby' AND host(s.local_addr) = '198.18.$path.1'" 2>/dev/null || echo 0)
		if [ "${n:-0}" -gt 0 ]; then back=$(elapsed "$t_restore"); break; fi
		sleep 0.5
	done
	echo "$mode,$round,$path,$(awk -v a="$t_restore" -v b="$t0" 'BEGIN { printf "%.3f", a - b }'),$back" >>"$OUT/path-back.csv"
	say "  $mode round $round: $([ -n "$back" ] && echo "a subflow on path $path again $back s after it came back" || echo "no subflow on path $path by the end of the run")"
}

# start_fault PATH: BENCH_STALL_FAULT, on PATH where it takes one path (an
# outage comes back by itself after its seconds; the rest stays on)
start_fault() {
	local path=$1 i permille
	case $FAULT in
	cut) lab blackhole "$path" ;;
	outage:*)
		# (every path at once, and back at once: one nft transaction each)
		lab outage on
		sleep "${FAULT#outage:}"
		lab outage off ;;
	loss:* | loss1:*)
		permille=$(awk -v p="${FAULT#*:}" 'BEGIN { printf "%d", p * 10 + 0.5 }')
		if [ "${FAULT%%:*}" = loss1 ]; then
			lab lossy "$path" "$permille"
		else
			for i in $(seq $NPATHS); do lab lossy "$i" "$permille"; done
		fi ;;
	delay:*)
		local d=${FAULT#delay:}
		lab delay "$path" "${d%%:*}" "$([[ "$d" == *:* ]] && echo "${d#*:}" || echo 0)" ;;
	esac
}

fault_words() {
	case $FAULT in
	cut) echo "path $1 blackholed" ;;
	outage:*) echo "every path out for ${FAULT#outage:} s, back" ;;
	loss:*) echo "every path losing ${FAULT#loss:} %" ;;
	loss1:*) echo "path $1 losing ${FAULT#loss1:} %" ;;
	delay:*) echo "path $1 delayed by ${FAULT#delay:} ms" ;;
	esac
}

# fault_counters: "TCPAbortOnTimeout(primary) TCPAbortOnTimeout(standby)
# MPJoinAckRx(primary)" now
fault_counters() {
	local a j b
	read -r a j < <(counter_values server | awk '$1 == "TcpExt:" && $2 == "TCPAbortOnTimeout" { a = $3 }
		$1 == "MPTcpExt:" && $2 == "MPJoinAckRx" { j = $3 } END { print a + 0, j + 0 }')
	b=$(counter_values client | awk '$1 == "TcpExt:" && $2 == "TCPAbortOnTimeout" { print $3 }')
	echo "$a ${b:-0} $j"
}

# bulk_copy MODE ROUND: BULK_MB megabytes from the primary to a psql on the
# standby's host over a new MPTCP connection; prints "SECONDS MBIT_PER_S"
# (empty when the bytes did not all arrive)
bulk_copy() {
	local rows=$((BULK_MB * 1024)) t bytes
	t=$(now)
	# (a copy that fails or times out is reported, not fatal)
	bytes=$(client timeout 300 psql -X -At "$(remote 1)" -c "COPY (SELECT repeat('x', 1023) FROM generate_series(1, $rows)) TO STDOUT" 2>"$OUT/logs/bulk.$1.$2.err" | wc -c) || true
	bytes=${bytes:-0}
	t=$(elapsed "$t")
	if [ "$bytes" -ne $((rows * 1024)) ]; then
		say "  $1 round $2: the bulk copy got $bytes bytes of $((rows * 1024)): $(head -c 200 "$OUT/logs/bulk.$1.$2.err")"
		echo " "
		return
	fi
	echo "$t $(awk -v b="$bytes" -v t="$t" 'BEGIN { printf "%.1f", b * 8 / t / 1e6 }')"
}

# fault_line MODE ROUND BEFORE AFTER BULK_S BULK_MBIT HS_STATUS RESTARTS
# LOAD: one line of fault.csv, and what it says
fault_line() {
	local mode=$1 round=$2 hs_closed= hs_alive= hs_silent= lat slow
	read -r a0 b0 j0 <<<"$3"
	read -r a1 b1 j1 <<<"$4"
	if [ -n "$7" ] && [ -f "$7" ]; then
		hs_closed=$(awk '/subflows closed: dead path/ { print $1 }' "$7")
		hs_alive=$(awk '/while a sibling subflow delivered/ { print $1 }' "$7")
		hs_silent=$(awk '/while every subflow was silent/ { print $1 }' "$7")
	fi
	lat=$(tail -1 "$runs" | cut -d, -f6)
	slow=$(tail -1 "$runs" | cut -d, -f8)
	echo "$mode,$round,$FAULT,$((a1 - a0)),$((b1 - b0)),$((j1 - j0)),$BULK_MB,$5,$6,$hs_closed,$hs_alive,$hs_silent,$8,$lat,$slow,$9" >>"$OUT/fault.csv"
	say "  $mode round $round: subflows closed on a timeout: primary $((a1 - a0)), standby $((b1 - b0)); MP_JOINs $((j1 - j0))$([ -z "$6" ] || echo "; bulk ${BULK_MB} MB at $6 Mbit/s")$([ -z "$hs_closed" ] || echo "; host-setup closed $hs_closed (RTOs beside a live sibling $hs_alive, with all silent $hs_silent)")"
}

run_one() {
	local mode=$1 round=$2 wpid subflows t0 before after busiest t_fail t_end released=0 rc=0
	local pgb=$WORK/pgb.$mode.$round
	if [ "$mode" = mptcp_backup ]; then lab_up "$NPATHS" "$RATE" backup=$NPATHS; else lab_up "$NPATHS" "$RATE"; fi
	set_mode "$mode"
	if [ "$mode" = mptcp_guide ] || [ "$mode" = mptcp_defaults ]; then
		# what the guide sets up beside the settings: the primary's first
		# address as a signal endpoint too, and mend-paths on both hosts
		ip mptcp endpoint add 198.18.1.1 dev sv1 signal
		# and the standby's limits as README.md's quick start sets them,
		# with room to spare (the lab's own leave none: 3 of 3)
		bash "$LAB" client "$WORK/lab" ip mptcp limits set subflows 4 add_addr_accepted 4
		"$HOSTDIR/mend-paths" --port "$PGPORT_LAB" >"$OUT/logs/mend-paths.$mode.$round.primary.txt" 2>&1 &
		MENDERS+=($!)
		# (lab.sh execs it: its pid is the one to stop)
		bash "$LAB" client "$WORK/lab" "$HOSTDIR/mend-paths" --port "$PGPORT_LAB" >"$OUT/logs/mend-paths.$mode.$round.standby.txt" 2>&1 &
		MENDERS+=($!)
	fi
	: >"$WORK/standby.log"
	local plines
	plines=$(wc -l <"$WORK/primary.log")
	mptcp_counters >"$OUT/logs/mptcp-counters.$mode.$round.txt"
	# the standby's walreceiver must not inherit common.sh's
	# PGCONNECT_TIMEOUT: only the tuned mode sets a connect_timeout
	client env -u PGCONNECT_TIMEOUT pg_ctl -D "$STANDBY_DATA" -l "$WORK/standby.log" -w start >/dev/null
	wpid=$(wait_sync)
	subflows=1
	if [ "${mode#mptcp}" != "$mode" ] && [ "${BENCH_STALL_WAIT_JOINS:-1}" = 1 ]; then
		# the subflows join after the connection is established: wait (bounded)
		for _ in $(seq 100); do
			subflows=$(sql "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $wpid")
			[ "$subflows" -ge "$NPATHS" ] && break
			sleep 0.1
		done
	fi
	if [ "$STALL_LAB" = field ]; then
		# as a user's lab: the tables made anew while the standby
		# streams, synchronously, and the timed run at once after
		pgbench -q -i -s "$SCALE" -h "$WORK" -p "$PGPORT_LAB" postgres >/dev/null 2>&1
	fi
	rm -f "$pgb".log*
	local before_counters
	before_counters=$(fault_counters)
	t0=$(now)
	pgbench -n -R "$TPS" -c "$CLIENTS" -j 2 -T "$SECONDS_RUN" -l --log-prefix="$pgb.log" \
		-h "$WORK" -p "$PGPORT_LAB" postgres >"$pgb.out" 2>"$pgb.err" &
	local pgpid=$!
	rm -f "$OUT/counters.raw"
	local t_stop
	t_stop=$(awk -v a="$t0" -v s="$SECONDS_RUN" 'BEGIN { printf "%.3f", a + s }')
	sample_run "$mode" "$round" "$t_stop" "$t0" "$wpid" &
	local sampler=$!
	sleep $((FAIL_AT - 3))
	before=$(path_total)
	sleep 3
	after=$(path_total)
	busiest=$(join <(echo "$before") <(echo "$after") | awk '{ d = $3 - $2; if (d > m) { m = d; p = $1 } } END { print p }')
	busiest=${BENCH_STALL_CUT_PATH:-$busiest}
	# the subflows the connection has when its path dies
	[ "${mode#mptcp}" != "$mode" ] &&
		subflows=$(sql "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $wpid")
	t_fail=$(now)
	start_fault "$busiest"
	say "  $mode round $round: $subflows subflow(s); $(fault_words "$busiest") at $(elapsed "$t0") s"
	local watcher=
	if [ "$RESTORE_AFTER" -gt 0 ]; then
		watch_path_back "$mode" "$round" "$busiest" "$t0" "$t_fail" "$t_stop" &
		watcher=$!
	fi
	# the end of the run: pgbench stops starting transactions at
	# SECONDS_RUN; whatever still waits for the standby a second later is
	# released (and counted as capped)
	t_end=$(awk -v a="$t0" -v s="$SECONDS_RUN" 'BEGIN { printf "%.3f", a + s + 1 }')
	while kill -0 "$pgpid" 2>/dev/null && still_before "$t_end"; do
		sleep 0.5
	done
	if kill -0 "$pgpid" 2>/dev/null; then
		released=1
		say "  $mode round $round: commits still waiting at the end of the run: releasing them (synchronous_standby_names = '')"
		sql "ALTER SYSTEM SET synchronous_standby_names = ''"
		sql "SELECT pg_reload_conf()" >/dev/null
		for _ in $(seq 60); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.5; done
		kill "$pgpid" 2>/dev/null || true
	fi
	wait "$pgpid" || rc=$?
	wait "$sampler" || true
	[ -z "$watcher" ] || wait "$watcher" || true
	# the bulk rate, with the fault still on
	local bulk_s= bulk_mbit=
	if [ "$BULK_MB" -gt 0 ]; then
		read -r bulk_s bulk_mbit < <(bulk_copy "$mode" "$round" || echo " ") || true
	fi
	local after_counters hs_status=
	after_counters=$(fault_counters)
	stop_menders
	if [ -n "$SWITCH" ] && [ "$mode" = mptcp_guide ]; then
		# (detaching writes what the program did in this run)
		host_setup_switch detach
		hs_status=$WORK/host-setup.status
		cp "$hs_status" "$OUT/logs/host-setup.$mode.$round.txt" 2>/dev/null || true
	fi
	gzip -9f "$OUT/logs/ss.$mode.$round.txt"
	# counters.csv: the time since the cut, and the values that changed
	awk -F, -v f="$(awk -v a="$t_fail" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')" '
		{ key = $4 "," $5; if (!(key in base)) base[key] = $6
		  printf "%s,%s,%.2f,%s,%s,%d\n", $1, $2, $3 - f, $4, $5, $6 - base[key] }' "$OUT/counters.raw" |
		awk -F, '{ key = $4 "," $5 } $6 != last[key] || !(key in last) { last[key] = $6; print }' >>"$OUT/counters.csv"
	rm -f "$OUT/counters.raw"
	local sender_host restarts failed errors load
	sender_host=$(client psql -X -At -h "$WORK/standby_sock" -p 5433 -U postgres \
		-c "SELECT coalesce(sender_host, '-') || CASE WHEN status = 'streaming' THEN '' ELSE '(' || status || ')' END FROM pg_stat_wal_receiver" 2>/dev/null || true)
	[ -n "$sender_host" ] || sender_host=none
	restarts=$(grep -c 'started streaming WAL' "$WORK/standby.log" || true)
	restarts=$((restarts > 0 ? restarts - 1 : 0))
	failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$pgb.out")
	errors=$(grep -ci 'error\|abort' "$pgb.err" || true)
	[ "$rc" -ne 0 ] && [ "$released" = 0 ] && errors=$((errors + 1))
	load=$(cut -d' ' -f1 /proc/loadavg)
	cp "$WORK/standby.log" "$OUT/logs/standby.$mode.$round.log"
	tail -n +$((plines + 1)) "$WORK/primary.log" >"$OUT/logs/primary.$mode.$round.log"
	mptcp_counters >>"$OUT/logs/mptcp-counters.$mode.$round.txt"
	cp "$pgb.out" "$OUT/logs/pgbench.$mode.$round.out"
	cat "$pgb.err" >>"$OUT/logs/pgbench.$mode.$round.out"
	# the end of the run, then the next: no walsender of this run left
	client pg_ctl -D "$STANDBY_DATA" -w -m immediate stop >/dev/null 2>&1 || true
	sql "SELECT pg_terminate_backend(pid) FROM pg_stat_replication" >/dev/null
	lab down >/dev/null 2>&1
	python3 "$(dirname "$0")/stall_report.py" analyse "$mode" "$round" "$t_fail" "$t0" "$SECONDS_RUN" "$released" \
		"$busiest" "$subflows" "${failed:-0}" "$errors" "$restarts" "$sender_host" "$load" "$runs" "$timeline" "$pgb".log*
	fault_line "$mode" "$round" "$before_counters" "$after_counters" "$bulk_s" "$bulk_mbit" "$hs_status" "$restarts" "$load"
	tail -1 "$runs" | awk -F, '{ printf "==>   %s round %s: longest commit %s ms, longest gap %s ms, %s commits > 1 s, rate back after %s s%s; failed %s, errors %s; walreceiver restarts %s, now on %s; load %s\n", $1, $2, $6, $7, $8, $9, ($10 == 1 ? " (capped)" : ""), $13, $14, $15, $16, $17 }' >&2
	rm -f "$pgb".log*
}

mkdir -p "$OUT/logs"
for round in $(seq "$RUNS"); do
	order=$MODES
	[ $((round % 2)) -eq 0 ] && order=$(echo "$MODES" | tr ' ' '\n' | tac | paste -sd' ')
	for mode in $order; do
		run_one "$mode" "$round"
	done
done
server_stop
python3 "$(dirname "$0")/stall_report.py" report "$OUT" >/dev/null
say "failover-stall: $(elapsed "$bench_start") s in all; table $OUT/results.md, plot $OUT/stall.svg"
