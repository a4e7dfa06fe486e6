#!/bin/bash
#
# src/test/mptcp/lab.sh
#
# A multipath lab: N network paths between a "server" (the current network
# namespace) and a "client" (a network namespace this script creates).  Each
# path crosses a "router" (a third namespace) on a bridge of its own, and the
# router shapes it: tbf on its egress in both directions, the way the
# kernel's tools/testing/selftests/net/mptcp/simult_flows.sh shapes paths, so
# that a sender meets a bottleneck in the network, not back-pressure from
# its own interface.  Shared by the TAP tests, the benchmark and the demo.
#
#   server (current netns)     router                      client
#   sv<i> 198.18.i.1/24 ---- rs<i> [br<i>] rc<i> ---- cv<i> 198.18.i.2/24
#                            tbf ->server   tbf ->client
#
# Run it with CAP_NET_ADMIN over the current network namespace and nothing
# else in it that matters: in practice inside
#     unshare -Un --map-user=$(id -u) --map-group=$(id -g) --keep-caps
# (what MptcpUtils::enter_private_netns() does), so that everything it
# creates disappears with that namespace.
#
# The server signals 198.18.i.1 for i >= 2 (MPTCP ADD_ADDR); a client
# connecting to 198.18.1.1 opens one subflow per path.  The server must
# listen on every signalled address (listen_addresses = '*'): the clients
# join at ADDR:(the server's port), and a refused join is silent.
#
# With "ports", there is one link instead, and the extra paths are extra
# ports of the server's address (signal endpoints 198.18.1.1 port 40000+i):
# the recipe for hosts with a single address.
#
# Usage:
#   lab.sh up DIR NPATHS [RATE[,RATE2,...]] [ports] [backup=I[,J...]]
#       RATE like 25mbit, one for every path or one per path; none or
#       omitted = unshaped.  backup=I: path I's server endpoint is
#       "signal backup" (used only when the other paths fail).
#   lab.sh client DIR CMD [ARG...]   run CMD in the client namespace
#   lab.sh router DIR CMD [ARG...]   run CMD in the router namespace
#   lab.sh blackhole DIR I           the router drops everything on path I
#   lab.sh restore DIR I             bring path I back (its rate again, no
#                                    loss, no delay)
#   lab.sh outage DIR on|off         the router drops everything on every path,
#                                    or stops: one nft transaction each, so
#                                    that all paths go (and come back) at
#                                    once, as when a switch reboots
#   lab.sh lossy DIR I PERMILLE      the router drops PERMILLE in 1000 of path
#                                    I's packets at random, both ways (nft
#                                    numgen in the bridge family; 0: none)
#   lab.sh delay DIR I MS [JITTER]   path I gets MS of round-trip delay (and
#                                    JITTER ms of variation), half each way
#                                    (netem under the path's rate; kernels
#                                    with sch_netem only)
#   lab.sh stats DIR                 bytes the router delivered, per path and
#                                    direction: lines "PATH DIRECTION BYTES
#                                    PACKETS DROPS", DIRECTION to_client or
#                                    to_server (DROPS: by the path's qdisc
#                                    since it was last set up)
#   lab.sh info DIR                  one line: paths, rates, backup paths, cc
#   lab.sh down DIR                  remove the namespaces and links
#
# Environment: LAB_CC=reno|bbr sets net.ipv4.tcp_congestion_control in every
# namespace of the lab (server, router, client).  In a network namespace
# other than the initial one the kernel accepts only what
# net.ipv4.tcp_allowed_congestion_control lists, so only reno and bbr are
# offered.  Without LAB_CC, each namespace keeps what it inherited (the
# host's default); "info" says which one is in use.  LAB_ROUTE_CC=ALG gives
# each path's route ALG as its congestion control ("ip route change ...
# congctl lock ALG"), which overrides the namespace's for the sockets that
# use the route, joined subflows included: on the server's and the client's
# side, or only on those LAB_ROUTE_CC_SIDES names ("server", "client").
# ("lock": without it, a subflow that joins a server's connection after the
# server set a socket option takes the MPTCP socket's congestion control.)
#
# The router and client namespaces are each held by a process that exits by
# itself after LAB_LIFETIME seconds (default 1800), so nothing outlives a
# lost caller.

set -euo pipefail
# ip and tc live in sbin on some systems, outside an ordinary user's PATH
PATH=$PATH:/usr/sbin:/sbin

