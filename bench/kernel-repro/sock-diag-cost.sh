#!/bin/bash
# The kernel's socket-diagnostics cost per MPTCP subflow, without
# PostgreSQL (sock-diag-cost.c says what it measures).  Runs as root, in a
# network namespace of its own that goes away with it: addresses
# 198.18.0.1 and 198.18.0.2 on its loopback, the second a "subflow"
# endpoint, so that each connection has 2 subflows.  Bounded: 10 minutes.
#
# Usage: sock-diag-cost.sh [CONNECTIONS [NOISE [ROUNDS]]]   (1000 0 101)
#   NOISE: plain TCP connections beside them (2 sockets and file
#   descriptors each: mind "ulimit -n").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "sock-diag-cost.sh: needs root (for a network namespace)" >&2; exit 2; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cc -O2 -Wall -o "$bin/sock-diag-cost" "$here/sock-diag-cost.c"
echo "# $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), TCP established hash: $(cat /proc/sys/net/ipv4/tcp_ehash_entries 2>/dev/null || echo '?') buckets"
timeout 600 unshare -n bash -c '
	set -e
	ip link set lo up
	ip addr add 198.18.0.1/32 dev lo
	ip addr add 198.18.0.2/32 dev lo
	ip mptcp limits set subflows 2 add_addr_accepted 2
	ip mptcp endpoint add 198.18.0.2 dev lo subflow
	ulimit -n "$(ulimit -Hn)"
	exec "$0" "$@"' "$bin/sock-diag-cost" "${1:-1000}" "${2:-0}" "${3:-101}"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
