# shellcheck shell=bash
# check and check-all: the test suites and the series checks.
# Part of tools/workspace (sourced by it; see that file for the layout).

# The deliberate suite list: the core regression suite, our suites, and the
# upstream suites our patches touch (libpq, pg_basebackup, postmaster).
check_suites() {
	# (CHECK_SUBSET=1, check-all's older majors: the transport suite and
	# mptcpinfo's, what differs from major to major)
	[ -n "${CHECK_SUBSET:-}" ] || echo regress libpq pg_basebackup postmaster
	echo setup mptcp
	[ -d "$TREE/contrib/mptcpinfo" ] && echo mptcpinfo
	return 0
}

# Recovery's streaming-replication tests (the walreceiver is a libpq
# client): for the git majors, as a committer would run them.
check_tests() {
	[ "$SOURCE_KIND" = git ] || return 0
	echo recovery/001_stream_rep recovery/004_timeline_switch recovery/007_sync_rep
}

# test_results LOG [STEPS]: a meson testlog.json plus series checks (lines
# "name OK|FAIL seconds"): "N passed, N failed (names), N skipped", the
# failed ones also on stderr; fails if any failed.
test_results() {
	perl -MJSON::PP -e '
		my ($log, $steps) = @ARGV;
		my ($p, $f, $s) = (0, 0, 0);
		my @bad;
		if (open(my $fh, "<", $log)) {
			while (<$fh>) {
				my $t = decode_json($_); my $r = $t->{result};
				if ($r eq "OK" || $r eq "EXPECTEDFAIL") { $p++ }
				elsif ($r eq "SKIP") { $s++ }
				else {
					# its first failing TAP line says which check
					my ($why) = ($t->{stdout} // "") =~ /^((?:not ok|Bail out!).{0,120})/m;
					$f++; push @bad, "$t->{name} ($r" . ($why ? ": $why" : "") . ")";
				}
			}
		} else { $f++; push @bad, "meson test (no results)" }
		if (open(my $fh, "<", $steps)) {
			while (<$fh>) {
				my ($name, $r, $secs, @why) = split;
				print STDERR "series check $name: $r ($secs s)\n";
				if ($r eq "OK") { $p++ } elsif ($r eq "SKIP") { $s++ }
				else { $f++; push @bad, "series check $name" . (@why ? ": @why" : "") }
			}
		}
		print STDERR "failed: $_\n" for @bad;
		# the names on the summary line too: CI shows only the last lines
		printf "%d passed, %d failed%s, %d skipped\n", $p, $f,
			(@bad ? " (" . join(", ", @bad) . ")" : ""), $s;
		exit($f ? 1 : 0);' "$1" "${2:-/dev/null}"
}

# meson's results plus the series checks
summarize_tests() {
	test_results "$BUILD/meson-logs/testlog.json" "$WORKDIR/series-checks" | tee "$WORKDIR/check-summary"
}

# Run one series check (a cmd_* function), recording its result and time
# for the summary instead of stopping.
series_check() {
	local name=$1 fn=$2 start rc=0
	case " ${SERIES_CHECKS_SKIP:-} " in
	*" $name "*)
		note "series check: $name: not run (SERIES_CHECKS_SKIP)"
		echo "$name SKIP 0" >>"$WORKDIR/series-checks"
		return 0 ;;
	esac
	start=$(date +%s)
	note "series check: $name"
	("$fn") >"$WORKDIR/check-$name.log" 2>&1 || rc=$?
	if [ $rc -eq 0 ]; then
		echo "$name OK $(($(date +%s) - start))" >>"$WORKDIR/series-checks"
	elif [ $rc -eq 77 ]; then
		tail -1 "$WORKDIR/check-$name.log" >&2
		echo "$name SKIP $(($(date +%s) - start))" >>"$WORKDIR/series-checks"
	else
		tail -30 "$WORKDIR/check-$name.log" >&2
		# why, for the summary line: the first failing test, else the last line
		local why
		why=$(grep -m1 -E '^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT|ERROR) ' "$WORKDIR/check-$name.log" ||
			grep -v '^[[:space:]]*$' "$WORKDIR/check-$name.log" | tail -1) || true
		echo "$name FAIL $(($(date +%s) - start)) $(printf '%s' "$why" | tr -s ' \t' '  ' | cut -c1-160)" >>"$WORKDIR/series-checks"
	fi
}

