#!/bin/bash
#
# src/test/mptcp/lab.sh
#
# A multipath lab: N network paths between a "server" (the current network
# namespace) and a "client" (a network namespace this script creates),
# each a veth pair with its own addresses and, optionally, a rate limit.
# Shared by the TAP tests, the benchmark and the demo.
#
# Run it with CAP_NET_ADMIN over the current network namespace and nothing
# else in it that matters: in practice inside
#     unshare -Un --map-user=$(id -u) --map-group=$(id -g) --keep-caps
# (what MptcpUtils::enter_private_netns() does), so that everything it
# creates disappears with that namespace.
#
# Path i (1..8): server 198.18.i.1/24 on sv<i>, client 198.18.i.2/24 on
# cv<i>.  The server signals 198.18.i.1 for i >= 2 (MPTCP ADD_ADDR); a
# client connecting to 198.18.1.1 opens one subflow per path.
#
# With "ports" after RATE, there is one link instead, and the extra paths
# are extra ports of the server's address (signal endpoints 198.18.1.1
# port 40000+i): the recipe for hosts with a single address.
#
# Usage:
#   lab.sh up DIR NPATHS [RATE [ports]]  RATE like 100mbit; none = unshaped
#   lab.sh client DIR CMD [ARG...]   run CMD in the client namespace
#   lab.sh blackhole DIR I           drop everything on path I, both ways
#   lab.sh restore DIR I             bring path I back
#   lab.sh down DIR                  remove the client namespace and links
#
# The client namespace is held by a process that exits by itself after
# LAB_LIFETIME seconds (default 1800), so nothing outlives a lost caller.

set -euo pipefail
# ip and tc live in sbin on some systems, outside an ordinary user's PATH
PATH=$PATH:/usr/sbin:/sbin

die() { echo "lab.sh: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: lab.sh up|client|blackhole|restore|down DIR ..."

holder() { cat "$dir/holder.pid" 2>/dev/null || die "no lab in $dir"; }
in_client() { nsenter -t "$(holder)" -n -- "$@"; }

shape() {
	local i=$1 rate
	rate=$(cat "$dir/rate")
	if [ "$rate" = none ]; then
		tc qdisc replace dev "sv$i" root pfifo limit 10000
		in_client tc qdisc replace dev "cv$i" root pfifo limit 10000
	else
		# tbf: a token bucket per direction; burst allows a few packets
		tc qdisc replace dev "sv$i" root tbf rate "$rate" burst 64kb latency 100ms
		in_client tc qdisc replace dev "cv$i" root tbf rate "$rate" burst 64kb latency 100ms
	fi
}

case $cmd in
up)
	n=${3:-}
	rate=${4:-none}
	ports=${5:-}
	[[ "$n" =~ ^[1-8]$ ]] || die "NPATHS must be 1 to 8"
	command -v nsenter >/dev/null || die "nsenter (util-linux) is needed"
	ip link set lo up 2>/dev/null || die "no CAP_NET_ADMIN here: run inside 'unshare -Un --map-user=\$(id -u) --keep-caps' or as root in a namespace"
	mkdir -p "$dir"
	echo "$rate" >"$dir/rate"
	unshare -n sleep "${LAB_LIFETIME:-1800}" </dev/null >/dev/null 2>&1 &
	echo $! >"$dir/holder.pid"
	# wait (bounded) until the holder is in its own namespace
	for _ in $(seq 50); do
		[ "$(readlink /proc/$!/ns/net)" != "$(readlink /proc/$$/ns/net)" ] && break
		sleep 0.02
	done
	in_client ip link set lo up
	ip mptcp limits set subflows 8 add_addr_accepted 0
	ip mptcp endpoint flush
	in_client ip mptcp limits set subflows $((n - 1)) add_addr_accepted $((n - 1))
	links=$n
	[ "$ports" = ports ] && links=1
	echo "$links" >"$dir/paths"
	for i in $(seq "$links"); do
		ip link add "sv$i" type veth peer name "cv$i" netns "$(holder)"
		ip addr add "198.18.$i.1/24" dev "sv$i"
		ip link set "sv$i" up
		in_client ip addr add "198.18.$i.2/24" dev "cv$i"
		in_client ip link set "cv$i" up
		shape "$i"
		if [ "$i" -ge 2 ]; then
			ip mptcp endpoint add "198.18.$i.1" dev "sv$i" signal
		fi
	done
	if [ "$ports" = ports ]; then
		for i in $(seq 2 "$n"); do
			ip mptcp endpoint add 198.18.1.1 dev sv1 port $((40000 + i)) signal
		done
	fi
	;;
client)
	shift 2
	in_client "$@"
	;;
blackhole)
	i=${3:?path number}
	tc qdisc replace dev "sv$i" root pfifo limit 0
	in_client tc qdisc replace dev "cv$i" root pfifo limit 0
	;;
restore)
	shape "${3:?path number}"
	;;
down)
	if [ -f "$dir/holder.pid" ]; then
		n=$(cat "$dir/paths")
		for i in $(seq "$n"); do ip link del "sv$i" 2>/dev/null || true; done
		kill "$(holder)" 2>/dev/null || true
		rm -f "$dir/holder.pid"
	fi
	ip mptcp endpoint flush 2>/dev/null || true
	;;
*)
	die "unknown command $cmd"
	;;
esac
