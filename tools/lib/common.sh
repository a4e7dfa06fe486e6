# shellcheck shell=bash
# Settings every part shares, and the small helpers (messages, git on the work tree, running as the test user).
# Part of tools/workspace (sourced by it; see that file for the layout).

# The default major is the one "make VERB" picks; the overlay owner is the
# major whose versions of the new files are the shared overlay (master:
# what reviewers read is never a diff of a diff).  Every other major keeps
# its differences as patches/MAJOR/overlay/PATH.diff.
DEFAULT_MAJOR=18
OVERLAY_MAJOR=master
PG_MAJOR=${PG_MAJOR:-$DEFAULT_MAJOR}
# master first, then the numbered majors newest first
supported_majors() { (cd "$TOP/patches" && { ls -d master 2>/dev/null; ls -d [0-9]* | sort -rn; }); }
SERIES_DIR=$TOP/patches/$PG_MAJOR
[ -f "$SERIES_DIR/upstream.conf" ] ||
	{ echo "workspace: PostgreSQL $PG_MAJOR is not supported (PG_MAJOR=$(supported_majors | tr '\n' ' ' | sed 's/ $//;s/ / or /g'))" >&2; exit 1; }
# upstream.conf names one source: a Debian source package (PG_SOURCE_PACKAGE,
# PG_DEBIAN_VERSION, PG_ORIG_SHA256, PG_DEBIAN_SUITE) or a git commit
# (PG_GIT_URL, PG_GIT_BRANCH, PG_GIT_COMMIT).
PG_SOURCE_PACKAGE= PG_DEBIAN_VERSION= PG_ORIG_SHA256= PG_DSC_SHA256= PG_DEBIAN_SUITE=
PG_GIT_URL=https://git.postgresql.org/git/postgresql.git PG_GIT_BRANCH= PG_GIT_COMMIT= PG_VERSION_STRING=
# shellcheck source=../../patches/18/upstream.conf
. "$SERIES_DIR/upstream.conf"
# The major as a number (master: the one its meson.build names), for ports.
MAJOR_NUMBER=${PG_VERSION_STRING:-$PG_MAJOR}
MAJOR_NUMBER=${MAJOR_NUMBER%%[!0-9]*}
if [ -n "$PG_GIT_COMMIT" ]; then
	SOURCE_KIND=git
	UPVER="$PG_MAJOR@${PG_GIT_COMMIT:0:10}"
else
	SOURCE_KIND=debian
	# Which version is built (archive.sh): by default the newest one the
	# archive lets us download, never older than the pin; STRICT_PIN=1 the
	# pin only; PG_DEBIAN_VERSION=V exactly V.
	PINNED_DEBIAN_VERSION=$PG_DEBIAN_VERSION
	if [ -n "${OVERRIDE_PG_DEBIAN_VERSION:-}" ]; then
		DEBIAN_VERSION_MODE=override
	elif [ -n "${STRICT_PIN:-}" ]; then
		DEBIAN_VERSION_MODE=strict
	else
		DEBIAN_VERSION_MODE=default
	fi
	PG_DEBIAN_VERSION=${OVERRIDE_PG_DEBIAN_VERSION:-$PG_DEBIAN_VERSION}
	PG_ORIG_SHA256=${OVERRIDE_PG_ORIG_SHA256:-$PG_ORIG_SHA256}
fi

