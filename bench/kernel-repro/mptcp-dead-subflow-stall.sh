#!/bin/bash
# MPTCP: data stranded on a dead subflow while 3 others are alive and idle.
#
# A kernel-level reproducer, without PostgreSQL, in the style of
# tools/testing/selftests/net/mptcp/*.sh.  Runs as root; every link,
# address and setting lives in 3 network namespaces it creates and deletes
# (kr-s, kr-r, kr-c, each name followed by NS_SUFFIX, by default "-" and
# the script's pid, so that runs side by side do not meet; addresses in
# 198.18.0.0/15 only).
#
#   kr-s (server, sender)      kr-r (router)                 kr-c (client, receiver)
#   s<i> 198.18.<i>.1/24 --- rs<i> [br<i>] rc<i> --- c<i> 198.18.<i>.2/24   i = 1..4
#                          tbf ->server  tbf ->client
#
# Each path is shaped to RATE Mbit/s (tbf burst 32kb latency 50ms) on both
# router ports; reno in kr-s and kr-c.  kr-s announces 198.18.{2,3,4}.1
# (signal endpoints); one MPTCP connection to 198.18.1.1 then has 4
# subflows.  pingpong.py imitates a walsender and its synchronous standby:
#   1. BULK_MB (60) MB as fast as possible (pgbench -i streaming WAL), until
#      the client has acked it all at application level;
#   2. for DURATION (80) s, a 4 KB record every 5 ms; the client acks the
#      highest complete record (8 bytes), the server records each record's
#      latency from send to ack;
#   3. at T_CUT (15) s, path 1 (the initial subflow's) is blackholed for good
#      (router qdiscs "pfifo limit 0"): towards the server first, CUT_GAP
#      (2) s later towards the client too;
#   4. BURST_AT (20) s after the cut, a burst of BURST_KB (2000) KB in one go
#      (autovacuum writing WAL), with the 5 ms records going on.  BURST_AT
#      may list several times ("6 12 18 24"): a burst at each.
#
# Why the gap: while only the acks die, what the server sends on path 1
# still reaches the client, which acknowledges it at the MPTCP level on the
# other subflows.  The server's subflow 1 keeps that data unacked at the TCP
# level and backs its RTO off, but the MPTCP level has nothing to
# retransmit, so it never counts the subflow as stale (stale_count stays 0).
# The burst then puts data on that subflow (its pacing rate is the highest),
# and the MPTCP retransmit timer takes the subflow's backed-off RTO: the
# records wait 5 s or more, in every run we made on 6.18.  The burst is
# 2000 KB (400 KB in the first version): in a qemu guest without KVM the
# dead subflow's pacing rate, from the RTTs measured there, is lower, and
# 400 KB fitted on the live subflows.  CUT_GAP=0 cuts
# both ways at once, as the first version did: whether the burst stalls
# then depends on the moment (1 run in 3 over 1 s here, the others 0.5 to
# 0.7 s, recovered through the stale-subflow check).
#
# Usage: mptcp-dead-subflow-stall.sh   (settings from the environment)
#   RATE=25 DURATION=80 T_CUT=15 CUT_GAP=2 BURST_AT=20 BURST_KB=2000 BULK_MB=60
#   PORT=10100 NS_SUFFIX=-$$
#   SYSCTLS="net.ipv4.tcp_rto_max_ms=1000 net.ipv4.tcp_retries2=5"
#       applied in kr-s and kr-c before the server starts (its listener, and
#       so the accepted subflows, take them)
#   LOGDIR=/tmp/...   where logs and samples go (default: a new /tmp/kr-mptcp.*)
#   PYTHON=python3
#
# Output: one RESULT line (longest record latency after the cut and when,
# records over 1 s, HUNG if records were never acked, with their wait), the
# MPTcpExt counters of kr-s (and kr-c) at the end and their timeline, and
# `ss -tinM` of kr-s (subflow on 198.18.1.1, the MPTCP socket) and of kr-c
# (the MPTCP socket) at the end of the longest wait after the burst.
# Every second LOGDIR/samples.log gets ss and nstat of both hosts.
# The run takes DURATION + about 10 s; everything is bounded by timeout.

set -u

