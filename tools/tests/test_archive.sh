#!/usr/bin/env bash
# Which Debian version "fetch" builds when the archive moves (tools/lib/archive.sh),
# against a fake archive: a directory that apt reads through file:, with its own
# apt state (APT_CONFIG), so neither the network nor this machine's apt is used.
# The real fetch_debian runs on a fake source package, "pgmptcp-fake", whose
# versions 1.0-1 (the pin), 1.1-1 and 1.2-1 have tiny tarballs that say which
# version they are.
#
# Cases: the pin listed; the pin unlisted but in the pool (with a newer
# version served, and with STRICT_PIN=1); the pin gone with a newer version
# served; a newer version listed but not downloadable; nothing served; an
# explicit PG_DEBIAN_VERSION; a pool file that does not match its checksum.
# Each checks the version built and the message, and that nothing older than
# what the archive serves is built unless the pin is strict.
#
# Usage: tools/tests/test_archive.sh   (TAP output; exit 1 on a failure)
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PKG=pgmptcp-fake
POOL=pool/main/p/$PKG
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
expect() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: got '$2', expected '$3'"; fi; }
expect_match() { if grep -qF -- "$3" <<<"$2"; then ok "$1"; else not_ok "$1: '$3' not in: $2"; fi; }

# ---- the fake archive: every version's files are made once, in $T/files;
# a case copies the ones its pool has and writes the index it lists.
make_version() {
	local v=$1 up=${1%-*} d=$T/files src
	src=$T/src-$v/$PKG-$up
	mkdir -p "$src/debian" "$d"
	echo "$v" >"$src/VERSION"
	tar -cjf "$d/${PKG}_$up.orig.tar.bz2" -C "$T/src-$v" "$PKG-$up"
	tar -cJf "$d/${PKG}_$v.debian.tar.xz" -C "$src" debian
	{
		printf 'Format: 3.0 (quilt)\nSource: %s\nVersion: %s\nChecksums-Sha256:\n' "$PKG" "$v"
		for f in "${PKG}_$up.orig.tar.bz2" "${PKG}_$v.debian.tar.xz"; do
			echo " $(sha256sum <"$d/$f" | cut -d' ' -f1) $(stat -c %s "$d/$f") $f"
		done
	} >"$d/${PKG}_$v.dsc"
}
files_of() { local up=${1%-*}; echo "${PKG}_$1.dsc ${PKG}_$up.orig.tar.bz2 ${PKG}_$1.debian.tar.xz"; }
sha_of() { sha256sum <"$1" | cut -d' ' -f1; }
for v in 1.0-1 1.1-1 1.2-1; do make_version "$v"; done
PIN=1.0-1
PIN_DSC_SHA=$(sha_of "$T/files/${PKG}_$PIN.dsc")
PIN_ORIG_SHA=$(sha_of "$T/files/${PKG}_1.0.orig.tar.bz2")

