# Shared by bench/demo.sh and bench/bench.sh (sourced, not run).
#
# They run inside a private user + network namespace (tools/workspace starts
# them with "unshare -Un ... --keep-caps" as the unprivileged test user), so
# the lab's links, addresses (198.18.0.0/15) and path manager settings exist
# only there and vanish with it.  The server runs in that namespace, the
# clients in the lab's client namespace.
#
# Needs: BIN (installed PostgreSQL bin directory), WORK (scratch directory),
# LAB (src/test/mptcp/lab.sh).

set -euo pipefail
export PATH="$BIN:$PATH:/usr/sbin:/sbin"
export PGDATABASE=postgres PGCONNECT_TIMEOUT=10
unset PGHOST PGPORT PGMPTCP

PGPORT_LAB=5432
SERVER_ADDR=198.18.1.1
PGDATA_LAB=$WORK/primary
STANDBY_DATA=$WORK/standby

say() { printf '==> %s\n' "$*" >&2; }
now() { date +%s.%N; }
elapsed() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.3f", e - s }'; }

lab() { bash "$LAB" "$1" "$WORK/lab" "${@:2}"; }
client() { lab client "$@"; }

# psql on the server side, over its Unix socket
sql() { psql -X -q -At -h "$WORK" -p "$PGPORT_LAB" -v ON_ERROR_STOP=1 -c "$1"; }

# connection string from the client namespace
remote() { echo "host=$SERVER_ADDR port=$PGPORT_LAB dbname=postgres mptcp=$1"; }

# lab_up NPATHS RATES [backup=I,...]: a fresh lab; congestion control
# LAB_CC (reno or bbr; the bench sets it from BENCH_CC)
lab_up() {
	lab down >/dev/null 2>&1 || true
	lab up "$@"
}

# rate like 25mbit, 1gbit, 500kbit -> Mbit/s
rate_mbit() {
	awk -v r="$1" 'BEGIN {
		n = r + 0; u = r; sub(/^[0-9.]+/, "", u)
		f = (u ~ /^g/) ? 1000 : (u ~ /^k/) ? 0.001 : (u ~ /^m/) ? 1 : 0.000001
		if (u ~ /bps$/) f *= 8
		printf "%g", n * f }'
}

# Per-path byte counters of the router (lab.sh stats), one line per path:
# "PATH TO_CLIENT_BYTES TO_SERVER_BYTES".
path_bytes() {
	lab stats | awk 'NR > 1 { b[$1, $2] = $3; if ($1 > n) n = $1 }
		END { for (i = 1; i <= n; i++) print i, b[i, "to_client"], b[i, "to_server"] }'
}

# CPU seconds (user + system) of the postmaster's reaped children so far:
# cutime + cstime in /proc/PID/stat grow by the CPU of every backend and
# walsender when it exits and the postmaster reaps it.
postmaster_pid() { head -1 "$PGDATA_LAB/postmaster.pid"; }
children_cpu() {
	awk -v tck="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($14 + $15) / tck }' \
		"/proc/$(postmaster_pid)/stat"
}
nchildren() { pgrep -c -P "$(postmaster_pid)" || true; }

# Wait (bounded) until the postmaster has reaped the children beyond
# BASELINE, then print the children's CPU seconds.
children_cpu_after() {
	local baseline=$1
	for _ in $(seq 200); do
		[ "$(nchildren)" -le "$baseline" ] && break
		sleep 0.05
	done
	children_cpu
}

# timed OUT CMD...: run CMD in the client namespace; write "ELAPSED
# CLIENT_CPU" (seconds; CPU of CMD and its children) to OUT.  The clock
# starts in the client namespace, so the wrapper's own start-up is not
# counted.
timed() {
	local out=$1
	shift
	client perl -MTime::HiRes=time -e '
		my $out = shift;
		my $t = time;
		my $rc = system(@ARGV);
		my $e = time - $t;
		my (undef, undef, $cu, $cs) = times;
		open(my $fh, ">", $out) or die "$out: $!";
		printf $fh "%.3f %.2f\n", $e, $cu + $cs;
		exit($rc == 0 ? 0 : 1);' "$out" "$@"
}

