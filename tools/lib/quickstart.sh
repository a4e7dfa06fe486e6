# shellcheck shell=bash
# The quick-start test (deb-test-quickstart): README.md's quick start, read
# from README.md itself and run as written on two fresh chroots of the
# target suite, a primary and its standby, in the multipath lab
# (src/test/mptcp/lab.sh, 2 paths).  A change to the README that breaks a
# step fails it.
# Part of tools/workspace (sourced by it; see that file for the layout);
# uses deb.sh's chroot helpers and the repository of "make deb".
#
# The README marks its blocks with "<!-- quickstart: ROLE -->" on the line
# before the fence: each-host (run on the primary, then on the standby),
# primary, standby, check (SQL, run on the primary).  Only these change on
# the way, as a host of the lab has other addresses: V=17 -> this major,
# 10.1.0.1 -> 198.18.1.1, 10.2.0.1 -> 198.18.2.1, 10.0.0.0/8 ->
# 198.18.0.0/15, eth1 -> sv2.  The lab's own MPTCP endpoints and limits are
# flushed first: the README's commands must set them.  The primary runs in
# a network namespace of its own (the lab's server side), the standby in the
# lab's client namespace, each in its own chroot, with iproute2 installed as
# on any Debian host.  The each-host block runs in the host's network
# namespace, which reaches Debian's archive; the chroot's policy-rc.d keeps
# the package from starting the cluster, so the test starts it in the
# host's namespace of the lab, as systemd would.
# Everything stays in $DEB_DIR/quickstart/ (the chroots go at the end).

QUICKSTART_DIR=$DEB_DIR/quickstart

cmd_deb_test_quickstart() {
	deb_need_debian_major
	mkdir -p "$QUICKSTART_DIR"
	deb_host_tools deb-test-quickstart
	[ -f "$DEB_REPO/InRelease" ] || die "no repository in $DEB_REPO: run 'make deb PG_MAJOR=$PG_MAJOR$([ "$DEB_SUITE" = "$PG_DEBIAN_SUITE" ] || echo " SUITE=$DEB_SUITE")' first"
	local start=$SECONDS rc=0 h
	for h in primary standby; do
		DEB_DIR=$QUICKSTART_DIR deb_chroot "$QUICKSTART_DIR/$h" iproute2
	done
	unshare -m --propagation private "$TOP/tools/workspace" deb-test-quickstart-run 2>&1 | tee "$QUICKSTART_DIR/test.log" || rc=1
	grep -q '^deb-test-quickstart: PASS' "$QUICKSTART_DIR/test.log" || rc=1
	rm -rf "$QUICKSTART_DIR/primary" "$QUICKSTART_DIR/standby"
	note "deb-test-quickstart took $((SECONDS - start)) s (log: $QUICKSTART_DIR/test.log)"
	return $rc
}

