# shellcheck shell=bash
# The replication managers' test (deb-test-managers): Patroni and repmgr,
# as DBAs run them, with our packages in a fresh chroot of the target suite
# (guide/replication-managers.md).
# Part of tools/workspace (sourced by it; see that file for the layout);
# uses deb.sh's chroot helpers and harness.
#
# The lab of "make deb-test" (src/test/mptcp/lab.sh) with 4 paths: node A
# in the server's network namespace (198.18.{1..4}.1), node B in the lab's
# client namespace (198.18.{1..4}.2).  Each node signals its other three
# addresses and accepts three announcements, so either one can be the
# primary and the other's walreceiver gets 4 subflows.  Every PostgreSQL
# server runs as the unprivileged postgres user without capabilities
# (checked), with listen_mptcp = on.
#
# What the managers do with libpq's "mptcp" option (read from their sources
# in Debian 13):
#   Patroni 4.0.7 writes primary_conninfo from a fixed list of keywords
#     (format_dsn in patroni/postgresql/config.py): mptcp=1 would be dropped.
#     It passes its own environment to postgres (all but PATRONI_* and
#     KUBERNETES_*, patroni/postgresql/postmaster.py), so PGMPTCP=1 in
#     Patroni's environment reaches the walreceiver.
#   repmgr 5.5.0 copies the node's conninfo into primary_conninfo, so
#     mptcp=1 in repmgr.conf's conninfo reaches it.
#
# 1. Patroni: etcd in A's namespace (on all 4 of A's addresses), Patroni on
#    A and B with synchronous_mode, first over TCP, then turned to MPTCP by
#    the guide's rolling restart (patronictl edit-config --pg
#    listen_mptcp=on, each Patroni restarted with PGMPTCP=1, a switchover
#    in between, and back).  The standby's walreceiver has 4 subflows (pg_stat_mptcp, and ss in its namespace); pgbench on the
#    primary while path 1 (the initial subflow's) is blackholed loses no
#    acknowledged transaction (row counts and checksums on both nodes); the
#    same after "patronictl switchover" and after a failover (the primary's
#    Patroni stopped, then started again as a standby).
# 2. repmgr: node 1 (A) primary; node 2 (B) by "standby clone", "standby
#    register"; node 3 (A, port 5433) likewise.  Node 2's walreceiver has 4
#    subflows; node 1 stops, "standby promote" on node 2, "standby follow"
#    on node 3, whose walreceiver then has 4 subflows; data checked.
# 3. Debian's environment file: a cluster made by pg_createcluster on A,
#    a standby of node 2 by pg_basebackup -R without mptcp, PGMPTCP = '1'
#    in /etc/postgresql/N/envtest/environment, started by pg_ctlcluster:
#    its walreceiver has 4 subflows; data checked.
# Everything stays in $DEB_DIR/managers/ (the chroot is removed at the end;
# MANAGERS_KEEP_ROOT=1 keeps it, and reuses it on the next run;
# MANAGERS_ONLY=patroni runs part 1, MANAGERS_ONLY=repmgr parts 2 and 3).

MANAGERS_DIR=$DEB_DIR/managers

cmd_deb_test_managers() {
	deb_need_debian_major
	mkdir -p "$MANAGERS_DIR"
	deb_host_tools deb-test-managers
	deb_need_ours
	local start=$SECONDS rc=0
	if [ -n "${MANAGERS_KEEP_ROOT:-}" ] && [ -d "$MANAGERS_DIR/root/usr" ]; then
		note "reusing the chroot $MANAGERS_DIR/root (MANAGERS_KEEP_ROOT)"
	else
		DEB_DIR=$MANAGERS_DIR deb_chroot "$MANAGERS_DIR/root"
	fi
	unshare -m --propagation private "$TOP/tools/workspace" deb-test-managers-run 2>&1 | tee "$MANAGERS_DIR/test.log" || rc=1
	grep -q '^deb-test-managers: PASS' "$MANAGERS_DIR/test.log" || rc=1
	[ -n "${MANAGERS_KEEP_ROOT:-}" ] || rm -rf "$MANAGERS_DIR/root"
	note "deb-test-managers took $((SECONDS - start)) s (log: $MANAGERS_DIR/test.log)"
	return $rc
}

# The daemons this test started (Patroni, etcd), by pid, for the cleanup.
MANAGERS_PIDS=

