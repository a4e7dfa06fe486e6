# shellcheck shell=bash
# deps: the build packages, the deb-src entry and the test user; and the check that deps works on a fresh machine.
# Part of tools/workspace (sourced by it; see that file for the layout).

# The packages of APT_PACKAGES that dpkg does not list as installed.  One
# query per package: dpkg-query exits 1 as soon as one of several packages
# is unknown, which is the normal case on a fresh machine.
missing_packages() {
	local p status missing=
	for p in $APT_PACKAGES; do
		status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) || status=
		[ "${status:0:2}" = ii ] || missing="$missing $p"
	done
	echo $missing
}

DEB_SRC_ENTRY=/etc/apt/sources.list.d/pg-mptcp-$PG_DEBIAN_SUITE-src.sources
cmd_deps() {
	if ! is_root; then
		local absent
		absent=$(missing_packages)
		[ -z "$absent" ] || note "not root, so not installing: $absent (the build may fail without them)"
		return 0
	fi
	local src=$DEB_SRC_ENTRY
	# (a git major needs no source package)
	if [ "$SOURCE_KIND" = debian ] && [ ! -f "$src" ]; then
		note "adding deb-src entry for Debian $PG_DEBIAN_SUITE ($src): source packages only"
		cat >"$src" <<-EOF
		# Added by the pg-mptcp workspace: "apt-get source $PG_SOURCE_PACKAGE".
		# deb-src only, so no binary package comes from $PG_DEBIAN_SUITE.
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: $PG_DEBIAN_SUITE
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		rm -f "$WORKDIR/.apt-updated"
	fi
	local missing
	missing=$(missing_packages)
	if [ -n "$missing" ] || [ ! -f "$WORKDIR/.apt-updated" ]; then
		note "apt-get update"
		apt-get update -qq >"$WORKDIR/apt.log" 2>&1 ||
			{ cat "$WORKDIR/apt.log" >&2; die "apt-get update failed (output above)"; }
		touch "$WORKDIR/.apt-updated"
	fi
	if [ -n "$missing" ]; then
		note "installing: $missing"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >"$WORKDIR/apt.log" 2>&1 ||
			{ tail -30 "$WORKDIR/apt.log" >&2; die "apt-get install failed (output above)"; }
	else
		note "build packages: all installed"
	fi
	if ! id "$TEST_USER" >/dev/null 2>&1; then
		note "creating unprivileged test user $TEST_USER (postgres refuses to run as root)"
		useradd --system --user-group --no-create-home --home-dir "$WORKDIR/home" \
			--shell /bin/bash "$TEST_USER"
	fi
	own_workspace
}

# "make deps" as on a fresh machine, without touching this one: in a private
# mount namespace dpkg's status file lists a few base packages only (plus
# git removed with its configuration kept), /etc is a scratch copy (for the
# deb-src entry and the new user), and apt-get is a stub that records what
# it is asked.  Passes only if deps succeeds, asks for every missing build
# package and nothing already installed.
FRESH_INSTALLED="base-files bash coreutils dpkg libc6 passwd perl util-linux"
cmd_verify_fresh_deps() {
	if ! is_root; then
		echo "skipped: the fresh-machine check of 'make deps' needs root (a private mount namespace)"
		exit 77
	fi
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "skipped: cannot create a private mount namespace here"; exit 77; }
	local t p
	t=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$t'" EXIT
	mkdir -p "$t/bin" "$t/work"
	for p in $FRESH_INSTALLED; do dpkg-query -s "$p"; echo; done >"$t/status"
	dpkg-query -s git | sed 's/^Status: .*/Status: deinstall ok config-files/' >>"$t/status"
	cat >"$t/bin/apt-get" <<-EOF
	#!/bin/sh
	echo "\$*" >>"$t/apt-get.calls"
	EOF
	chmod 755 "$t/bin/apt-get"
	cp -a /etc "$t/etc"
	rm -f "$t/etc/apt/sources.list.d"/pg-mptcp-*-src.sources
	local rc=0
	unshare -m --propagation private sh -c '
		mount --bind "$1/status" /var/lib/dpkg/status &&
		mount --bind "$1/etc" /etc &&
		PATH="$1/bin:$2" WORKDIR="$1/work" TEST_USER=pgmptcp-fresh PG_MAJOR="$4" "$3" deps' \
		sh "$t" "$PLAIN_PATH" "$TOP/tools/workspace" "$PG_MAJOR" >"$t/deps.out" 2>&1 || rc=$?
	cat "$t/deps.out"
	[ $rc -eq 0 ] || die "deps failed on a fresh machine (exit $rc)"
	grep -q '^update' "$t/apt-get.calls" 2>/dev/null || die "deps did not run apt-get update"
	local asked expected=
	asked=" $(sed -n 's/^install .*--no-install-recommends //p' "$t/apt-get.calls" | tr '\n' ' ') "
	for p in $APT_PACKAGES; do
		case " $FRESH_INSTALLED " in *" $p "*) ;; *) expected="$expected $p" ;; esac
	done
	for p in $expected; do
		case $asked in *" $p "*) ;; *) die "deps did not ask apt-get to install $p" ;; esac
	done
	for p in $FRESH_INSTALLED; do
		case $asked in *" $p "*) die "deps asked to install $p, which is installed" ;; esac
	done
	[ "$SOURCE_KIND" != debian ] || grep -q "^Suites: $PG_DEBIAN_SUITE\$" "$t$DEB_SRC_ENTRY" ||
		die "deps did not add the deb-src entry for $PG_DEBIAN_SUITE"
	grep -q '^pgmptcp-fresh:' "$t/etc/passwd" || die "deps did not create the test user"
	echo "fresh machine: deps asked apt-get for:$asked"
}