# The threads "export" writes (EXPORT_SPLIT, master): each applies with
# "git am" to the pinned upstream on top of the threads before it, builds
# with its docs, and passes the test suites its files belong to, as a
# reviewer of that thread would run them.
cmd_verify_export() {
	[ -n "${EXPORT_SPLIT:-}" ] || { echo "$PG_MAJOR is exported as one thread (no EXPORT_SPLIT)"; return 0; }
	local dir=$WORKDIR/verify-export part name n patches
	local log=$dir/build/meson-logs/testlog.json
	export PG_TEST_EXTRA=${PG_TEST_EXTRA-mptcp}
	rm -rf "$dir/threads"
	# As on a fresh machine: the tree owned by another user, and no git
	# config of the user's to trust it (git 2.39: "dubious ownership").
	is_root && chown -R "$TEST_USER:" "$TREE"
	mkdir -p "$dir"
	USER_GITCONFIG=/dev/null PG_MAJOR=$PG_MAJOR WORKDIR=$WORKDIR EXPORT_DIR=$dir/threads \
		"$TOP/tools/workspace" export >"$dir/export.log" 2>&1 ||
		{ cat "$dir/export.log"; die "verify-export: export failed on a tree owned by $(stat -c %U "$TREE") with no git config of the user's"; }
	make_upstream_commit "$dir/pg"
	own_workspace
	for part in $EXPORT_SPLIT; do
		name=${part%%:*}
		patches=($(ls "$dir/threads/$name"/*.patch | grep -v -e '-0000-cover-letter.patch$'))
		# (EXPORT_VERIFY_EACH: threads whose every patch is built and
		# tested on its own, on top of the ones before it)
		if grep -qw -- "$name" <<<"${EXPORT_VERIFY_EACH:-}"; then
			for n in "${!patches[@]}"; do
				verify_export_step "$name" "$name patch $((n + 1))" "${patches[n]}"
			done
		else
			verify_export_step "$name" "thread $name" "${patches[@]}"
		fi
	done
}

# verify_export_step THREAD LABEL PATCH...: "git am" the patches onto
# $dir/pg, build with the docs, and run the suites of the files they touch.
verify_export_step() {
	local name=$1 label=$2 s results suites
	shift 2
	(cd "$dir/pg" && git -c safe.directory='*' -c user.name=verify -c user.email=verify@localhost \
		am -q --no-3way "$@") ||
		die "verify-export: $label does not apply with git am"
	is_root && chown -R "$TEST_USER:" "$dir"
	if [ ! -f "$dir/build/build.ninja" ]; then
		as_tester meson setup "$dir/build" "$dir/pg" "${MESON_OPTS[@]}" -Ddocs=enabled \
			-DPG_TEST_EXTRA="$PG_TEST_EXTRA" >"$dir/setup.log" 2>&1 ||
			{ tail -20 "$dir/setup.log"; die "verify-export: meson setup failed"; }
	fi
	as_tester ninja -C "$dir/build" all doc/src/sgml/postgres-full.xml >"$dir/ninja-$name.log" 2>&1 ||
		{ tail -20 "$dir/ninja-$name.log"; die "verify-export: $label does not build"; }
	# (the suites of the files its patches touch)
	suites=(--suite setup)
	for s in mptcp mptcpinfo libpq; do
		grep -q -e "^+++ b/src/test/$s/" -e "^+++ b/contrib/$s/" -e "^+++ b/src/interfaces/$s/" "$@" &&
			suites+=(--suite "$s")
	done
	[ "$name" != monitoring ] || [ "$(ls "$dir/pg/contrib/mptcpinfo"/mptcpinfo--*.sql | wc -l)" = 1 ] ||
		die "verify-export: the monitoring thread has more than one SQL script"
	rm -f "$log"
	as_tester meson test -C "$dir/build" --no-rebuild --print-errorlogs "${suites[@]}" >"$dir/test-$name.log" 2>&1 || true
	results=$(test_results "$log") && [[ $results != "0 passed,"* ]] ||
		{ grep -E '^ *[0-9]+/[0-9]+ ' "$dir/test-$name.log" | grep -v ' OK ' | head; die "verify-export: $label fails its tests"; }
	echo "$label: $# patches, tests $results"
}

# "make install" gives the production build: -O2 and no assertions.
cmd_verify_install() {
	cmd_install >/dev/null
	local cflags dir assertions o2_from="pg_config --cflags has -O2"
	cflags=$(as_tester "$PREFIX/bin/pg_config" --cflags)
	local commands=$RELEASE_BUILD/compile_commands.json
	if [ -f "$commands" ] && ! grep -q cflags_builtin "$TREE/meson.build"; then
		# (PostgreSQL 16's pg_config does not show meson's own flags, such
		# as -O2: that came in 17, commit 3482bab5e3.  The compiler's
		# command lines do.)
		grep -q '"command"' "$commands" && ! grep '"command"' "$commands" | grep -qv -- ' -O2 ' &&
			cflags="$cflags -O2" && o2_from="every compiler command of the release build has -O2 (pg_config shows no -O flags here)"
	fi
	grep -qw -- -O2 <<<"$cflags" || die "pg_config --cflags of $PREFIX has no -O2: $cflags"
	dir=$(mktemp -d "$WORKDIR/verify-install.XXXXXX")
	is_root && chown "$TEST_USER:" "$dir"
	as_tester "$PREFIX/bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
	assertions=$(as_tester "$PREFIX/bin/postgres" -D "$dir/data" -C debug_assertions)
	rm -rf "$dir"
	[ "$assertions" = off ] || die "the installed server has debug_assertions = $assertions"
	echo "install: $o2_from, debug_assertions = off"
}

# README.mptcp's "Try it in network namespaces" works: bench/try-it.sh in a namespace.
cmd_verify_guide() {
	cmd_install >/dev/null
	local uid gid
	if is_root; then uid=$(id -u "$TEST_USER") gid=$(id -g "$TEST_USER"); else uid=$(id -u) gid=$(id -g); fi
	(cd "$TOP" && as_tester unshare -Un "--map-user=$uid" "--map-group=$gid" --keep-caps \
		bash bench/try-it.sh "$PREFIX/bin")
}

# The second work tree of patch-builds, $WORKDIR/verify/pg, for the test
# user.  (verify/pg and verify/build sit like pg/ and build/: same relative
# paths, so ccache hits wherever a commit's sources equal the final ones)
patch_builds_worktree() {
	mkdir -p "$WORKDIR/verify"
	own_workspace
	if [ ! -e "$WORKDIR/verify/pg/.git" ]; then
		rm -rf "$WORKDIR/verify/pg"
		g worktree prune
		g worktree add -q --detach "$WORKDIR/verify/pg" upstream
	fi
	is_root && chown -R "$TEST_USER:" "$WORKDIR/verify"
}

# patch_builds_checkout COMMIT: that commit in the second work tree
patch_builds_checkout() {
	git -c safe.directory='*' -C "$WORKDIR/verify/pg" checkout -q --detach "$1"
	is_root && chown -R "$TEST_USER:" "$WORKDIR/verify/pg"
}

# Each patch in order builds on its own: a second work tree moved from
# commit to commit, built incrementally.
cmd_verify_patch_builds() {
	! uses_autoconf || { autoconf_verify_patch_builds; return; }
	local wt=$WORKDIR/verify/pg bd=$WORKDIR/verify/build c n=0
	patch_builds_worktree
	for c in $(g rev-list --reverse upstream..HEAD); do
		n=$((n + 1))
		patch_builds_checkout "$c"
		if [ ! -f "$bd/build.ninja" ]; then
			as_tester meson setup "$bd" "$wt" "${MESON_OPTS[@]}" >/dev/null ||
				die "patch $n ($(g log -1 --format=%s "$c")): meson setup failed"
		fi
		as_tester ninja -C "$bd" >"$WORKDIR/verify/ninja-$n.log" 2>&1 ||
			{ tail -20 "$WORKDIR/verify/ninja-$n.log"; die "patch $n ($(g log -1 --format=%s "$c")) does not build"; }
		if [ "$SOURCE_KIND" = git ]; then
			# the series for review: each patch's docs are valid on their own
			as_tester meson configure "$bd" -Ddocs=enabled >/dev/null
			as_tester ninja -C "$bd" doc/src/sgml/postgres-full.xml >>"$WORKDIR/verify/ninja-$n.log" 2>&1 ||
				{ tail -20 "$WORKDIR/verify/ninja-$n.log"; die "patch $n ($(g log -1 --format=%s "$c")): the docs do not build"; }
		fi
		echo "patch $n builds: $(g log -1 --format=%s "$c")"
	done
}

# configure_tree DIR [VAR=VALUE...] [OPTION...]: the work tree's HEAD in
# DIR (emptied first), configured for autoconf as the test user, with the
# features both autoconf checks leave out.
configure_tree() {
	local dir=$1 env=()
	shift
	while [ $# -gt 0 ] && [[ $1 == ac_cv_*=* ]]; do env+=("$1"); shift; done
	rm -rf "$dir"
	mkdir -p "$dir"
	g archive HEAD | tar -x -C "$dir"
	is_root && chown -R "$TEST_USER:" "$dir"
	(cd "$dir" && as_tester env "${env[@]}" ./configure --without-icu --without-readline --without-zlib "$@" \
		>configure.out 2>&1) ||
		{ tail -20 "$dir/configure.out"; die "configure failed"; }
}

# The autoconf build: configure defines USE_MPTCP on Linux.  (The code
# under USE_MPTCP is compiled by the meson builds; what autoconf adds is the
# decision and the Makefiles, which verify-portability builds in full.)
cmd_verify_autoconf() {
	local dir=$WORKDIR/verify/autoconf
	configure_tree "$dir"
	grep -q '^#define USE_MPTCP 1' "$dir/src/include/pg_config.h" ||
		die "configure did not define USE_MPTCP on Linux"
	echo "configure: USE_MPTCP 1 ($(grep -m1 'Multipath TCP' "$dir/configure.out"))"
	# configure and pg_config.h.in are what autoconf 2.69 (the version
	# PostgreSQL requires) makes of configure.ac.  (Debian's 2.69 writes
	# LARGE_OFF_T in another form than the GNU release upstream uses.)
	rm -rf "$dir"
	mkdir -p "$dir"
	g archive HEAD | tar -x -C "$dir"
	cp "$dir/src/include/pg_config.h.in" "$dir/pg_config.h.in.ours"
	(cd "$dir" && autoconf2.69 -o configure.regen && autoheader2.69) ||
		die "autoconf2.69 failed: run 'make deps PG_MAJOR=$PG_MAJOR' as root"
	diff <(grep -v LARGE_OFF_T "$dir/configure") <(grep -v LARGE_OFF_T "$dir/configure.regen") ||
		die "configure is not what autoconf 2.69 makes of configure.ac (diff above)"
	diff "$dir/pg_config.h.in.ours" "$dir/src/include/pg_config.h.in" ||
		die "pg_config.h.in is not what autoheader 2.69 makes of configure.ac (diff above)"
	echo "configure and pg_config.h.in: as autoconf 2.69 makes them"
	rm -rf "$dir"
}

# A build without MPTCP support, as on macOS, the BSDs and Windows:
# configure is told so through its cache variable (pgac_cv_mptcp=no, what
# it finds on every system but Linux).  The whole tree
# (autoconf, so its Makefiles are checked too) compiles with -Werror, and
# the installed server and libpq behave as documented: listen_mptcp = on is
# refused at start, mptcp=prefer connects over TCP without a word,
# mptcp=require fails clearly, and mptcpinfo's views are empty.
cmd_verify_portability() {
	local dir=$WORKDIR/verify/portability port=$((54300 + MAJOR_NUMBER)) cc=gcc
	command -v ccache >/dev/null && cc="ccache gcc"
	rm -rf "$dir"
	mkdir -p "$dir"
	is_root && chown "$TEST_USER:" "$dir"
	configure_tree "$dir/src" pgac_cv_mptcp=no --prefix="$dir/install" CC="$cc" CFLAGS=-O0
	! grep -q '^#define USE_MPTCP' "$dir/src/src/include/pg_config.h" ||
		die "configure still defines USE_MPTCP"
	(cd "$dir/src" && as_tester make -s -j"$(nproc)" COPT=-Werror install >make.out 2>&1 &&
		as_tester make -s -C contrib/mptcpinfo COPT=-Werror install >>make.out 2>&1) ||
		{ grep -E -A5 'error|warning' "$dir/src/make.out" | tail -40; die "the build without MPTCP support failed (-Werror)"; }
	echo "build without MPTCP support: no warnings (-Werror), installed"
	local bin=$dir/install/bin data=$dir/data out
	as_tester "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
	printf "listen_addresses = '127.0.0.1'\nport = $port\nunix_socket_directories = '$dir'\n" >>"$data/postgresql.conf"
	out=$(as_tester timeout 60 "$bin/postgres" -D "$data" -c listen_mptcp=on 2>&1) &&
		die "the server started with listen_mptcp = on in a build without MPTCP"
	grep -q 'FATAL:  MPTCP is not supported by this build' <<<"$out" ||
		die "listen_mptcp = on: not the expected refusal: $out"
	echo "listen_mptcp = on: refused at start: $(grep -m1 'MPTCP' <<<"$out")"
	as_tester "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w start >/dev/null
	local rc=0
	(portability_clients "$bin" "$port") || rc=$?
	as_tester "$bin/pg_ctl" -D "$data" -w stop -m fast >/dev/null
	[ $rc -eq 0 ] || exit $rc
	rm -rf "$dir"
}

portability_clients() {
	local bin=$1 port=$2 conn out err
	conn="host=127.0.0.1 port=$port user=postgres dbname=postgres"
	out=$(as_tester "$bin/psql" -X -At -d "$conn mptcp=prefer" -c 'SHOW listen_mptcp' 2>"$WORKDIR/verify/psql.err") ||
		die "mptcp=prefer did not connect: $(cat "$WORKDIR/verify/psql.err")"
	[ "$out" = off ] && [ ! -s "$WORKDIR/verify/psql.err" ] ||
		die "mptcp=prefer: expected 'off' and no message, got '$out' / $(cat "$WORKDIR/verify/psql.err")"
	echo "mptcp=prefer: connected over TCP, no message"
	as_tester "$bin/psql" -X -At -d "$conn mptcp=require" -c 'SELECT 1' >/dev/null 2>"$WORKDIR/verify/psql.err" &&
		die "mptcp=require connected in a build without MPTCP"
	err=$(cat "$WORKDIR/verify/psql.err")
	grep -q 'mptcp value "require" invalid when MPTCP support is not compiled in' <<<"$err" ||
		die "mptcp=require: not the expected error: $err"
	echo "mptcp=require: fails: ${err##*: }"
	# every view of mptcpinfo, each empty
	out=$(as_tester "$bin/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$conn" 2>&1 <<-'EOF'
	CREATE EXTENSION mptcpinfo;
	SELECT format('SELECT %L || '' '' || count(*) FROM %s', c.relname, c.oid::regclass)
	  FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.classid = 'pg_class'::regclass
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'mptcpinfo')
	   AND c.relkind = 'v' ORDER BY 1
	\gexec
	EOF
	) || die "mptcpinfo: $out"
	grep -q '^pg_stat_mptcp 0$' <<<"$out" || die "mptcpinfo: unexpected result: $out"
	! grep -v ' 0$' <<<"$out" | grep -q . || die "mptcpinfo: views with rows in a build without MPTCP: $out"
	echo "mptcpinfo: $(wc -l <<<"$out") views, all empty: $(echo $out)"
}

# What a committer and the commitfest's CI run besides the tests (for the
# git majors, master and 19): the whole tree warning-free under clang with
# -Werror (gcc's is the test build, -Dwerror=true), and every header
# compiles on its own, as C (headerscheck) and as C++ (cpluspluscheck).
# Like the commitfest's CI, this build has JIT, PL/Perl and PL/Python:
# headerscheck reads their headers too.  Its C++ compiler is g++ (clang++
# 14 rejects the C99 designators of upstream's common/unicode_case_table.h
# in cpluspluscheck), and -Werror is for C only: g++ 12 warns on upstream's
# llvmjit_inline.cpp with LLVM 14's headers, none of it our code.
cmd_verify_committer() {
	local dir=$WORKDIR/build-clang
	local opts=("${MESON_OPTS[@]}" -Dllvm=enabled -Dplperl=enabled -Dplpython=enabled -Dcpp_args=-Wno-error)
	# (PostgreSQL 16's JIT code still calls, for LLVM < 16, the functions
	# LLVM 14 deprecates for opaque pointers, LLVMBuildGEP and others; 18
	# dropped them.  Upstream's warnings, not errors.)
	local extra=
	! grep -q 'LLVM_VERSION_MAJOR < 16' "$TREE/src/include/jit/llvmjit_emit.h" ||
		{ opts+=(-Dc_args=-Wno-error=deprecated-declarations); extra=-Wno-deprecated-declarations; }
	command -v clang >/dev/null || die "clang not found: run 'make deps PG_MAJOR=$PG_MAJOR' as root"
	# (set up again when the options change)
	[ "$(cat "$dir/.setup-options" 2>/dev/null)" = "${opts[*]}" ] || rm -rf "$dir"
	if [ ! -f "$dir/build.ninja" ]; then
		as_tester env CC="ccache clang" CXX="ccache g++" meson setup "$dir" "$TREE" "${opts[@]}" \
			>"$WORKDIR/meson-setup-clang.log" 2>&1 ||
			{ tail -30 "$WORKDIR/meson-setup-clang.log"; die "meson setup with clang failed"; }
		echo "${opts[*]}" >"$dir/.setup-options"
	fi
	as_tester ninja -C "$dir" >"$WORKDIR/build-clang.log" 2>&1 ||
		{ grep -E -B2 -A6 'error|warning' "$WORKDIR/build-clang.log" | tail -40; die "clang -Werror build failed"; }
	echo "clang $(clang -dumpversion): builds with -Werror (JIT, PL/Perl, PL/Python included)"
	local c run=(ninja -C "$dir")
	if ! grep -q "run_target('headerscheck'" "$TREE/meson.build"; then
		# (PostgreSQL 16's meson has no targets for them: as its CI runs
		# them, in a configured autoconf tree with the same features)
		dir=$WORKDIR/verify/headerscheck
		configure_tree "$dir" --with-llvm --with-perl --with-python CC="ccache clang" CXX="ccache g++"
		as_tester make -s -C "$dir/src/backend" generated-headers >"$WORKDIR/generated-headers.log" 2>&1 ||
			{ tail -20 "$WORKDIR/generated-headers.log"; die "make generated-headers failed"; }
		run=(env EXTRAFLAGS="$extra" make -s -C "$dir")
	fi
	for c in headerscheck cpluspluscheck; do
		as_tester "${run[@]}" "$c" >"$WORKDIR/$c.log" 2>&1 ||
			{ grep -E -A3 'error|warning' "$WORKDIR/$c.log" | head -30; die "$c failed"; }
		# (both print nothing but the compilers' complaints)
		if grep -E -q 'error|warning' "$WORKDIR/$c.log"; then
			grep -E -A3 'error|warning' "$WORKDIR/$c.log" | head -30
			die "$c found headers that do not compile on their own"
		fi
		echo "$c: clean"
	done
}

# The whole tree cross-compiled for Windows with MinGW-w64 (Debian's
# gcc-mingw-w64-x86-64), configured as the commitfest's "Windows - MinGW -
# Meson" task does (-Dcassert=true -Dinjection_points=true -Db_pch=true,
# -Dauto_features=disabled -Dnls=disabled) with -Dwerror=true, as its
# CompilerWarnings task cross-compiles with -Werror.  Unlike that task it has
# none of the optional libraries (Debian has no MinGW builds of them) and
# runs nothing.  USE_MPTCP is off there and contrib/mptcpinfo is not built:
# this catches Linux-only code outside USE_MPTCP, which the portability
# check on Linux cannot.
cmd_verify_mingw() {
	local dir=$WORKDIR/build-mingw cross=$WORKDIR/mingw-w64-x86_64.cross c=
	command -v x86_64-w64-mingw32-gcc >/dev/null ||
		die "x86_64-w64-mingw32-gcc not found: run 'make deps PG_MAJOR=$PG_MAJOR' as root"
	command -v ccache >/dev/null && c="'ccache', "
	cat >"$cross.new" <<-EOF
	[binaries]
	c = [$c'x86_64-w64-mingw32-gcc']
	ar = 'x86_64-w64-mingw32-ar'
	strip = 'x86_64-w64-mingw32-strip'
	windres = 'x86_64-w64-mingw32-windres'

	[host_machine]
	system = 'windows'
	cpu_family = 'x86_64'
	cpu = 'x86_64'
	endian = 'little'
	EOF
	# A cross build runs no program it builds: zic, which compiles the time
	# zone data, comes from the native test build.
	local opts=(--cross-file "$cross" -DZIC="$BUILD/src/timezone/zic" -Dwerror=true
		-Dcassert=true -Dinjection_points=true -Db_pch=true
		-Dauto_features=disabled -Dnls=disabled -Dtap_tests=disabled)
	[ -x "$BUILD/src/timezone/zic" ] || die "no native zic: run 'make build PG_MAJOR=$PG_MAJOR' first"
	# (set up again when the cross file or the options change)
	cmp -s "$cross.new" "$cross" || { mv "$cross.new" "$cross"; rm -rf "$dir"; }
	rm -f "$cross.new"
	[ "$(cat "$dir/.setup-options" 2>/dev/null)" = "${opts[*]}" ] || rm -rf "$dir"
	if [ ! -f "$dir/build.ninja" ]; then
		as_tester meson setup "$dir" "$TREE" "${opts[@]}" >"$WORKDIR/meson-setup-mingw.log" 2>&1 ||
			{ tail -30 "$WORKDIR/meson-setup-mingw.log"; die "meson setup for MinGW-w64 failed"; }
		echo "${opts[*]}" >"$dir/.setup-options"
	fi
	as_tester ninja -C "$dir" >"$WORKDIR/build-mingw.log" 2>&1 ||
		{ grep -E -B2 -A6 'error|warning' "$WORKDIR/build-mingw.log" | tail -40; die "MinGW-w64 build failed"; }
	! grep -q '^#define USE_MPTCP' "$dir/src/include/pg_config.h" || die "USE_MPTCP defined for Windows"
	[ -z "$(find "$dir/contrib" -type f -name 'mptcpinfo*')" ] || die "contrib/mptcpinfo was built for Windows"
	[ -f "$dir/src/backend/postgres.exe" ] && [ -f "$dir/src/interfaces/libpq/libpq.dll" ] ||
		die "MinGW-w64 build made no postgres.exe or libpq.dll"
	echo "MinGW-w64 (gcc $(x86_64-w64-mingw32-gcc -dumpversion)): whole tree builds with -Werror," \
		"$(find "$dir" -name '*.exe' | wc -l) programs, $(find "$dir" -name '*.dll' | wc -l) DLLs;" \
		"USE_MPTCP off, contrib/mptcpinfo not built"
}

# The series on a C library that does not declare IPPROTO_MPTCP (glibc
# before 2.32, as RHEL 8's 2.28, whose kernel has MPTCP backported): an
# autoconf build in a Debian 11 "bullseye" chroot (glibc 2.31, made once by
# mmdebstrap from Debian's archive and kept in .work/old-glibc), run in
# private mount and network namespaces.  MPTCP must be built in: the server
# listens with MPTCP, an mptcp=require connection is MPTCP, and mptcpinfo
# sees it.  Skips with one line where no chroot can be made (not root, no
# mmdebstrap, or the archive does not serve bullseye).
OLD_GLIBC_SUITE=bullseye
cmd_verify_old_glibc() {
	local top=$TOP/.work/old-glibc root rc=0
	root=$top/root
	if [ ! -x "$root/usr/bin/gcc" ]; then
		is_root || { echo "old-glibc: skipped, needs root to make the $OLD_GLIBC_SUITE chroot"; exit 77; }
		command -v mmdebstrap >/dev/null || { echo "old-glibc: skipped, mmdebstrap not installed"; exit 77; }
		rm -rf "$top"
		mkdir -p "$top"
		mmdebstrap --variant=apt --include=gcc,make,flex,bison,perl,libc6-dev,iproute2 \
			"$OLD_GLIBC_SUITE" "$root" http://deb.debian.org/debian >"$top/mmdebstrap.log" 2>&1 ||
			{ rm -rf "$root"; echo "old-glibc: skipped, could not make a $OLD_GLIBC_SUITE chroot: $(tail -1 "$top/mmdebstrap.log")"; exit 77; }
	fi
	is_root || { echo "old-glibc: skipped, needs root to enter the chroot"; exit 77; }
	rm -rf "$root/build"
	mkdir -p "$root/build/pg"
	g archive HEAD | tar -x -C "$root/build/pg"
	cat >"$root/build/run.sh" <<-'EOF'
	set -e
	echo "C library: $(ldd --version | head -1)"
	! grep -q IPPROTO_MPTCP /usr/include/netinet/in.h || { echo "netinet/in.h declares IPPROTO_MPTCP"; exit 1; }
	id pgt >/dev/null 2>&1 || useradd pgt
	chown -R pgt /build
	cd /build/pg
	runuser -u pgt -- ./configure --without-icu --without-readline --without-zlib --prefix=/build/inst \
		CFLAGS=-O1 >/build/configure.out 2>&1 || { tail -20 /build/configure.out; exit 1; }
	grep -q '^#define USE_MPTCP 1' src/include/pg_config.h || { echo "USE_MPTCP not defined"; exit 1; }
	(runuser -u pgt -- make -s -j"$(nproc)" COPT=-Werror install &&
		runuser -u pgt -- make -s -C contrib/mptcpinfo COPT=-Werror install) >/build/make.out 2>&1 ||
		{ grep -E -A5 'error|warning' /build/make.out | tail -30; exit 1; }
	echo "built with -Werror, USE_MPTCP 1, netinet/in.h without IPPROTO_MPTCP"
	b=/build/inst/bin
	runuser -u pgt -- $b/initdb -D /build/data -A trust -U postgres >/dev/null
	runuser -u pgt -- $b/pg_ctl -D /build/data -l /build/server.log -w -o \
		"-c listen_mptcp=on -c listen_addresses=127.0.0.1 -c port=54330 -c unix_socket_directories=/tmp" start >/dev/null
	c="host=127.0.0.1 port=54330 user=postgres dbname=postgres"
	out=$(runuser -u pgt -- $b/psql -X -At -d "$c mptcp=require" -c "CREATE EXTENSION mptcpinfo" \
		-c "SELECT mptcp FROM pg_stat_mptcp WHERE pid = pg_backend_pid()" 2>&1) || rc=1
	runuser -u pgt -- $b/pg_ctl -D /build/data -w stop -m fast >/dev/null
	[ "${rc:-0}" = 0 ] && [ "$out" = "CREATE EXTENSION
	t" ] || { echo "mptcp=require: $out"; exit 1; }
	echo "listen_mptcp = on: an mptcp=require connection is MPTCP (pg_stat_mptcp says so)"
	EOF
	unshare -mn --fork bash -c "mount -t proc proc '$root/proc' && mount --rbind /dev '$root/dev' &&
		mount -t tmpfs tmpfs '$root/dev/shm' && ip link set lo up &&
		chroot '$root' /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin bash /build/run.sh" || rc=$?
	[ $rc -eq 0 ] || die "the build on $OLD_GLIBC_SUITE's glibc failed"
	rm -rf "$root/build"
}

# The documentation is valid DocBook.
cmd_verify_docs() {
	# (PostgreSQL 15: the Makefile's xmllint --valid of the whole book)
	! uses_autoconf || { as_tester make -C "$BUILD/doc/src/sgml" check; return; }
	as_tester meson configure "$BUILD" -Ddocs=enabled >/dev/null
	as_tester ninja -C "$BUILD" doc/src/sgml/postgres-full.xml
}

# pgindent leaves our C code as it is.
cmd_verify_pgindent() {
	! uses_autoconf || { echo "pgindent: skipped, PostgreSQL $PG_MAJOR has no pg_bsd_indent in its tree (16 added it)"; exit 77; }
	local files
	files=$(g diff --name-only --diff-filter=AM upstream HEAD -- '*.c' '*.h' |
		grep -v -e '^src/include/pg_config' || true)
	local diff=--diff
	# (PostgreSQL 16's pgindent calls it --show-diff)
	! grep -q '"show-diff"' "$TREE/src/tools/pgindent/pgindent" || diff=--show-diff
	as_tester ninja -C "$BUILD" src/tools/pg_bsd_indent/pg_bsd_indent >/dev/null
	(cd "$TREE" && as_tester perl src/tools/pgindent/pgindent \
		--indent="$BUILD/src/tools/pg_bsd_indent/pg_bsd_indent" "$diff" $files) >"$WORKDIR/verify-pgindent.diff"
	if [ -s "$WORKDIR/verify-pgindent.diff" ]; then
		cat "$WORKDIR/verify-pgindent.diff"
		die "pgindent would change our code"
	fi
	echo "pgindent: no changes in" $files
}

# Every prefix of contrib/mptcpinfo's layers works: for each patch after
# which the module differs from the series' last one, the module as that
# patch leaves it is built in the test build and passes the tests its own
# meson.build lists.  Only the module changes between prefixes; the rest of
# the tree stays the series' (a later layer adds core hooks that nothing
# calls without it), so no prefix needs a build of its own.  The module is
# put back and rebuilt afterwards.
# A layer's SQL scripts, and no later one's: "meson test --suite setup"
# installs into tmp_install over what is there, and an update script left
# from another layer would offer a version whose C this one lacks.
layers_forget_scripts() {
	find "$BUILD/tmp_install" -path '*/extension/mptcpinfo*' -delete 2>/dev/null || true
}

layers_put_back() {
	rm -rf "${TREE:?}/contrib/mptcpinfo"
	g checkout -q HEAD -- contrib/mptcpinfo
	touch "$TREE"/contrib/mptcpinfo/*
	layers_forget_scripts
	as_tester ninja -C "$BUILD" >/dev/null
	# (its own log: "check" sums up testlog.json, the series' suites)
	as_tester meson test -C "$BUILD" --no-rebuild --logbase verify-layers-setup --suite setup >/dev/null
}

cmd_verify_layers() {
	! uses_autoconf || { echo "layers: skipped, PostgreSQL $PG_MAJOR builds with make (the layers are the same as 16's)"; exit 77; }
	[ -f "$BUILD/build.ninja" ] || die "verify-layers needs the test build: run 'make build PG_MAJOR=$PG_MAJOR' first"
	local dir=contrib/mptcpinfo c final prefixes=() rc=0
	export PG_TEST_EXTRA=${PG_TEST_EXTRA-mptcp}
	final=$(g rev-parse "HEAD:$dir")
	for c in $(g rev-list --reverse upstream..HEAD -- "$dir"); do
		[ "$(g rev-parse "$c:$dir")" = "$final" ] || prefixes+=("$c")
	done
	if [ ${#prefixes[@]} -eq 0 ]; then
		echo "layers: contrib/mptcpinfo comes in one patch, tested as the series leaves it"
		return 0
	fi
	# (put back whatever happens: the work tree stays the series')
	trap layers_put_back EXIT
	for c in "${prefixes[@]}"; do
		note "layers: contrib/mptcpinfo after \"$(g log -1 --format=%s "$c")\""
		rm -rf "${TREE:?}/$dir"
		g archive "$c" "$dir" | tar -x -C "$TREE"
		touch "$TREE/$dir"/*
		chown -R "$(stat -c %u:%g "$TREE")" "$TREE/$dir"
		layers_forget_scripts
		as_tester ninja -C "$BUILD" >"$WORKDIR/verify-layers-build.log" 2>&1 ||
			{ tail -30 "$WORKDIR/verify-layers-build.log"; rc=1; continue; }
		as_tester meson test -C "$BUILD" --no-rebuild --print-errorlogs \
			--logbase verify-layers --suite setup --suite mptcpinfo || rc=1
	done
	[ $rc -eq 0 ] || die "layers: a prefix of contrib/mptcpinfo's patches fails (above)"
	echo "layers: ${#prefixes[@]} earlier state(s) of contrib/mptcpinfo built and tested"
}

cmd_check() {
	cmd_deps
	cmd_fetch
	rm -f "$WORKDIR/series-checks"
	# (the pages are the same for every major, and cheap: always)
	series_check pages cmd_verify_pages
	if tree_has_edits; then
		note "skipping the series checks: the work tree has edits not yet in patches/"
		cmd_build
	else
		series_check fresh-deps cmd_verify_fresh_deps
		series_check series cmd_verify
		# (check-all's majors between the newest and the oldest: the
		# series' C files compiled as the test build would, no suites)
		if compile_only; then series_check compile cmd_build_series_objects; else cmd_build; fi
		series_check docs cmd_verify_docs
		series_check pgindent cmd_verify_pgindent
		# (the production build: not for check-all's older majors)
		[ -n "${CHECK_SUBSET:-}" ] || series_check install cmd_verify_install
		[ -n "${CHECK_SUBSET:-}" ] || series_check guide cmd_verify_guide
		[ "$SOURCE_KIND" != debian ] || series_check debian-patches cmd_verify_debian_patches
		[ "$SOURCE_KIND" != debian ] || series_check archive cmd_verify_archive
		if compile_only; then
			mkdir -p "$BUILD/meson-logs"
			: >"$BUILD/meson-logs/testlog.json"
			summarize_tests
			return
		fi
	fi
	if [ -z "${PG_TEST_EXTRA+x}" ]; then
		# Every MPTCP test opens TCP listen sockets and runs only with
		# PG_TEST_EXTRA=mptcp (as src/test/ssl); the namespace-based ones
		# also need unprivileged user namespaces and skip without them.
		export PG_TEST_EXTRA=mptcp
	fi
	# (PostgreSQL 15, no meson: "make check" in each suite's directory, build.sh)
	if uses_autoconf; then
		# shellcheck disable=SC2046
		autoconf_check $(check_suites)
	else
	# (PostgreSQL 17's meson gives the tests its PG_TEST_EXTRA option, not
	# the environment's; 18 takes either)
	as_tester meson configure "$BUILD" -DPG_TEST_EXTRA="${PG_TEST_EXTRA:-}" >/dev/null
	as_tester ninja -C "$BUILD" build.ninja >/dev/null
	local suites=() s
	for s in $(check_suites); do suites+=(--suite "$s"); done
	note "meson test ${suites[*]} (PG_TEST_EXTRA=${PG_TEST_EXTRA:-})"
	local log=$BUILD/meson-logs/testlog.json
	rm -f "$log" "$log.all"
	as_tester meson test -C "$BUILD" --print-errorlogs --no-rebuild "${suites[@]}" ${MESON_TEST_ARGS:-} || true
	fi
	if [ -n "$(check_tests)" ]; then
		# (a second run: meson selects by suite or by name, not both)
		cat "$log" >"$log.all" 2>/dev/null || true
		note "meson test $(check_tests | tr '\n' ' ')"
		# shellcheck disable=SC2046
		as_tester meson test -C "$BUILD" --print-errorlogs --no-rebuild $(check_tests) || true
		cat "$log" >>"$log.all" 2>/dev/null || true
		mv "$log.all" "$log"
	fi
	# (after the suites, in the test build: each earlier layer of mptcpinfo)
	! tree_has_edits && [ -z "${CHECK_SUBSET:-}" ] && series_check layers cmd_verify_layers
	if ! tree_has_edits && [ -z "${QUICK:-}" ] && [ -z "${CHECK_SUBSET:-}" ]; then
		series_check patch-builds cmd_verify_patch_builds
		series_check autoconf cmd_verify_autoconf
		series_check portability cmd_verify_portability
		[ "$SOURCE_KIND" != git ] || series_check committer cmd_verify_committer
		[ "$PG_MAJOR" != master ] || series_check mingw cmd_verify_mingw
		[ "$PG_MAJOR" != master ] || series_check old-glibc cmd_verify_old_glibc
		[ "$PG_MAJOR" != master ] || series_check export cmd_verify_export
	fi
	summarize_tests
}

# CHECK_SUBSET=compile: check's build is the series' C files alone, and no
# suite runs (a major built with make gets the suites subset instead)
compile_only() { [ "${CHECK_SUBSET:-}" = compile ] && ! uses_autoconf; }
cmd_build_series_objects() { BUILD_SERIES_OBJECTS=1 cmd_build; }

# "check" for every supported major, master first; fails if any failed.
# Which version fetch builds when the archive moves: the fake-archive test.
cmd_verify_archive() { "$TOP/tools/tests/test_archive.sh"; }

# (cmd_check_all's) the CI subset on $kernels in the background, against
# the installation of 18's test build (assertions on) that its suites ran
# from: sets kernels_pid and kernels_start, or kernels_prepare_failed
check_all_start_kernels() {
	local install
	install=$(find "$dir/build/tmp_install" -path '*/bin/postgres' -print -quit 2>/dev/null)
	[ -n "$install" ] || return 0
	install=${install%/bin/postgres}
	note "make check-kernels KERNELS=$kernels KERNEL_TESTS=ci, in the background: $kernels_log"
	kernels_start=$(date +%s)
	mkdir -p "$TOP/.work"
	# (its packages first, in the foreground: a check may run apt next)
	if ! PG_MAJOR=18 WORKDIR=$dir KERNELS_PREFIX=$install KERNELS=$kernels KERNELS_NO_INSTALL=1 \
		KERNELS_PREPARE_ONLY=1 "$TOP/tools/workspace" check-kernels >"$kernels_log" 2>&1; then
		kernels_prepare_failed=1
		return 0
	fi
	# (bounded: CI has 45 minutes.  A test that did not finish in the
	# budget fails: a check that cannot fail proves nothing.  The subset,
	# 7 tests, took 1,397 s for its first 5 beside 17's and 15's checks,
	# on a slow machine.)
	# (not niced below the builds: an emulated kernel starved of CPU sees
	# its TCP timers fire late and in bursts, and once took its first test
	# past the whole budget)
	PG_MAJOR=18 WORKDIR=$dir KERNELS_PREFIX=$install KERNELS=$kernels KERNEL_TESTS=ci \
		KERNEL_BOOT_TIMEOUT=$kernels_budget KERNELS_NO_INSTALL=1 KERNELS_NICE=${KERNELS_NICE:-0} \
		"$TOP/tools/workspace" check-kernels >>"$kernels_log" 2>&1 &
	kernels_pid=$!
}

# The docs check: links and section references resolve, host lists in
# primary_conninfo, no apt-mark hold, no test tags or project history on
# operator pages, the new user's path within its word budget.  No network,
# no build: a second.
cmd_verify_pages() { python3 "$TOP/tools/tests/test_pages.py" "$TOP"; }

cmd_check_all() {
	local m rc=0 start summary= dir skipped
	# The kernel our Debian 13 users run, with an unprivileged server: the
	# CI subset on 6.12 under qemu (CHECK_ALL_KERNELS=none: not at all),
	# against the test build's installation that 18's check makes.  It runs
	# beside the next majors' checks: CI's time is bounded.
	local kernels=${CHECK_ALL_KERNELS-6.12} kernels_pid= kernels_start kernels_log=$TOP/.work/check-all-kernels.log
	local kernels_budget=${CHECK_ALL_KERNELS_BUDGET:-1800} kernels_prepare_failed=
	# The newest Debian major gets everything; the older ones (CI's 45
	# minutes) the quick series checks and either the transport and
	# mptcpinfo suites (15) or the series' C files compiled (17), "make
	# check PG_MAJOR=N" the rest.  (A git major runs only where its source
	# is at hand, never in CI: everything.)
	local full_debian= subset what
	# Three series checks of the full major build the tree again: the
	# production build (install, and guide, which runs on it: 543 s), each
	# patch on its own and without MPTCP support (589 s), of a CI run that
	# took 3,596 s on a slow machine, over CI's 45 minutes.  "make check"
	# runs them; the guest runs on the test build.
	local series_skip=${CHECK_ALL_SERIES_SKIP-install guide patch-builds portability}
	for m in $(supported_majors); do
		start=$(date +%s)
		dir=${GIVEN_WORKDIR:+$GIVEN_WORKDIR/$m}
		dir=${dir:-$TOP/.work/$m}
		# A git major runs only with its source at hand (cached, or PG_GIT):
		# CI has no network, and check-all never clones on its own.  (A
		# Debian major's source is always at hand: fetch downloads it.)
		if [ -z "$(PG_MAJOR=$m WORKDIR=$dir "$TOP/tools/workspace" source-at-hand)" ]; then
			skipped="PostgreSQL $m: skipped, no git source here (PG_GIT=/path/to/postgresql.git, or 'make fetch PG_MAJOR=$m' with network)"
			note "$skipped"
			summary="$summary
$skipped"
			continue
		fi
		subset=
		if [ "$(PG_MAJOR=$m WORKDIR=$dir "$TOP/tools/workspace" source-at-hand)" = debian ]; then
			# (the oldest, 15, the only one that builds with make, runs the
			# suites; the ones between, which build as 18 does, compile the
			# series' C files: CI's 45 minutes)
			[ -z "$full_debian" ] && full_debian=$m || { [ "$m" -lt 16 ] && subset=1 || subset=compile; }
		fi
		case $subset in
		1) what="the mptcp and mptcpinfo suites and the quick series checks" ;;
		compile) what="the C files the series adds or changes compiled (-Werror) and the quick series checks, no suites" ;;
		*) what= ;;
		esac
		note "make check PG_MAJOR=$m${what:+ ($what)}"
		rm -f "$dir/check-summary" "$dir/series-checks"
		env PG_MAJOR="$m" WORKDIR="$dir" ${subset:+CHECK_SUBSET=$subset} SERIES_CHECKS_SKIP="$series_skip" \
			"$TOP/tools/workspace" check || rc=1
		summary="$summary
