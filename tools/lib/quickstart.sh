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
# before the fence: copy (the build machine's, with chroot for ssh),
# each-host and each-host-settings (run on the primary,
# then on the standby), primary, standby, check and health (SQL, run on
# the primary), synchronous (on the primary), cut and restore (on the
# standby).  Each block runs in a shell of its own, as a DBA who opened
# a new one would run it: nothing (not V) carries over from the one before.
# A block may be followed by the output the README shows for it
# ("<!-- quickstart: ROLE output -->", or "cut check output" and the like
# for a query run again later): the test checks that what it printed has
# those lines, in that order (tools/lib/shown_output.py).  The standby is a
# host that already runs Debian's PostgreSQL of the major where the suite
# has it (ours may be a downgrade there); the primary a bare one.
# Only these change on the way, as a host of the lab has
# other addresses: the "V=" line -> this major; the primary's addresses
# 10.1.0.1 -> 198.18.1.1 and 10.2.0.1 -> 198.18.2.1 (wherever they appear,
# the standby's host list included); the "A1=... NIC1=... A2=... NIC2=..."
# line of each-host-settings -> the host's own addresses and interfaces
# (198.18.1.1 sv1 198.18.2.1 sv2 on the primary, 198.18.1.2 cv1 198.18.2.2
# cv2 on the standby); the cluster's cgroup under system-postgresql.slice
# -> the host's cgroup; the
# networks 10.N.0.0/24 -> 198.18.N.0/24.  The lab's own MPTCP endpoints and
# limits are flushed first: the README's commands must set them.  The primary runs
# in a network namespace of its own (the lab's server side), the standby in
# the lab's client namespace, each in its own chroot, with iproute2 and
# procps installed as on any Debian host.  What systemd would do there, the
# test does: before the first start of each cluster, the ExecStartPre line
# of the packaged drop-in of postgresql@.service (host-setup
# --own-cgroup), in a cgroup of the test's that each host's commands then
# run in (in place of the cluster's cgroup under system-postgresql.slice,
# in the README's blocks too), and the packaged
# mend-paths, in each host's namespace of the lab.  The each-host block runs in the
# host's network namespace, which reaches Debian's archive; the chroot's
# policy-rc.d keeps the package from starting the cluster, so the test
# starts it in the host's namespace of the lab, as systemd would.  Every
# other block runs in the lab (the sysctls it sets are those of the lab's
# namespaces, never the machine's).  The password that \password and read
# ask for comes on their standard input, without a terminal (setsid).
#
# Then it checks what the README promises: both hosts configured the same
# (listen_mptcp, the preload, listen_addresses naming the host's addresses,
# the failover settings, MPTCP sysctls and no TCP one, a signal endpoint on
# each address, host-setup's program at work), a primary_conninfo with the
# host list and no password, the rows replayed, the walsender over MPTCP
# with a subflow per path.  Commits made synchronous, the README's cut
# (a blackhole route on the standby): commits go on over the same
# connection, the health query shows the replica; the README's restore:
# a subflow on path 1 again (mend-paths), the health query empty.  The
# standby restarted as at a reboot (its MPTCP limits and endpoints flushed,
# the packaged pg-mptcp-paths.service's ExecStart, the cluster started
# again): limits and endpoints back, the walreceiver back with a subflow
# per path.  Then
# path 1 is cut for good at the lab's router: rows still arrive; the
# walsender is terminated on
# the primary, the walreceiver connects again over path 2 (the host list),
# over MPTCP; the standby's rows equal the primary's (count and checksum).
# Everything stays in $DEB_DIR/quickstart/ (the chroots go at the end).

QUICKSTART_DIR=$DEB_DIR/quickstart

cmd_deb_test_quickstart() {
	deb_need_debian_major
	mkdir -p "$QUICKSTART_DIR"
	deb_host_tools deb-test-quickstart
	[ -f "$DEB_REPO/InRelease" ] || die "no repository in $DEB_REPO: run 'make deb PG_MAJOR=$PG_MAJOR$([ "$DEB_SUITE" = "$PG_DEBIAN_SUITE" ] || echo " SUITE=$DEB_SUITE")' first"
	local start=$SECONDS rc=0 h
	for h in primary standby; do
		DEB_DIR=$QUICKSTART_DIR deb_chroot "$QUICKSTART_DIR/$h" iproute2,procps
	done
	unshare -m --propagation private "$TOP/tools/workspace" deb-test-quickstart-run 2>&1 | tee "$QUICKSTART_DIR/test.log" || rc=1
	grep -q '^deb-test-quickstart: PASS' "$QUICKSTART_DIR/test.log" || rc=1
	rm -rf "$QUICKSTART_DIR/primary" "$QUICKSTART_DIR/standby"
	note "deb-test-quickstart took $((SECONDS - start)) s (log: $QUICKSTART_DIR/test.log)"
	return $rc
}