server_init() {
	rm -rf "$PGDATA_LAB"
	initdb -D "$PGDATA_LAB" -A trust -U postgres --no-sync >/dev/null
	cat >>"$PGDATA_LAB/postgresql.conf" <<-EOF
	listen_addresses = '*'
	port = $PGPORT_LAB
	unix_socket_directories = '$WORK'
	listen_mptcp = on
	max_wal_senders = 10
	wal_keep_size = '2GB'
	fsync = off
	synchronous_commit = off
	full_page_writes = off
	autovacuum = off
	max_connections = 200
	EOF
	cat >>"$PGDATA_LAB/pg_hba.conf" <<-EOF
	host all all 198.18.0.0/15 trust
	host replication all 198.18.0.0/15 trust
	EOF
}

server_start() {
	pg_ctl -D "$PGDATA_LAB" -l "$WORK/primary.log" -w -o "-c listen_mptcp=${1:-on}" start >/dev/null
	export PGUSER=postgres
}

server_stop() {
	pg_ctl -D "$PGDATA_LAB" -w -m fast stop >/dev/null 2>&1 || true
}

standby_stop() {
	[ -f "$STANDBY_DATA/postmaster.pid" ] &&
		client pg_ctl -D "$STANDBY_DATA" -w -m immediate stop >/dev/null 2>&1 || true
}

cleanup() {
	standby_stop
	server_stop
	lab down >/dev/null 2>&1 || true
}

# Workloads, run from the client namespace; each prints on stdout
# "SECONDS BYTES SERVER_CPU CLIENT_CPU": elapsed time, payload bytes moved,
# CPU seconds of the server process (backend or walsender) and of the
# client program ("-" where not measured), and checks what it transferred.
# SCALE (default 1) multiplies the data of copy_to and catchup, so that
# faster labs move proportionally more.

# run_measured CMD...: timed in the client namespace, with the
# server-side CPU of the connection
run_measured() {
	local base cpu0 cpu1 rc=0
	base=$(nchildren)
	cpu0=$(children_cpu)
	timed "$WORK/timed" "$@" || rc=$?
	cpu1=$(children_cpu_after "$base")
	read -r MEASURED_S MEASURED_CLIENT_CPU <"$WORK/timed"
	MEASURED_SERVER_CPU=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')
	return $rc
}

copy_to() {
	local mode=$1 rows scale=${SCALE:-1} query='COPY t_bench TO STDOUT'
	[ "$scale" -gt 1 ] && query="COPY (SELECT b.* FROM t_bench b, generate_series(1, $scale) g) TO STDOUT"
	run_measured bash -c 'exec psql -X -q -d "$1" -c "$2" >"$3"' - "$(remote "$mode")" "$query" "$WORK/copy.out"
	rows=$(wc -l <"$WORK/copy.out")
	[ "$rows" -eq $((BENCH_ROWS * scale)) ] || { say "COPY TO: $rows rows, expected $((BENCH_ROWS * scale))"; return 1; }
	echo "$MEASURED_S $(stat -c %s "$WORK/copy.out") $MEASURED_SERVER_CPU $MEASURED_CLIENT_CPU"
}

copy_from() {
	local mode=$1 rows expect
	[ -s "$WORK/copy.out" ] || SCALE=1 copy_to disable >/dev/null
	expect=$(wc -l <"$WORK/copy.out")
	sql 'TRUNCATE t_in'
	run_measured psql -X -q -d "$(remote "$mode")" -c "\\copy t_in FROM '$WORK/copy.out'"
	rows=$(sql 'SELECT count(*) FROM t_in')
	sql 'TRUNCATE t_in'	# keep the backups the same size
	[ "$rows" -eq "$expect" ] || { say "COPY FROM: $rows rows, expected $expect"; return 1; }
	echo "$MEASURED_S $(stat -c %s "$WORK/copy.out") $MEASURED_SERVER_CPU $MEASURED_CLIENT_CPU"
}

basebackup() {
	local mode=$1 bytes
	rm -rf "$WORK/bb"
	# start in a fresh WAL segment, so that every backup carries as much WAL
	sql 'SELECT pg_switch_wal()' >/dev/null
	run_measured pg_basebackup -D "$WORK/bb" -X fetch --checkpoint=fast --no-sync \
		-d "$(remote "$mode") application_name=bench_backup"
	pg_verifybackup -q "$WORK/bb" || { say "pg_basebackup: backup does not verify"; return 1; }
	bytes=$(du -sb "$WORK/bb" | cut -f1)
	rm -rf "$WORK/bb"
	echo "$MEASURED_S $bytes $MEASURED_SERVER_CPU $MEASURED_CLIENT_CPU"
}

