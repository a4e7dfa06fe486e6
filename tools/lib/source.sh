# shellcheck shell=bash
# The upstream sources: a Debian source package (orig tarball, sha256) or a git commit (pinned hash).
# Part of tools/workspace (sourced by it; see that file for the layout).

# ---- Debian source package: the .orig tarball, checked against the pinned sha256
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch_debian() {
	mkdir -p "$CACHE"
	if [ -f "$TARBALL" ] && [ "$(sha256_of "$TARBALL")" = "$PG_ORIG_SHA256" ] && dsc_ok; then
		note "cached: $(basename "$TARBALL") (sha256 ok)"
		return 0
	fi
	command -v apt-get >/dev/null || die "apt-get not found: this tool fetches Debian source packages"
	local served
	# (|| true: apt-cache exits non-zero when nothing serves the package,
	# which the next line reports)
	served=$(apt-cache showsrc "$PG_SOURCE_PACKAGE" 2>/dev/null | sed -n 's/^Version: //p' | sort -u || true)
	if [ -z "$served" ] && is_root; then
		# (as root, set up what this major needs, as "make demo" does)
		note "no deb-src entry serves $PG_SOURCE_PACKAGE yet: make deps PG_MAJOR=$PG_MAJOR"
		cmd_deps
		served=$(apt-cache showsrc "$PG_SOURCE_PACKAGE" 2>/dev/null | sed -n 's/^Version: //p' | sort -u || true)
	fi
	[ -n "$served" ] || die "no deb-src entry serves $PG_SOURCE_PACKAGE: run 'make deps' as root, or add
  'deb-src http://deb.debian.org/debian $PG_DEBIAN_SUITE main' to apt's sources and run apt-get update"
	if ! grep -qxF "$PG_DEBIAN_VERSION" <<<"$served"; then
		die "$PG_SOURCE_PACKAGE $PG_DEBIAN_VERSION is no longer served by the Debian archive.
  It serves: $(echo $served)
  Nothing was built. To build a served version instead, choose it explicitly, e.g.:
    make check PG_DEBIAN_VERSION=$(printf '%s\n' "$served" | sort -V | tail -1)
  (and pin it with its sha256 in upstream.conf once it works)."
	fi
	local expect=$PG_ORIG_SHA256
	if [ "$PG_DEBIAN_VERSION" != "$PINNED_DEBIAN_VERSION" ] && [ -z "${OVERRIDE_PG_ORIG_SHA256:-}" ]; then
		# Not the pinned version: trust the checksum from apt's signed Sources index.
		expect=$(apt-cache showsrc "$PG_SOURCE_PACKAGE=$PG_DEBIAN_VERSION" |
			awk '/^Checksums-Sha256:/{s=1;next} /^[^ ]/{s=0} s && $3 ~ /\.orig\.tar\./ {print $1; exit}' || true)
		[ -n "$expect" ] || die "the archive's index gives no sha256 for the orig tarball of $PG_SOURCE_PACKAGE $PG_DEBIAN_VERSION"
		note "NOT the pinned version ($PINNED_DEBIAN_VERSION): building $PG_DEBIAN_VERSION, orig sha256 from the archive's signed index:"
		note "  PG_DEBIAN_VERSION=$PG_DEBIAN_VERSION  PG_ORIG_SHA256=$expect"
	fi
	local tmp
	tmp=$(mktemp -d "$CACHE/dl.XXXXXX")
	note "apt-get source --download-only $PG_SOURCE_PACKAGE=$PG_DEBIAN_VERSION"
	(cd "$tmp" && chmod 755 . && apt-get source --download-only -qq "$PG_SOURCE_PACKAGE=$PG_DEBIAN_VERSION" 2>&1 |
		grep -v 'Download is performed unsandboxed' >&2 || true)
	local got
	got=$(ls "$tmp"/*.orig.tar.* 2>/dev/null | head -1 || true)
	[ -n "$got" ] || { rm -rf "$tmp"; die "download of $PG_SOURCE_PACKAGE=$PG_DEBIAN_VERSION failed"; }
	local sum
	sum=$(sha256_of "$got")
	if [ "$sum" != "$expect" ]; then
		rm -rf "$tmp"
		die "sha256 mismatch for $(basename "$got"): got $sum, expected $expect"
	fi
	mv "$got" "$TARBALL"
	# The rest of the source package (debian/ and the .dsc that names the
	# sha256 of both tarballs): "make deb" builds from it.
	mv "$tmp"/*.dsc "$tmp"/*.debian.tar.* "$CACHE"/ 2>/dev/null || true
	rm -rf "$tmp"
	dsc_ok || die "the .dsc of $PG_SOURCE_PACKAGE $PG_DEBIAN_VERSION is missing or not the pinned one (PG_DSC_SHA256)"
	note "fetched $(basename "$TARBALL") and $(basename "$DSC") (sha256 ok)"
}

# The .dsc is there and, for the pinned version, is the pinned one (it lists
# the sha256 of the orig and debian tarballs, which dpkg-source -x checks).
# Another version's .dsc was checked by apt against the archive's signed index.
dsc_ok() {
	[ -f "$DSC" ] || return 1
	[ "$PG_DEBIAN_VERSION" != "$PINNED_DEBIAN_VERSION" ] || [ -z "$PG_DSC_SHA256" ] ||
		[ "$(sha256_of "$DSC")" = "$PG_DSC_SHA256" ]
}

tree_from_debian() {
	local dir=$1
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xjf "$TARBALL" -C "$dir" --strip-components=1
	(
		cd "$dir"
		git -c safe.directory='*' init -q -b master .
		git -c safe.directory='*' add -A -f .
		GIT_AUTHOR_NAME=$UPSTREAM_AUTHOR GIT_AUTHOR_EMAIL=$UPSTREAM_EMAIL GIT_AUTHOR_DATE=$UPSTREAM_DATE \
			GIT_COMMITTER_NAME=$UPSTREAM_AUTHOR GIT_COMMITTER_EMAIL=$UPSTREAM_EMAIL GIT_COMMITTER_DATE=$UPSTREAM_DATE \
			git -c safe.directory='*' commit -q --no-verify -m "PostgreSQL $UPVER (pristine $(basename "$TARBALL"))"
		git -c safe.directory='*' tag -f upstream >/dev/null
	)
}

# Where this major's version of an overlay file differs from the shared one,

# ---- git: a pinned commit of postgresql.git.  PG_GIT=/path uses a local
# clone or mirror (offline); else PG_GIT_URL over the network.  The commit is
# kept in $CACHE/upstream.git under refs/pinned/COMMIT, so a second run needs
# neither.  A git object name is the hash of its content: the commit found
# under the pinned full hash is exactly that commit, tree and all.
GIT_CACHE=$CACHE/upstream.git
gc() { git -c safe.directory='*' -C "$GIT_CACHE" "$@"; }
# (a local source owned by another user, such as the test user's cache:
# git's upload-pack refuses it unless told it is safe)
UPLOAD_PACK=(--upload-pack="git -c safe.directory='*' upload-pack")

git_source_cached() {
	[ -d "$GIT_CACHE" ] && [ "$(gc rev-parse -q --verify "refs/pinned/$PG_GIT_COMMIT^{commit}" 2>/dev/null)" = "$PG_GIT_COMMIT" ]
}

# Where the commit can come from now, without fetching: "cache", "PG_GIT"
# or nothing.  (check-all runs a git major only when one of these holds.)
git_source_at_hand() {
	if git_source_cached; then echo cache
	elif [ -n "${PG_GIT:-}" ]; then echo PG_GIT
	fi
}

fetch_git() {
	[[ $PG_GIT_COMMIT =~ ^[0-9a-f]{40}$ ]] || die "patches/$PG_MAJOR/upstream.conf: PG_GIT_COMMIT must be a full 40-digit commit hash"
	if git_source_cached; then
		note "cached: $PG_GIT_BRANCH at $PG_GIT_COMMIT"
		return 0
	fi
	mkdir -p "$CACHE"
	[ -d "$GIT_CACHE" ] || git init -q --bare "$GIT_CACHE"
	local from=${PG_GIT:-$PG_GIT_URL} log=$CACHE/fetch.log
	if [ -n "${PG_GIT:-}" ]; then
		git -c safe.directory='*' -C "$PG_GIT" rev-parse -q --verify "$PG_GIT_COMMIT^{commit}" >/dev/null 2>&1 ||
			die "PG_GIT=$PG_GIT has no commit $PG_GIT_COMMIT ($PG_GIT_BRANCH of $PG_GIT_DATE): update that clone, or unset PG_GIT to fetch from $PG_GIT_URL"
		note "git fetch $PG_GIT_COMMIT from $PG_GIT"
	else
		# Fail at once, never hang, when the network does not reach it.
		if ! GIT_TERMINAL_PROMPT=0 timeout 20 git ls-remote -q "$PG_GIT_URL" HEAD >"$log" 2>&1; then
			die "cannot reach $PG_GIT_URL for PostgreSQL $PG_MAJOR (commit $PG_GIT_COMMIT).
  Either give a local clone or mirror of postgresql.git that has it:
    make fetch PG_MAJOR=$PG_MAJOR PG_GIT=/path/to/postgresql.git
  or run where the network reaches $PG_GIT_URL."
		fi
		note "git fetch $PG_GIT_COMMIT from $PG_GIT_URL"
	fi
	# By hash first (servers that allow it send one commit); else the branch
	# from two days before the pinned day, which holds the commit.
	if ! GIT_TERMINAL_PROMPT=0 gc fetch -q --no-tags --depth 1 "${UPLOAD_PACK[@]}" "$from" "$PG_GIT_COMMIT" >"$log" 2>&1; then
		GIT_TERMINAL_PROMPT=0 gc fetch -q --no-tags "${UPLOAD_PACK[@]}" --shallow-since="$(date -d "$PG_GIT_DATE - 2 days" +%F)" \
			"$from" "+refs/heads/$PG_GIT_BRANCH:refs/heads/$PG_GIT_BRANCH" >>"$log" 2>&1 ||
			{ cat "$log" >&2; die "git fetch of $PG_GIT_BRANCH from $from failed"; }
	fi
	[ "$(gc rev-parse -q --verify "$PG_GIT_COMMIT^{commit}" 2>/dev/null)" = "$PG_GIT_COMMIT" ] ||
		die "$from did not give commit $PG_GIT_COMMIT"
	gc update-ref "refs/pinned/$PG_GIT_COMMIT" "$PG_GIT_COMMIT"
	note "fetched $PG_GIT_BRANCH at $PG_GIT_COMMIT ($PG_GIT_DATE)"
}

tree_from_git() {
	local dir=$1
	rm -rf "$dir"
	git init -q -b master "$dir"
	git -c safe.directory='*' -C "$dir" fetch -q --no-tags --depth 1 "${UPLOAD_PACK[@]}" "$GIT_CACHE" "refs/pinned/$PG_GIT_COMMIT"
	git -c safe.directory='*' -c advice.detachedHead=false -C "$dir" checkout -q --detach "$PG_GIT_COMMIT"
	git -c safe.directory='*' -C "$dir" tag -f upstream >/dev/null
}

# ---- the interface: fetch the pinned source; make a git tree of it in $1
# (tag "upstream" = the pristine source)
cmd_fetch() { "fetch_$SOURCE_KIND"; }
make_upstream_commit() { "tree_from_$SOURCE_KIND" "$1"; }