# archive LISTED POOL: the index lists the versions LISTED, the pool holds
# POOL's files (both space-separated lists); apt's state is made anew.
archive() {
	local a=$T/archive v f
	rm -rf "$a" "$T/apt"
	mkdir -p "$a/$POOL" "$a/dists/fake/main/source" "$T/apt/lists/partial" "$T/apt/cache/archives/partial"
	for v in $2; do for f in $(files_of "$v"); do cp "$T/files/$f" "$a/$POOL/"; done; done
	for v in $1; do
		printf 'Package: %s\nBinary: %s\nVersion: %s\nDirectory: %s\nFiles:\n' "$PKG" "$PKG" "$v" "$POOL"
		for f in $(files_of "$v"); do echo " $(md5sum <"$T/files/$f" | cut -d' ' -f1) $(stat -c %s "$T/files/$f") $f"; done
		echo "Checksums-Sha256:"
		for f in $(files_of "$v"); do echo " $(sha_of "$T/files/$f") $(stat -c %s "$T/files/$f") $f"; done
		echo
	done >"$a/dists/fake/main/source/Sources"
	# (another package, so that an index without ours is still an index)
	printf 'Package: other\nBinary: other\nVersion: 1\nDirectory: pool/main/o/other\n\n' >>"$a/dists/fake/main/source/Sources"
	local s=$a/dists/fake/main/source/Sources
	printf 'Suite: fake\nCodename: fake\nComponents: main\nArchitectures: source\nSHA256:\n %s %s main/source/Sources\n' \
		"$(sha_of "$s")" "$(stat -c %s "$s")" >"$a/dists/fake/Release"
	echo "deb-src [trusted=yes] file:$a fake main" >"$T/apt/sources.list"
	cat >"$T/apt/apt.conf" <<-EOF
	Dir::Etc::SourceList "$T/apt/sources.list";
	Dir::Etc::SourceParts "$T/apt/none";
	Dir::Etc::Parts "$T/apt/none";
	Dir::State::Lists "$T/apt/lists";
	Dir::Cache "$T/apt/cache";
	Dir::State::status "/dev/null";
	APT::Sandbox::User "$(id -un)";
	Debug::NoLocking "true";
	EOF
	mkdir -p "$T/apt/none"
	APT_CONFIG=$T/apt/apt.conf apt-get update -qq >"$T/apt/update.log" 2>&1 ||
		{ cat "$T/apt/update.log"; echo "Bail out! apt-get update of the fake archive failed"; exit 1; }
}