GIVEN_WORKDIR=${WORKDIR:-}
WORKDIR=${WORKDIR:-$TOP/.work/$PG_MAJOR}
mkdir -p "$WORKDIR"
WORKDIR=$(cd "$WORKDIR" && pwd)
CACHE=$WORKDIR/cache
# git 2.39 refuses a repository another user owns ("dubious ownership"), and
# "-c safe.directory" does not reach the upload-pack that a local clone
# spawns.  So the tool's git reads a private global config, which trusts
# every tree and includes the user's own; the user's config is never written.
# (A nested run of the tool includes the same user config, not its parent's.)
# A tool config found in GIT_CONFIG_GLOBAL (a shell that kept it) is not
# the user's: including it would include itself.
TOOL_GITCONFIG=$WORKDIR/gitconfig
TOOL_GITCONFIG_MARK='# the workspace tool'"'"'s own git config (tools/lib/common.sh)'
if [ -z "${USER_GITCONFIG:-}" ]; then
	USER_GITCONFIG=${GIT_CONFIG_GLOBAL:-${HOME:-/nonexistent}/.gitconfig}
	[ "$(head -1 "$USER_GITCONFIG" 2>/dev/null)" != "$TOOL_GITCONFIG_MARK" ] ||
		USER_GITCONFIG=${HOME:-/nonexistent}/.gitconfig
fi
export USER_GITCONFIG
printf '%s\n[include]\n\tpath = %s\n[safe]\n\tdirectory = *\n' "$TOOL_GITCONFIG_MARK" "$USER_GITCONFIG" >"$TOOL_GITCONFIG.new"
mv "$TOOL_GITCONFIG.new" "$TOOL_GITCONFIG"
export GIT_CONFIG_GLOBAL=$TOOL_GITCONFIG
TREE=$WORKDIR/pg
BUILD=$WORKDIR/build
PREFIX=${PREFIX:-$WORKDIR/install}
TEST_USER=${TEST_USER:-pgmptcp}
PLAIN_PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
# use_debian_version V ORIG_SHA256 [DSC_SHA256]: build Debian version V (the
# pin, or what fetch chose instead and recorded in $CACHE/resolved).
use_debian_version() {
	PG_DEBIAN_VERSION=$1
	PG_ORIG_SHA256=$2
	UPVER=${PG_DEBIAN_VERSION%-*}
	UPVER=${UPVER#*:}
	TARBALL=$CACHE/${PG_SOURCE_PACKAGE}_${UPVER}.orig.tar.bz2
	# Debian's whole source package (for "make deb"): the .dsc beside the orig tarball
	DSC=$CACHE/${PG_SOURCE_PACKAGE}_${PG_DEBIAN_VERSION#*:}.dsc
	DEB_VERSION=$PG_DEBIAN_VERSION+mptcp${DEB_REVISION:-1}
	# Built for another suite than the source's (18 from sid, for trixie):
	# "~deb13", as PGDG's ".pgdg13+1", sorts below the same build for the
	# source's suite, so that upgrading the host to that suite takes it.
	[ "$DEB_SUITE" = "$PG_DEBIAN_SUITE" ] || DEB_VERSION=$DEB_VERSION~deb$(debian_suite_number "$DEB_SUITE")
}
# The Debian suite that "make deb" builds for and deb-test installs on
# (SUITE=...): by default the one the source package comes from.
DEB_SUITE=${DEB_SUITE:-$PG_DEBIAN_SUITE}
debian_suite_number() {
	case $1 in
	bookworm) echo 12 ;; trixie) echo 13 ;; forky) echo 14 ;;
	*) echo "workspace: SUITE=$1: a stable suite (bookworm, trixie, forky), or $PG_DEBIAN_SUITE" >&2; exit 1 ;;
	esac
}
if [ "$SOURCE_KIND" = debian ]; then
	use_debian_version "$PG_DEBIAN_VERSION" "$PG_ORIG_SHA256"
	if [ "$DEBIAN_VERSION_MODE" = default ] && [ -f "$CACHE/resolved" ]; then
		read -r resolved_pin resolved_version resolved_orig_sha _ <"$CACHE/resolved"
		[ "$resolved_pin" != "$PINNED_DEBIAN_VERSION" ] ||
			use_debian_version "$resolved_version" "$resolved_orig_sha"
	fi
fi

# Fixed identities and dates make the assembled commits reproducible, so that
# apply followed by refresh regenerates byte-identical patches.
UPSTREAM_AUTHOR="PostgreSQL Global Development Group"
UPSTREAM_EMAIL="pgsql-hackers@lists.postgresql.org"
UPSTREAM_DATE="2000-01-01T00:00:00Z"