# quickstart_block ROLE: the README's block(s) of that role, as the lab runs them
quickstart_block() {
	awk -v role="$1" '
		$0 ~ "^<!-- quickstart: " role " -->$" { want = 1; next }
		want && /^```/ { if (inside) { want = 0; inside = 0 } else inside = 1; next }
		want && inside { print }' "$TOP/README.md" |
		sed -e "s/^V=17 .*/V=$MAJOR_NUMBER/" \
			-e 's/10\.1\.0\.1/198.18.1.1/g' -e 's/10\.2\.0\.1/198.18.2.1/g' \
			-e 's|10\.0\.0\.0/8|198.18.0.0/15|g' -e 's/dev eth1/dev sv2/g'
}

quickstart_test_run() {
	local R=$QUICKSTART_DIR/primary RB=$QUICKSTART_DIR/standby lab=$QUICKSTART_DIR/lab V=$MAJOR_NUMBER srv n=0
	local lab_sh=$TOP/src/test/mptcp/lab.sh role
	deb_harness deb-test-quickstart quickstart_cleanup tools/lib/quickstart.sh
	deb_mount_all "$RB"
	for role in each-host primary standby check; do
		[ -n "$(quickstart_block "$role")" ] || fail "README.md has no quick-start block \"$role\""
	done
	# the README's commands set the paths: none set by the lab
	nsenter -t "$srv" -n ip mptcp endpoint flush
	nsenter -t "$srv" -n ip mptcp limits set subflows 0 add_addr_accepted 0
	"$lab_sh" client "$lab" ip mptcp limits set subflows 0 add_addr_accepted 0
	local h
	for h in "$R" "$RB"; do
		mkdir -p "$h/srv/pg-mptcp"
		cp "$DEB_REPO"/* "$h/srv/pg-mptcp/"
	done
	# on_HOST SCRIPT: a shell of that host runs SCRIPT (each line echoed),
	# stopping at the first command that fails; the shell carries V over.
	# install_on ROOT SCRIPT: the same in the host's network namespace.
	install_on() { chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive bash -exc "V=$V; $2" </dev/null; }
	on_primary() { nsenter -t "$srv" -n chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive bash -exc "V=$V; $1" </dev/null; }
	on_standby() { "$lab_sh" client "$lab" chroot "$RB" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive bash -exc "V=$V; $1" </dev/null; }
	psql_primary() { nsenter -t "$srv" -n chroot "$R" runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
	psql_standby() { "$lab_sh" client "$lab" chroot "$RB" runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

	echo "# each-host, on the primary"
	install_on "$R" "$(quickstart_block each-host)" >"$QUICKSTART_DIR/primary-install.log" 2>&1 ||
		fail "the each-host block on the primary (log: $QUICKSTART_DIR/primary-install.log)"
	expect "primary: postgresql-$V from our repository" "$(chroot "$R" dpkg-query -W -f='${Version}' "postgresql-$V")" "$DEB_VERSION"
	on_primary "pg_ctlcluster $V main start" >>"$QUICKSTART_DIR/primary-install.log" 2>&1 || fail "starting the primary's cluster"
	echo "# each-host, on the standby"
	install_on "$RB" "$(quickstart_block each-host)" >"$QUICKSTART_DIR/standby-install.log" 2>&1 ||
		fail "the each-host block on the standby (log: $QUICKSTART_DIR/standby-install.log)"
	expect "standby: libpq5 from our repository" "$(chroot "$RB" dpkg-query -W -f='${Version}' libpq5)" "$DEB_VERSION"
	on_standby "pg_ctlcluster $V main start" >>"$QUICKSTART_DIR/standby-install.log" 2>&1 || fail "starting the standby's cluster"
	echo "# primary"
	on_primary "$(quickstart_block primary)" >"$QUICKSTART_DIR/primary.log" 2>&1 ||
		fail "the primary block (log: $QUICKSTART_DIR/primary.log)"
	expect "primary: listen_mptcp" "$(psql_primary -c 'SHOW listen_mptcp')" on
	expect "primary: mptcpinfo preloaded" "$(psql_primary -c 'SHOW shared_preload_libraries')" mptcpinfo
	expect "primary: signal endpoint set" "$(nsenter -t "$srv" -n ip mptcp endpoint show | grep -c '198.18.2.1 .*signal' || true)" 1
	psql_primary -c "CREATE TABLE items AS SELECT g AS id, md5(g::text) AS t FROM generate_series(1, 100000) g"
	echo "# standby"
	on_standby "$(quickstart_block standby)" >"$QUICKSTART_DIR/standby.log" 2>&1 ||
		fail "the standby block (log: $QUICKSTART_DIR/standby.log)"
	grep -q "mptcp=1" "$RB/var/lib/postgresql/$V/main/postgresql.auto.conf" && ok "standby: primary_conninfo has mptcp=1" ||
		fail "standby: primary_conninfo lacks mptcp=1"
	grep -q "host=''198.18.1.1,198.18.2.1''" "$RB/var/lib/postgresql/$V/main/postgresql.auto.conf" && ok "standby: primary_conninfo names the primary on both paths" ||
		fail "standby: primary_conninfo lacks the host list"
	! grep -q "password=" "$RB/var/lib/postgresql/$V/main/postgresql.auto.conf" && ok "standby: primary_conninfo has no password (.pgpass)" ||
		fail "standby: primary_conninfo has the password"
	psql_primary -c "INSERT INTO items SELECT g, 'after the copy' FROM generate_series(100001, 100100) g"
	local sum_sql="SELECT count(*) || ' ' || md5(string_agg(id || ':' || t, ',' ORDER BY id)) FROM items" sum got=
	sum=$(psql_primary -c "$sum_sql")
	for _ in $(seq 1 50); do
		got=$(psql_standby -c "$sum_sql" 2>/dev/null || true)
		[ "$got" != "$sum" ] || break
		sleep 0.2
	done
	expect "the standby replays the primary's rows, inserted after the copy (checksum)" "$got" "$sum"
	echo "# check (the README's query; the join subflow follows the connection by a few ms: 10 s at most)"
	local rows=
	for _ in $(seq 1 50); do
		rows=$(psql_primary -F ' ' -c "$(quickstart_block check)")
		[ "$(echo "$rows" | awk '{ print $3 " " $4 }')" != "t 2" ] || break
		sleep 0.2
	done
	echo "# $rows"
	expect "the walsender's row: mptcp, 2 subflows (one per path)" "$(echo "$rows" | awk '{ print $3 " " $4 }')" "t 2"
	echo "deb-test-quickstart: PASS ($n checks: README.md's quick start, $PG_SOURCE_PACKAGE $DEB_VERSION, Debian $DEB_SUITE)"
}

quickstart_cleanup() {
	local R=$1 lab=$2 srv=$3
	"$TOP/src/test/mptcp/lab.sh" client "$lab" chroot "$QUICKSTART_DIR/standby" pg_ctlcluster "$MAJOR_NUMBER" main stop -m immediate >/dev/null 2>&1 || true
	nsenter -t "$srv" -n chroot "$R" pg_ctlcluster "$MAJOR_NUMBER" main stop -m immediate >/dev/null 2>&1 || true
	nsenter -t "$srv" -n "$TOP/src/test/mptcp/lab.sh" down "$lab" >/dev/null 2>&1 || true
	kill "$srv" 2>/dev/null || true
}