RATE=${RATE:-25}
DURATION=${DURATION:-80}
T_CUT=${T_CUT:-15}
BURST_AT=${BURST_AT:-20}
BURST_KB=${BURST_KB:-2000}
BULK_MB=${BULK_MB:-60}
PORT=${PORT:-10100}
CUT_GAP=${CUT_GAP:-2}
SYSCTLS=${SYSCTLS:-}
PYTHON=${PYTHON:-python3}
NPATHS=4
NS_SUFFIX=${NS_SUFFIX--$$}
S=kr-s$NS_SUFFIX R=kr-r$NS_SUFFIX C=kr-c$NS_SUFFIX
HERE=$(cd "$(dirname "$0")" && pwd)
COUNTERS="MPTcpExtMPTCPRetrans MPTcpExtSubflowStale MPTcpExtSubflowRecover MPTcpExtDuplicateData"

say() { printf '# %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
now() { date +%s.%N; }

[ "$(id -u)" = 0 ] || die "run as root"
for c in ip tc ss nstat timeout "$PYTHON"; do command -v "$c" >/dev/null || die "$c not found"; done
for v in RATE DURATION T_CUT BURST_KB BULK_MB PORT CUT_GAP; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number"
done
[[ $BURST_AT =~ ^[0-9]+( +[0-9]+)*$ ]] || die "BURST_AT must be whole numbers (seconds after the cut)"
for b in $BURST_AT; do
	[ $((T_CUT + b)) -lt "$DURATION" ] || die "T_CUT + BURST_AT must be < DURATION"
done
FIRST_BURST=$(printf '%s\n' $BURST_AT | sort -n | head -1)
[[ $NS_SUFFIX =~ ^[A-Za-z0-9_.-]*$ ]] || die "NS_SUFFIX: letters, digits, - _ . only"

LOGDIR=${LOGDIR:-$(mktemp -d /tmp/kr-mptcp.XXXXXX)}
mkdir -p "$LOGDIR" || die "cannot create $LOGDIR"
ST=$LOGDIR/state
rm -rf "$ST" && mkdir -p "$ST"
# nstat: a history file of our own (never the shared /tmp/.nstat.u0)
export NSTAT_HISTORY=$LOGDIR/nstat.history

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for ns in $S $R $C; do ip netns del "$ns" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- topology --------------------------------------------------------
for ns in $S $R $C; do
	if ip netns list | grep -qw "^$ns"; then
		say "deleting a leftover namespace $ns"
		ip netns del "$ns"
	fi
done
set -e
for ns in $S $R $C; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
done
for ns in $S $C; do
	ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control=reno
done
for i in $(seq $NPATHS); do
	ip link add "s$i" netns $S type veth peer name "rs$i" netns $R
	ip link add "c$i" netns $C type veth peer name "rc$i" netns $R
	ip -n $R link add "br$i" type bridge
	ip -n $R link set "rs$i" master "br$i"
	ip -n $R link set "rc$i" master "br$i"
	for d in "rs$i" "rc$i" "br$i"; do ip -n $R link set "$d" up; done
	ip -n $S addr add "198.18.$i.1/24" dev "s$i"
	ip -n $S link set "s$i" up
	ip -n $C addr add "198.18.$i.2/24" dev "c$i"
	ip -n $C link set "c$i" up
	tc -n $R qdisc add dev "rc$i" root tbf rate "${RATE}mbit" burst 32kb latency 50ms
	tc -n $R qdisc add dev "rs$i" root tbf rate "${RATE}mbit" burst 32kb latency 50ms
done
for i in $(seq 2 $NPATHS); do
	ip -n $S mptcp endpoint add "198.18.$i.1" dev "s$i" signal
done
ip -n $S mptcp limits set subflows 8 add_addr_accepted 0
ip -n $C mptcp limits set subflows 3 add_addr_accepted 3
for kv in $SYSCTLS; do
	for ns in $S $C; do ip netns exec "$ns" sysctl -qw "$kv"; done
done
set +e
# bounded wait until the bridges forward (at once without STP)
for _ in $(seq 50); do
	[ "$(bridge -n $R link show 2>/dev/null | grep -c 'state forwarding')" -ge $((2 * NPATHS)) ] && break
	sleep 0.1
done

# ---- run -------------------------------------------------------------
say "kernel $(uname -r); $NPATHS paths of $RATE Mbit/s; bulk $BULK_MB MB; records 4 KB / 5 ms for $DURATION s;" \
	"cut path 1 at $T_CUT s (towards the client $CUT_GAP s later); burst $BURST_KB KB at +${BURST_AT// /,+} s after the cut; SYSCTLS='$SYSCTLS'; logs in $LOGDIR"

ip netns exec $S timeout $((DURATION + 35)) "$PYTHON" "$HERE/pingpong.py" server --port "$PORT" --state "$ST" \
	--accept-timeout 20 --bulk-timeout 20 \
	--bulk-mb "$BULK_MB" --duration "$DURATION" --t-cut "$T_CUT" --burst-at "${BURST_AT// /,}" --burst-kb "$BURST_KB" \
	>"$LOGDIR/server.out" 2>"$LOGDIR/server.err" &
server_pid=$!
pids+=("$server_pid")
for _ in $(seq 100); do
	ip netns exec $S ss -ltnH "sport = :$PORT" | grep -q . && break
	sleep 0.05
done
ip netns exec $C timeout $((DURATION + 35)) "$PYTHON" "$HERE/pingpong.py" client --addr 198.18.1.1 --port "$PORT" \
	>"$LOGDIR/client.out" 2>"$LOGDIR/client.err" &
pids+=($!)

nsub() { ip netns exec $S ss -tnH state established "( sport = :$PORT )" | wc -l; }
for _ in $(seq 100); do
	[ "$(nsub)" -ge $NPATHS ] && break
	sleep 0.1
done
n=$(nsub)
if [ "$n" -lt $NPATHS ]; then
	for ns in $S $C; do
		echo "--- $ns"; ip netns exec $ns ss -tanM; ip netns exec $ns nstat -asz 'MPTcpExt*'
	done >"$LOGDIR/join-failure.txt" 2>&1
	die "only $n subflows after 10 s (see $LOGDIR/join-failure.txt): $(ip netns exec $S nstat -as 'MPTcpExt*' | awk 'NR > 1 { printf "%s=%s ", $1, $2 }')"
fi
say "$n subflows; bulk of $BULK_MB MB"
touch "$ST/go"

for _ in $(seq 300); do
	[ -s "$ST/loop_start" ] && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.1
done
[ -s "$ST/loop_start" ] || die "the bulk did not complete: $(cat "$LOGDIR/server.err")"
say "$(grep 'bulk' "$LOGDIR/server.err")"
loop_start=$(cat "$ST/loop_start")

# stuck_report: where the server's process and the kernel are (as root:
# its kernel stack, and sysrq's backtraces of every CPU and blocked task)
stuck_report() {
	local pid
	echo "=== stuck at $(now): status $(cat "$ST/status" 2>/dev/null)"
	for pid in $server_pid $(pgrep -P "$server_pid"); do
		echo "--- pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
		grep -E '^(State|voluntary|nonvoluntary)' "/proc/$pid/status" 2>/dev/null
		echo "wchan: $(cat "/proc/$pid/wchan" 2>/dev/null)"
		cat "/proc/$pid/stack" 2>/dev/null
	done
	echo "--- $S ss -tinmM"
	ip netns exec $S ss -tinmM
	if [ -w /proc/sysrq-trigger ]; then
		echo l >/proc/sysrq-trigger
		echo w >/proc/sysrq-trigger
		echo "--- dmesg (sysrq l, w)"
		dmesg | tail -200
	fi
}

# Sampler: every second, ss -tinM and the counters of both hosts, with the
# server's status ("seconds since the cut, oldest unacked record's age, burst
# sent"); index: samples.idx "n rel_cut oldest_wait burst MPTCPRetrans
# SubflowStale TCPTimeouts" (the last three: the server's counters).
sampler() {
	local n=0 status last= same=0
	while :; do
		n=$((n + 1))
		status=$(cat "$ST/status" 2>/dev/null || echo "nan 0 0")
		# (the server writes its status every 0.5 s: the same one for 5 s
		# means it is stuck; where, once, in LOGDIR/stuck.txt)
		if [ "$status" = "$last" ]; then same=$((same + 1)); else same=0 last=$status; fi
		[ "$same" = 5 ] && [ -f "$ST/cut" ] && stuck_report >"$LOGDIR/stuck.txt" 2>&1
		{
			echo "=== sample $n status $status"
			echo "--- $S ss -tinM"
			ip netns exec $S ss -tinM
			echo "--- $C ss -tinM"
			ip netns exec $C ss -tinM
			echo "--- $S nstat"
			ip netns exec $S nstat -asz 'MPTcpExt*' 'TcpExtTCPTimeouts' 'TcpRetransSegs'
			echo "--- $C nstat"
			ip netns exec $C nstat -asz 'MPTcpExt*'
		} >>"$LOGDIR/samples.log" 2>&1
		echo "$n $status $(ip netns exec $S nstat -asz MPTcpExtMPTCPRetrans MPTcpExtSubflowStale TcpExtTCPTimeouts |
			awk '{ v[$1] = $2 } END { printf "%d %d %d", v["MPTcpExtMPTCPRetrans"], v["MPTcpExtSubflowStale"], v["TcpExtTCPTimeouts"] }')" \
			>>"$LOGDIR/samples.idx"
		sleep 1
	done
}
sampler &
sampler_pid=$!
pids+=("$sampler_pid")

