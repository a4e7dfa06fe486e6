#!/bin/bash
# host/tests/host-setup.sh HOST_SETUP LAB_SH OUTDIR: what host-setup's
# program does to MPTCP subflows, without PostgreSQL, on 2 paths of
# 25 Mbit/s (src/test/mptcp/lab.sh) with a steady stream of 1 KiB records,
# each answered (host/tests/mptcp_stream.py):
#   1. every path out for 1.5 s, then back, and again for 3 s: the program
#      closes nothing and the kernel closes nothing (TcpExt
#      TCPAbortOnTimeout on both hosts), every record arrives and is
#      answered on the same connection;
#   2. path 1 cut for good while path 2 delivers: the program closes the
#      dead subflow, every record arrives and is answered;
#   3. every subflow took TCP_RTO_MAX_MS (6.15 and later) or, where the
#      kernel refuses it, TCP_THIN_LINEAR_TIMEOUTS.
# HOST_SETUP_PHASES picks the faults (bench/outage-ladder.sh): also
# "delay" (path 1 100 ms more round trip, 10 ms jitter: netem) and "loss"
# (5 % of every path's packets dropped), where no subflow may close.
# Both check the bytes (count and sha256 on each side), not only the exit
# codes.  Needs root (a BPF program on a cgroup) and Linux 6.1 or later;
# the lab lives in a network namespace of its own and the cgroup is removed
# at the end.  make check-all runs it (tools/lib/host.sh).
set -euo pipefail
hs=$1 lab_sh=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = --inner ]; then
	shift
	hs=$1 lab_sh=$2 out=$3 cg=$4
	lab=$out/lab
	fails=0
	ok() { echo "ok: $*"; }
	bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
	aborts() { awk '/^TcpExt:/ { if (!h) { split($0, n); h = 1; next } for (i = 2; i <= NF; i++) if (n[i] == "TCPAbortOnTimeout") print $i }' "$@"; }
	closed() { "$hs" --status "$cg" | awk '/subflows closed: dead path/ { print $1 }'; }
	field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' "$1" "$2"; }
	trap 'bash "$lab_sh" down "$lab" >/dev/null 2>&1 || true' EXIT
	# phase NAME PORT: the stream for 14 s, the fault 4 s in (fault_NAME)
	phase() {
		local name=$1 port=$2 a0 b0 c0 a1 b1 c1 srv
		bash "$lab_sh" up "$lab" 2 25mbit
		a0=$(aborts /proc/net/netstat) b0=$(bash "$lab_sh" client "$lab" cat /proc/net/netstat | aborts) c0=$(closed)
		python3 "$here/mptcp_stream.py" serve "$port" 14 "$out/$name.server.json" &
		srv=$!
		sleep 0.5
		bash "$lab_sh" client "$lab" python3 "$here/mptcp_stream.py" send 198.18.1.1 "$port" 14 "$out/$name.client.json" &
		local cli=$!
		sleep 4
		"fault_$name"
		wait "$cli" || true
		wait "$srv" || true
		a1=$(aborts /proc/net/netstat) b1=$(bash "$lab_sh" client "$lab" cat /proc/net/netstat | aborts) c1=$(closed)
		bash "$lab_sh" down "$lab" >/dev/null 2>&1 || true
		PHASE_ABORTS=$((a1 - a0 + b1 - b0)) PHASE_CLOSED=$((c1 - c0))
		echo "$name: $(cat "$out/$name.client.json"); server $(cat "$out/$name.server.json"); subflows closed on a timeout $PHASE_ABORTS, by the program $PHASE_CLOSED"
		local sent
		sent=$(field "$out/$name.client.json" sent)
		[ "$(field "$out/$name.client.json" error)" = None ] && [ "$sent" -gt 1000 ] &&
			[ "$(field "$out/$name.client.json" answered)" = "$sent" ] &&
			[ "$(field "$out/$name.server.json" received)" = "$sent" ] &&
			[ "$(field "$out/$name.server.json" sha256)" = "$(field "$out/$name.client.json" sha256)" ] &&
			ok "$name: all $sent records arrived (sha256 equal) and were answered, on one connection" ||
			bad "$name: records lost, altered or unanswered, or the connection broke"
	}
	outage() {
		bash "$lab_sh" outage "$lab" on
		sleep "$1"
		bash "$lab_sh" outage "$lab" off
	}
	fault_outage() { outage 1.5; }
	fault_outage3() { outage 3; }
	fault_cut() { bash "$lab_sh" blackhole "$lab" 1; }
	# paths that still deliver (bench/outage-ladder.sh's LADDER_FAULTS)
	fault_delay() { bash "$lab_sh" delay "$lab" 1 100 10; }
	fault_loss() { bash "$lab_sh" lossy "$lab" 1 50 && bash "$lab_sh" lossy "$lab" 2 50; }
	# still_delivers NAME: a path that delivers, however badly, keeps its subflow
	still_delivers() {
		[ "$PHASE_CLOSED" = 0 ] && ok "$1: the program closed no subflow" || bad "$1: the program closed $PHASE_CLOSED subflow(s)"
		[ "$PHASE_ABORTS" = 0 ] && ok "$1: no subflow closed on a timeout" || bad "$1: $PHASE_ABORTS subflow(s) closed on a timeout"
	}
	port=15432
	for name in ${HOST_SETUP_PHASES:-outage outage3 cut}; do
		phase "$name" $((port++))
		case $name in
			cut)
				[ "$PHASE_CLOSED" -ge 1 ] && ok "cut: the program closed the dead subflow" || bad "cut: the program closed no subflow"
				# (the kernel counts the close it makes at the program's request)
				[ "$PHASE_ABORTS" -ge 1 ] && ok "cut: the kernel closed the dead subflow on a timeout" || bad "cut: no subflow closed on a timeout"
				;;
			*) still_delivers "$name" ;;
		esac
	done
	# (bench/outage-ladder.sh: the faults it asked for only)
	[ -z "${HOST_SETUP_PHASES:-}" ] || exit $((fails > 0))
	# the backoff each kernel takes: the cap from 6.15 on, linear timeouts before
	local_status=$("$hs" --status "$cg")
	watched=$(awk '/ subflows watched$/ { print $1 }' <<<"$local_status")
	bounded=$(awk '/ subflows given TCP_(RTO_MAX_MS|THIN_LINEAR_TIMEOUTS)/ { n += $1 } END { print n + 0 }' <<<"$local_status")
	[ "${watched:-0}" -ge 1 ] && [ "$bounded" = "$watched" ] &&
		ok "all $watched subflows took $(awk '/ subflows given TCP_/ && $1 > 0 { print $4 }' <<<"$local_status" | paste -sd' ')" ||
		bad "of ${watched:-0} subflows, $bounded took TCP_RTO_MAX_MS or TCP_THIN_LINEAR_TIMEOUTS"
	exit $((fails > 0))
