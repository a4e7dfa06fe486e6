#!/bin/bash
# The demo: one PostgreSQL connection over four network paths.
#
# Usage (inside a private user + network namespace; "make demo" does it):
#   demo.sh BIN WORK LAB
#
# Brings up four paths of DEMO_RATE each between a client and a server
# namespace (each path crosses a router namespace that shapes it; DEMO_CC,
# reno or bbr, is the congestion control of every namespace of the lab), starts a server with listen_mptcp = on, runs pg_basebackup and
# a COPY over plain TCP and then over MPTCP, shows pg_stat_mptcp during the
# MPTCP backup, prints the comparison, and removes everything.

BIN=$1 WORK=$2 LAB=$3
. "$(dirname "$0")/common.sh"

PATHS=4
DEMO_RATE=${DEMO_RATE:-25mbit}
export LAB_CC=${DEMO_CC:-reno}
BENCH_ROWS=${DEMO_ROWS:-100000}
trap cleanup EXIT

say "lab: $PATHS paths of $DEMO_RATE each between a client and a server namespace (198.18.0.0/15), shaped on a router namespace, congestion control $LAB_CC"
lab_up "$PATHS" "$DEMO_RATE"
say "server: listen_mptcp = on, $(uname -sr)"
server_init
server_start on
load_data
size_copy=$(sql "SELECT pg_size_pretty(sum(length(id::text) + length(payload) + 2)) FROM t_bench")

# Sample the backup's walsender once a second while it runs.
sampler() {
	local q_conn q_sub
	q_conn="SELECT m.pid, m.mptcp, m.subflows, pg_size_pretty(m.bytes_sent) AS sent,
	               pg_size_pretty(m.bytes_acked) AS acked, m.last_data_sent
	          FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
	         WHERE a.application_name = 'bench_backup'"
	q_sub="SELECT s.local_addr, s.local_port, s.remote_addr, round(s.rtt::numeric, 1) AS rtt_ms,
	              s.snd_cwnd AS cwnd, pg_size_pretty(s.bytes_acked) AS acked
	         FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
	        WHERE a.application_name = 'bench_backup' ORDER BY s.local_addr"
	for i in $(seq 120); do
		sleep 1
		[ -f "$WORK/sampler.stop" ] && break
		if [ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_backup'")" != 0 ]; then
			echo "--- pg_stat_mptcp / pg_stat_mptcp_subflows, ${i} s into the MPTCP backup"
			psql -X -q -h "$WORK" -p "$PGPORT_LAB" -c "$q_conn" -c "$q_sub" 2>/dev/null
		fi
	done
}

declare -A t
for mode in disable require; do
	label=$([ $mode = disable ] && echo "plain TCP" || echo "MPTCP")
	say "pg_basebackup over $label ..."
	if [ $mode = require ]; then
		rm -f "$WORK/sampler.stop"
		sampler >"$WORK/samples.txt" &
		sampler_pid=$!
	fi
	# the workloads print "SECONDS BYTES SERVER_CPU CLIENT_CPU"
	r=$(basebackup $mode)
	t[bb_$mode]=${r%% *}
	r=${r#* }
	size_bb=$(awk -v b="${r%% *}" 'BEGIN { printf "%.0f MB", b / 1e6 }')
	if [ $mode = require ]; then
		touch "$WORK/sampler.stop"
		wait "$sampler_pid" || true
	fi
	say "    ${t[bb_$mode]} s (backup verified with pg_verifybackup)"
	say "COPY TO over $label ..."
	r=$(copy_to $mode)
	t[copy_$mode]=${r%% *}
	say "    ${t[copy_$mode]} s ($BENCH_ROWS rows received)"
done

echo
echo "Live view while the MPTCP backup ran (contrib/mptcpinfo):"
head -n 40 "$WORK/samples.txt"
echo
printf '%-26s %12s %16s %9s\n' "$PATHS paths x $DEMO_RATE, $LAB_CC" "plain TCP" "MPTCP" "speedup"
printf '%-26s %11ss %15ss %8.1fx\n' "pg_basebackup ($size_bb)" "${t[bb_disable]}" "${t[bb_require]}" \
	"$(awk -v a="${t[bb_disable]}" -v b="${t[bb_require]}" 'BEGIN { print a / b }')"
printf '%-26s %11ss %15ss %8.1fx\n' "COPY TO ($size_copy)" "${t[copy_disable]}" "${t[copy_require]}" \
	"$(awk -v a="${t[copy_disable]}" -v b="${t[copy_require]}" 'BEGIN { print a / b }')"
echo
say "done; removing the lab"
