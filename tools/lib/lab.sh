# shellcheck shell=bash
# The lab verbs: a server to try (start, stop), the demo and the benchmark.
# Part of tools/workspace (sourced by it; see that file for the layout).

PGDATA_DEMO=$WORKDIR/data
# 5499 for 18, 5498 for 17, 5500 for 19, 5501 for master: all can run at once.
DEMO_PORT=${DEMO_PORT:-$((5481 + MAJOR_NUMBER))}

cmd_start() {
	cmd_install
	if [ ! -f "$PGDATA_DEMO/PG_VERSION" ]; then
		as_tester "$PREFIX/bin/initdb" -D "$PGDATA_DEMO" -A trust -U postgres >/dev/null
		cat >>"$PGDATA_DEMO/postgresql.conf" <<-EOF
		listen_addresses = '127.0.0.1,::1'
		port = $DEMO_PORT
		unix_socket_directories = '$WORKDIR'
		log_connections = on
		EOF
	fi
	as_tester "$PREFIX/bin/pg_ctl" -D "$PGDATA_DEMO" -l "$WORKDIR/server.log" -w status >/dev/null 2>&1 ||
		as_tester "$PREFIX/bin/pg_ctl" -D "$PGDATA_DEMO" -l "$WORKDIR/server.log" -w start >/dev/null
	note "patched server running on 127.0.0.1:$DEMO_PORT (data $PGDATA_DEMO, log $WORKDIR/server.log)"
	as_tester "$PREFIX/bin/psql" -X -h 127.0.0.1 -p "$DEMO_PORT" -U postgres -d postgres -c 'SELECT version()'
	note "connect: $PREFIX/bin/psql -h 127.0.0.1 -p $DEMO_PORT -U postgres; stop: make stop"
}

cmd_stop() {
	[ -f "$PGDATA_DEMO/postmaster.pid" ] || { note "no server running"; return 0; }
	as_tester "$PREFIX/bin/pg_ctl" -D "$PGDATA_DEMO" -w stop -m fast >/dev/null
	note "server stopped"
}

# Run bench/SCRIPT as the test user in a private user + network namespace
# where it may build the lab; it gets the installed bin directory, a scratch
# directory and the lab script.
run_in_lab() {
	local script=$1 work uid gid
	shift
	work=$(mktemp -d "$WORKDIR/lab.XXXXXX")
	chmod 755 "$work"
	if is_root; then
		chown "$TEST_USER:" "$work"
		uid=$(id -u "$TEST_USER") gid=$(id -g "$TEST_USER")
	else
		uid=$(id -u) gid=$(id -g)
	fi
	local ns=(unshare -Un "--map-user=$uid" "--map-group=$gid" --keep-caps)
	as_tester "${ns[@]}" true 2>/dev/null ||
		die "cannot create an unprivileged user + network namespace here (needed for the lab):
  check 'sysctl kernel.unprivileged_userns_clone' / user.max_user_namespaces"
	local rc=0 cg=
	# BENCH_HOST_SETUP=CMD: what a package sets up on a host beside
	# PostgreSQL (host/host-setup), run as root on a cgroup v2
	# directory of its own; the whole lab runs in that cgroup, so that a
	# program CMD attaches there sees the lab's servers and their subflows.
	if [ -n "${BENCH_HOST_SETUP:-}" ] && [ "$BENCH_HOST_SETUP" != none ]; then
		is_root || die "BENCH_HOST_SETUP needs root (it attaches a program to a cgroup)"
		cg=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
		[ -n "$cg" ] || die "BENCH_HOST_SETUP needs a cgroup v2 hierarchy (none mounted)"
		cg=$cg/pg-mptcp-lab.$$
		mkdir "$cg"
		"$BENCH_HOST_SETUP" "$cg" >&2 || { rmdir "$cg"; die "$BENCH_HOST_SETUP $cg failed"; }
		export BENCH_HOST_SETUP_CGROUP=$cg
	fi
	# pass on the demo's and benchmark's settings (DEMO_*, BENCH_*, ...)
	local settings
	mapfile -t settings < <(env | grep -E '^(DEMO_|BENCH_|PGBENCH_SECONDS=)' || true)
	# (and a switch, so that a run can measure modes without it beside
	# the modes with it: bench/host-setup-switch.sh)
	local switch=
	if [ -n "$cg" ]; then
		echo attach >"$work/host-setup.state"
		bash "$TOP/bench/host-setup-switch.sh" "$BENCH_HOST_SETUP" "$cg" "$work" $$ &
		switch=$!
	fi
	(
		[ -z "$cg" ] || echo $BASHPID >"$cg/cgroup.procs"
		as_tester "${settings[@]}" "${ns[@]}" bash "$TOP/bench/$script" "$PREFIX/bin" "$work" "$TOP/src/test/mptcp/lab.sh" "$@"
	) || rc=$?
	if [ -n "$switch" ]; then
		touch "$work/host-setup.stop"
		wait "$switch" || true
	fi
	if [ -n "$cg" ]; then
		# (what the program did, beside the results when there are any)
		"$BENCH_HOST_SETUP" --status "$cg" | tee ${BENCH_HOST_SETUP_STATUS:+"$BENCH_HOST_SETUP_STATUS"} >&2 || true
		"$BENCH_HOST_SETUP" --remove "$cg" || true
		rmdir "$cg" || true
	fi
	rm -rf "$work"
	return $rc
}