fi

[ "$(id -u)" = 0 ] || { echo "host-setup test: skipped: it needs root (a BPF program on a cgroup)"; exit 0; }
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || { echo "host-setup test: skipped: no cgroup v2 hierarchy mounted"; exit 0; }
mkdir -p "$out"
cg=$cg2/pg-mptcp-host-test.$$
mkdir "$cg"
rc=0
# (HOST_SETUP_OPTS: host-setup's options, for bench/outage-ladder.sh)
# shellcheck disable=SC2086
if "$hs" ${HOST_SETUP_OPTS:-} "$cg" >"$out/attach.txt" 2>&1; then
	# (HOST_SETUP_TEST_TIMEOUT: longer in an emulated guest)
	( echo $BASHPID >"$cg/cgroup.procs" && exec timeout "${HOST_SETUP_TEST_TIMEOUT:-180}" unshare -n bash "$0" --inner "$hs" "$lab_sh" "$out" "$cg" ) || rc=$?
	[ "$rc" != 124 ] || echo "FAIL: the test was still running after ${HOST_SETUP_TEST_TIMEOUT:-180} s"
	"$hs" --status "$cg" >"$out/status.txt" 2>&1 || true
else
	echo "FAIL: $(tail -1 "$out/attach.txt")"
	rc=1
fi
"$hs" --remove "$cg" >/dev/null 2>&1 || true
# (the processes have left it: a bounded wait for the last to go)
for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
exit $rc
