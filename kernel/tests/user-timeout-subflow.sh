#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Does TCP_USER_TIMEOUT, set on an MPTCP listener as PostgreSQL's
# tcp_user_timeout does, reach the subflows of the connections it accepts?
# A subflow whose path dies must then close about USER_TIMEOUT ms after its
# last ACK, as a TCP connection would, rather than after tcp_retries2
# retransmissions (about 15 minutes with the defaults).
#
# Three namespaces (ut-s, ut-c, ut-r, followed by "-" and this script's
# pid): path 1, 198.18.101.0/24, through a bridge in ut-r, and path 2,
# 198.18.102.0/24, a direct veth pair.  The client connects to
# 198.18.101.1 and adds a subflow from 198.18.102.2 (a subflow endpoint);
# the server's listener has TCP_USER_TIMEOUT set.
# Data flows from the server, then path 1 drops everything (pfifo limit 0
# on the router's ports), and the server's subflow on it is watched with ss
# until it is gone or WAIT (20) s have passed.
#
# Prints one line:
#   user-timeout: set on the listener: ok|refused (...); the server's subflow
#   on the dead path closed after N.N s | still open after 20 s
# SYSCTLS="net.ipv4.tcp_retries2=3" (applied in the server's namespace)
# checks the test itself on any kernel: the subflow then closes by
# retransmissions, whatever TCP_USER_TIMEOUT does.
# Exit status: 0 the subflow closed within 3 x USER_TIMEOUT + 2 s, 1 it did
# not, 2 setup failed.  Needs root, ip, tc, ss, python3.

set -u
USER_TIMEOUT=${USER_TIMEOUT:-2000}
SYSCTLS=${SYSCTLS:-}
WAIT=${WAIT:-20}
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
# path 1 through a bridge in R, where it is cut; path 2 a direct link
ip link add s1 netns "$S" type veth peer name rs1 netns "$R" || die "veth"
ip link add c1 netns "$C" type veth peer name rc1 netns "$R" || die "veth"
ip -n "$R" link add br1 type bridge || die "bridge"
for d in rs1 rc1; do ip -n "$R" link set "$d" master br1 up; done
ip -n "$R" link set br1 up
ip link add s2 netns "$S" type veth peer name c2 netns "$C" || die "veth"
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

# the server: TCP_USER_TIMEOUT on the listener, then 8 KB every 10 ms (so
# that each subflow has data in flight when the path dies)
ip netns exec "$S" timeout $((WAIT + 30)) python3 -c '
import socket, sys, time
ut = int(sys.argv[1])
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    l.setsockopt(socket.IPPROTO_TCP, 18, ut)
    print("ok", flush=True)
except OSError as e:
    print("refused (%s)" % e.strerror, flush=True)
l.bind(("198.18.101.1", int(sys.argv[2])))
l.listen(1)
c, _ = l.accept()
c.setblocking(False)
while True:
    try:
        c.send(b"x" * 8192)
    except BlockingIOError:
        pass
    except OSError:
        break
    time.sleep(0.01)
' "$USER_TIMEOUT" "$PORT" >"/tmp/ut-server-$$.out" 2>&1 &
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

subflow_on_path1() {
	ip netns exec "$S" ss -tnH state established "( sport = :$PORT )" |
		grep -c " 198.18.101.2:"
}
subflows() { ip netns exec "$S" ss -tnH state established "( sport = :$PORT )" | wc -l; }
for _ in $(seq 50); do
	[ "$(subflows)" -ge 2 ] && break
	sleep 0.1
done
[ "$(subflows)" -ge 2 ] || die "no second subflow ($(subflows) established)"
sleep 1

# path 1 drops everything, both ways, in the router: what the server sends
# leaves it (a drop by its own qdisc would be a local failure, which TCP
# handles apart: retried every 500 ms, and the subflow was aborted after
# about 8 s whatever the settings)
ip netns exec "$R" tc qdisc replace dev rc1 root pfifo limit 0
ip netns exec "$R" tc qdisc replace dev rs1 root pfifo limit 0
cut=$(date +%s.%N)
closed=
for _ in $(seq $((WAIT * 10))); do
	if [ "$(subflow_on_path1)" = 0 ]; then
		closed=$(awk -v a="$cut" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		break
	fi
	sleep 0.1
done
set_on=$(head -1 "/tmp/ut-server-$$.out")
rm -f "/tmp/ut-server-$$.out"
if [ -n "$closed" ]; then
	echo "user-timeout: TCP_USER_TIMEOUT $USER_TIMEOUT ms set on the listener: $set_on; the server's subflow on the dead path closed after $closed s"
	awk -v c="$closed" -v u="$USER_TIMEOUT" 'BEGIN { exit !(c <= 3 * u / 1000 + 2) }'
else
	echo "user-timeout: TCP_USER_TIMEOUT $USER_TIMEOUT ms set on the listener: $set_on; the server's subflow on the dead path still open after $WAIT s"
	exit 1
fi