# quickstart_fenced MARK: the fenced block after README.md's (QS_PAGE's)
# "<!-- quickstart: MARK -->" line, as it stands
quickstart_fenced() {
	awk -v mark="$1" '
		$0 == "<!-- quickstart: " mark " -->" { want = 1; next }
		want && /^```/ { if (inside) { want = 0; inside = 0 } else inside = 1; next }
		want && inside { print }' "${QS_PAGE:-$TOP/README.md}"
}

# quickstart_block ROLE [standby]: the README's block(s) of that role, as
# the lab's primary (or standby) runs them
quickstart_block() {
	local own1=198.18.1.1 own2=198.18.2.1 nic=sv cg=${QS_CGROUP:-}/primary
	[ "${2:-}" != standby ] || own1=198.18.1.2 own2=198.18.2.2 nic=cv cg=${QS_CGROUP:-}/standby
	quickstart_fenced "$1" |
		sed -e "s/^V=[0-9]* .*/V=$MAJOR_NUMBER/" \
			-e "/^A1=/s/^A1=[^ ]* NIC1=[^ ]* A2=[^ ]* NIC2=[^ ]*/A1=$own1 NIC1=${nic}1 A2=$own2 NIC2=${nic}2/" \
			-e "s|/sys/fs/cgroup/system.slice/system-postgresql.slice/postgresql@[^ ]*\.service|$cg|g" \
			-e 's/10\.1\.0\.1/198.18.1.1/g' -e 's/10\.2\.0\.1/198.18.2.1/g' \
			-e 's|10\.\([12]\)\.0\.0/24|198.18.\1.0/24|g' -e 's/dev eth1/dev sv2/g'
}

# quickstart_output ROLE: the output the README shows after a block (its
# "<!-- quickstart: ROLE output -->"), in the lab's addresses, with our
# version in place of the README's example and "..." for the failover
# package's (dated) one
quickstart_output() {
	quickstart_fenced "$1 output" |
		sed -E -e 's/10\.([12])\.0\.([12])/198.18.\1.\2/g' -e 's/dev eth0/dev sv1/g' -e 's/dev eth1/dev sv2/g' \
			-e "s/[0-9]+\.[0-9]+-[^[:space:]]*\+mptcp[0-9]+[^[:space:]]*/$DEB_VERSION/" \
			-e "s/^postgresql-[0-9]+([[:space:]])/postgresql-$MAJOR_NUMBER\1/" \
			-e "s#(^|[^0-9./])1[5-9]/main#\1$MAJOR_NUMBER/main#g" -e "s/ postgresql-1[5-9]([: ])/ postgresql-$MAJOR_NUMBER\1/g" \
			-e 's/^(pg-mptcp-failover[[:space:]]+).*/\1.../'
}

quickstart_test_run() {
	local R=$QUICKSTART_DIR/primary RB=$QUICKSTART_DIR/standby lab=$QUICKSTART_DIR/lab V=$MAJOR_NUMBER srv n=0
	local lab_sh=$TOP/src/test/mptcp/lab.sh role pw=quickstart-Secret-1
	deb_harness deb-test-quickstart quickstart_cleanup tools/lib/quickstart.sh
	deb_mount_all "$RB"
	for role in copy each-host each-host-settings primary standby check synchronous cut restore pg-mptcp-check health; do
		[ -n "$(quickstart_block "$role")" ] || fail "README.md has no quick-start block \"$role\""
	done
	for role in each-host each-host-settings primary check health "cut check" "cut health" "restore mend-paths" pg-mptcp-check; do
		[ -n "$(quickstart_output "$role")" ] || fail "README.md shows no output for \"$role\""
	done
	[ -n "$(QS_PAGE=$TOP/guide/going-back.md quickstart_block "going-back failover")" ] ||
		fail "guide/going-back.md has no block \"going-back failover\""
	# shown NAME ROLE FILE: FILE has the output the README shows for ROLE
	shown() {
		local want=$QUICKSTART_DIR/shown-${2// /-}.txt
		quickstart_output "$2" >"$want"
		python3 "$TOP/tools/lib/shown_output.py" "$want" "$3" && ok "$1: the output README.md shows" ||
			fail "$1: not the output README.md shows (\"$2\"; got: $3)"
	}
	# the README's commands set the paths: none set by the lab
	nsenter -t "$srv" -n ip mptcp endpoint flush
	nsenter -t "$srv" -n ip mptcp limits set subflows 0 add_addr_accepted 0
	"$lab_sh" client "$lab" ip mptcp endpoint flush
	"$lab_sh" client "$lab" ip mptcp limits set subflows 0 add_addr_accepted 0
	local h cg2
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$cg2" ] || fail "no cgroup v2 hierarchy here: the packaged host-setup needs one"
	QS_CGROUP=$cg2/pg-mptcp-quickstart.$$
	mkdir -p "$QS_CGROUP/primary" "$QS_CGROUP/standby"
	for h in "$R" "$RB"; do
		# (/srv/pg-mptcp there already, as after an earlier copy: the
		# README's copy must not nest the repository in it)
		mkdir -p "$h/srv/pg-mptcp" "$h$cg2"
		mount --rbind "$cg2" "$h$cg2"
	done
	echo "# copy, from the build machine: ssh root@HOST -> chroot HOST"
	quickstart_block copy | sed -e "s|^for h in .*; do\$|for h in $R $RB; do|" \
		-e 's|ssh root@\$h |chroot $h sh -c |' -e "s|^REPO=[^ ]*|REPO=$DEB_REPO|" >"$QUICKSTART_DIR/copy.sh"
	# (from a directory other than the checkout, in a shell of its own)
	(cd / && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -ex "$QUICKSTART_DIR/copy.sh") >"$QUICKSTART_DIR/copy.log" 2>&1 ||
		fail "the copy block (log: $QUICKSTART_DIR/copy.log)"
	for h in "$R" "$RB"; do
		[ -f "$h/srv/pg-mptcp/InRelease" ] && [ -f "$h/srv/pg-mptcp/pg-mptcp.pref" ] &&
			ok "copy: the repository's files in $h/srv/pg-mptcp" || fail "copy: no InRelease or pg-mptcp.pref in $h/srv/pg-mptcp"
	done
	# install_on ROOT SCRIPT: a shell of that host runs SCRIPT (each line
	# echoed), stopping at the first command that fails, in the host's
	# network namespace.  on_primary/on_standby SCRIPT: the same in the lab;
	# standard input is the caller's (the password), no terminal.
	local sh_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive)
	install_on() { chroot "$1" "${sh_env[@]}" bash -exc "$2" </dev/null; }
	# (each host's commands, its clusters included, in its cgroup)
	in_cgroup() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$QS_CGROUP/$1" "${@:2}"; }
	on_primary() { in_cgroup primary setsid -w nsenter -t "$srv" -n chroot "$R" "${sh_env[@]}" bash -exc "$1"; }
	on_standby() { in_cgroup standby setsid -w "$lab_sh" client "$lab" chroot "$RB" "${sh_env[@]}" bash -exc "$1"; }
	# what systemd does before a cluster starts: the packaged drop-in's
	# ExecStartPre ("-+": as root, failure allowed; here it must work), in
	# the cgroup the cluster then runs in, as systemd runs it in the unit's
	local dropin=/usr/lib/systemd/system/postgresql@.service.d/pg-mptcp-failover.conf
	start_pre() {
		local pre
		pre=$(sed -n 's/^ExecStartPre=[-+]*//p' "$1$dropin")
		[ -n "$pre" ] || fail "$dropin has no ExecStartPre line"
		# shellcheck disable=SC2086 # the line's words
		in_cgroup "$2" chroot "$1" "${sh_env[@]}" $pre
	}
	psql_primary() { nsenter -t "$srv" -n chroot "$R" runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
	# (as a DBA's psql prints it, into a file)
	psql_shown() { nsenter -t "$srv" -n chroot "$R" runuser -u postgres -- psql -X -v ON_ERROR_STOP=1 -c "$(quickstart_block "$1")" >"$QUICKSTART_DIR/$2"; }
	psql_standby() { "$lab_sh" client "$lab" chroot "$RB" runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
	sysctl_primary() { nsenter -t "$srv" -n cat "/proc/sys/$1"; }
	sysctl_standby() { "$lab_sh" client "$lab" cat "/proc/sys/$1"; }
	# newer_debian ROOT: the versions of postgresql-$V newer than the
	# installed one (ours) that apt lists there and that are not ours:
	# pg-mptcp-check warns about them, rightly
	newer_debian() {
		local inst v
		inst=$(chroot "$1" dpkg-query -W -f='${Version}' "postgresql-$V")
		chroot "$1" apt-cache policy "postgresql-$V" | sed -nE 's/^ +(\*\*\* )?([^ ]+) -?[0-9]+$/\2/p' |
			while read -r v; do
				case $v in *+mptcp*) continue ;; esac
				! dpkg --compare-versions "$v" gt "$inst" || echo "$v"
			done
	}
	# check_expect WHAT SIDE RC [PATTERN...]: pg-mptcp-check (the README's
	# block) on SIDE exits RC, and the lines it prints that are not OK are
	# exactly one per PATTERN (grep -E), besides the warning about a newer
	# Debian version where apt lists one (RC 0 is then 1).  The output stays
	# in check-SIDE-WHAT.out.
	local check_out
	check_expect() {
		local what=$1 side=$2 want=$3 rc=0 p allowed faults
		shift 3
		check_out=$QUICKSTART_DIR/check-$side-${what// /-}.out
		on_$side "$(quickstart_block pg-mptcp-check)" </dev/null >"$check_out" 2>&1 || rc=$?
		allowed='^$'
		if [ -n "$(newer_debian "$([ "$side" = primary ] && echo "$R" || echo "$RB")")" ]; then
			allowed="^WARNING: postgresql-$V: Debian serves "
			[ "$want" != 0 ] || want=1
		fi
		faults=$(grep -E '^(WARNING|CRITICAL|UNKNOWN): ' "$check_out" | grep -vE "$allowed" || true)
		for p in "$@"; do
			printf '%s\n' "$faults" | grep -qE "$p" || fail "pg-mptcp-check, $what, on the $side: no line like '$p' (output: $check_out)"
		done
		p=$(printf '%s\n' "$faults" | grep -c . || true)
		[ "$p" = $# ] || fail "pg-mptcp-check, $what, on the $side: $p finding(s) other than OK, expected $# (output: $check_out)"
		[ "$rc" = "$want" ] || fail "pg-mptcp-check, $what, on the $side: exit status $rc, expected $want (output: $check_out)"
		ok "pg-mptcp-check, $what, on the $side: exit $rc${*:+, naming: $(printf '%s\n' "$faults" | cut -c1-90 | paste -sd'|')}"
	}

	echo "# each-host, on the primary"
	install_on "$R" "$(quickstart_block each-host)" >"$QUICKSTART_DIR/primary-install.log" 2>&1 ||
		fail "the each-host block on the primary (log: $QUICKSTART_DIR/primary-install.log)"
	expect "primary: postgresql-$V from our repository" "$(chroot "$R" dpkg-query -W -f='${Version}' "postgresql-$V")" "$DEB_VERSION"
	shown "each-host, on the primary" each-host "$QUICKSTART_DIR/primary-install.log"
	start_pre "$R" primary >>"$QUICKSTART_DIR/primary-install.log" 2>&1 || fail "the drop-in's ExecStartPre on the primary (log: $QUICKSTART_DIR/primary-install.log)"
	on_primary "pg_ctlcluster $V main start" </dev/null >>"$QUICKSTART_DIR/primary-install.log" 2>&1 || fail "starting the primary's cluster"
	# The standby is a host that already runs Debian's PostgreSQL of this
	# major, where the suite has it (trixie has 17, not 18): installing ours
	# is then an upgrade or, where Debian's minor is newer, a downgrade.
	local debian_version
	install_on "$RB" "apt-get update -q" >"$QUICKSTART_DIR/standby-debian.log" 2>&1 || fail "apt-get update on the standby (log: $QUICKSTART_DIR/standby-debian.log)"
	debian_version=$(chroot "$RB" apt-cache policy "postgresql-$V" | awk '/Candidate:/ { print $2 }')
	if [ -n "$debian_version" ] && [ "$debian_version" != "(none)" ]; then
		echo "# Debian's postgresql-$V $debian_version on the standby first, as on a host that runs it"
		install_on "$RB" "apt-get install -y -q postgresql-$V" >>"$QUICKSTART_DIR/standby-debian.log" 2>&1 ||
			fail "installing Debian's postgresql-$V on the standby (log: $QUICKSTART_DIR/standby-debian.log)"
		expect "standby: Debian's postgresql-$V installed first" "$(chroot "$RB" dpkg-query -W -f='${Version}' "postgresql-$V")" "$debian_version"
	else
		echo "# Debian $DEB_SUITE has no postgresql-$V: the standby starts without PostgreSQL, as the primary does"
	fi
	echo "# each-host, on the standby"
	install_on "$RB" "$(quickstart_block each-host)" >"$QUICKSTART_DIR/standby-install.log" 2>&1 ||
		fail "the each-host block on the standby (log: $QUICKSTART_DIR/standby-install.log)"
	expect "standby: postgresql-$V from our repository" "$(chroot "$RB" dpkg-query -W -f='${Version}' "postgresql-$V")" "$DEB_VERSION"
	[ -s "$RB/usr/share/doc/postgresql-doc-$V/html/mptcpinfo.html" ] &&
		ok "standby: the HTML reference of mptcpinfo where README.md says" ||
		fail "standby: no /usr/share/doc/postgresql-doc-$V/html/mptcpinfo.html"
	expect "standby: libpq5 from our repository" "$(chroot "$RB" dpkg-query -W -f='${Version}' libpq5)" "$DEB_VERSION"
	start_pre "$RB" standby >>"$QUICKSTART_DIR/standby-install.log" 2>&1 || fail "the drop-in's ExecStartPre on the standby (log: $QUICKSTART_DIR/standby-install.log)"
	on_standby "pg_ctlcluster $V main start" </dev/null >>"$QUICKSTART_DIR/standby-install.log" 2>&1 || fail "starting the standby's cluster"
	echo "# each-host-settings, on the primary and on the standby (which preloads a library already: mptcpinfo is added to it)"
	chroot "$RB" pg_conftool "$V" main set shared_preload_libraries pg_stat_statements
	on_primary "$(quickstart_block each-host-settings)" </dev/null >"$QUICKSTART_DIR/primary-settings.log" 2>&1 ||
		fail "the each-host-settings block on the primary (log: $QUICKSTART_DIR/primary-settings.log)"
	on_standby "$(quickstart_block each-host-settings standby)" </dev/null >"$QUICKSTART_DIR/standby-settings.log" 2>&1 ||
		fail "the each-host-settings block on the standby (log: $QUICKSTART_DIR/standby-settings.log)"
	shown "each-host-settings, on the primary" each-host-settings "$QUICKSTART_DIR/primary-settings.log"
	# (run again, as a DBA may: it adds nothing twice)
	on_primary "$(quickstart_block each-host-settings)" </dev/null >"$QUICKSTART_DIR/primary-settings-again.log" 2>&1 ||
		fail "the each-host-settings block again on the primary (log: $QUICKSTART_DIR/primary-settings-again.log)"
	expect "each-host-settings run twice: pg_hba has the replication lines once, from A1 and A2" \
		"$(grep '^host replication replicator' "$R/etc/postgresql/$V/main/pg_hba.conf" | paste -sd'|')" \
		"host replication replicator 198.18.1.0/24 scram-sha-256|host replication replicator 198.18.2.0/24 scram-sha-256"
	echo "# pg-mptcp-mend-paths on both hosts, as its unit runs it"
	nsenter -t "$srv" -n chroot "$R" "${sh_env[@]}" /usr/sbin/pg-mptcp-mend-paths >"$QUICKSTART_DIR/primary-mend-paths.log" 2>&1 &
	QS_MENDERS="$!"
	"$lab_sh" client "$lab" chroot "$RB" "${sh_env[@]}" /usr/sbin/pg-mptcp-mend-paths >"$QUICKSTART_DIR/standby-mend-paths.log" 2>&1 &
	QS_MENDERS="$QS_MENDERS $!"
	local side own1 own2 g
	for side in primary standby; do
		if [ $side = primary ]; then own1=198.18.1.1 own2=198.18.2.1; else own1=198.18.1.2 own2=198.18.2.2; fi
		expect "$side: listen_mptcp" "$(psql_$side -c 'SHOW listen_mptcp')" on
		expect "$side: mptcpinfo preloaded" "$(psql_$side -c 'SHOW shared_preload_libraries')" "$([ $side = primary ] && echo mptcpinfo || echo pg_stat_statements,mptcpinfo)"
		expect "$side: listen_addresses names the host's addresses" "$(psql_$side -c 'SHOW listen_addresses')" "localhost,$own1,$own2"
		expect "$side: wal_sender_timeout, wal_receiver_timeout, wal_retrieve_retry_interval (guide/failover)" \
			"$(psql_$side -c "SELECT string_agg(setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN ('wal_sender_timeout', 'wal_receiver_timeout', 'wal_retrieve_retry_interval')")" "5000 1000 5000"
		g=
		for f in net/mptcp/blackhole_timeout net/mptcp/add_addr_timeout net/ipv4/tcp_retries2 net/ipv4/tcp_syn_retries; do
			g="$g $(sysctl_$side $f 2>/dev/null || echo none)"
		done
		expect "$side: the package's MPTCP sysctls set, TCP's the kernel's, in the host's namespace" "${g# }" "0 2 15 6"
		expect "$side: a signal endpoint on each address (paths.conf)" "$(if [ $side = primary ]; then nsenter -t "$srv" -n ip mptcp endpoint show; else "$lab_sh" client "$lab" ip mptcp endpoint show; fi | grep -c -e "^$own1 .*signal" -e "^$own2 .*signal" || true)" 2
	done
	echo "# primary"
	printf '%s\n%s\n' "$pw" "$pw" | on_primary "$(quickstart_block primary)" >"$QUICKSTART_DIR/primary.log" 2>&1 ||
		fail "the primary block (log: $QUICKSTART_DIR/primary.log)"
	shown "primary" primary "$QUICKSTART_DIR/primary.log"
	psql_primary -c "CREATE TABLE items AS SELECT g AS id, md5(g::text) AS t FROM generate_series(1, 100000) g"
	echo "# standby"
	printf '%s\n' "$pw" | on_standby "$(quickstart_block standby)" >"$QUICKSTART_DIR/standby.log" 2>&1 ||
		fail "the standby block (log: $QUICKSTART_DIR/standby.log)"
	local auto=$RB/var/lib/postgresql/$V/main/postgresql.auto.conf
	grep -q "mptcp=require" "$auto" && ok "standby: primary_conninfo has mptcp=require" ||
		fail "standby: primary_conninfo lacks mptcp=require"
	grep -q "host=''198.18.1.1,198.18.2.1''" "$auto" && ok "standby: primary_conninfo names the primary on both paths" ||
		fail "standby: primary_conninfo lacks the host list"
	grep -q "connect_timeout=2" "$auto" && ok "standby: primary_conninfo has connect_timeout=2" ||
		fail "standby: primary_conninfo lacks connect_timeout=2"
	! grep -q "password=" "$auto" && ok "standby: primary_conninfo has no password (.pgpass)" ||
		fail "standby: primary_conninfo has the password"
	expect "standby: .pgpass is postgres's, mode 600" "$(stat -c '%U %a' "$RB/var/lib/postgresql/.pgpass")" "postgres 600"
	expect "standby: in recovery" "$(psql_standby -c 'SELECT pg_is_in_recovery()')" t
	local sum_sql="SELECT count(*) || ' ' || md5(string_agg(id || ':' || t, ',' ORDER BY id)) FROM items" sum got=
	# standby_sum: the standby's checksum once it equals $sum, or as it is after $1 s
	standby_sum() {
		local i
		for i in $(seq 1 $(($1 * 5))); do
			got=$(psql_standby -c "$sum_sql" 2>/dev/null || true)
			[ "$got" != "$sum" ] || break
			sleep 0.2
		done
	}
	psql_primary -c "INSERT INTO items SELECT g, 'after the copy' FROM generate_series(100001, 100100) g"
	sum=$(psql_primary -c "$sum_sql")
	standby_sum 10
	expect "the standby replays the primary's rows, inserted after the copy (count, checksum)" "$got" "$sum"
	echo "# check (the README's query; the join subflow follows the connection by a few ms: 10 s at most)"
	local rows= walsender_sql="SELECT r.pid, r.client_addr, m.mptcp, m.subflows FROM pg_stat_replication r JOIN pg_stat_mptcp m USING (pid)"
	for _ in $(seq 1 50); do
		rows=$(psql_primary -F ' ' -c "$(quickstart_block check)")
		[ "$(echo "$rows" | awk '{ print $1, $2, $3, $4 }')" != "standby1 streaming t 2" ] || break
		sleep 0.2
	done
	echo "# $rows"
	expect "the README's check: standby1 streaming, mptcp, 2 subflows (one per path)" "$(echo "$rows" | awk '{ print $1, $2, $3, $4 }')" "standby1 streaming t 2"
	expect "the README's health check: no row" "$(psql_primary -c "$(quickstart_block health)")" ""
	psql_shown check check.out
	shown "check" check "$QUICKSTART_DIR/check.out"
	psql_shown health health.out
	shown "health" health "$QUICKSTART_DIR/health.out"
	local before after
	before=$(psql_primary -F ' ' -c "$walsender_sql")
	echo "# walsender before the cut: $before"
	expect "the walreceiver connected over path 1 (the host list's first address)" "$(echo "$before" | awk '{ print $2 }')" 198.18.1.2

	echo "# synchronous, on the primary"
	on_primary "$(quickstart_block synchronous)" </dev/null >"$QUICKSTART_DIR/synchronous.log" 2>&1 ||
		fail "the synchronous block (log: $QUICKSTART_DIR/synchronous.log)"
	local state=
	for _ in $(seq 1 50); do
		state=$(psql_primary -c "SELECT sync_state FROM pg_stat_replication")
		[ "$state" != sync ] || break
		sleep 0.2
	done
	expect "synchronous: the standby is the synchronous one" "$state" sync
	# (commits now wait for the standby: none may wait for good here)
	insert_rows() { timeout 60 nsenter -t "$srv" -n chroot "$R" runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO items SELECT g, '$3' FROM generate_series($1, $2) g"; }
	# subflows_until OP N S: the walsender's subflows once "subflows OP N"
	# holds, or as they are after S seconds; on path 1: its subflows there
	local subflows= on_path1=
	subflows_until() {
		for _ in $(seq 1 $(($3 * 5))); do
			subflows=$(psql_primary -c "SELECT subflows FROM pg_stat_replication JOIN pg_stat_mptcp USING (pid)")
			[ -z "$subflows" ] || ! [ "$subflows" "$1" "$2" ] || break
			sleep 0.2
		done
		on_path1=$(psql_primary -c "SELECT count(*) FROM pg_stat_replication JOIN pg_stat_mptcp_subflows USING (pid) WHERE local_addr = '198.18.1.1' AND established")
	}

	echo "# cut, on the standby (the README's blackhole route)"
	on_standby "$(quickstart_block cut standby)" </dev/null >"$QUICKSTART_DIR/cut.log" 2>&1 ||
		fail "the cut block (log: $QUICKSTART_DIR/cut.log)"
	insert_rows 100301 100400 "synchronous, path 1 cut" || fail "a synchronous commit with path 1 cut did not return within 60 s"
	sum=$(psql_primary -c "$sum_sql")
	standby_sum 30
	expect "cut: synchronous commits go on, the standby has the rows (count, checksum)" "$got" "$sum"
	subflows_until -eq 1 30
	expect "cut: the walsender's connection down to 1 subflow, none on path 1" "$subflows $on_path1" "1 0"
	expect "cut: still the same walsender" "$(psql_primary -F ' ' -c "$walsender_sql" | awk '{ print $1 }')" "$(echo "$before" | awk '{ print $1 }')"
	expect "cut: the README's health check shows the replica" "$(psql_primary -c "$(quickstart_block health)" | cut -d'|' -f2)" standby1
	psql_shown check cut-check.out
	shown "cut: check" "cut check" "$QUICKSTART_DIR/cut-check.out"
	check_expect "path 1 cut" primary 1 "^WARNING: $V/main: walsender standby1 \(198\.18\.1\.2\): streaming, sync, 1 subflow\(s\) for 2 paths"
	psql_shown health cut-health.out
	shown "cut: health" "cut health" "$QUICKSTART_DIR/cut-health.out"

	echo "# restore, on the standby"
	on_standby "$(quickstart_block restore standby)" </dev/null >"$QUICKSTART_DIR/restore.log" 2>&1 ||
		fail "the restore block (log: $QUICKSTART_DIR/restore.log)"
	subflows_until -ge 2 60
	[ "${subflows:-0}" -ge 2 ] && [ "$on_path1" -ge 1 ] && ok "restore: a subflow on path 1 again within 60 s (mend-paths; $subflows subflows)" ||
		fail "restore: no subflow on path 1 within 60 s ($subflows subflows, $on_path1 on path 1; logs: $QUICKSTART_DIR/*-mend-paths.log)"
	expect "restore: the README's health check: no row" "$(psql_primary -c "$(quickstart_block health)")" ""
	shown "restore: mend-paths on the primary" "restore mend-paths" "$QUICKSTART_DIR/primary-mend-paths.log"
	psql_shown check restore-check.out
	shown "restore: check" check "$QUICKSTART_DIR/restore-check.out"
	insert_rows 100401 100500 "synchronous, path 1 back" || fail "a synchronous commit after the restore did not return within 60 s"
	sum=$(psql_primary -c "$sum_sql")
	standby_sum 30
	expect "restore: the standby has the rows (count, checksum)" "$got" "$sum"
	local st
	for side in primary standby; do
		st=$(chroot "$R" "${sh_env[@]}" /usr/sbin/pg-mptcp-host-setup --status "$QS_CGROUP/$side" | awk '/subflows watched/ { print $1 }')
		[ "${st:-0}" -gt 0 ] && ok "$side: host-setup's program, on the cluster's cgroup, watched ${st} subflows" ||
			fail "$side: host-setup's program watched no subflow (--status: ${st:-nothing attached})"
	done

	echo "# pg-mptcp-check, the quick start's last step, on both hosts"
	check_expect "all in place" primary 0
	if [ -n "$(newer_debian "$R")" ]; then
		echo "# apt lists postgresql-$V $(newer_debian "$R" | paste -sd' '), newer than ours: the check warns (its first and last lines aside, the output README.md shows)"
		quickstart_output pg-mptcp-check | sed '1d;$d' >"$QUICKSTART_DIR/shown-pg-mptcp-check.txt"
		python3 "$TOP/tools/lib/shown_output.py" "$QUICKSTART_DIR/shown-pg-mptcp-check.txt" "$check_out" &&
			ok "pg-mptcp-check on the primary: the output README.md shows" ||
			fail "pg-mptcp-check on the primary: not the output README.md shows (got: $check_out)"
	else
		shown "pg-mptcp-check on the primary" pg-mptcp-check "$check_out"
	fi
	check_expect "all in place" standby 0
	# (a member of pg_monitor without root: the attachment from the status
	# file, which pg-mptcp-failover-status.timer's service writes)
	local status_unit=/usr/lib/systemd/system/pg-mptcp-failover-status.service
	local status_exec
	status_exec=$(sed -n 's/^ExecStart=//p' "$R$status_unit")
	[ -n "$status_exec" ] || fail "$status_unit has no ExecStart line"
	# shellcheck disable=SC2086 # the line's words
	chroot "$R" "${sh_env[@]}" $status_exec || [ $? = 1 ] || fail "$status_unit's ExecStart"
	local rc=0
	on_primary "runuser -u postgres -- pg-mptcp-check" </dev/null >"$QUICKSTART_DIR/check-primary-postgres.out" 2>&1 || rc=$?
	grep -q "^OK: $V/main: failover program on the postmaster's cgroup .*/run/pg-mptcp/failover-status" "$QUICKSTART_DIR/check-primary-postgres.out" &&
		[ "$rc" = "$(grep -qE '^(WARNING|CRITICAL|UNKNOWN)' "$QUICKSTART_DIR/check-primary-postgres.out" && echo 1 || echo 0)" ] &&
		! grep -qE '^(CRITICAL|UNKNOWN)' "$QUICKSTART_DIR/check-primary-postgres.out" &&
		ok "pg-mptcp-check as postgres (no root): the program's attachment from the status file, exit $rc" ||
		fail "pg-mptcp-check as postgres: exit $rc (output: $QUICKSTART_DIR/check-primary-postgres.out)"

	echo "# faults: pg-mptcp-check names each"
	chroot "$R" "${sh_env[@]}" /usr/sbin/pg-mptcp-host-setup --remove "$QS_CGROUP/primary"
	check_expect "program detached" primary 2 "^CRITICAL: $V/main: failover program not attached to the postmaster's cgroup /pg-mptcp-quickstart\.[0-9]+/primary: "
	start_pre "$R" primary >>"$QUICKSTART_DIR/faults.log" 2>&1 || fail "the drop-in's ExecStartPre on the primary, again (log: $QUICKSTART_DIR/faults.log)"
	check_expect "program attached again" primary 0
	local mender=${QS_MENDERS%% *}
	kill "$mender"
	for _ in $(seq 1 50); do kill -0 "$mender" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$mender" 2>/dev/null || fail "the primary's mend-paths (pid $mender) did not stop"
	check_expect "mend-paths stopped" primary 1 "^WARNING: pg-mptcp-mend-paths is not running: "
	nsenter -t "$srv" -n chroot "$R" "${sh_env[@]}" /usr/sbin/pg-mptcp-mend-paths >>"$QUICKSTART_DIR/primary-mend-paths.log" 2>&1 &
	QS_MENDERS="$! ${QS_MENDERS#* }"
	# (until the process is python's, past nsenter and chroot)
	for _ in $(seq 1 50); do
		tr '\0' ' ' <"/proc/${QS_MENDERS%% *}/cmdline" | grep -q '^[^ ]*python3 /usr/sbin/pg-mptcp-mend-paths' && break
		sleep 0.1
	done
	check_expect "mend-paths running again" primary 0
	echo "# a newer Debian minor in the archive (simulated: a repository of the test's with postgresql-$V $V.99-1): the check warns"
	local fake=$QUICKSTART_DIR/fake-debian
	rm -rf "$fake" "$R/srv/fake-debian"
	mkdir -p "$fake/pkg/DEBIAN" "$R/srv/fake-debian"
	printf 'Package: postgresql-%s\nVersion: %s.99-1\nArchitecture: all\nMaintainer: deb-test-quickstart <root@localhost>\nDescription: a newer Debian minor, simulated\n' "$V" "$V" >"$fake/pkg/DEBIAN/control"
	dpkg-deb --root-owner-group --build "$fake/pkg" "$R/srv/fake-debian/postgresql-${V}_$V.99-1_all.deb" >/dev/null
	(cd "$R/srv/fake-debian" && apt-ftparchive packages . >Packages 2>/dev/null)
	echo "deb [trusted=yes] file:/srv/fake-debian ./" >"$R/etc/apt/sources.list.d/fake-debian.list"
	chroot "$R" apt-get update -q -o Dir::Etc::sourcelist=sources.list.d/fake-debian.list -o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0 >>"$QUICKSTART_DIR/faults.log" 2>&1 || fail "apt-get update of the simulated archive (log: $QUICKSTART_DIR/faults.log)"
	rc=0
	on_primary pg-mptcp-check </dev/null >"$QUICKSTART_DIR/check-primary-newer.out" 2>&1 || rc=$?
	grep -qF "WARNING: postgresql-$V: Debian serves $V.99-1, newer than ours ($DEB_VERSION)" "$QUICKSTART_DIR/check-primary-newer.out" && [ "$rc" = 1 ] &&
		ok "pg-mptcp-check, a newer Debian minor: exit 1, naming postgresql-$V $V.99-1" ||
		fail "pg-mptcp-check, a newer Debian minor: exit $rc, no warning naming $V.99-1 (output: $QUICKSTART_DIR/check-primary-newer.out)"
	rm -rf "$R/etc/apt/sources.list.d/fake-debian.list" "$R/srv/fake-debian" "$R"/var/lib/apt/lists/_srv_fake-debian_* "$R"/var/cache/apt/*.bin
	[ -z "$(newer_debian "$R" | grep -Fx "$V.99-1" || true)" ] || fail "apt still lists the simulated $V.99-1"

	echo "# the standby restarted as at a reboot: MPTCP's limits and endpoints gone, pg-mptcp-paths.service sets them again"
	on_standby "pg_ctlcluster $V main stop" </dev/null >>"$QUICKSTART_DIR/reboot.log" 2>&1 || fail "stopping the standby's cluster"
	"$lab_sh" client "$lab" ip mptcp endpoint flush
	"$lab_sh" client "$lab" ip mptcp limits set subflows 0 add_addr_accepted 0
	# (and an endpoint that paths.conf does not say: pg-mptcp-paths changes it)
	"$lab_sh" client "$lab" ip mptcp endpoint add 198.18.2.2 dev cv2 subflow
	local unit=/usr/lib/systemd/system/pg-mptcp-paths.service exec_start
	exec_start=$(sed -n 's/^ExecStart=//p' "$RB$unit")
	[ -n "$exec_start" ] || fail "$unit has no ExecStart line"
	# (what systemd runs at boot, in the host's namespace)
	# shellcheck disable=SC2086 # the line's words
	"$lab_sh" client "$lab" chroot "$RB" "${sh_env[@]}" $exec_start >>"$QUICKSTART_DIR/reboot.log" 2>&1 || fail "$unit's ExecStart (log: $QUICKSTART_DIR/reboot.log)"
	expect "reboot: pg-mptcp-paths.service set the limits again" "$("$lab_sh" client "$lab" ip mptcp limits show | tr -s ' ' | sed 's/ $//')" "add_addr_accepted 4 subflows 4"
	expect "reboot: and a signal endpoint on each address" "$("$lab_sh" client "$lab" ip mptcp endpoint show | grep -c -e "^198.18.1.2 .*signal" -e "^198.18.2.2 .*signal" || true)" 2
	grep -q "^pg-mptcp-paths: endpoint 198.18.2.2 .*subflow.* changed to 198.18.2.2 dev cv2 signal" "$QUICKSTART_DIR/reboot.log" &&
		ok "reboot: pg-mptcp-paths changed the endpoint that differed from paths.conf" ||
		fail "reboot: pg-mptcp-paths did not say it changed 198.18.2.2's endpoint (log: $QUICKSTART_DIR/reboot.log)"
	start_pre "$RB" standby >>"$QUICKSTART_DIR/reboot.log" 2>&1 || fail "the drop-in's ExecStartPre on the standby, again"
	on_standby "pg_ctlcluster $V main start" </dev/null >>"$QUICKSTART_DIR/reboot.log" 2>&1 || fail "starting the standby's cluster again"
	subflows_until -ge 2 60
	expect "reboot: the walreceiver back, over MPTCP, a subflow per path (the limits are the standby's)" "${subflows:-none}" 2
	before=$(psql_primary -F ' ' -c "$walsender_sql")
	echo "# walsender after the restart: $before"
	insert_rows 100501 100600 "after the restart" || fail "a synchronous commit after the standby's restart did not return within 60 s"
	sum=$(psql_primary -c "$sum_sql")
	standby_sum 30
	expect "reboot: the standby has the rows (count, checksum)" "$got" "$sum"

	echo "# path 1 cut for good, at the lab's router"
	"$lab_sh" blackhole "$lab" 1
	insert_rows 100101 100200 "after the cut" || fail "a commit with path 1 cut at the router did not return within 60 s"
	sum=$(psql_primary -c "$sum_sql")
	standby_sum 30
	expect "path 1 cut: the same connection keeps replicating (count, checksum)" "$got" "$sum"
	expect "path 1 cut: still the same walsender" "$(psql_primary -F ' ' -c "$walsender_sql" | awk '{ print $1 }')" "$(echo "$before" | awk '{ print $1 }')"

	echo "# the walsender terminated: the walreceiver connects again, path 1 still cut"
	psql_primary -c "SELECT pg_terminate_backend(pid) FROM pg_stat_replication" >/dev/null
	after=
	for _ in $(seq 1 300); do
		after=$(psql_primary -F ' ' -c "$walsender_sql")
		[ -z "$after" ] || [ "$(echo "$after" | awk '{ print $1 }')" = "$(echo "$before" | awk '{ print $1 }')" ] || break
		sleep 0.2
	done
	echo "# walsender after the reconnect: $after"
	[ -n "$after" ] && [ "$(echo "$after" | awk '{ print $1 }')" != "$(echo "$before" | awk '{ print $1 }')" ] &&
		ok "a new replication connection within 60 s" || fail "no new replication connection within 60 s"
	expect "the new connection: over path 2 (198.18.2.2), MPTCP" "$(echo "$after" | awk '{ print $2, $3 }')" "198.18.2.2 t"
	insert_rows 100201 100300 "after the reconnect" || fail "a commit after the reconnect did not return within 60 s"
	sum=$(psql_primary -c "$sum_sql")
	standby_sum 30
	expect "after the reconnect: the standby's rows equal the primary's (count, checksum)" "$got" "$sum"
	expect "600 rows after the copy, none lost" "$(psql_standby -c "SELECT count(*) FROM items WHERE id > 100000")" 600

	echo "# guide/going-back.md's steps for pg-mptcp-failover on both hosts: no program, endpoint, limit or sysctl of ours left"
	local attached fresh
	# (what the package's prerm has systemd do: mend-paths stops)
	# shellcheck disable=SC2086
	kill $QS_MENDERS 2>/dev/null || true
	QS_MENDERS=
	on_primary "$(QS_PAGE=$TOP/guide/going-back.md quickstart_block "going-back failover")" </dev/null >"$QUICKSTART_DIR/going-back-primary.log" 2>&1 ||
		fail "guide/going-back.md's block on the primary (log: $QUICKSTART_DIR/going-back-primary.log)"
	on_standby "$(QS_PAGE=$TOP/guide/going-back.md quickstart_block "going-back failover" standby)" </dev/null >"$QUICKSTART_DIR/going-back-standby.log" 2>&1 ||
		fail "guide/going-back.md's block on the standby (log: $QUICKSTART_DIR/going-back-standby.log)"
	attached=
	for h in primary standby; do
		bpftool cgroup show "$QS_CGROUP/$h" 2>/dev/null | grep -q pg_mptcp_ && attached="$attached $h"
	done
	expect "after going back: the program attached to neither host's cgroup" "$attached" ""
	# (a new network namespace has the kernel's own limits and sysctls)
	fresh="$(unshare -n ip mptcp limits show | tr -s ' ' | sed 's/ $//') $(unshare -n cat /proc/sys/net/mptcp/add_addr_timeout) $(unshare -n cat /proc/sys/net/mptcp/blackhole_timeout 2>/dev/null || echo none)"
	for side in primary standby; do
		if [ $side = primary ]; then h=$R; else h=$RB; fi
		expect "after going back, $side: no MPTCP endpoint" "$(if [ $side = primary ]; then nsenter -t "$srv" -n ip mptcp endpoint show; else "$lab_sh" client "$lab" ip mptcp endpoint show; fi)" ""
		expect "after going back, $side: the kernel's own limits, add_addr_timeout and blackhole_timeout" \
			"$(if [ $side = primary ]; then nsenter -t "$srv" -n ip mptcp limits show; else "$lab_sh" client "$lab" ip mptcp limits show; fi | tr -s ' ' | sed 's/ $//') $(sysctl_$side net/mptcp/add_addr_timeout) $(sysctl_$side net/mptcp/blackhole_timeout 2>/dev/null || echo none)" "$fresh"
		expect "after going back, $side: pg-mptcp-failover purged, its files gone" \
			"$({ chroot "$h" dpkg-query -W -f='${db:Status-Abbrev}' pg-mptcp-failover 2>/dev/null || true; } | tr -d ' ' | sed 's/^[up]n$//')$(ls -d "$h/etc/pg-mptcp" "$h/run/pg-mptcp" "$h/usr/lib/sysctl.d/60-pg-mptcp-failover.conf" "$h/usr/lib/systemd/system/postgresql@.service.d/pg-mptcp-failover.conf" 2>/dev/null || true)" ""
	done
	echo "deb-test-quickstart: PASS ($n checks: README.md's quick start, $PG_SOURCE_PACKAGE $DEB_VERSION, Debian $DEB_SUITE)"
}

quickstart_cleanup() {
	local R=$1 lab=$2 srv=$3 h
	# shellcheck disable=SC2086
	[ -z "${QS_MENDERS:-}" ] || kill $QS_MENDERS 2>/dev/null || true
	"$TOP/src/test/mptcp/lab.sh" client "$lab" chroot "$QUICKSTART_DIR/standby" pg_ctlcluster "$MAJOR_NUMBER" main stop -m immediate >/dev/null 2>&1 || true
	nsenter -t "$srv" -n chroot "$R" pg_ctlcluster "$MAJOR_NUMBER" main stop -m immediate >/dev/null 2>&1 || true
	nsenter -t "$srv" -n "$TOP/src/test/mptcp/lab.sh" down "$lab" >/dev/null 2>&1 || true
	kill "$srv" 2>/dev/null || true
	if [ -n "${QS_CGROUP:-}" ]; then
		for h in primary standby; do
			# (a process left in it keeps the cgroup)
			chroot "$R" /usr/sbin/pg-mptcp-host-setup --remove "$QS_CGROUP/$h" >/dev/null 2>&1 || true
			rmdir "$QS_CGROUP/$h" 2>/dev/null || true
		done
		rmdir "$QS_CGROUP" 2>/dev/null || true
	fi
}