PostgreSQL $m: $(tail -1 "$dir/check-summary" 2>/dev/null || echo 'no result') ($(($(date +%s) - start)) s)${what:+; $what (make check PG_MAJOR=$m: all)}"
		[ -n "$subset" ] || [ -z "$series_skip" ] || summary="$summary; not run: $series_skip (CHECK_ALL_SERIES_SKIP; make check PG_MAJOR=$m runs them)"
		# (what fetch built when it was not simply the pin, e.g. "17: pinned
		# X is gone; built Y from the archive: re-pin")
		[ ! -s "$dir/cache/source-note" ] || summary="$summary
$(cat "$dir/cache/source-note")"
		# (after 18's whole check, not beside it: its layers check puts
		# earlier states of contrib/mptcpinfo, without the later layers'
		# tests, in the tree the guest reads its tests from)
		[ "$m" != 18 ] || [ "$kernels" = none ] || check_all_start_kernels
	done
	if [ "$kernels" = none ]; then
		summary="$summary
Linux kernels under qemu: skipped (CHECK_ALL_KERNELS=none)"
	elif [ -n "$kernels_prepare_failed" ] && [ -s "$TOP/.work/kernels/unfetchable" ]; then
		summary="$summary
Linux $kernels (qemu): skipped, the kernel could not be fetched from Debian's archive ($kernels_log)"
	elif [ -n "$kernels_prepare_failed" ]; then
		rc=1
		summary="$summary
