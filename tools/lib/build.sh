# shellcheck shell=bash
# The builds: the test build (debug, cassert, TAP) and the production build (-O2), install.
# Part of tools/workspace (sourced by it; see that file for the layout).

# Two builds of the same tree, with the features a data directory made by a
# distribution's PostgreSQL 18 may rely on (lz4/zstd TOAST and WAL
# compression, ICU collations, xml).  The test build (build/, "make build" and
# "make check"): debug, assertions, TAP tests.  The production build
# (build-release/, what "make install", start, demo and bench use): -O2 like
# the distributions' packages, no assertions, same features, no TAP.
FEATURE_OPTS=(-Dauto_features=disabled -Dssl=openssl -Dreadline=enabled -Dzlib=enabled -Dicu=enabled
	-Dlz4=enabled -Dzstd=enabled -Dlibxml=enabled)
MESON_OPTS=(--buildtype=debug -Dcassert=true -Dtap_tests=enabled -Dwerror=true "${FEATURE_OPTS[@]}")
RELEASE_BUILD=$WORKDIR/build-release
RELEASE_MESON_OPTS=(--buildtype=release -Doptimization=2 -Dcassert=false -Dtap_tests=disabled "${FEATURE_OPTS[@]}")

# meson_option DIR NAME: the value of a build directory's option (booleans
# as true or false)
meson_option() {
	as_tester meson introspect --buildoptions "$1" |
		perl -MJSON::PP -0e 'my ($o) = grep { $_->{name} eq $ARGV[0] } @{decode_json(<STDIN>)};
			print !defined $o ? "" : JSON::PP::is_bool($o->{value}) ? ($o->{value} ? "true" : "false") : $o->{value}' "$2"
}