managers_test_run() {
	local R=$MANAGERS_DIR/root lab=$MANAGERS_DIR/lab V=$MAJOR_NUMBER srv n=0 lab_paths=4
	local lab_sh=$TOP/src/test/mptcp/lab.sh
	deb_harness deb-test-managers managers_test_cleanup tools/lib/managers.sh
	apt_in() { in_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0 "$@" >>"$MANAGERS_DIR/apt.log" 2>&1; }
	: >"$MANAGERS_DIR/apt.log"
	local t0=$SECONDS
	step() { echo "# $* [at $((SECONDS - t0)) s]"; }
	# The nodes: A in the server's namespace, B in the lab's client one.
	# on NODE CMD...: CMD in the chroot in NODE's namespace, as root (for
	# ss and ip, the host's: nsns NODE CMD...);  as_pg NODE CMD...: as
	# postgres, with no capabilities (setpriv execs: the pid of a command
	# started in the background is the daemon's own).
	nsns() {
		local node=$1
		shift
		case $node in
		a) nsenter -t "$srv" -n "$@" ;;
		b) "$lab_sh" client "$lab" "$@" ;;
		esac
	}
	on() { local node=$1; shift; nsns "$node" chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
	local AS_PG="setpriv --reuid=postgres --regid=postgres --init-groups --inh-caps=-all env HOME=/var/lib/postgresql"
	# shellcheck disable=SC2086
	as_pg() { local node=$1; shift; on "$node" $AS_PG "$@"; }
	# sql NODE PORT QUERY...: psql over TCP on the node's loopback
	sql() {
		local node=$1 port=$2
		shift 2
		as_pg "$node" psql -X -q -At -v ON_ERROR_STOP=1 "host=127.0.0.1 port=$port user=postgres dbname=${SQL_DB:-postgres}" "$@"
	}
	# until SECONDS CMD...: run CMD every 0.5 s until it succeeds, SECONDS at most
	# gone PID: the process has exited (or is a zombie)
	gone() { [ ! -e "/proc/$1" ] || [ "$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
	until_ok() {
		local limit=$1 i
		shift
		for i in $(seq 1 $((limit * 2))); do
			"$@" >/dev/null 2>&1 && return 0
			sleep 0.5
		done
		return 1
	}
	# The walreceiver's "mptcp subflows" from pg_stat_mptcp, once it has
	# 4 subflows or after 30 s.
	local wr_sql="DO \$\$BEGIN FOR i IN 1..150 LOOP EXIT WHEN (SELECT subflows FROM pg_stat_mptcp JOIN pg_stat_wal_receiver USING (pid) WHERE status = 'streaming') >= 4; PERFORM pg_sleep(0.2); END LOOP; END\$\$; SELECT mptcp || ' ' || subflows FROM pg_stat_mptcp JOIN pg_stat_wal_receiver USING (pid)"
	# The paths a node's TCP subflows to or from PORT use, from ss in its
	# namespace (the host's ss): "198.18.1 198.18.2 ..." (the local /24s;
	# Patroni's own connections over loopback left out).
	subflow_paths() {
		nsns "$1" ss -tnH state established "( sport = :$2 or dport = :$2 )" |
			awk '$3 ~ /^198\.18\./ { split($3, a, "."); print a[1] "." a[2] "." a[3] }' | sort -u | paste -sd' '
	}
	local all_paths="198.18.1 198.18.2 198.18.3 198.18.4"
	# No capabilities in the postmaster of DATADIR on NODE
	no_caps() {
		local pid
		pid=$(head -1 "$R$2/postmaster.pid")
		expect "$3: the server (pid $pid) runs as postgres with no capabilities" \
			"$(stat -c %u "/proc/$pid") $(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$pid/status")" "$(in_root id -u postgres) 0000000000000000"
	}

	step "our packages, Patroni, etcd and repmgr from Debian $DEB_SUITE; 4 paths between A and B"
	local debs=() ver p
	deb_copy_ours
	apt_in update
	# (patroni depends on one DCS client of a list, and apt picks
	# python3-consul: python3-etcd, which patroni.dcs.etcd3 needs, is named)
	apt_in install --no-install-recommends --allow-downgrades "${debs[@]}" patroni python3-etcd etcd-server etcd-client "postgresql-$V-repmgr" ||
		fail "apt-get install (log: $MANAGERS_DIR/apt.log)"
	for p in libpq5 "postgresql-$V" "postgresql-client-$V"; do
		expect "$p is ours" "$(in_root dpkg-query -W -f='${Version}' "$p")" "$ver"
	done
	local patroni_ver etcd_ver repmgr_ver
	patroni_ver=$(in_root dpkg-query -W -f='${Version}' patroni)
	etcd_ver=$(in_root dpkg-query -W -f='${Version}' etcd-server)
	repmgr_ver=$(in_root dpkg-query -W -f='${Version}' "postgresql-$V-repmgr")
	# (postgresql-common made a "main" cluster: not used here)
	in_root pg_dropcluster --stop "$V" main 2>/dev/null || true
	# (a kept chroot: what an earlier run left)
	rm -rf "$R/var/lib/postgresql/patroni" "$R/var/lib/postgresql/repmgr" "$R/var/lib/etcd/mp"
	# Both nodes announce their other addresses and accept the other's.
	local i
	nsns a ip mptcp limits set subflows 8 add_addr_accepted 3
	nsns b ip mptcp limits set subflows 8 add_addr_accepted 3
	for i in 2 3 4; do nsns b ip mptcp endpoint add "198.18.$i.2" dev "cv$i" signal; done
	expect "A signals its 3 other addresses" "$(nsns a ip mptcp endpoint show | grep -c signal)" 3
	expect "B signals its 3 other addresses" "$(nsns b ip mptcp endpoint show | grep -c signal)" 3

	# (MANAGERS_ONLY=patroni or repmgr: one of the two)
	[ "${MANAGERS_ONLY:-patroni}" != patroni ] || managers_patroni
	if [ "${MANAGERS_ONLY:-repmgr}" = repmgr ]; then
		# (chk_sql: repmgr's table, which the environment file's standby checks too)
		local chk_sql="SELECT count(*) || ' ' || md5(string_agg(id || ':' || t, ',' ORDER BY id)) FROM rows1"
		managers_repmgr
		managers_envfile
	fi
	echo "deb-test-managers: PASS ($n checks: $PG_SOURCE_PACKAGE $ver, Debian $DEB_SUITE; patroni $patroni_ver, etcd-server $etcd_ver, postgresql-$V-repmgr $repmgr_ver; 4 paths)"
}

# ---- 1. Patroni (called by managers_test_run, with its locals and helpers)
managers_patroni() {
	local pdir=/var/lib/postgresql/patroni node addr
	step "1. Patroni: etcd on A; a TCP cluster of A and B, turned to MPTCP by a rolling restart"
	in_root install -d -o etcd -g etcd -m 700 /var/lib/etcd/mp
	# etcd on all four of A's addresses: B's Patroni reaches it over any path
	local urls=http://127.0.0.1:2379
	for i in 1 2 3 4; do urls=$urls,http://198.18.$i.1:2379; done
	nsenter -t "$srv" -n chroot "$R" env -i PATH=/usr/bin:/bin \
		setpriv --reuid=etcd --regid=etcd --init-groups --inh-caps=-all \
		etcd --name e1 --data-dir /var/lib/etcd/mp \
		--listen-client-urls "$urls" --advertise-client-urls "${urls#http://127.0.0.1:2379,}" \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster e1=http://127.0.0.1:2380 >"$MANAGERS_DIR/etcd.log" 2>&1 &
	MANAGERS_PIDS="$MANAGERS_PIDS $!"
	until_ok 30 on b etcdctl --endpoints=http://198.18.1.1:2379 endpoint health ||
		fail "etcd does not answer (log: $MANAGERS_DIR/etcd.log)"
	ok "etcd $etcd_ver answers B over the lab"
	in_root install -d -o postgres -g postgres -m 700 "$pdir"
	mkdir -p "$R/etc/patroni"
	for node in a b; do
		[ $node = a ] && addr=198.18.1.1 || addr=198.18.1.2
		# (no passwords: trust from the lab's and loopback addresses;
		# Patroni itself connects to "localhost", ::1 first)
		cat >"$R/etc/patroni/$node.yml" <<-EOF
		scope: mp
		name: $node
		restapi:
		  listen: 0.0.0.0:8008
		  connect_address: $addr:8008
		etcd3:
		  hosts: 198.18.1.1:2379,198.18.2.1:2379,198.18.3.1:2379,198.18.4.1:2379
		bootstrap:
		  dcs:
		    ttl: 20
		    loop_wait: 2
		    retry_timeout: 5
		    synchronous_mode: true
		    postgresql:
		      use_pg_rewind: true
		  initdb:
		    - encoding: UTF8
		    - data-checksums
		postgresql:
		  listen: '*:5432'
		  connect_address: $addr:5432
		  data_dir: $pdir/$node
		  bin_dir: /usr/lib/postgresql/$V/bin
		  pgpass: $pdir/pgpass-$node
		  authentication:
		    superuser:
		      username: postgres
		    replication:
		      username: postgres
		    rewind:
		      username: postgres
		  parameters:
		    unix_socket_directories: ''
		  pg_hba:
		    - host all all 127.0.0.1/32 trust
		    - host all all ::1/128 trust
		    - host all all 198.18.0.0/15 trust
		    - host replication all 127.0.0.1/32 trust
		    - host replication all 198.18.0.0/15 trust
		EOF
	done
	# patroni_start NODE [VAR=VALUE]: Patroni as a service runs it (Debian's
	# unit: as postgres), with VAR in its environment (PGMPTCP=1:
	# guide/replication-managers.md, a drop-in)
	# (a simple command, not a function, in the background: its pid is
	# Patroni's, every program on the way execs the next)
	patroni_start() {
		local ns=(nsenter -t "$srv" -n)
		[ "$1" = a ] || ns=("$lab_sh" client "$lab")
		# shellcheck disable=SC2086
		"${ns[@]}" chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 $AS_PG ${2:-} \
			patroni "/etc/patroni/$1.yml" >>"$MANAGERS_DIR/patroni-$1.log" 2>&1 &
		eval "patroni_pid_$1=$!"
		MANAGERS_PIDS="$MANAGERS_PIDS $!"
	}
	# patroni_stop NODE: as "systemctl stop patroni" (its server stops with it)
	patroni_stop() {
		local pid
		pid=$(eval echo "\$patroni_pid_$1")
		kill -TERM "$pid"
		until_ok 60 gone "$pid" || fail "$1's Patroni did not stop in 60 s"
	}
	# switchover LEADER CANDIDATE
	# (patronictl exits with 0 when the leader refuses: its words tell.
	# The leader refuses while it cannot reach the candidate's REST API;
	# 5 tries at most.)
	switchover() {
		local try
		for try in 1 2 3 4 5; do
			on a patronictl -c /etc/patroni/a.yml switchover --leader "$1" --candidate "$2" --force >"$MANAGERS_DIR/switchover.log" 2>&1 ||
				fail "patronictl switchover: $(tail -3 "$MANAGERS_DIR/switchover.log")"
			! grep -q 'failed, details' "$MANAGERS_DIR/switchover.log" || { sleep 5; continue; }
			break
		done
		! grep -q 'failed, details' "$MANAGERS_DIR/switchover.log" ||
			fail "patronictl switchover: $(tail -1 "$MANAGERS_DIR/switchover.log")"
		ok "patronictl switchover --leader $1 --candidate $2 (try $try)"
	}
	# "on" or "off", and whether a restart is pending for it, on NODE
	listen_mptcp_state() {
		sql "$1" 5432 -c "SELECT setting || CASE WHEN pending_restart THEN ', restart pending' ELSE '' END FROM pg_settings WHERE name = 'listen_mptcp'"
	}
	local wr_tcp_sql="SELECT mptcp FROM pg_stat_mptcp JOIN pg_stat_wal_receiver USING (pid) WHERE status = 'streaming'"
	# "a:Leader:running b:Sync Standby:streaming", from patronictl on A
	members() {
		on a patronictl -c /etc/patroni/a.yml list -f json 2>/dev/null |
			on a python3 -c 'import json, sys; print(" ".join("%s:%s:%s" % (m["Member"], m["Role"], m["State"]) for m in sorted(json.load(sys.stdin), key=lambda m: m["Member"])))' 2>/dev/null
	}
	# wait_members WANT: until members prints WANT (90 s at most)
	wait_members() {
		local got= end=$((SECONDS + 90))
		while [ $SECONDS -lt $end ]; do
			got=$(members || true)
			[ "$got" != "$1" ] || break
			sleep 0.5
		done
		expect "patronictl list: $1" "$got" "$1"
	}
	local ldata=$pdir/a sdata=$pdir/b
	: >"$MANAGERS_DIR/patroni-a.log"
	: >"$MANAGERS_DIR/patroni-b.log"
	# A cluster as it runs before MPTCP: no listen_mptcp, no PGMPTCP.
	patroni_start a
	wait_members "a:Leader:running"
	sql a 5432 -c "CREATE EXTENSION mptcpinfo"
	patroni_start b
	wait_members "a:Leader:running b:Sync Standby:streaming"
	expect "before: B's walreceiver is on TCP" "$(sql b 5432 -c "$wr_tcp_sql")" f

	# The rolling restart of guide/replication-managers.md: the setting
	# in the DCS once, then each standby's Patroni restarted with PGMPTCP=1,
	# a switchover, and the old leader's Patroni restarted.
	on a patronictl -c /etc/patroni/a.yml edit-config --pg listen_mptcp=on --force >"$MANAGERS_DIR/edit-config.log" 2>&1 ||
		fail "patronictl edit-config: $(tail -3 "$MANAGERS_DIR/edit-config.log")"
	until_ok 30 test "$(listen_mptcp_state b)" = "off, restart pending" || true
	expect "patronictl edit-config --pg listen_mptcp=on: A waits for a restart" "$(listen_mptcp_state a)" "off, restart pending"
	expect "and so does B" "$(listen_mptcp_state b)" "off, restart pending"
	patroni_stop b
	patroni_start b PGMPTCP=1
	wait_members "a:Leader:running b:Sync Standby:streaming"
	expect "B restarted: listen_mptcp is on" "$(listen_mptcp_state b)" on
	expect "B's walreceiver is still on TCP: A does not listen for MPTCP yet" "$(sql b 5432 -c "$wr_tcp_sql")" f
	switchover a b
	wait_members "a:Sync Standby:streaming b:Leader:running"
	patroni_stop a
	patroni_start a PGMPTCP=1
	wait_members "a:Sync Standby:streaming b:Leader:running"
	expect "A restarted: listen_mptcp is on" "$(listen_mptcp_state a)" on
	expect "A's walreceiver is multipath, to B" "$(sql a 5432 -c "$wr_sql")" "true 4"
	switchover b a
	wait_members "a:Leader:running b:Sync Standby:streaming"
	no_caps a "$ldata" "A"
	no_caps b "$sdata" "B"
	# What Patroni wrote: no mptcp in primary_conninfo (format_dsn's list);
	# the walreceiver asks for MPTCP because PGMPTCP=1 is in its environment.
	local conninfo
	conninfo=$(sql b 5432 -c "SHOW primary_conninfo")
	case $conninfo in
	*mptcp*) fail "Patroni wrote mptcp into primary_conninfo ($conninfo): format_dsn changed, update guide/replication-managers.md" ;;
	*host=198.18.1.1*) ok "Patroni's primary_conninfo has no mptcp ($conninfo)" ;;
	*) fail "unexpected primary_conninfo: $conninfo" ;;
	esac
	expect "B's walreceiver is multipath: pg_stat_mptcp" "$(sql b 5432 -c "$wr_sql")" "true 4"
	expect "B's walreceiver: subflows over all 4 paths (ss in B's namespace)" "$(subflow_paths b 5432)" "$all_paths"
	expect "synchronous replication: B is the synchronous standby" \
		"$(sql a 5432 -c "SELECT application_name || ' ' || sync_state FROM pg_stat_replication")" "b sync"

	step "pgbench on the primary (A) while path 1, the initial subflow's, is blackholed"
	# (a file, not a pipe: pgbench's output is checked after it ended)
	as_pg a pgbench -q -i -s 5 "host=127.0.0.1 user=postgres dbname=postgres" >"$MANAGERS_DIR/pgbench-init.log" 2>&1 ||
		fail "pgbench -i (log: $MANAGERS_DIR/pgbench-init.log)"
	as_pg a timeout 180 pgbench -n -c 4 -T 20 -P 5 "host=127.0.0.1 user=postgres dbname=postgres" >"$MANAGERS_DIR/pgbench.log" 2>&1 &
	local bench=$!
	sleep 5
	"$lab_sh" blackhole "$lab" 1
	ok "path 1 blackholed at 5 s of 20"
	sleep 10
	# (the drops of path 1's blackhole qdiscs, before restore replaces them)
	local drops
	drops=$("$lab_sh" stats "$lab" | awk '$1 == 1 { d += $5 } END { print d + 0 }')
	[ "$drops" -gt 0 ] && ok "the router dropped $drops packets on path 1 meanwhile" ||
		fail "nothing was dropped on path 1: the blackhole proved nothing"
	"$lab_sh" restore "$lab" 1
	# (Patroni's REST API and etcd use path 1's addresses: it must pass again)
	local q
	q=$("$lab_sh" router "$lab" tc qdisc show dev rs1)$("$lab_sh" router "$lab" tc qdisc show dev rc1)
	case $q in
	*"limit 0p"*) fail "path 1 still blackholed after lab.sh restore: $q" ;;
	esac
	until_ok 30 on b etcdctl --endpoints=http://198.18.1.1:2379 endpoint health ||
		fail "path 1 restored, but B does not reach 198.18.1.1 in 30 s"
	ok "path 1 restored at 15 s (B reaches etcd over it again)"
	wait $bench || fail "pgbench failed: $(tail -5 "$MANAGERS_DIR/pgbench.log")"
	sed -n 's/^progress: /# pgbench progress: /p' "$MANAGERS_DIR/pgbench.log"
	local acked failed
	acked=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$MANAGERS_DIR/pgbench.log")
	failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$MANAGERS_DIR/pgbench.log")
	[ -n "$acked" ] && [ "$acked" -gt 0 ] && ok "pgbench: $acked transactions acknowledged" ||
		fail "pgbench acknowledged no transaction: $(tail -5 "$MANAGERS_DIR/pgbench.log")"
	expect "pgbench: no failed transaction" "${failed:-0}" 0
	# The standby has replayed all the primary wrote, then both sides compare.
	local lsn
	lsn=$(sql a 5432 -c "SELECT pg_current_wal_lsn()")
	until_ok 60 sql b 5432 -c "SELECT 1/count(*) FROM (SELECT 1 WHERE pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn) s" ||
		fail "B did not replay up to $lsn in 60 s"
	local sum_sql="SELECT (SELECT count(*) FROM pgbench_history) || ' ' || (SELECT sum(delta) FROM pgbench_history) || ' ' || (SELECT md5(string_agg(aid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts)"
	local suma sumb
	suma=$(sql a 5432 -c "$sum_sql")
	sumb=$(sql b 5432 -c "$sum_sql")
	expect "A: every acknowledged transaction is in pgbench_history" "${suma%% *}" "$acked"
	expect "B has the same rows and balances as A ($suma)" "$sumb" "$suma"
	expect "balances match the history on B" \
		"$(sql b 5432 -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(delta) FROM pgbench_history)")" t
	expect "B's walreceiver is still multipath after the blackhole" "$(sql b 5432 -c "$wr_sql")" "true 4"

	step "patronictl switchover: B leads, A follows"
	switchover a b
	wait_members "a:Sync Standby:streaming b:Leader:running"
	expect "A's walreceiver is multipath (after the switchover)" "$(sql a 5432 -c "$wr_sql")" "true 4"
	expect "A's walreceiver: subflows over all 4 paths (ss in A's namespace)" "$(subflow_paths a 5432)" "$all_paths"
	no_caps b "$sdata" "B, promoted"
	sql b 5432 -c "CREATE TABLE after_switchover AS SELECT g AS id, md5(g::text) AS t FROM generate_series(1, 50000) g"
	local chk_sql="SELECT count(*) || ' ' || md5(string_agg(id || ':' || t, ',' ORDER BY id)) FROM after_switchover"
	suma=$(sql b 5432 -c "$chk_sql")
	until_ok 30 sql a 5432 -c "SELECT 1/count(*) FROM after_switchover HAVING count(*) = 50000" || true
	expect "A has B's new rows ($suma)" "$(sql a 5432 -c "$chk_sql")" "$suma"

	step "failover: the primary's (B's) Patroni stopped, then started again"
	patroni_stop b
	[ ! -e "$R$sdata/postmaster.pid" ] && ok "B's Patroni stopped, and its server with it" ||
		fail "B's server still runs after its Patroni stopped"
	wait_members "a:Leader:running"
	sql a 5432 -c "INSERT INTO after_switchover SELECT g, md5(g::text) FROM generate_series(50001, 60000) g"
	patroni_start b PGMPTCP=1
	wait_members "a:Leader:running b:Sync Standby:streaming"
	expect "B's walreceiver is multipath (after the failover)" "$(sql b 5432 -c "$wr_sql")" "true 4"
	expect "B's walreceiver: subflows over all 4 paths (ss in B's namespace)" "$(subflow_paths b 5432)" "$all_paths"
	no_caps a "$ldata" "A, promoted"
	no_caps b "$sdata" "B, rejoined"
	suma=$(sql a 5432 -c "$chk_sql")
	expect "60,000 rows on the new primary A" "${suma%% *}" 60000
	until_ok 30 sql b 5432 -c "SELECT 1/count(*) FROM after_switchover HAVING count(*) = 60000" || true
	expect "B has the same rows ($suma)" "$(sql b 5432 -c "$chk_sql")" "$suma"
	expect "and the pgbench data, unchanged" "$(sql b 5432 -c "$sum_sql")" "$sumb"

	# Going back: listen_mptcp out of the DCS, so that out of each node's
	# postgresql.conf (a stock server refuses to start with it, even off).
	# conf_lines: the lines that set listen_mptcp in either node's files
	conf_lines() { cat "$R$ldata"/*.conf "$R$sdata"/*.conf | grep -E '^[[:space:]]*listen_mptcp' || true; }
	conf_lines | sed 's/^/# /'
	expect "before: listen_mptcp in A's and B's configuration files (from the DCS)" "$(conf_lines | wc -l)" 2
	on a patronictl -c /etc/patroni/a.yml edit-config --pg listen_mptcp=null --force >"$MANAGERS_DIR/edit-config.log" 2>&1 ||
		fail "patronictl edit-config --pg listen_mptcp=null: $(tail -3 "$MANAGERS_DIR/edit-config.log")"
	until_ok 30 eval 'test -z "$(conf_lines)"' || true
	expect "edit-config --pg listen_mptcp=null: no listen_mptcp in A's and B's configuration files" "$(conf_lines | wc -l)" 0

	# Patroni and etcd stop here: repmgr's nodes use the same port.
	local pid
	for pid in $patroni_pid_a $patroni_pid_b; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in $patroni_pid_a $patroni_pid_b; do
		until_ok 60 gone "$pid" || fail "Patroni (pid $pid) did not stop in 60 s"
	done
	ok "both Patroni stopped"
}

# ---- 3. Debian's environment file: a standby of repmgr's new primary
# (node 2, on B) made by pg_createcluster and pg_basebackup -R on A,
# without mptcp in its conninfo, PGMPTCP in
# /etc/postgresql/N/CLUSTER/environment, started by pg_ctlcluster.
managers_envfile() {
	local data=/var/lib/postgresql/$V/envtest conninfo pid sum
	step "3. Debian's /etc/postgresql/$V/envtest/environment: PGMPTCP for a cluster pg_ctlcluster starts"
	in_root pg_dropcluster "$V" envtest 2>/dev/null || true   # (a kept chroot)
	in_root pg_createcluster "$V" envtest -p 5434 >/dev/null || fail "pg_createcluster $V envtest"
	rm -rf "${R:?}$data"
	as_pg a pg_basebackup -d "host=198.18.1.2 port=5432 user=postgres" -D "$data" -R -X stream -c fast ||
		fail "pg_basebackup from node 2"
	# (node 2's postgresql.auto.conf came along, with the slot repmgr
	# made for node 2 when it was a standby: none here)
	sed -i '/^primary_slot_name/d' "$R$data/postgresql.auto.conf"
	echo "PGMPTCP = '1'" >>"$R/etc/postgresql/$V/envtest/environment"
	# (the test's own queries: trust on loopback, before Debian's scram line)
	sed -i '1i host all all 127.0.0.1/32 trust' "$R/etc/postgresql/$V/envtest/pg_hba.conf"
	on a pg_ctlcluster "$V" envtest start || fail "pg_ctlcluster $V envtest start"
	pid=$(head -1 "$R$data/postmaster.pid")
	expect "PGMPTCP=1 is in the server's environment" "$(tr '\0' '\n' <"/proc/$pid/environ" | grep '^PGMPTCP=')" PGMPTCP=1
	conninfo=$(sql a 5434 -c "SHOW primary_conninfo")
	case $conninfo in
	*mptcp*) fail "pg_basebackup -R wrote mptcp into primary_conninfo: $conninfo" ;;
	*) ok "primary_conninfo without mptcp ($conninfo)" ;;
	esac
	local got
	got=$(sql a 5434 -c "$wr_sql")
	[ "$got" = "true 4" ] || {
		sql a 5434 -c "SELECT * FROM pg_stat_wal_receiver" -c "SELECT * FROM pg_stat_mptcp" || true
		tail -20 "$R/var/log/postgresql/postgresql-$V-envtest.log" || true
	}
	expect "the walreceiver is multipath all the same: pg_stat_mptcp" "$got" "true 4"
	no_caps a "$data" "the envtest cluster"
	sum=$(sql b 5432 -c "$chk_sql")
	expect "it has node 2's rows ($sum)" "$(sql a 5434 -c "$chk_sql")" "$sum"
}

# ---- 2. repmgr
managers_repmgr() {
	local rdir=/var/lib/postgresql/repmgr bin=/usr/lib/postgresql/$V/bin id host port
	step "2. repmgr: node 1 (A) primary; nodes 2 (B) and 3 (A, port 5433) cloned, mptcp=1 in every conninfo"
	in_root install -d -o postgres -g postgres -m 700 "$rdir"
	mkdir -p "$R/etc/repmgr-mp"
	for id in 1 2 3; do
		case $id in
		1) host=198.18.1.1 port=5432 ;;
		2) host=198.18.1.2 port=5432 ;;
		3) host=198.18.1.1 port=5433 ;;
		esac
		cat >"$R/etc/repmgr-mp/$id.conf" <<-EOF
		node_id=$id
		node_name='node$id'
		conninfo='host=$host port=$port user=postgres dbname=repmgr connect_timeout=5 mptcp=1'
		data_directory='$rdir/$id'
		pg_bindir='$bin'
		use_replication_slots=yes
		service_start_command='$bin/pg_ctl -D $rdir/$id -l $rdir/$id.log -w start'
		service_stop_command='$bin/pg_ctl -D $rdir/$id -w -m fast stop'
		service_restart_command='$bin/pg_ctl -D $rdir/$id -l $rdir/$id.log -w -m fast restart'
		EOF
	done
	# repmgr NODE ID ARGS...: repmgr with node ID's file, on NODE, logged
	repmgr() {
		local node=$1 id=$2
		shift 2
		echo "## repmgr -f $id.conf $*" >>"$MANAGERS_DIR/repmgr.log"
		as_pg "$node" "$bin/repmgr" -f "/etc/repmgr-mp/$id.conf" "$@" >>"$MANAGERS_DIR/repmgr.log" 2>&1 ||
			fail "repmgr $* (node $id): $(tail -3 "$MANAGERS_DIR/repmgr.log")"
	}
	: >"$MANAGERS_DIR/repmgr.log"
	as_pg a "$bin/initdb" -D "$rdir/1" -A trust -U postgres --data-checksums >"$MANAGERS_DIR/repmgr-initdb.log" 2>&1 ||
		fail "initdb (log: $MANAGERS_DIR/repmgr-initdb.log)"
	cat >>"$R$rdir/1/postgresql.conf" <<-EOF
		listen_addresses = '*'
		listen_mptcp = on
		unix_socket_directories = ''
		shared_preload_libraries = 'repmgr'
		wal_log_hints = on
	EOF
	printf 'host all all 198.18.0.0/15 trust\nhost replication all 198.18.0.0/15 trust\n' >>"$R$rdir/1/pg_hba.conf"
	as_pg a "$bin/pg_ctl" -D "$rdir/1" -l "$rdir/1.log" -w start >/dev/null || fail "starting node 1"
	sql a 5432 -c "CREATE DATABASE repmgr" -c "CREATE EXTENSION mptcpinfo"
	repmgr a 1 primary register
	ok "node 1: repmgr primary register"
	local src="host=198.18.1.1 port=5432 user=postgres dbname=repmgr mptcp=1"
	repmgr b 2 -d "$src" standby clone --fast-checkpoint
	as_pg b "$bin/pg_ctl" -D "$rdir/2" -l "$rdir/2.log" -w start >/dev/null || fail "starting node 2"
	# ("standby register" wants the standby streaming already: 60 s at most)
	until_ok 60 sql a 5432 -c "SELECT 1/count(*) FROM pg_stat_replication WHERE application_name = 'node2' AND state = 'streaming'" ||
		fail "node 2 does not stream from node 1 in 60 s"
	repmgr b 2 standby register
	ok "node 2 (B): repmgr standby clone, start, standby register"
	repmgr a 3 -d "$src" standby clone --fast-checkpoint
	echo "port = 5433" >>"$R$rdir/3/postgresql.conf"
	as_pg a "$bin/pg_ctl" -D "$rdir/3" -l "$rdir/3.log" -w start >/dev/null || fail "starting node 3"
	# ("standby register" wants the standby streaming already: 60 s at most)
	until_ok 60 sql a 5432 -c "SELECT 1/count(*) FROM pg_stat_replication WHERE application_name = 'node3' AND state = 'streaming'" ||
		fail "node 3 does not stream from node 1 in 60 s"
	repmgr a 3 standby register
	ok "node 3 (A, port 5433): repmgr standby clone, start, standby register"
	local conninfo
	conninfo=$(sql b 5432 -c "SHOW primary_conninfo")
	case $conninfo in
	*host=198.18.1.1*mptcp=1* | *mptcp=1*host=198.18.1.1*) ok "repmgr wrote mptcp=1 into node 2's primary_conninfo ($conninfo)" ;;
	*) fail "node 2's primary_conninfo lacks mptcp=1: $conninfo" ;;
	esac
	expect "node 2's walreceiver is multipath: pg_stat_mptcp" "$(sql b 5432 -c "$wr_sql")" "true 4"
	expect "node 2's walreceiver: subflows over all 4 paths (ss in B's namespace)" "$(subflow_paths b 5432)" "$all_paths"
	no_caps a "$rdir/1" "node 1"
	no_caps b "$rdir/2" "node 2"
	sql a 5432 -c "CREATE TABLE rows1 AS SELECT g AS id, md5(g::text) AS t FROM generate_series(1, 50000) g"
	local sum lsn
	sum=$(sql a 5432 -c "$chk_sql")
	lsn=$(sql a 5432 -c "SELECT pg_current_wal_lsn()")
	until_ok 30 sql b 5432 -c "SELECT 1/count(*) FROM (SELECT 1 WHERE pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn) s" || true
	until_ok 30 sql a 5433 -c "SELECT 1/count(*) FROM (SELECT 1 WHERE pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn) s" || true
	expect "node 2 has node 1's rows ($sum)" "$(sql b 5432 -c "$chk_sql")" "$sum"
	expect "node 3 has node 1's rows" "$(sql a 5433 -c "$chk_sql")" "$sum"

	step "repmgr standby promote (node 2), standby follow (node 3)"
	as_pg a "$bin/pg_ctl" -D "$rdir/1" -w -m fast stop >/dev/null || fail "stopping node 1"
	ok "node 1 (the primary) stopped"
	repmgr b 2 standby promote
	expect "node 2 promoted (repmgr standby promote)" "$(sql b 5432 -c "SELECT pg_is_in_recovery()")" f
	no_caps b "$rdir/2" "node 2, promoted"
	repmgr a 3 standby follow
	ok "node 3: repmgr standby follow"
	conninfo=$(sql a 5433 -c "SHOW primary_conninfo")
	case $conninfo in
	*host=198.18.1.2*mptcp=1* | *mptcp=1*host=198.18.1.2*) ok "node 3 follows node 2, mptcp=1 in its primary_conninfo ($conninfo)" ;;
	*) fail "node 3's primary_conninfo: $conninfo" ;;
	esac
	expect "node 3's walreceiver is multipath (after the promotion)" "$(sql a 5433 -c "$wr_sql")" "true 4"
	expect "node 3's walreceiver: subflows over all 4 paths (ss in A's namespace)" "$(subflow_paths a 5432)" "$all_paths"
	no_caps a "$rdir/3" "node 3"
	sql b 5432 -c "INSERT INTO rows1 SELECT g, md5(g::text) FROM generate_series(50001, 60000) g"
	sum=$(sql b 5432 -c "$chk_sql")
	expect "60,000 rows on the new primary, node 2" "${sum%% *}" 60000
	lsn=$(sql b 5432 -c "SELECT pg_current_wal_lsn()")
	until_ok 30 sql a 5433 -c "SELECT 1/count(*) FROM (SELECT 1 WHERE pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn) s" || true
	expect "node 3 has the same rows ($sum)" "$(sql a 5433 -c "$chk_sql")" "$sum"
	# (--csv: node id, connection 0 up / -1 down, 0 primary / 1 standby;
	# its exit status is 25 while node 1 is down)
	local show
	show=$(as_pg b "$bin/repmgr" -f /etc/repmgr-mp/2.conf cluster show --csv 2>/dev/null || true)
	expect "repmgr cluster show: node 1 down, node 2 primary, node 3 standby" \
		"$(printf '%s\n' "$show" | sort | paste -sd' ')" "1,-1,-1 2,0,0 3,0,1"
}

managers_test_cleanup() {
	local R=$1 lab=$2 srv=$3 pid d
	# Patroni and etcd, by the pids this test started; then any server
	# left behind (a data directory with a postmaster.pid)
	# (the last started first: Patroni stops its server, then etcd goes)
	for pid in $(printf '%s\n' $MANAGERS_PIDS | tac); do
		kill -TERM "$pid" 2>/dev/null || continue
		for _ in $(seq 1 40); do [ -e "/proc/$pid" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" || break; sleep 0.5; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	for d in "$R"/var/lib/postgresql/patroni/? "$R"/var/lib/postgresql/repmgr/?; do
		[ -f "$d/postmaster.pid" ] || continue
		chroot "$R" setpriv --reuid=postgres --regid=postgres --init-groups \
			"/usr/lib/postgresql/$MAJOR_NUMBER/bin/pg_ctl" -D "${d#"$R"}" stop -m immediate >/dev/null 2>&1 || true
	done
	chroot "$R" pg_ctlcluster "$MAJOR_NUMBER" envtest stop -m immediate >/dev/null 2>&1 || true
	nsenter -t "$srv" -n "$TOP/src/test/mptcp/lab.sh" down "$lab" >/dev/null 2>&1 || true
	kill "$srv" 2>/dev/null || true
}