# A standby in the client namespace, connected and up to date, then a
# burst of WAL on the primary (SCALE copies of t_bench, about 25 MB per
# 100000 rows): the time from the start of the burst until the standby has
# replayed it.
standby_prepare() {
	standby_stop
	rm -rf "$STANDBY_DATA"
	client pg_basebackup -D "$STANDBY_DATA" -X stream --checkpoint=fast --no-sync \
		-d "$(remote disable)"
	cat >>"$STANDBY_DATA/postgresql.conf" <<-EOF
	listen_addresses = '127.0.0.1'
	unix_socket_directories = '$WORK/standby_sock'
	port = 5433
	EOF
	mkdir -p "$WORK/standby_sock"
	touch "$STANDBY_DATA/standby.signal"
}

# Wait until the standby has replayed up to LSN $1: one session on the
# standby that polls every 5 ms (a new psql per poll would cost more than
# that), or, should that fail, a psql per poll (bounded either way).
wait_replayed() {
	local ok
	client psql -X -q -h "$WORK/standby_sock" -p 5433 -U postgres -v ON_ERROR_STOP=1 \
		-c "SET statement_timeout = '300s'" \
		-c "DO \$\$ BEGIN WHILE coalesce(pg_last_wal_replay_lsn() < '$1'::pg_lsn, true) LOOP PERFORM pg_sleep(0.005); END LOOP; END \$\$" \
		>/dev/null 2>&1 && return 0
	for _ in $(seq 3000); do
		ok=$(client psql -X -At -h "$WORK/standby_sock" -p 5433 -U postgres \
			-c "SELECT pg_last_wal_replay_lsn() >= '$1'::pg_lsn" 2>/dev/null || true)
		[ "$ok" = t ] && return 0
		sleep 0.05
	done
	say "standby did not catch up"
	return 1
}

# Start the standby with primary_conninfo mptcp=$1; wait until it has
# replayed up to LSN $2.
standby_run_until() {
	echo "primary_conninfo = '$(remote "$1") application_name=bench_standby'" \
		>>"$STANDBY_DATA/postgresql.conf"
	client pg_ctl -D "$STANDBY_DATA" -l "$WORK/standby.log" -w start >/dev/null
	wait_replayed "$2"
}

catchup() {
	local mode=$1 start target lsn0 secs scale=${SCALE:-1}
	standby_stop
	standby_run_until "$mode" "$(sql 'SELECT pg_current_wal_flush_lsn()')"
	# A first burst, untimed (a quarter of the table): the first one after
	# other work runs slower whichever mode it uses (seen as an order
	# effect), so measure the second.  Let both sides finish their
	# checkpoints before it.
	sql "INSERT INTO t_wal SELECT * FROM t_bench LIMIT $((BENCH_ROWS / 4))"
	wait_replayed "$(sql 'SELECT pg_current_wal_flush_lsn()')"
	sql 'TRUNCATE t_wal'
	sql 'CHECKPOINT'
	client psql -X -q -h "$WORK/standby_sock" -p 5433 -U postgres -c 'CHECKPOINT'
	wait_replayed "$(sql 'SELECT pg_current_wal_flush_lsn()')"
	# the per-path byte counts of the timed part only (bench.sh reads them)
	path_bytes >"$WORK/paths.before"
	lsn0=$(sql 'SELECT pg_current_wal_insert_lsn()')
	start=$(now)
	# copying rows is much faster than the paths, so this measures them
	# synchronous_commit is off in this cluster: flush the burst at commit,
	# and wait for the end of what it inserted, not for the flush position
	# of the moment
	sql "SET synchronous_commit = on; INSERT INTO t_wal SELECT b.* FROM t_bench b, generate_series(1, $scale) g"
	target=$(sql 'SELECT pg_current_wal_insert_lsn()')
	wait_replayed "$target"
	secs=$(elapsed "$start")
	path_bytes >"$WORK/paths.after"
	standby_stop
	sql 'TRUNCATE t_wal'
	echo "$secs $(sql "SELECT pg_wal_lsn_diff('$target', '$lsn0')::bigint") - -"
}

load_data() {
	sql "SET client_min_messages = warning;
		DROP TABLE IF EXISTS t_bench, t_in, t_wal;
		CREATE TABLE t_bench AS
		  SELECT g AS id, repeat(md5(g::text), 6) AS payload
		  FROM generate_series(1, $BENCH_ROWS) g;
		CREATE TABLE t_in (LIKE t_bench);
		CREATE TABLE t_wal (LIKE t_bench);
		CREATE EXTENSION IF NOT EXISTS mptcpinfo;
		CHECKPOINT"
}