Linux $kernels (qemu): FAILED before booting: $(grep -v '^[[:space:]]*$' "$kernels_log" | tail -1)"
		cat "$kernels_log"
	elif [ -z "$kernels_pid" ]; then
		summary="$summary
Linux $kernels (qemu): skipped, no installation of 18's test build (its check did not get that far)"
	else
		note "waiting for check-kernels ($kernels_log)"
		if wait "$kernels_pid"; then
			summary="$summary
Linux $kernels (qemu, unprivileged server): $(kernels_ci_line) ($(($(date +%s) - kernels_start)) s)"
		elif [ -f "$TOP/.work/kernels/$kernels/run/timed-out" ] &&
			! grep -qE '^[^ ]+ +[^ ]+ +FAIL' "$TOP/.work/kernels/summary.txt" 2>/dev/null; then
			rc=1
			summary="$summary
Linux $kernels (qemu, unprivileged server): FAILED: $(kernels_ci_line): the budget of $kernels_budget s (CHECK_ALL_KERNELS_BUDGET) ran out before every test finished; $(kernels_failure_lines "$TOP/.work/kernels/$kernels/run")"
		else
			rc=1
			summary="$summary
Linux $kernels (qemu, unprivileged server): FAILED: $(kernels_ci_line) ($(($(date +%s) - kernels_start)) s); $(kernels_failure_lines "$TOP/.work/kernels/$kernels/run")"
		fi
		cat "$kernels_log"
	fi
	# host-setup's program (pg-mptcp-failover) on this machine's kernel
	local hs_line
	hs_line=$("$TOP/tools/workspace" check-host-setup | tail -1) || rc=1
	summary="$summary