# the cut, at T_CUT s into the record loop
delay=$(awk -v s="$loop_start" -v c="$T_CUT" -v n="$(now)" 'BEGIN { d = s + c - n; printf "%.3f", (d > 0 ? d : 0) }')
sleep "$delay"
if [ "$CUT_GAP" = 0 ]; then
	for d in rc1 rs1; do tc -n $R qdisc replace dev "$d" root pfifo limit 0; done
	now >"$ST/cut"
	say "path 1 blackholed at $(awk -v s="$loop_start" -v n="$(cat "$ST/cut")" 'BEGIN { printf "%.2f", n - s }') s"
else
	tc -n $R qdisc replace dev rs1 root pfifo limit 0
	now >"$ST/cut"
	say "path 1 blackholed towards the server at $(awk -v s="$loop_start" -v n="$(cat "$ST/cut")" 'BEGIN { printf "%.2f", n - s }') s"
	sleep "$CUT_GAP"
	tc -n $R qdisc replace dev rc1 root pfifo limit 0
	say "path 1 blackholed both ways at $(awk -v s="$loop_start" -v n="$(now)" 'BEGIN { printf "%.2f", n - s }') s"
fi

wait "$server_pid"
rc=$?
kill "$sampler_pid" 2>/dev/null
wait "$sampler_pid" 2>/dev/null
[ "$rc" = 0 ] || say "server exited with $rc: $(tail -3 "$LOGDIR/server.err")"

