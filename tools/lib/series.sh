# shellcheck shell=bash
# The series: apply (assemble the work tree), refresh (write it back), export, verify.
# Part of tools/workspace (sourced by it; see that file for the layout).

series() { grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$SERIES_DIR/series" 2>/dev/null || true; }

# The overlay paths a series lists (of this major by default).
series_files() { cat "${1:-$SERIES_DIR}"/*.files 2>/dev/null || true; }

# Fingerprint of everything that determines the assembled tree.
series_stamp() {
	(
		cd "$TOP"
		echo "$PG_DEBIAN_VERSION $PG_ORIG_SHA256 $PG_GIT_COMMIT"
		cat "$SERIES_DIR/series"
		for p in $(series); do
			sha256sum "$SERIES_DIR/$p"
			f=$SERIES_DIR/${p%.patch}.files
			[ -f "$f" ] && while read -r path; do
				sha256sum "$path"
				stat -c %a "$path"
				[ ! -f "$SERIES_DIR/overlay/$path.diff" ] || sha256sum "$SERIES_DIR/overlay/$path.diff"
			done <"$f"
		done
	) | sha256sum | cut -d' ' -f1
}

# patches/MAJOR/overlay/PATH.diff turns the copy into it (exactly, like a patch).
overlay_diff_apply() {
	local d=$SERIES_DIR/overlay/$1.diff log
	[ -f "$d" ] || return 0
	if ! log=$(g apply --verbose --whitespace=nowarn "$d" 2>&1); then
		printf '%s\n' "$log" >&2
		die "patches/$PG_MAJOR/overlay/$1.diff does not apply to the shared $1:
  edit it to the diff from the shared file to the $PG_MAJOR version"
	fi
	# (an offset only means the shared file grew elsewhere; "verify" then
	# asks for the refresh that re-bases the diff)
	! grep -q 'offset' <<<"$log" ||
		note "patches/$PG_MAJOR/overlay/$1.diff applies at an offset: 'make refresh PG_MAJOR=$PG_MAJOR' re-bases it"
}

# later_patches P: the patches after P in the series, the last one first.
later_patches() {
	series | awk -v p="$1" 'f; $0 == p { f = 1 }' | tac
}

# The repository keeps an overlay file as the last patch that touches it
# leaves it.  A patch of a later layer may add a few lines to a file that
# an earlier patch brings (a Makefile's OBJS, a registration line); the
# earlier patch gets the file without them: each later patch's hunks for
# that file, taken back from the last patch to the first.
unapply_later_hunks() {
	local p=$1 path=$2 q
	for q in $(later_patches "$p"); do
		grep -qxF -- "diff --git a/$path b/$path" "$SERIES_DIR/$q" || continue
		g apply -R --whitespace=nowarn --include="$path" "$SERIES_DIR/$q" ||
			die "$p: the hunks of $q for $path do not come out of the repository's $path:
  make them the diff from that patch's version of the file to the next one (make refresh)"
	done
}

apply_one() {
	local p=$1 files=$SERIES_DIR/${1%.patch}.files
	local tmp
	tmp=$(mktemp -d)
	if [ -f "$files" ]; then
		while read -r path; do
			[ -f "$TOP/$path" ] || die "$p: overlay file $path listed in $(basename "$files") is missing"
			[ ! -e "$TREE/$path" ] || die "$p: overlay file $path already exists upstream; change it with a patch"
			mkdir -p "$TREE/$(dirname "$path")"
			cp -p "$TOP/$path" "$TREE/$path"
			overlay_diff_apply "$path"
			unapply_later_hunks "$p" "$path"
			g add -f -- "$path"
		done <"$files"
	fi
	g mailinfo -b "$tmp/msg" "$tmp/diff" <"$SERIES_DIR/$p" >"$tmp/info"
	# (a patch whose files are all overlay files has a message and no diff)
	if grep -q '^diff --git ' "$tmp/diff"; then
		# git apply never fuzzes; also refuse offsets so patches stay exact.
		if ! g apply --index --verbose --whitespace=nowarn "$tmp/diff" >"$tmp/log" 2>&1 ||
			grep -q 'offset' "$tmp/log"; then
			cat "$tmp/log" >&2
			if [ "$SOURCE_KIND" = debian ] && [ "$PG_DEBIAN_VERSION" != "$PINNED_DEBIAN_VERSION" ]; then
				die "patch does not apply cleanly (git apply: no fuzz, no offset) to $PG_SOURCE_PACKAGE $PG_DEBIAN_VERSION, which is not the pin $PINNED_DEBIAN_VERSION: patches/$PG_MAJOR/$p
  The series must be rebased on the new version (make apply FORCE=1, fix, make refresh), or build the pin with STRICT_PIN=1 while its files are still served."
			fi
			die "patch does not apply cleanly: patches/$PG_MAJOR/$p"
		fi
	fi
	local subject author email date
	subject=$(sed -n 's/^Subject: //p' "$tmp/info")
	author=$(sed -n 's/^Author: //p' "$tmp/info")
	email=$(sed -n 's/^Email: //p' "$tmp/info")
	date=$(sed -n 's/^Date: //p' "$tmp/info")
	{ printf '%s\n' "$subject"; [ -s "$tmp/msg" ] && { printf '\n'; cat "$tmp/msg"; }; } >"$tmp/commitmsg"
	GIT_AUTHOR_NAME=$author GIT_AUTHOR_EMAIL=$email GIT_AUTHOR_DATE=$date \
		GIT_COMMITTER_NAME=$author GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE=$date \
		g commit -q --no-verify --allow-empty --cleanup=verbatim -F "$tmp/commitmsg"
	rm -rf "$tmp"
}

tree_has_edits() {
	[ -d "$TREE/.git" ] && { [ -n "$(g status --porcelain)" ] ||
		[ "$(g rev-parse HEAD)" != "$(cat "$WORKDIR/.applied-head" 2>/dev/null)" ]; }
}

# For build and check: a work tree with edits is built as it is.
ensure_tree() {
	if tree_has_edits; then
		note "using the work tree as it is: it has edits not yet in patches/ ('make refresh' keeps them)"
		return 0
	fi
	cmd_apply
}

# overlay_hashes PATH: the sha256 of the repository's PATH and of this
# major's patches/MAJOR/overlay diff for it ("-" if none).
overlay_hashes() {
	local d=$SERIES_DIR/overlay/$1.diff
	echo "$(sha256sum <"$TOP/$1" | cut -c1-64) $([ -f "$d" ] && sha256sum <"$d" | cut -c1-64 || echo -)"
}

# What the repository held of this major's overlay files when the work tree
# was assembled or last refreshed: a refresh must not write back an older
# version of a file that changed since (another major's refresh, a pull).
record_overlay_files() {
	local path
	while read -r path; do
		[ -n "$path" ] && [ -f "$TOP/$path" ] || continue
		echo "$(overlay_hashes "$path") $path"
	done <<<"$(series_files)" >"$WORKDIR/.applied-files"
}

# Refuse a refresh that would undo such a change: a file of the repository
# (or its patches/MAJOR/overlay diff) changed since, and the work tree's
# version is not the repository's.  REFRESH_FORCE=1 writes it anyway.
check_overlay_not_stale() {
	local manifest=$WORKDIR/.applied-files file diff path d stale="" tmp
	[ -f "$manifest" ] && [ -z "${REFRESH_FORCE:-}" ] || return 0
	tmp=$(mktemp -d)
	while read -r file diff path; do
		[ -f "$TOP/$path" ] || continue
		[ "$(overlay_hashes "$path")" != "$file $diff" ] || continue
		d=$SERIES_DIR/overlay/$path.diff
		# (the repository's version for this major: the shared file and its diff)
		cp "$TOP/$path" "$tmp/repo"
		[ ! -f "$d" ] || patch -s -p1 "$tmp/repo" <"$d" >/dev/null 2>&1 || : >"$tmp/repo"
		g show "HEAD:$path" 2>/dev/null | cmp -s - "$tmp/repo" || stale="$stale  $path"$'\n'
	done <"$manifest"
	rm -rf "$tmp"
	[ -z "$stale" ] || die "these files changed in the repository since $TREE was assembled, and the work tree has another version:
$stale  A refresh would write the work tree's over them. Make the same change in the work tree
  (or 'make apply PG_MAJOR=$PG_MAJOR FORCE=1' and redo your edits), or REFRESH_FORCE=1 to write it anyway."
}

cmd_apply() {
	cmd_fetch
	local stamp
	stamp=$(series_stamp)
	if [ -d "$TREE/.git" ]; then
		if [ "$(cat "$WORKDIR/.applied-stamp" 2>/dev/null)" = "$stamp" ] &&
			[ "$(g rev-parse HEAD)" = "$(cat "$WORKDIR/.applied-head" 2>/dev/null)" ] &&
			[ -z "$(g status --porcelain)" ]; then
			note "work tree up to date with the series"
			[ -f "$WORKDIR/.applied-files" ] || record_overlay_files
			return 0
		fi
		if [ -z "${FORCE:-}" ] && tree_has_edits; then
			die "the work tree $TREE has edits or commits that are not in patches/.
  Run 'make refresh' to keep them, or 'make apply FORCE=1' to discard them."
		fi
		note "re-assembling $TREE from the series"
		g checkout -q -f upstream
		g clean -q -fdx
		g branch -q -f mptcp upstream
		g checkout -q mptcp
	else
		note "assembling $TREE: upstream $UPVER"
		make_upstream_commit "$TREE"
		g checkout -q -b mptcp
	fi
	for p in $(series); do
		note "applying $p"
		apply_one "$p"
	done
	g rev-parse HEAD >"$WORKDIR/.applied-head"
	echo "$stamp" >"$WORKDIR/.applied-stamp"
	record_overlay_files
	is_root && id "$TEST_USER" >/dev/null 2>&1 && own_workspace
	note "work tree ready: $TREE (branch mptcp, $(series | wc -l) patches on tag upstream)"
}

# ---------------------------------------------------------------- refresh
# Write the work tree's commits upstream..HEAD back as patches + overlay into
# $1 (the repository, or a scratch directory for "verify").
refresh_into() {
	local out=$1
	[ -d "$TREE/.git" ] || die "no work tree: run 'make apply' first"
	[ -z "$(g status --porcelain --untracked-files=no)" ] ||
		die "the work tree has uncommitted changes: commit them into the patch they belong to
  (git commit --fixup=<commit> && git rebase -i --autosquash upstream), then refresh"
	local tmp
	tmp=$(mktemp -d)
	mkdir -p "$tmp/patches"
	local n=0 c
	: >"$tmp/patches/series"
	for c in $(g rev-list --reverse upstream..HEAD); do
		n=$((n + 1))
		local name
		name=$(g format-patch --start-number "$n" -1 -o "$tmp/fp" "$c" | xargs basename)
		rm -rf "$tmp/fp"
		echo "$name" >>"$tmp/patches/series"
		local added modified
		added=$(g diff --no-renames --name-only --diff-filter=A "$c^" "$c")
		modified=$(g diff --no-renames --name-only --diff-filter=a "$c^" "$c")
		if [ -n "$added" ]; then
			printf '%s\n' "$added" >"$tmp/patches/${name%.patch}.files"
			local path
			while read -r path; do
				case $path in
				src/* | contrib/* | doc/*) ;;
				*) die "commit $(g log -1 --format=%s "$c") adds $path: new files must live under src/, contrib/ or doc/" ;;
				esac
				# (as the series leaves it: a later patch may add to it)
				mkdir -p "$tmp/$(dirname "$path")"
				g show "HEAD:$path" >"$tmp/$path" ||
					die "commit $(g log -1 --format=%s "$c") adds $path, which a later commit removes"
				[ "$(g ls-tree HEAD -- "$path" | cut -c1-6)" = 100755 ] && chmod 755 "$tmp/$path" || chmod 644 "$tmp/$path"
			done <<<"$added"
		fi
		if [ -n "$modified" ]; then
			# shellcheck disable=SC2086
			g format-patch -1 --stdout --zero-commit --no-signature --no-renames "$c" -- $modified \
				>"$tmp/patches/$name"
		else
			{ g log -1 --format=email --no-renames "$c" | sed '1s/^From [0-9a-f]*/From 0000000000000000000000000000000000000000/'; echo '---'; } \
				>"$tmp/patches/$name"
		fi
	done
	# Replace this major's series in $out, and its overlay files.  Files that
	# another major's series lists stay: the overlay owner rewrites them,
	# any other major records where its version
	# differs as patches/MAJOR/overlay/PATH.diff.
	local others path m
	others=$(for m in $(cd "$out/patches" 2>/dev/null && ls -d master [0-9]* 2>/dev/null); do
		[ "$m" = "$PG_MAJOR" ] || series_files "$out/patches/$m"
	done | sort -u)
	while read -r path; do
		[ -z "$path" ] || grep -qxF -- "$path" <<<"$others" || rm -f "${out:?}/$path"
	done <<<"$(series_files "$out/patches/$PG_MAJOR")"
	while read -r path; do
		[ -n "$path" ] || continue
		if [ "$PG_MAJOR" != "$OVERLAY_MAJOR" ] && grep -qxF -- "$path" <<<"$others" && [ -f "$out/$path" ]; then
			if ! cmp -s "$out/$path" "$tmp/$path"; then
				mkdir -p "$tmp/patches/overlay/$(dirname "$path")"
				diff -u --label "a/$path" --label "b/$path" "$out/$path" "$tmp/$path" \
					>"$tmp/patches/overlay/$path.diff" || true
			fi
		else
			mkdir -p "$out/$(dirname "$path")"
			cp -p "$tmp/$path" "$out/$path"
		fi
	done <<<"$(series_files "$tmp/patches")"
	# (what is not made from the commits: the pinned source, the cover
	# letters)
	cp -p "$out/patches/$PG_MAJOR/upstream.conf" "$tmp/patches/" 2>/dev/null || true
	cp -p "$out/patches/$PG_MAJOR"/cover-letter* "$tmp/patches/" 2>/dev/null || true
	rm -rf "${out:?}/patches/$PG_MAJOR"
	mkdir -p "$out/patches"
	cp -a "$tmp/patches" "$out/patches/$PG_MAJOR"
	# (drop directories the removals emptied)
	for m in src contrib doc; do
		[ ! -d "$out/$m" ] || find "$out/$m" -depth -type d -empty -delete
	done
	rm -rf "$tmp"
}

cmd_refresh() {
	check_overlay_not_stale
	refresh_into "$TOP"
	g rev-parse HEAD >"$WORKDIR/.applied-head"
	series_stamp >"$WORKDIR/.applied-stamp"
	record_overlay_files
	note "wrote $(series | wc -l) patches and their overlay files back into $TOP"
	git -C "$TOP" status --short -- patches src contrib doc >&2 || true
}

# ---------------------------------------------------------------- export
# The whole series, or, with EXPORT_SPLIT in upstream.conf (master), the
# threads it is posted as: "core:1-4 monitoring:5-12" gives $out/core and
# $out/monitoring, each numbered from 1 with its own cover letter
# (patches/MAJOR/cover-letter-NAME), a later thread on top of the earlier
# ones (its patches name them as prerequisite-patch-id).  The threads are
# the series' own patches, as they are; a patch after the last range
# (master's SQL versions of the packages) is not posted.
# EXPORT_SPLIT= (empty) exports the whole series.
cmd_export() {
	local out=${EXPORT_DIR:-$WORKDIR/export}
	[ -d "$TREE/.git" ] || cmd_apply
	rm -rf "$out"
	mkdir -p "$out"
	if [ -z "${EXPORT_SPLIT:-}" ]; then
		export_range "$TREE" "$out" upstream HEAD "$SERIES_DIR/cover-letter"
		note "exported to $out:"
		ls "$out" >&2
		return 0
	fi
	local part name from to base
	local commits=($(g rev-list --reverse upstream..HEAD))
	base=upstream
	for part in $EXPORT_SPLIT; do
		name=${part%%:*}
		from=${part#*:}
		to=${from#*-}
		from=${from%-*}
		[ "$from" -ge 1 ] && [ "$to" -le ${#commits[@]} ] && [ "$from" -le "$to" ] ||
			die "EXPORT_SPLIT: $part is not a range of patches 1-${#commits[@]}"
		[ -f "$SERIES_DIR/cover-letter-$name" ] || die "no cover letter patches/$PG_MAJOR/cover-letter-$name"
		[ "$from" -eq 1 ] || base=${commits[$((from - 2))]}
		export_range "$TREE" "$out/$name" "$base" "${commits[$((to - 1))]}" "$SERIES_DIR/cover-letter-$name"
	done
	note "exported to $out:"
	(cd "$out" && ls -R) >&2
}

# export_range GITDIR OUT FROM TO COVER: format-patch FROM..TO into OUT,
# with COVER (if it exists) as the 0000 mail.
export_range() {
	local dir=$1 out=$2 from=$3 to=$4 cover=$5 opts=()
	mkdir -p "$out"
	[ ! -f "$cover" ] || opts+=(--cover-letter)
	# (a git major names its base; a later thread also its prerequisites)
	[ "$SOURCE_KIND" != git ] || opts+=(--base="$PG_GIT_COMMIT")
	# (a cover letter is from the series' author, not whoever runs this)
	git -c safe.directory='*' -c core.abbrev=12 -c diff.algorithm=myers -C "$dir" \
		-c user.name="$(g log -1 --format=%an)" -c user.email="$(g log -1 --format=%ae)" \
		format-patch -q -v"$EXPORT_VERSION" --no-signature "${opts[@]}" -o "$out" "$from..$to"
	[ ! -f "$cover" ] || fill_cover_letter "$cover" "$out"/*-0000-cover-letter.patch
}

# patches/MAJOR/cover-letter(-NAME): its first line is the subject, the
# rest the text; format-patch adds the shortlog and diffstat, and the base
# commit.
fill_cover_letter() {
	SUBJECT=$(head -1 "$1") BLURB=$(tail -n +3 "$1") \
		perl -0pi -e 's/\*\*\* SUBJECT HERE \*\*\*/$ENV{SUBJECT}/; s/\*\*\* BLURB HERE \*\*\*/$ENV{BLURB}/;' "$2"
}

# ---------------------------------------------------------------- verify
# The series' mechanical checks: it re-assembles byte-for-byte (apply ->
# refresh leaves no diff) and the exported series applies with "git am" to a
# pristine tree and gives the same result.
cmd_verify() {
	cmd_apply
	local tmp
	tmp=$(mktemp -d)
	mkdir -p "$tmp/refresh"
	for d in patches src contrib doc; do
		[ ! -e "$TOP/$d" ] || cp -a "$TOP/$d" "$tmp/refresh/"
	done
	refresh_into "$tmp/refresh"
	local rc=0
	for d in patches src contrib doc; do
		if [ -e "$TOP/$d" ] || [ -e "$tmp/refresh/$d" ]; then
			diff -r "$TOP/$d" "$tmp/refresh/$d" >&2 || rc=1
		fi
	done
	[ $rc -eq 0 ] || die "verify: apply -> refresh changes the repository (diff above)"
	note "verify: apply -> refresh leaves the repository unchanged"

	EXPORT_DIR=$tmp/export EXPORT_SPLIT= cmd_export 2>/dev/null
	make_upstream_commit "$tmp/pristine"
	(
		cd "$tmp/pristine"
		git -c safe.directory='*' -c user.name=verify -c user.email=verify@localhost \
			am -q --no-3way $(ls "$tmp"/export/*.patch | grep -v -e '-0000-cover-letter.patch$')
	) || die "verify: exported series does not apply with git am to pristine $UPVER"
	[ "$(git -C "$tmp/pristine" rev-parse 'HEAD^{tree}')" = "$(g rev-parse 'HEAD^{tree}')" ] ||
		die "verify: git am of the exported series gives a different tree"
	note "verify: exported $PG_MAJOR series ($(ls "$tmp/export" | grep -vc -e '-0000-cover-letter.patch$') patches) applies with git am to pristine $UPVER"

	local hits
	# (README.md and .gitignore are ours at the top; upstream has its own)
	hits=$(cd "$TOP" && git ls-files | grep -v -x -e README.md -e .gitignore | while read -r f; do
		git -C "$TREE" -c safe.directory='*' cat-file -e "upstream:$f" 2>/dev/null && echo "$f"
	done || true)
	[ -z "$hits" ] || die "verify: these repository files have upstream paths: $hits"
	note "verify: no repository file has an upstream path"
	rm -rf "$tmp"
}