# build_dir DIR NAME MESON-OPTION...: set up (once) and build DIR from the tree
build_dir() {
	local dir=$1 name=$2
	shift 2
	# (as root, set up what the build needs on a fresh machine, as "make demo" does)
	cmd_deps
	cmd_fetch
	ensure_tree
	own_workspace
	# (the test build has injection points where meson offers them, 17 on:
	# t/008 holds an asker at one)
	local inj=
	if [ "$name" = test ] && grep -q "^option('injection_points'" "$TREE/meson_options.txt" 2>/dev/null; then
		inj=-Dinjection_points=true
		set -- "$@" "$inj"
	fi
	if [ ! -f "$dir/build.ninja" ]; then
		note "meson setup $dir ($name build, prefix $PREFIX)"
		as_tester meson setup "$dir" "$TREE" --prefix="$PREFIX" "$@" >"$WORKDIR/meson-setup-$name.log" 2>&1 ||
			{ tail -40 "$WORKDIR/meson-setup-$name.log" >&2; die "meson setup failed (log: $WORKDIR/meson-setup-$name.log)"; }
	elif [ "$(meson_option "$dir" prefix)" != "$PREFIX" ]; then
		as_tester meson configure "$dir" --prefix="$PREFIX" >/dev/null
	fi
	if [ -n "$inj" ] && [ "$(meson_option "$dir" injection_points)" != true ]; then
		as_tester meson configure "$dir" "$inj" >/dev/null
	fi
	# (BUILD_SERIES_OBJECTS=1: only what the series' C files compile to)
	local targets=()
	if [ -n "${BUILD_SERIES_OBJECTS:-}" ]; then
		mapfile -t targets < <(series_objects "$dir")
		[ ${#targets[@]} -gt 0 ] || die "no object file of the series' C files in $dir/compile_commands.json"
		# (and the libraries linked from them alone: mptcpinfo and libpq)
		mapfile -t -O ${#targets[@]} targets < <(as_tester ninja -C "$dir" -t targets all |
			sed -n -E 's/^(contrib\/mptcpinfo\/mptcpinfo\.so|src\/interfaces\/libpq\/libpq\.so\.[0-9.]+): .*/\1/p')
	fi
	note "ninja -C $dir${BUILD_SERIES_OBJECTS:+ (the ${#targets[@]} object files of the C files the series adds or changes)}"
	as_tester ninja -C "$dir" "${targets[@]}" >"$WORKDIR/build-$name.log" 2>&1 ||
		{ grep -E -B2 -A6 'error|FAILED' "$WORKDIR/build-$name.log" | tail -60 >&2; die "build failed (log: $WORKDIR/build-$name.log)"; }
	grep -E 'warning:' "$WORKDIR/build-$name.log" >&2 || true
	note "$name build ok"
}

# series_objects DIR: the object files, as DIR's compile_commands.json names
# them, of every C file the series adds or changes (a file compiled for the
# server and for clients has one each)
series_objects() {
	# shellcheck disable=SC2046
	perl -MJSON::PP -MCwd=realpath -e '
		my ($db, $tree, @files) = @ARGV;
		my %ours = map { realpath("$tree/$_") => 1 } @files;
		open(my $fh, "<", $db) or die "$db: $!";
		local $/;
		for my $e (@{ decode_json(<$fh>) }) {
			my $f = realpath($e->{file} =~ m{^/} ? $e->{file} : "$e->{directory}/$e->{file}");
			print "$e->{output}\n" if defined $f && $ours{$f};
		}' "$1/compile_commands.json" "$TREE" $(g diff --name-only upstream HEAD -- '*.c')
}

# PostgreSQL 15 has no meson.build: the same two builds with configure and
# make, out of the tree (a VPATH build, as meson's), the same features.
# The test build compiles with -Werror (COPT, given to each make in it:
# configure's own tests must not see it).  Decided by the major, not by
# the tree: "make build" on a fresh clone asks before the tree exists.
uses_autoconf() { [ "$MAJOR_NUMBER" -lt 16 ]; }
AUTOCONF_FEATURES=(--with-openssl --with-readline --with-zlib --with-icu --with-lz4 --with-zstd --with-libxml)
AUTOCONF_OPTS=(--enable-debug --enable-cassert --enable-tap-tests "${AUTOCONF_FEATURES[@]}")
RELEASE_AUTOCONF_OPTS=(CFLAGS=-O2 "${AUTOCONF_FEATURES[@]}")

# build_dir_autoconf DIR NAME COPT CONTRIB-DIRS CONFIGURE-OPTION...: configure
# (again when the options or the prefix change) and make DIR from the tree
build_dir_autoconf() {
	local dir=$1 name=$2 copt=$3 contrib=$4 cc=gcc
	shift 4
	command -v ccache >/dev/null && cc="ccache gcc"
	cmd_deps
	cmd_fetch
	ensure_tree
	own_workspace
	local opts="--prefix=$PREFIX CC=$cc $*"
	if [ "$(cat "$dir/.setup-options" 2>/dev/null)" != "$opts" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		is_root && chown "$TEST_USER:" "$dir"
		note "configure $dir ($name build, prefix $PREFIX)"
		(cd "$dir" && as_tester "$TREE/configure" --prefix="$PREFIX" CC="$cc" "$@") \
			>"$WORKDIR/configure-$name.log" 2>&1 ||
			{ tail -40 "$WORKDIR/configure-$name.log" >&2; die "configure failed (log: $WORKDIR/configure-$name.log)"; }
		echo "$opts" >"$dir/.setup-options"
	fi
	# (directories and Makefiles that a series added after configure)
	as_tester sh "$TREE/config/prep_buildtree" "$TREE" "$dir"
	note "make -C $dir${contrib:+ (and $contrib)}"
	# (two jobs more than CPUs, as ninja runs: the recursive make's serial
	# steps, such as generated headers and links, leave a CPU idle otherwise)
	local jobs=$(($(nproc) + 2))
	(as_tester make -s -C "$dir" -j"$jobs" COPT="$copt" && for c in $contrib; do
		as_tester make -s -C "$dir/$c" -j"$jobs" COPT="$copt" || exit 1
	done) >"$WORKDIR/build-$name.log" 2>&1 ||
		{ grep -E -B2 -A6 'error|Error' "$WORKDIR/build-$name.log" | tail -60 >&2; die "build failed (log: $WORKDIR/build-$name.log)"; }
	grep -E 'warning:' "$WORKDIR/build-$name.log" >&2 || true
	note "$name build ok"
}

cmd_build() {
	if uses_autoconf; then
		build_dir_autoconf "$BUILD" test -Werror contrib/mptcpinfo "${AUTOCONF_OPTS[@]}"
	else
		build_dir "$BUILD" test "${MESON_OPTS[@]}"
	fi
}
cmd_build_release() {
	if uses_autoconf; then
		# (all of contrib, as meson builds and installs it)
		build_dir_autoconf "$RELEASE_BUILD" release "" contrib "${RELEASE_AUTOCONF_OPTS[@]}"
	else
		build_dir "$RELEASE_BUILD" release "${RELEASE_MESON_OPTS[@]}"
	fi
}

cmd_install() {
	cmd_build_release
	if is_root; then
		mkdir -p "$PREFIX"
		chown "$TEST_USER:" "$PREFIX"
	fi
	if uses_autoconf; then
		{ as_tester make -s -C "$RELEASE_BUILD" install && as_tester make -s -C "$RELEASE_BUILD/contrib" install; }
	else
		as_tester meson install -C "$RELEASE_BUILD" --quiet
	fi >"$WORKDIR/install.log" 2>&1 ||
		{ tail -20 "$WORKDIR/install.log" >&2; die "install to $PREFIX failed"; }
	note "installed the optimized build (-O2, no assertions) to $PREFIX"
}

# ---- the test suites without meson (PostgreSQL 15)
# The directory of each suite that check_suites names ("setup" is meson's
# temporary installation: here one "make temp-install" before the suites).
autoconf_suite_dir() {
	case $1 in
	regress) echo src/test/regress ;;
	mptcp) echo src/test/mptcp ;;
	libpq) echo src/interfaces/libpq ;;
	pg_basebackup) echo src/bin/pg_basebackup ;;
	postmaster) echo src/test/postmaster ;;
	mptcpinfo) echo contrib/mptcpinfo ;;
	esac
}

