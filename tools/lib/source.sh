# shellcheck shell=bash
# The upstream sources: a Debian source package (orig tarball, sha256) or a git commit (pinned hash).
# Part of tools/workspace (sourced by it; see that file for the layout).

# ---- Debian source package: the .orig tarball, checked against the pinned sha256
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch_debian() {
	mkdir -p "$CACHE"
	command -v apt-get >/dev/null || die "apt-get not found: this tool fetches Debian source packages"
	archive_target REPO_URI >/dev/null
	if [ -z "$(archive_target REPO_URI)" ] && is_root; then
		# (as root, set up what this major needs, as "make demo" does)
		note "no deb-src entry for Debian $PG_DEBIAN_SUITE yet: make deps PG_MAJOR=$PG_MAJOR"
		cmd_deps
		ARCHIVE_TARGET=
		archive_target REPO_URI >/dev/null
	fi
	[ -n "$(archive_target REPO_URI)" ] || die "no deb-src entry for Debian $PG_DEBIAN_SUITE: run 'make deps' as root, or add
  'deb-src http://deb.debian.org/debian $PG_DEBIAN_SUITE main' to apt's sources and run apt-get update"
	if fetch_debian_cached; then
		note "cached: $(basename "$TARBALL") and $(basename "$DSC") (sha256 ok)"
		[ ! -s "$SOURCE_NOTE_FILE" ] || cat "$SOURCE_NOTE_FILE" >&2
		return 0
	fi
	local tmp
	tmp=$(mktemp -d "$CACHE/dl.XXXXXX")
	archive_choose "$tmp"
	local dsc orig
	dsc=$tmp/$(archive_dsc_name "$CHOSEN_VERSION")
	orig=$(ls "$tmp"/*.orig.tar.* 2>/dev/null | head -1 || true)
	[ -n "$orig" ] || { rm -rf "$tmp"; die "the .dsc of $PG_SOURCE_PACKAGE $CHOSEN_VERSION names no orig tarball"; }
	local orig_sha
	orig_sha=$(sha256_of "$orig")
	# (the pin's orig tarball is pinned too; an explicit PG_ORIG_SHA256 as well)
	if [ "$CHOSEN_VERSION" = "$PINNED_DEBIAN_VERSION" ] || [ -n "${OVERRIDE_PG_ORIG_SHA256:-}" ]; then
		[ "$orig_sha" = "$PG_ORIG_SHA256" ] ||
			{ rm -rf "$tmp"; die "sha256 mismatch for $(basename "$orig"): got $orig_sha, expected $PG_ORIG_SHA256"; }
	fi
	use_debian_version "$CHOSEN_VERSION" "$orig_sha" "$CHOSEN_DSC_SHA256"
	mv "$orig" "$TARBALL"
	# The rest of the source package (debian/ and the .dsc that names the
	# sha256 of both tarballs): "make deb" builds from it.
	mv "$tmp"/*.dsc "$tmp"/*.debian.tar.* "$CACHE"/ 2>/dev/null || true
	rm -rf "$tmp"
	# (line 2: what the index listed then)
	printf '%s\n' "$PINNED_DEBIAN_VERSION $PG_DEBIAN_VERSION $PG_ORIG_SHA256 $CHOSEN_DSC_SHA256" \
		"$ARCHIVE_LISTED" >"$CACHE/resolved"
	# (empty when the pin was built as listed: check-all then prints nothing)
	if [ -n "$SOURCE_NOTE" ]; then printf '%s\n' "$SOURCE_NOTE"; fi >"$SOURCE_NOTE_FILE"
	note "fetched $(basename "$TARBALL") and $(basename "$DSC") (sha256 ok)"
	if [ "$PG_DEBIAN_VERSION" != "$PINNED_DEBIAN_VERSION" ]; then
		note "to pin it, in patches/$PG_MAJOR/upstream.conf:"
		note "  PG_DEBIAN_VERSION=$PG_DEBIAN_VERSION"
		note "  PG_ORIG_SHA256=$PG_ORIG_SHA256"
		note "  PG_DSC_SHA256=$CHOSEN_DSC_SHA256"
	fi
	[ -z "$SOURCE_NOTE" ] || echo "$SOURCE_NOTE" >&2
}

# What an earlier fetch chose is still right and still in the cache: then no
# network is needed.  (Only the local index is read: a version listed since,
# newer than the one cached, means asking the archive again.)
fetch_debian_cached() {
	local pin version orig_sha dsc_sha v
	[ -f "$CACHE/resolved" ] || return 1
	read -r pin version orig_sha dsc_sha <"$CACHE/resolved"
	[ "$pin" = "$PINNED_DEBIAN_VERSION" ] && [ "$version" = "$PG_DEBIAN_VERSION" ] || return 1
	[ -f "$TARBALL" ] && [ "$(sha256_of "$TARBALL")" = "$orig_sha" ] || return 1
	[ -f "$DSC" ] && [ "$(sha256_of "$DSC")" = "$dsc_sha" ] || return 1
	[ "$version" != "$pin" ] || [ -z "$PG_DSC_SHA256" ] || [ "$dsc_sha" = "$PG_DSC_SHA256" ] || return 1
	if [ "$DEBIAN_VERSION_MODE" = default ]; then
		# A newer version listed: ask the archive again, unless this choice
		# was made today against the same index (its files were not there).
		local listed newer=
		listed=$(archive_versions "$(archive_listing)")
		for v in $listed; do
			! dpkg --compare-versions "$v" gt "$version" || newer=1
		done
		[ -z "$newer" ] || { [ -n "$(find "$CACHE/resolved" -mmin -720)" ] &&
			[ "$(echo $listed)" = "$(sed -n 2p "$CACHE/resolved")" ]; } || return 1
	fi
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