die() { echo "lab.sh: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: lab.sh up|client|router|blackhole|restore|outage|lossy|delay|stats|info|down DIR ..."

holder() { cat "$dir/holder.pid" 2>/dev/null || die "no lab in $dir"; }
router() { cat "$dir/router.pid" 2>/dev/null || die "no lab in $dir"; }
in_client() { nsenter -t "$(holder)" -n -- "$@"; }
in_router() { nsenter -t "$(router)" -n -- "$@"; }

path_rate() { sed -n "${1}p" "$dir/rates"; }

# The router's egress toward the server (rs<i>) and toward the client
# (rc<i>): tbf with the path's rate, or a plain FIFO when unshaped.
shape() {
	local i=$1 rate dev
	rate=$(path_rate "$i")
	[ -n "$rate" ] || die "no path $i"
	for dev in "rs$i" "rc$i"; do
		if [ "$rate" = none ]; then
			in_router tc qdisc replace dev "$dev" root pfifo limit 10000
		else
			in_router tc qdisc replace dev "$dev" root tbf rate "$rate" burst 32kb latency 50ms
		fi
	done
}

# Start a process that holds a new network namespace; print its pid.
start_holder() {
	unshare -n sleep "${LAB_LIFETIME:-1800}" </dev/null >/dev/null 2>&1 &
	local pid=$!
	# wait (bounded) until it is in its own namespace
	for _ in $(seq 100); do
		[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/$$/ns/net)" ] && break
		sleep 0.02
	done
	[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/$$/ns/net)" ] ||
		die "could not create a network namespace"
	echo "$pid"
}

# No IPv6 on the lab's links: no router solicitations or DAD in the byte
# counts.  Quietly skipped where IPv6 is absent.
no_ipv6() {
	echo 1 >"/proc/sys/net/ipv6/conf/$1/disable_ipv6" 2>/dev/null || true
}

set_cc() {
	echo "$1" >/proc/sys/net/ipv4/tcp_congestion_control ||
		die "could not set congestion control $1 (allowed here: $(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control))"
}

case $cmd in
up)
	n=${3:-}
	[[ "$n" =~ ^[1-8]$ ]] || die "NPATHS must be 1 to 8"
	rates=none ports= backup=
	shift 3
	for arg in "$@"; do
		case $arg in
		ports) ports=1 ;;
		backup=*) backup=${arg#backup=} ;;
		*) rates=$arg ;;
		esac
	done
	[ -z "$rates" ] && rates=none
	links=$n
	[ -n "$ports" ] && links=1
	IFS=, read -r -a rate_list <<<"$rates"
	if [ "${#rate_list[@]}" -eq 1 ]; then
		for i in $(seq 2 "$links"); do rate_list+=("${rate_list[0]}"); done
	fi
	[ "${#rate_list[@]}" -eq "$links" ] || die "$links link(s) but ${#rate_list[@]} rates: $rates"
	for r in "${rate_list[@]}"; do
		[[ "$r" =~ ^(none|[0-9]+(\.[0-9]+)?([kmg]?bit|[kmg]?bps)?)$ ]] || die "bad rate: $r"
	done
	IFS=, read -r -a backup_list <<<"$backup"
	for b in "${backup_list[@]}"; do
		[[ "$b" =~ ^[2-8]$ ]] && [ "$b" -le "$n" ] || die "backup=$backup: paths 2 to $n only (path 1 carries the initial subflow)"
	done
	cc=${LAB_CC:-}
	case $cc in
	'' | reno | bbr) ;;
	*) die "LAB_CC=$cc: only reno and bbr are allowed in a network namespace other than the initial one" ;;
	esac
	route_cc=${LAB_ROUTE_CC:-}
	route_sides=${LAB_ROUTE_CC_SIDES:-server client}
	case $route_cc in
	'' | reno | bbr) ;;
	*) die "LAB_ROUTE_CC=$route_cc: only reno and bbr are allowed in a network namespace other than the initial one" ;;
	esac
	for side in $route_sides; do
		[[ "$side" =~ ^(server|client)$ ]] || die "LAB_ROUTE_CC_SIDES=$route_sides: server and/or client"
	done
	command -v nsenter >/dev/null || die "nsenter (util-linux) is needed"
	ip link set lo up 2>/dev/null || die "no CAP_NET_ADMIN here: run inside 'unshare -Un --map-user=\$(id -u) --keep-caps' or as root in a namespace"
	[ "$(readlink /proc/1/ns/net 2>/dev/null)" != "$(readlink /proc/$$/ns/net)" ] ||
		die "this is the initial network namespace: run the lab inside 'unshare -n' (or -Un, see above)"
	mkdir -p "$dir"
	printf '%s\n' "${rate_list[@]}" >"$dir/rates"
	echo "$links" >"$dir/paths"
	echo "$n" >"$dir/npaths"
	echo "$backup" >"$dir/backup"
	router_pid=$(start_holder)
	echo "$router_pid" >"$dir/router.pid"
	client_pid=$(start_holder)
	echo "$client_pid" >"$dir/holder.pid"
	in_router ip link set lo up
	in_client ip link set lo up
	if [ -n "$cc" ]; then
		set_cc "$cc"
		in_router bash -c "echo $cc >/proc/sys/net/ipv4/tcp_congestion_control" ||
			die "could not set congestion control $cc in the router"
		in_client bash -c "echo $cc >/proc/sys/net/ipv4/tcp_congestion_control" ||
			die "could not set congestion control $cc in the client"
	fi
	route_label=
	if [ -n "$route_cc" ]; then
		route_label=" route_cc=$route_cc($(echo $route_sides | tr ' ' +))"
	fi
	echo "$(cat /proc/sys/net/ipv4/tcp_congestion_control)$route_label" >"$dir/cc"
	ip mptcp limits set subflows 8 add_addr_accepted 0
	ip mptcp endpoint flush
	in_client ip mptcp limits set subflows $((n - 1)) add_addr_accepted $((n - 1))
	for i in $(seq "$links"); do
		# server <-> router
		ip link add "sv$i" type veth peer name "rs$i" netns "$router_pid"
		no_ipv6 "sv$i"
		ip addr add "198.18.$i.1/24" dev "sv$i"
		ip link set "sv$i" up
		# router <-> client, and the router's bridge for this path
		in_router ip link add "rc$i" type veth peer name "cv$i" netns "$client_pid"
		in_router ip link add "br$i" type bridge
		in_router bash -c "for d in rs$i rc$i br$i; do echo 1 >/proc/sys/net/ipv6/conf/\$d/disable_ipv6 2>/dev/null || true; done"
		in_router ip link set "rs$i" master "br$i"
		in_router ip link set "rc$i" master "br$i"
		in_router ip link set "rs$i" up
		in_router ip link set "rc$i" up
		in_router ip link set "br$i" up
		in_client bash -c "echo 1 >/proc/sys/net/ipv6/conf/cv$i/disable_ipv6 2>/dev/null || true"
		in_client ip addr add "198.18.$i.2/24" dev "cv$i"
		in_client ip link set "cv$i" up
		if [ -n "$route_cc" ] && [[ " $route_sides " == *" server "* ]]; then
			ip route change "198.18.$i.0/24" dev "sv$i" proto kernel scope link src "198.18.$i.1" congctl lock "$route_cc"
		fi
		if [ -n "$route_cc" ] && [[ " $route_sides " == *" client "* ]]; then
			in_client ip route change "198.18.$i.0/24" dev "cv$i" proto kernel scope link src "198.18.$i.2" congctl lock "$route_cc"
		fi
		shape "$i"
	done
	is_backup() { [[ ",$backup," == *",$1,"* ]]; }
	if [ -n "$ports" ]; then
		for i in $(seq 2 "$n"); do
			ip mptcp endpoint add 198.18.1.1 dev sv1 port $((40000 + i)) signal $(is_backup "$i" && echo backup)
		done
	else
		for i in $(seq 2 "$n"); do
			ip mptcp endpoint add "198.18.$i.1" dev "sv$i" signal $(is_backup "$i" && echo backup)
		done
	fi
	# bounded wait until the bridges forward (immediate without STP)
	for _ in $(seq 50); do
		[ "$(in_router bridge link show | grep -c 'state forwarding')" -ge $((2 * links)) ] && break
		sleep 0.1
	done
	;;
