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

# build_dir DIR NAME MESON-OPTION...: set up (once) and build DIR from the tree
build_dir() {
	local dir=$1 name=$2
	shift 2
	# (as root, set up what the build needs on a fresh machine, as "make demo" does)
	cmd_deps
	cmd_fetch
	ensure_tree
	own_workspace
	if [ ! -f "$dir/build.ninja" ]; then
		note "meson setup $dir ($name build, prefix $PREFIX)"
		as_tester meson setup "$dir" "$TREE" --prefix="$PREFIX" "$@" >"$WORKDIR/meson-setup-$name.log" 2>&1 ||
			{ tail -40 "$WORKDIR/meson-setup-$name.log" >&2; die "meson setup failed (log: $WORKDIR/meson-setup-$name.log)"; }
	elif [ "$(as_tester meson introspect --buildoptions "$dir" |
		perl -MJSON::PP -0e 'print map { $_->{name} eq "prefix" ? $_->{value} : () } @{decode_json(<>)}')" != "$PREFIX" ]; then
		as_tester meson configure "$dir" --prefix="$PREFIX" >/dev/null
	fi
	note "ninja -C $dir"
	as_tester ninja -C "$dir" >"$WORKDIR/build-$name.log" 2>&1 ||
		{ grep -E -B2 -A6 'error|FAILED' "$WORKDIR/build-$name.log" | tail -60 >&2; die "build failed (log: $WORKDIR/build-$name.log)"; }
	grep -E 'warning:' "$WORKDIR/build-$name.log" >&2 || true
	note "$name build ok"
}

cmd_build() { build_dir "$BUILD" test "${MESON_OPTS[@]}"; }
cmd_build_release() { build_dir "$RELEASE_BUILD" release "${RELEASE_MESON_OPTS[@]}"; }

cmd_install() {
	cmd_build_release
	if is_root; then
		mkdir -p "$PREFIX"
		chown "$TEST_USER:" "$PREFIX"
	fi
	as_tester meson install -C "$RELEASE_BUILD" --quiet >"$WORKDIR/install.log" 2>&1 ||
		{ tail -20 "$WORKDIR/install.log" >&2; die "install to $PREFIX failed"; }
	note "installed the optimized build (-O2, no assertions) to $PREFIX"
}