cmd_demo() {
	cmd_deps
	cmd_install
	run_in_lab demo.sh
}

# BENCH_SCENARIOS=failover-stall runs bench/failover-stall.sh instead (a
# synchronous standby losing a path; results in bench/results/failover-stall),
# BENCH_SCENARIOS=monitoring-cost bench/monitoring-cost.sh (what mptcpinfo's
# views cost beside pg_stat_activity; BENCH_BIN_B=DIR compares two builds).
cmd_bench() {
	local out=${BENCH_OUT:-$TOP/bench/results} script=bench.sh
	case ${BENCH_SCENARIOS:-} in
	failover-stall | monitoring-cost)
		script=$BENCH_SCENARIOS.sh
		out=${BENCH_OUT:-$TOP/bench/results/$BENCH_SCENARIOS} ;;
	esac
	# the failover-stall mode that measures the guide's settings gets the
	# guide's host-setup too (the other modes of the run go without it),
	# with its program built from host/
	if [ "${BENCH_SCENARIOS:-}" = failover-stall ] && [[ " ${BENCH_STALL_MODES:-} " == *" mptcp_guide "* ]]; then
		export BENCH_HOST_SETUP=${BENCH_HOST_SETUP:-$TOP/host/host-setup}
	fi
	[ -z "${BENCH_HOST_SETUP:-}" ] || [ "$BENCH_HOST_SETUP" = none ] || cmd_host_tools
	if [ -n "${BENCH_KERNEL:-}" ]; then
		kernels_bench "$script" "$out"
		return
	fi
	cmd_deps
	cmd_install
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	is_root && chown -R "$TEST_USER:" "$out"
	BENCH_HOST_SETUP_STATUS=$out/host-setup.txt run_in_lab "$script" "$out"
	is_root && chown -R --reference="$TOP" "$out"
	note "results in $out"
	[ "$script" != failover-stall.sh ] || failover_summary "$(uname -r)" "$out/runs.csv"
}

# failover_summary NAME RUNS_CSV [EXPECTED_RUNS]: one line for the runs of a
# failover-stall run (and one for path-back.csv beside it, when the path
# came back).  A run whose commits were still waiting at its end
# (capped), or one that never finished (fewer than EXPECTED_RUNS lines), is
# hung, and counts as the longest.
failover_summary() {
	awk -F, -v name="$1" -v want="${3:-0}" '
		/^#/ || $1 == "mode" { next }
		{ n++; s = sprintf("%.3f", $6 / 1000); if ($10 == 1) { s = ">=" s; hung++ } list = list " " s
		  if ($6 > 1000) over++ }
		END { for (; n < want; n++) { list = list " unfinished"; hung++; over++ }
		      printf "failover %s: longest commit per run:%s s; over 1 s: %d; hung: %d\n", name, list, over, hung }' \
		<(cat "$2" 2>/dev/null)
	# with BENCH_STALL_RESTORE_AFTER: how long each run's replication
	# connection took to get a subflow on the path again once it was back
	local back=${2%/*}/path-back.csv
	[ "$(wc -l <"$back" 2>/dev/null || echo 0)" -gt 1 ] || return 0
	awk -F, -v name="$1" '
		NR == 1 { next }
		{ s = ($5 == "" ? "never" : sprintf("%.1f", $5)); list = list " " s; if ($5 == "") never++ }
		END { printf "path back %s: seconds until a subflow on it again, per run:%s; never: %d\n", name, list, never }' "$back"
}

cmd_clean() { rm -rf "$BUILD" "$RELEASE_BUILD" "$WORKDIR/export" "$WORKDIR/data"; note "removed builds, export and data"; }