APT_PACKAGES="build-essential meson ninja-build flex bison pkg-config perl
  libipc-run-perl libreadline-dev zlib1g-dev libssl-dev libicu-dev
  liblz4-dev libzstd-dev libxml2-dev ccache
  iproute2 util-linux procps bzip2 ca-certificates git nftables
  xsltproc libxml2-utils docbook-xml docbook-xsl autoconf2.69"
# The committer checks of the git majors build with clang, with every
# feature whose headers headerscheck reads (JIT, PL/Perl, PL/Python).
[ "$SOURCE_KIND" = debian ] || APT_PACKAGES="$APT_PACKAGES clang llvm-dev libperl-dev python3-dev"
[ "$PG_MAJOR" != master ] || APT_PACKAGES="$APT_PACKAGES gcc-mingw-w64-x86-64"
# A Debian major's series also goes on top of Debian's own patches (quilt).
[ "$SOURCE_KIND" != debian ] || APT_PACKAGES="$APT_PACKAGES quilt"

die() { printf 'workspace: %s\n' "$*" >&2; exit 1; }
note() { printf '==> %s\n' "$*" >&2; }
is_root() { [ "$(id -u)" -eq 0 ]; }
g() { git -c safe.directory='*' -c core.abbrev=12 -c diff.algorithm=myers \
	-c core.autocrlf=false -c advice.detachedHead=false -C "$TREE" "$@"; }

# Run a command as the unprivileged test user (when we are root) with a
# plain PATH: root's pyenv shims are not executable by that user, and meson
# re-runs the python it was set up with.  ccache sees paths relative to the
# workspace, so the per-patch build of verify/pg reuses the objects of pg/.
as_tester() {
	if is_root; then
		runuser -u "$TEST_USER" -- env -i PATH="$PLAIN_PATH" HOME="$WORKDIR/home" \
			LANG=C.UTF-8 TERM="${TERM:-dumb}" ${PG_TEST_EXTRA+PG_TEST_EXTRA="$PG_TEST_EXTRA"} \
			${PG_TEST_STOCK_PSQL+PG_TEST_STOCK_PSQL="$PG_TEST_STOCK_PSQL"} \
			${PG_TEST_POSTGRES_EXPORTER+PG_TEST_POSTGRES_EXPORTER="$PG_TEST_POSTGRES_EXPORTER"} \
			${PG_TEST_NODE_EXPORTER+PG_TEST_NODE_EXPORTER="$PG_TEST_NODE_EXPORTER"} \
			${PG_TEST_PROMTOOL+PG_TEST_PROMTOOL="$PG_TEST_PROMTOOL"} \
			${PG_TEST_NFT+PG_TEST_NFT="$PG_TEST_NFT"} \
			${MESON_TESTTHREADS+MESON_TESTTHREADS="$MESON_TESTTHREADS"} \
			CCACHE_DIR="$WORKDIR/home/.ccache" CCACHE_BASEDIR="$WORKDIR" CCACHE_NOHASHDIR=1 "$@"
	else
		env HOME="${HOME:-$WORKDIR/home}" CCACHE_BASEDIR="$WORKDIR" CCACHE_NOHASHDIR=1 "$@"
	fi
}

own_workspace() {
	mkdir -p "$WORKDIR/home"
	if is_root; then
		id "$TEST_USER" >/dev/null 2>&1 || die "test user $TEST_USER missing: run 'make deps' as root"
		# (not the package chroots of deb.sh, deb/ and deb-SUITE/: their
		# files belong to root and to the chroot's own users, and a build
		# may be running there)
		chown "$TEST_USER:" "$WORKDIR"
		find "$WORKDIR" -mindepth 1 -maxdepth 1 ! -name 'deb' ! -name 'deb-*' -exec chown -R "$TEST_USER:" {} +
		# The test user must reach the workspace through our checkout.
		local d=$WORKDIR
		while [ "$d" != / ]; do chmod o+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
	fi
}