# autoconf_check SUITE...: "make check" in each suite's directory of the
# test build, with the results written where meson writes them
# (meson-logs/testlog.json, one JSON object a line with the test's name and
# result), so that summarize_tests reads either.  PROVE_FLAGS and
# PROVE_TESTS are passed on.
autoconf_check() {
	local logs=$BUILD/meson-logs s dir rc
	mkdir -p "$logs"
	is_root && chown "$TEST_USER:" "$logs"
	rm -f "$logs/testlog.json"
	note "make temp-install ($BUILD/tmp_install)"
	as_tester make -s -C "$BUILD" temp-install COPT=-Werror >"$logs/temp-install.log" 2>&1 ||
		{ tail -20 "$logs/temp-install.log" >&2; echo '{"name": "setup (make temp-install)", "result": "FAIL"}' >"$logs/testlog.json"; return 0; }
	for s in "$@"; do
		dir=$(autoconf_suite_dir "$s")
		[ -n "$dir" ] || continue
		note "make -C $dir check (PG_TEST_EXTRA=${PG_TEST_EXTRA:-})"
		rc=0
		# (two scripts at a time, as meson runs them for 16 and later: the
		# TAP scripts mostly wait, and CI's time is bounded)
		as_tester make -C "$BUILD/$dir" check NO_TEMP_INSTALL=1 COPT=-Werror \
			PROVE_FLAGS="${PROVE_FLAGS:--j$(nproc)}" ${PROVE_TESTS:+PROVE_TESTS="$PROVE_TESTS"} \
			>"$logs/check-$s.log" 2>&1 || rc=$?
		autoconf_test_results "$s" "$logs/check-$s.log" "$rc" | tee -a "$logs/testlog.json" |
			perl -MJSON::PP -ne '$t = decode_json($_); printf STDERR "%-50s %s\n", $t->{name}, $t->{result}'
		[ $rc -eq 0 ] || { grep -E -A20 '^(not ok|#   Failed|Dubious|Test Summary Report)|tests? failed' "$logs/check-$s.log" | head -60 >&2; }
	done
}

