#!/bin/bash
# The guest side of "make check-kernels" (tools/lib/kernels.sh): runs as root
# inside a virtme-ng guest booted with one of Debian's kernels and this
# machine's root file system (read-only; /tmp private; RUN is the one
# writable directory, shared with the host).  Not sourced by tools/workspace.
# The tests' data directories are in the guest's private /tmp: on RUN, a 9p
# share, every file belongs to the host's qemu (root), so the test user
# could not use the directories it made (initdb's 0700).
#
#   kernels-guest.sh RUN PREFIX TREE TEST_USER TEST...
#
# Root sets up the lab's part that needs the initial namespace (modules),
# then each TEST (mptcp/NNN_name or mptcpinfo/NNN_name, the TAP scripts of
# TREE's src/test/mptcp and contrib/mptcpinfo) runs with prove as TEST_USER
# against the installation PREFIX, with PG_TEST_EXTRA=mptcp.  The tests that
# build a lab re-execute themselves in an unprivileged user + network
# namespace, where the test script holds CAP_NET_ADMIN for ip and tc; the
# servers must not: every pg_ctl the tests run is a wrapper that clears the
# inheritable and ambient capabilities (setpriv), so pg_ctl and postgres
# start with no capability at all, as Debian's postgres user would.  Each
# server start records its capability sets (RUN/server-caps).
#
# Writes RUN/results (one line a test: "TEST RESULT SECONDS PASSED FAILED
# [FAILED-SUBTEST-NAMES | SKIP-REASON]"), RUN/TEST.tap (prove's verbose
# output), RUN/TEST.log/ (the test's logs, servers' included), RUN/sockopt
# (which socket options an MPTCP socket refuses), RUN/kernel.
set -uo pipefail
run=$1 prefix=$2 tree=$3 user=$4
shift 4
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
cd "$run" || exit 1

{
	echo "release $(uname -r)"
	echo "version $(uname -v)"
	echo "mptcp.enabled $(cat /proc/sys/net/mptcp/enabled 2>/dev/null || echo absent)"
	echo "unprivileged_userns_clone $(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo absent)"
} >kernel

# Root's part of the lab: the modules the tests' namespaces use, loaded in
# the initial namespace (an unprivileged user namespace cannot load them).
# (a kernel without modules, kernel-compare's, has them built in)
[ ! -e /proc/modules ] ||
	for m in mptcp_diag inet_diag tcp_diag veth bridge sch_tbf sch_htb sch_prio cls_u32 tcp_bbr; do
		modprobe -q "$m" 2>/dev/null || echo "modprobe $m failed" >>kernel
	done

# The server-side wrapper: pg_ctl without capabilities.
work=/tmp/check-kernels
rm -rf "$work"
mkdir -p "$work/home"
wrap=$work/nocaps-bin
mkdir -p "$wrap"
cat >"$wrap/pg_ctl" <<EOF
#!/bin/sh
# pg_ctl, and so postgres, with no capabilities (ambient and inheritable
# cleared: an unprivileged process execs pg_ctl with none).
exec setpriv --inh-caps=-all --ambient-caps=-all -- sh -c '
	echo "\$(grep -E "^Cap(Eff|Prm|Amb)" /proc/self/status | tr -s "\t\n" "  ") pg_ctl \$*" >>"$work/server-caps"
	exec "$prefix/bin/pg_ctl" "\$@"' pg_ctl "\$@"
EOF
chmod 755 "$wrap/pg_ctl"
chown -R "$user:" "$work"

uid=$(id -u "$user")
gid=$(id -g "$user")
libdir=$("$prefix/bin/pg_config" --libdir)
pgxs=$("$prefix/bin/pg_config" --pgxs)
as_user() {
	setpriv --reuid="$uid" --regid="$gid" --init-groups --inh-caps=-all -- \
		env -i PATH="$wrap:$prefix/bin:$PATH" HOME="$work/home" LANG=C.UTF-8 \
		LD_LIBRARY_PATH="$libdir" PG_REGRESS="$(dirname "$pgxs")/../test/regress/pg_regress" \
		PG_TEST_EXTRA=mptcp PG_TEST_TIMEOUT_DEFAULT="${PG_TEST_TIMEOUT_DEFAULT:-600}" \
		with_ssl=openssl "$@"
}

# One initdb for every test, as meson's "setup" suite makes it: the tests'
# nodes copy it (PostgreSQL 17's Cluster.pm and later) instead of running
# initdb each, the most expensive step in an emulated guest (60-90 s).
template=
if grep -q INITDB_TEMPLATE "$tree/src/test/perl/PostgreSQL/Test/Cluster.pm" 2>/dev/null; then
	if as_user initdb --auth trust --no-sync --no-instructions --lc-messages=C --no-clean \
		"$work/initdb-template" >"$run/initdb-template.log" 2>&1; then
		template=$work/initdb-template
	else
		echo "initdb template failed (initdb-template.log): every node runs initdb" >>kernel
	fi