client)
	shift 2
	# exec: the caller's pid is CMD's own (nsenter -n execs it), so that
	# killing it does not leave CMD running in the lab
	exec nsenter -t "$(holder)" -n -- "$@"
	;;
router)
	shift 2
	exec nsenter -t "$(router)" -n -- "$@"
	;;
blackhole)
	i=${3:?path number}
	[ -n "$(path_rate "$i")" ] || die "no path $i"
	in_router tc qdisc replace dev "rs$i" root pfifo limit 0
	in_router tc qdisc replace dev "rc$i" root pfifo limit 0
	;;
restore)
	shape "${3:?path number}"
	in_router nft delete chain bridge lab_loss "p$3" 2>/dev/null || true
	;;
outage)
	command -v nft >/dev/null || die "nft (nftables) is needed for an outage"
	case ${3:-} in
	on) echo "table bridge lab_outage { chain forward { type filter hook forward priority -10; policy drop; }; }" | in_router nft -f - ;;
	off) in_router nft delete table bridge lab_outage ;;
	*) die "usage: lab.sh outage DIR on|off" ;;
	esac
	;;
lossy)
	i=${3:?path number} p=${4:?permille}
	[ -n "$(path_rate "$i")" ] || die "no path $i"
	[[ "$p" =~ ^[0-9]+$ ]] && [ "$p" -le 1000 ] || die "PERMILLE must be 0 to 1000"
	command -v nft >/dev/null || die "nft (nftables) is needed for a lossy path"
	# a chain per path, made anew: its one rule drops at random
	in_router nft add table bridge lab_loss
	in_router nft delete chain bridge lab_loss "p$i" 2>/dev/null || true
	if [ "$p" -gt 0 ]; then
		in_router nft add chain bridge lab_loss "p$i" "{ type filter hook forward priority 0; }"
		in_router nft add rule bridge lab_loss "p$i" iifname "{ rs$i, rc$i }" numgen random mod 1000 "<" "$p" drop
	fi
	;;