# autoconf_test_results SUITE LOG RC: the results in LOG (pg_regress's and
# prove's output) as testlog.json lines: one for each pg_regress run (as
# meson counts it), one for each TAP script (skipped: SKIP).  A make that
# failed with no failed test in its output is one failure of its own.
autoconf_test_results() {
	perl -MJSON::PP -e '
		my ($suite, $log, $rc) = @ARGV;
		my (@order, %res, $failed, $pending);
		open(my $fh, "<", $log) or die "$log: $!";
		while (<$fh>) {
			# (a script'"'"'s diagnostics can come between its name and "ok")
			if (/^(?:\[[\d:]+\] )?(t\/\S+\.pl) \.+ ?(.*)$/) {
				my ($t, $rest) = ($1, $2);
				push @order, $t unless exists $res{$t};
				$res{$t} = $rest =~ /^skipped/ ? "SKIP" : $rest =~ /^ok/ ? "OK" : "FAIL";
				$pending = $res{$t} eq "FAIL" ? $t : undef;
			} elsif (defined $pending && /^(ok|skipped: .*)\s*$/) {
				$res{$pending} = $1 eq "ok" ? "OK" : "SKIP";
				undef $pending;
			} elsif (/^(t\/\S+\.pl) +\(Wstat: /) {
				push @order, $1 unless exists $res{$1};
				$res{$1} = "FAIL";
			} elsif (/^Bailout called\.|^FAILED--Further testing stopped/) {
				# (the scripts after it did not run)
				$res{"(bailed out)"} or push @order, "(bailed out)";
				$res{"(bailed out)"} = "FAIL";
			} elsif (/^ *All \d+ tests passed\./) {
				push @order, "regress"; $res{regress} = "OK";
			} elsif (/^ *\d+ of \d+ tests failed/) {
				push @order, "regress"; $res{regress} = "FAIL";
			}
		}
		for my $t (@order) {
			(my $n = $t) =~ s{^t/(.*)\.pl$}{$1};
			$failed++ if $res{$t} eq "FAIL";
			print encode_json({name => "$suite/$n", result => $res{$t}}), "\n";
		}
		print encode_json({name => "$suite (make check exited with $rc)", result => "FAIL"}), "\n"
			if $rc != 0 && !$failed;' "$1" "$2" "$3"
}

# (cmd_verify_patch_builds without meson) each patch in order builds on its
# own, with -Werror: a second work tree moved from commit to commit, built
# out of the tree by make, which re-runs configure where a commit changes
# it; contrib/mptcpinfo from the commit that adds it.
autoconf_verify_patch_builds() {
	local wt=$WORKDIR/verify/pg bd=$WORKDIR/verify/build c n=0 cc=gcc
	command -v ccache >/dev/null && cc="ccache gcc"
	patch_builds_worktree
	for c in $(g rev-list --reverse upstream..HEAD); do
		n=$((n + 1))
		patch_builds_checkout "$c"
		if [ ! -f "$bd/GNUmakefile" ]; then
			mkdir -p "$bd"
			is_root && chown "$TEST_USER:" "$bd"
			(cd "$bd" && as_tester "$wt/configure" CC="$cc" "${AUTOCONF_OPTS[@]}") >"$WORKDIR/verify/configure.log" 2>&1 ||
				{ tail -20 "$WORKDIR/verify/configure.log"; die "patch $n ($(g log -1 --format=%s "$c")): configure failed"; }
		fi
		as_tester sh "$wt/config/prep_buildtree" "$wt" "$bd"
		(as_tester make -s -C "$bd" -j"$(nproc)" COPT=-Werror &&
			if [ -d "$wt/contrib/mptcpinfo" ]; then as_tester make -s -C "$bd/contrib/mptcpinfo" COPT=-Werror; fi) \
			>"$WORKDIR/verify/make-$n.log" 2>&1 ||
			{ tail -20 "$WORKDIR/verify/make-$n.log"; die "patch $n ($(g log -1 --format=%s "$c")) does not build"; }
		echo "patch $n builds: $(g log -1 --format=%s "$c")"
	done
}
