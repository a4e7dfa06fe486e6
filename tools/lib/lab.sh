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
	local rc=0
	# pass on the demo's and benchmark's settings (DEMO_*, BENCH_*, ...)
	local settings
	mapfile -t settings < <(env | grep -E '^(DEMO_|BENCH_|PGBENCH_SECONDS=)' || true)
	as_tester "${settings[@]}" "${ns[@]}" bash "$TOP/bench/$script" "$PREFIX/bin" "$work" "$TOP/src/test/mptcp/lab.sh" "$@" || rc=$?
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
	cmd_deps
	cmd_install
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	is_root && chown -R "$TEST_USER:" "$out"
	run_in_lab "$script" "$out"
	is_root && chown -R --reference="$TOP" "$out"
	note "results in $out"
}

cmd_clean() { rm -rf "$BUILD" "$RELEASE_BUILD" "$WORKDIR/export" "$WORKDIR/data"; note "removed builds, export and data"; }