$hs_line"
	check_all_quickstart
	printf '%s\n' "${summary#?}"
	return $rc
}

# (cmd_check_all's) README.md's quick start, as written, for each major and
# suite whose packages "make deb" built here: building them takes 11 to 60
# minutes, more than CI's budget, so a fresh clone reports it skipped.
check_all_quickstart() {
	local repo d m suite ran= line
	for repo in "$TOP"/.work/*/deb/repo/InRelease "$TOP"/.work/*/deb-*/repo/InRelease; do
		[ -f "$repo" ] || continue
		d=${repo%/repo/InRelease}
		m=$(basename "$(dirname "$d")")
		suite=${d##*/deb}
		suite=${suite#-}
		[ -f "$TOP/patches/$m/upstream.conf" ] || continue
		ran=1
		if ! is_root; then
			line="README quick start, $m${suite:+ on $suite}: skipped, it needs root (chroots and namespaces)"
		elif env PG_MAJOR="$m" ${suite:+DEB_SUITE="$suite"} "$TOP/tools/workspace" deb-test-quickstart >"$TOP/.work/check-all-quickstart.log" 2>&1; then
			line="README quick start, $m${suite:+ on $suite}: $(grep '^deb-test-quickstart: PASS' "$TOP/.work/check-all-quickstart.log")"
		else
			rc=1
			line="README quick start, $m${suite:+ on $suite}: FAILED: $(grep -E '^(not ok|workspace:)' "$TOP/.work/check-all-quickstart.log" | tail -1)"
			tail -20 "$TOP/.work/check-all-quickstart.log"
		fi
		summary="$summary
$line"
	done
	[ -n "$ran" ] || summary="$summary
README quick start (deb-test-quickstart): skipped, no packages built here ('make deb PG_MAJOR=17' first, 11 to 15 minutes)"
}

# kernels_failure_lines RUN: each test that failed, with its failing
# subtests and their diagnostics; the guest's last lines when no test failed
# (it stopped before or between them)
kernels_failure_lines() {
	local run=$1 t tap
	if grep -qE '^[^ ]+ +[^ ]+ +(FAIL|TIMEOUT|UNFINISHED)' "$TOP/.work/kernels/summary.txt" 2>/dev/null; then
		echo "the tests that failed:"
		grep -E '^[^ ]+ +[^ ]+ +(FAIL|TIMEOUT|UNFINISHED)' "$TOP/.work/kernels/summary.txt" |
			while read -r _ t _; do
				echo "  $t:"
				tap=$run/${t//\//_}.tap
				if [ ! -s "$tap" ]; then
					# (prove writes a script's TAP when it ends: where it
					# stopped is in its log)
					echo "    (no TAP output; the last lines of its log:)"
					tail -q -n 8 "$run/${t//\//_}.log"/regress_log_* 2>/dev/null | sed 's/^/    /'
					continue
				fi
				# each failed subtest, and its diagnostics from the test's log
				# (the guest's TAP file has no stderr)
				grep '^not ok' "$tap" | head -8 | sed 's/^/    /'
				grep -hE '^(\[[^]]*\]\([^)]*\) )?# +(Failed test|got:|expected:|at )' \
					"$run/${t//\//_}.log"/regress_log_* 2>/dev/null | head -16 | sed 's/^/    /'
			done
	else
		echo "the guest's last lines:"
		kernels_last_lines "$run" | sed 's/^/  /'
	fi
}

# "N passed, M failed" from the last check-kernels summary
kernels_ci_line() {
	awk 'NR > 1 && NF >= 3 && $3 ~ /^(PASS|FAIL|TIMEOUT|UNFINISHED|NOT-RUN|SKIP)$/ { n[$3]++ }
		END { printf "%d passed, %d failed, %d not reached", n["PASS"], n["FAIL"] + n["TIMEOUT"], n["UNFINISHED"] + n["NOT-RUN"] }' \
		"$TOP/.work/kernels/summary.txt" 2>/dev/null
}