delay)
	i=${3:?path number} ms=${4:?milliseconds} jitter=${5:-0}
	rate=$(path_rate "$i")
	[ -n "$rate" ] || die "no path $i"
	[[ "$ms" =~ ^[0-9]+$ ]] && [[ "$jitter" =~ ^[0-9]+$ ]] || die "MS and JITTER are whole milliseconds"
	for dev in "rs$i" "rc$i"; do
		# netem first (it holds the packets), the path's rate below it
		in_router tc qdisc replace dev "$dev" root handle 1: netem limit 10000 \
			delay "$(awk -v m="$ms" 'BEGIN { print m / 2 }')ms" "$(awk -v j="$jitter" 'BEGIN { print j / 2 }')ms" 2>/dev/null ||
			die "no netem in this kernel (sch_netem): no delay on path $i"
		[ "$rate" = none ] ||
			in_router tc qdisc replace dev "$dev" parent 1:1 handle 10: tbf rate "$rate" burst 32kb latency 50ms
	done
	;;
stats)
	links=$(cat "$dir/paths")
	echo "path direction bytes packets drops"
	# one call into the router: its interface counters (/proc/net/dev:
	# "dev: rx_bytes rx_packets ... (8 rx fields) tx_bytes tx_packets ...")
	# and its qdiscs' drop counts
	in_router bash -c 'cat /proc/net/dev; echo ---; tc -s qdisc show' |
		awk -v links="$links" '
			$0 == "---" { q = 1; next }
			!q { line = $0; sub(/^ +/, "", line); split(line, a, ":"); split(a[2], f, " ")
				tx[a[1]] = f[9]; pk[a[1]] = f[10]; next }
			/^qdisc/ { for (i = 1; i < NF; i++) if ($i == "dev") dev = $(i + 1); next }
			/dropped/ { d = $0; sub(/.*\(dropped /, "", d); sub(/,.*/, "", d); drops[dev] = d }
			END {
				for (i = 1; i <= links; i++) {
					print i, "to_client", tx["rc" i] + 0, pk["rc" i] + 0, drops["rc" i] + 0
					print i, "to_server", tx["rs" i] + 0, pk["rs" i] + 0, drops["rs" i] + 0
				}
			}'
	;;
info)
	echo "paths=$(cat "$dir/npaths") rates=$(paste -sd, "$dir/rates") backup=$(cat "$dir/backup") cc=$(cat "$dir/cc")"
	;;
down)
	if [ -f "$dir/holder.pid" ] || [ -f "$dir/router.pid" ]; then
		n=$(cat "$dir/paths" 2>/dev/null || echo 8)
		for i in $(seq "$n"); do ip link del "sv$i" 2>/dev/null || true; done
		for f in holder.pid router.pid; do
			pid=$(cat "$dir/$f" 2>/dev/null || true)
			# only our own holder: a sleep in a namespace other than ours
			if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] &&
				[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/$$/ns/net)" ]; then
				kill "$pid" 2>/dev/null || true
			fi
			rm -f "$dir/$f"
		done
	fi
	ip mptcp endpoint flush 2>/dev/null || true
	;;
*)
	die "unknown command $cmd"
	;;
esac