fi

# Which socket options an MPTCP socket refuses (setsockopt), for this user
# without capabilities: on a fresh socket, and on both ends of an MPTCP
# connection over loopback (what the server and libpq set them on).
as_user perl -MSocket=:all -e '
	my %opt = (SO_KEEPALIVE => [SOL_SOCKET, SO_KEEPALIVE], TCP_NODELAY => [IPPROTO_TCP, 1],
		TCP_KEEPIDLE => [IPPROTO_TCP, 4], TCP_KEEPINTVL => [IPPROTO_TCP, 5],
		TCP_KEEPCNT => [IPPROTO_TCP, 6], TCP_USER_TIMEOUT => [IPPROTO_TCP, 18]);
	sub mptcp { socket(my $s, AF_INET, SOCK_STREAM, 262) or die "MPTCP socket: $!\n"; $s }
	sub probe {
		my ($what, $s) = @_;
		my @bad;
		for my $n (sort keys %opt) {
			my ($lvl, $o) = @{ $opt{$n} };
			setsockopt($s, $lvl, $o, $n eq "TCP_USER_TIMEOUT" ? 9000 : 1) or push @bad, "$n ($!)";
		}
		printf "%s refused: %s\n", $what, @bad ? join(", ", @bad) : "none";
	}
	probe("fresh", mptcp());
	my $l = mptcp();
	setsockopt($l, SOL_SOCKET, SO_REUSEADDR, 1);
	bind($l, pack_sockaddr_in(0, inet_aton("127.0.0.1"))) or die "bind: $!";
	listen($l, 5) or die "listen: $!";
	my $c = mptcp();
	connect($c, getsockname($l)) or die "connect: $!";
	accept(my $a, $l) or die "accept: $!";
	probe("client", $c);
	probe("accepted", $a);
' >sockopt 2>&1

: >results
for t in "$@"; do
	case $t in
	mptcp/*) dir=$tree/src/test/mptcp ;;
	mptcpinfo/*) dir=$tree/contrib/mptcpinfo ;;
	*) echo "$t UNKNOWN 0 0 0" >>results; continue ;;
	esac
	name=${t#*/}
	out=$run/${t//\//_}
	tw=$work/${t//\//_}
	mkdir -p "$tw" && chown "$user:" "$tw"
	start=$(date +%s)
	# (PostgreSQL 15's test modules take TESTDIR, and make tmp_check/log in it)
	testdir=
	grep -q TESTLOGDIR "$tree/src/test/perl/PostgreSQL/Test/Utils.pm" || testdir=TESTDIR=$tw
	# (the log is copied to RUN every 20 s: a test that hangs can be read
	# from the host while it does.  Not written there: in RUN, a 9p mount,
	# what the server creates belongs to root, and the test cannot read it.)
	mkdir -p "$out.log"
	logdir=$tw/log
	[ -z "$testdir" ] || logdir=$tw/tmp_check/log
	(while sleep 20; do cp -r "$logdir/." "$out.log/" 2>/dev/null; done) &
	log_copier=$!
	(cd "$dir" && as_user TESTDATADIR="$tw/tmp_check" TESTLOGDIR="$tw/log" $testdir \
		${template:+INITDB_TEMPLATE=$template} timeout "${KERNEL_TEST_TIMEOUT:-1800}" prove -v -I "$tree/src/test/perl" -I "$dir/t" "t/$name.pl") \
		>"$out.tap" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	kill "$log_copier" 2>/dev/null
	wait "$log_copier" 2>/dev/null
	cp -r "$logdir/." "$out.log/" 2>/dev/null
	rm -rf "$tw"
	passed=$(grep -c '^ok ' "$out.tap")
	failed=$(grep -c '^not ok ' "$out.tap")
	if grep -q '^1\.\.0 # SKIP' "$out.tap"; then
		result=SKIP
	elif [ $rc -eq 0 ]; then
		result=PASS
	elif [ $rc -eq 124 ]; then
		result=TIMEOUT
	else
		result=FAIL
	fi
	# the names of the failed subtests, without their numbers
	# (for a skipped test: the reason)
	names=$(sed -n 's/^not ok [0-9]* - //p' "$out.tap" | paste -sd '|')
	[ "$result" != SKIP ] || names=$(sed -n 's/^1\.\.0 # SKIP *//p' "$out.tap" | head -1)
	echo "$t $result $secs $passed $failed $names" >>results
done
cp "$work/server-caps" "$run/server-caps" 2>/dev/null
echo done >finished