# ---- report ----------------------------------------------------------
cat "$LOGDIR/server.out"
echo "counters $S (end): $(ip netns exec $S nstat -asz $COUNTERS | awk 'NR > 1 && $1 !~ /^#/ { sub(/^MPTcpExt/, "", $1); printf "%s=%s ", $1, $2 }')"
echo "counters $C (end): $(ip netns exec $C nstat -asz $COUNTERS | awk 'NR > 1 && $1 !~ /^#/ { sub(/^MPTcpExt/, "", $1); printf "%s=%s ", $1, $2 }')"
# when the counters moved (1 s samples; t relative to the cut)
echo "$S counter changes after the cut (value@t): $(awk '$2 != "nan" {
		for (f = 5; f <= 7; f++) {
			if ($2 >= 0 && $f != last[f]) ch[f] = ch[f] " " $f "@" sprintf("%+.0f", $2)
			last[f] = $f }
	} END { printf "MPTCPRetrans%s; SubflowStale%s; TCPTimeouts%s", ch[5], ch[6], ch[7] }' "$LOGDIR/samples.idx")"
# the sample at the end of the longest wait after the burst (else 2 s after it)
pick=$(awk -v b="$FIRST_BURST" '$2 != "nan" && $2 >= b {
		if ($3 >= best) { best = $3; n = $1 }
		if (!first && $2 >= b + 2) first = $1 }
	END { print (best >= 1 ? n : first) }' "$LOGDIR/samples.idx")
if [ -n "$pick" ]; then
	awk -v n="$pick" '$1 == "===" { on = ($3 == n) } on' "$LOGDIR/samples.log" >"$LOGDIR/pick.txt"
	read -r _ _ _ _ rel wait _ <"$LOGDIR/pick.txt"
	echo "ss at +${rel} s after the cut (oldest unacked record waiting ${wait} s):"
	# ss -tinM lists "Netid State Recv-Q Send-Q Local Peer", the details on
	# the next (tab-indented) line
	awk -v p=":$PORT" -v s="$S" '
		/^--- / { side = $2; next }
		/^Netid/ { next }
		/^[a-z]/ { hdr = $0; net = $1; st = $2; loc = $5; next }
		/^\t/ && hdr != "" && st != "LISTEN" {
			if (side == s && net == "tcp" && loc == "198.18.1.1" p) {
				print "kr-s subflow 198.18.1.1: " hdr; print "    " $0 }
			else if (side == s && net == "tcp" && loc ~ p "$") {
				d = $0; r = ""
				nf = split(d, f, " "); for (i = 1; i <= nf; i++)
					if (f[i] ~ /^(rto|backoff|unacked|lost|retrans|cwnd|lastsnd):/) r = r " " f[i]
				split(hdr, h, " "); print "kr-s subflow " loc " Send-Q " h[4] r }
			else if (net == "mptcp") { print side " mptcp: " hdr; print "    " $0 }
			hdr = "" }' "$LOGDIR/pick.txt" | sed 's/[[:space:]]\+/ /g'
else
	echo "no sample after the burst"
fi
exit "$rc"
