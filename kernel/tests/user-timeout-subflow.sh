#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Does TCP_USER_TIMEOUT, set on an MPTCP socket as PostgreSQL's
# tcp_user_timeout does (on the accepted connection, or inherited from the
# listener), reach its subflows, present and future?  A subflow whose path
# dies must then close about USER_TIMEOUT ms after its last ACK, as a TCP
# connection would, rather than after tcp_retries2 retransmissions (about
# 15 minutes with the defaults).
#
# Three namespaces (ut-s, ut-c, ut-r, followed by "-" and this script's
# pid): two paths, 198.18.101.0/24 and 198.18.102.0/24, through a bridge
# each in ut-r.  The client connects to 198.18.101.1 and adds a subflow
# from 198.18.102.2 (a subflow endpoint).  The server sets TCP_USER_TIMEOUT
# on the socket SET_ON says ("accepted", right after accept(), before the
# second subflow joins; or "listener"), and sends as fast as it can, so
# that each subflow has data in flight.  Then path CUT (1: the initial
# subflow's, present when the option was set; 2: the one that joined
# after) drops everything (pfifo limit 0 on the router's ports: a drop by
# the server's own qdisc would be a local failure, which TCP handles apart:
# retried every 500 ms, and the subflow was aborted after about 8 s
# whatever the settings), and the server's subflow on it is watched with
# ss until it is gone or WAIT (20) s have passed.
#
# Prints one line:
#   user-timeout: TCP_USER_TIMEOUT N ms set on the SET_ON socket: ok|refused
#   (...); the server's subflow on path CUT closed after N.N s | still open
#   after 20 s
# SYSCTLS="net.ipv4.tcp_retries2=3" (applied in the server's namespace)
# checks the test itself on any kernel: the subflow then closes by
# retransmissions, whatever TCP_USER_TIMEOUT does.
# Exit status: 0 the subflow closed within 3 x USER_TIMEOUT + 2 s, 1 it did
# not, 2 setup failed.  Needs root, ip, tc, ss, python3.

set -u
USER_TIMEOUT=${USER_TIMEOUT:-2000}
SYSCTLS=${SYSCTLS:-}
WAIT=${WAIT:-20}
SET_ON=${SET_ON:-accepted}
CUT=${CUT:-1}
S=ut-s-$$ C=ut-c-$$ R=ut-r-$$
PORT=10200

cleanup() {
	[ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null
	[ -n "${client_pid:-}" ] && kill "$client_pid" 2>/dev/null
	ip netns del "$S" 2>/dev/null
	ip netns del "$C" 2>/dev/null
	ip netns del "$R" 2>/dev/null
}
trap cleanup EXIT
die() { echo "user-timeout: setup failed: $*"; exit 2; }

ip netns add "$S" && ip netns add "$C" && ip netns add "$R" || die "netns"
# both paths through a bridge each in R, where one is cut
for i in 1 2; do
	ip link add "s$i" netns "$S" type veth peer name "rs$i" netns "$R" || die "veth"
	ip link add "c$i" netns "$C" type veth peer name "rc$i" netns "$R" || die "veth"
	ip -n "$R" link add "br$i" type bridge || die "bridge"
	for d in "rs$i" "rc$i"; do ip -n "$R" link set "$d" master "br$i" up; done
	ip -n "$R" link set "br$i" up
done
for i in 1 2; do
	ip -n "$S" addr add "198.18.10$i.1/24" dev "s$i"
	ip -n "$C" addr add "198.18.10$i.2/24" dev "c$i"
	ip -n "$S" link set "s$i" up
	ip -n "$C" link set "c$i" up
done
ip -n "$S" link set lo up
ip -n "$C" link set lo up
for ns in "$S" "$C"; do
	ip netns exec "$ns" sysctl -qw net.mptcp.enabled=1 || die "MPTCP"
	ip -n "$ns" mptcp limits set subflows 2 add_addr_accepted 2
done
ip -n "$C" mptcp endpoint add 198.18.102.2 dev c2 subflow
for kv in $SYSCTLS; do ip netns exec "$S" sysctl -qw "$kv" || die "sysctl $kv"; done

# the server: TCP_USER_TIMEOUT on the listener or the accepted socket, then
# data as fast as it goes
ip netns exec "$S" timeout $((WAIT + 30)) python3 -c '
import socket, sys
ut, port, set_on = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def set_user_timeout(sock):
    try:
        sock.setsockopt(socket.IPPROTO_TCP, 18, ut)
        print("ok", flush=True)
    except OSError as e:
        print("refused (%s)" % e.strerror, flush=True)
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if set_on == "listener":
    set_user_timeout(l)
l.bind(("198.18.101.1", port))
l.listen(1)
c, _ = l.accept()
if set_on == "accepted":
    set_user_timeout(c)
buf = b"x" * 65536
while True:
    try:
        c.sendall(buf)
    except OSError:
        break
' "$USER_TIMEOUT" "$PORT" "$SET_ON" >"/tmp/ut-server-$$.out" 2>&1 &
server_pid=$!
sleep 1

# the client reads
ip netns exec "$C" timeout $((WAIT + 25)) python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.connect(("198.18.101.1", int(sys.argv[1])))
while s.recv(65536):
    pass
' "$PORT" >/dev/null 2>&1 &
client_pid=$!

subflow_on_cut_path() {
	ip netns exec "$S" ss -tnH state established "( sport = :$PORT )" |
		grep -c " 198.18.10$CUT.2:"
}
subflows() { ip netns exec "$S" ss -tnH state established "( sport = :$PORT )" | wc -l; }
for _ in $(seq 50); do
	[ "$(subflows)" -ge 2 ] && break
	sleep 0.1
done
[ "$(subflows)" -ge 2 ] || die "no second subflow ($(subflows) established)"
sleep 1

# path CUT drops everything, both ways, in the router
ip netns exec "$R" tc qdisc replace dev "rc$CUT" root pfifo limit 0
ip netns exec "$R" tc qdisc replace dev "rs$CUT" root pfifo limit 0
cut=$(date +%s.%N)
deadline=$(($(date +%s) + WAIT))
closed=
# (a deadline, not a count of polls: under emulation one ss takes longer
# than the 0.1 s between them; and only while the server still runs, since
# its timeout would close the subflow too)
while [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$server_pid" 2>/dev/null; do
	if [ "$(subflow_on_cut_path)" = 0 ]; then
		closed=$(awk -v a="$cut" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		break
	fi
	sleep 0.1
done
set_on=$(head -1 "/tmp/ut-server-$$.out")
rm -f "/tmp/ut-server-$$.out"
if [ -n "$closed" ]; then
	echo "user-timeout: TCP_USER_TIMEOUT $USER_TIMEOUT ms set on the $SET_ON socket: $set_on; the server's subflow on path $CUT closed after $closed s"
	awk -v c="$closed" -v u="$USER_TIMEOUT" 'BEGIN { exit !(c <= 3 * u / 1000 + 2) }'
elif [ "$(date +%s)" -lt "$deadline" ]; then
	echo "user-timeout: TCP_USER_TIMEOUT $USER_TIMEOUT ms set on the $SET_ON socket: $set_on; the server stopped before its subflow on path $CUT closed"
	exit 2
else
	echo "user-timeout: TCP_USER_TIMEOUT $USER_TIMEOUT ms set on the $SET_ON socket: $set_on; the server's subflow on path $CUT still open after $WAIT s"
	exit 1
fi