# fetch [VAR=VALUE...]: the workspace's fetch_debian on the fake package, in a
# fresh cache; prints its messages; sets BUILT to the version in the tarball
# it left (empty if none) and RC.
fetch() {
	local cache=$T/cache
	rm -rf "$cache"
	OUT=$(env "$@" APT_CONFIG="$T/apt/apt.conf" PG_MAJOR=17 WORKDIR="$T/work" TOP="$TOP" \
		PKG="$PKG" PIN="$PIN" PIN_DSC_SHA="$PIN_DSC_SHA" PIN_ORIG_SHA="$PIN_ORIG_SHA" CACHE_DIR="$cache" \
		bash -c '
		set -euo pipefail
		for part in common deps archive source; do . "$TOP/tools/lib/$part.sh"; done
		# (the fake package in place of upstream.conf'"'"'s)
		PG_SOURCE_PACKAGE=$PKG PG_DEBIAN_SUITE=fake PINNED_DEBIAN_VERSION=$PIN
		PG_DSC_SHA256=$PIN_DSC_SHA CACHE=$CACHE_DIR SOURCE_NOTE_FILE=$CACHE_DIR/source-note
		use_debian_version "${OVERRIDE_PG_DEBIAN_VERSION:-$PIN}" "${OVERRIDE_PG_ORIG_SHA256:-$PIN_ORIG_SHA}"
		is_root() { false; }
		fetch_debian' 2>&1)
	RC=$?
	BUILT=
	local t
	t=$(ls "$cache"/*.orig.tar.bz2 2>/dev/null | head -1)
	[ -z "$t" ] || BUILT=$(tar -xjOf "$t" --wildcards '*/VERSION')
	NOTE=$(cat "$cache/source-note" 2>/dev/null || true)
}

echo "# 1. the pin listed and downloadable"
archive "1.0-1" "1.0-1"
fetch
expect "pin listed: built the pin" "$BUILT" 1.0-1
expect "pin listed: no note" "$NOTE" ""

echo "# 2. the pin unlisted but in the pool; the index lists a newer version that can be downloaded"
archive "1.1-1" "1.0-1 1.1-1"
fetch
expect "newer served: built it, not the older pin" "$BUILT" 1.1-1
expect "newer served: the note says re-pin" "$NOTE" "17: pinned 1.0-1 is older than what the archive serves; built 1.1-1 from the archive: re-pin"
expect_match "newer served: the values to pin are printed" "$OUT" "PG_DSC_SHA256=$(sha_of "$T/files/${PKG}_1.1-1.dsc")"
fetch STRICT_PIN=1
expect "STRICT_PIN=1: built the pin from the pool" "$BUILT" 1.0-1
expect "STRICT_PIN=1: the note says it came from the pool" "$NOTE" "17: built the pin 1.0-1 from the pool (the index no longer lists it; it lists 1.1-1)"

echo "# 3. the pin unlisted, only it in the pool (the index lists no version of the package)"
archive "" "1.0-1"
fetch
expect "pin unlisted, in the pool: built the pin" "$BUILT" 1.0-1
expect "pin unlisted, in the pool: the note" "$NOTE" "17: built the pin 1.0-1 from the pool (the index no longer lists it; it lists nothing)"

echo "# 4. the pin gone, a newer version served"
archive "1.2-1" "1.2-1"
fetch
expect "pin gone: built the newest served" "$BUILT" 1.2-1
expect "pin gone: the note" "$NOTE" "17: pinned 1.0-1 is gone; built 1.2-1 from the archive: re-pin"
fetch STRICT_PIN=1
expect "pin gone, STRICT_PIN=1: nothing built" "$BUILT" ""
expect "pin gone, STRICT_PIN=1: fails" "$RC" 1
expect_match "pin gone, STRICT_PIN=1: says the pin is not there" "$OUT" "1.0-1: ${PKG}_1.0-1.dsc:"

echo "# 5. a newer version listed but not downloadable; the pin in the pool"
archive "1.2-1" "1.0-1"
fetch
expect "newer not downloadable: built the pin" "$BUILT" 1.0-1
expect_match "newer not downloadable: the note names it" "$NOTE" "17: built the pin 1.0-1; the index lists 1.2-1 but its files cannot be downloaded (${PKG}_1.2-1.dsc:"

echo "# 6. two newer versions listed, the newest not downloadable"
archive "1.1-1 1.2-1" "1.1-1"
fetch
expect "newest not downloadable: built the newest that is" "$BUILT" 1.1-1
expect "newest not downloadable: pin gone" "$NOTE" "17: pinned 1.0-1 is gone; built 1.1-1 from the archive: re-pin"

echo "# 7. nothing served"
archive "1.2-1" ""
fetch
expect "nothing served: nothing built" "$BUILT" ""
expect "nothing served: fails" "$RC" 1
expect_match "nothing served: says so" "$OUT" "no version of $PKG could be fetched from Debian fake; nothing was built."
expect_match "nothing served: lists what the index lists" "$OUT" "the index lists: 1.2-1"

echo "# 8. PG_DEBIAN_VERSION: exactly that version, trusted through the index"
archive "1.1-1 1.2-1" "1.0-1 1.1-1 1.2-1"
fetch OVERRIDE_PG_DEBIAN_VERSION=1.1-1 OVERRIDE_PG_ORIG_SHA256=
expect "PG_DEBIAN_VERSION=1.1-1: built it" "$BUILT" 1.1-1
expect "PG_DEBIAN_VERSION=1.1-1: the note" "$NOTE" "17: built 1.1-1 as asked (PG_DEBIAN_VERSION), not the pin 1.0-1"
fetch OVERRIDE_PG_DEBIAN_VERSION=1.3-1 OVERRIDE_PG_ORIG_SHA256=
expect "PG_DEBIAN_VERSION of a version not listed: fails" "$RC/$BUILT" 1/
expect_match "PG_DEBIAN_VERSION not listed: says why" "$OUT" "1.3-1: not listed by fake's index, and no PG_DSC_SHA256 to check it against"

echo "# 9. a pool file that does not match: never used"
archive "1.2-1" "1.0-1"
echo tampered >>"$T/archive/$POOL/${PKG}_1.0.orig.tar.bz2"
fetch
expect "tampered pin tarball: nothing built" "$BUILT/$RC" /1
expect_match "tampered pin tarball: apt says the checksum is wrong" "$OUT" "Hash Sum mismatch"

echo "1..$n"
[ "$failed" -eq 0 ] || { echo "# $failed of $n failed"; exit 1; }
