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

cmd_apply() {
	cmd_fetch
	local stamp
	stamp=$(series_stamp)
	if [ -d "$TREE/.git" ]; then
		if [ "$(cat "$WORKDIR/.applied-stamp" 2>/dev/null)" = "$stamp" ] &&
			[ "$(g rev-parse HEAD)" = "$(cat "$WORKDIR/.applied-head" 2>/dev/null)" ] &&
			[ -z "$(g status --porcelain)" ]; then
			note "work tree up to date with the series"
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
	# letters, the export's messages and layers)
	cp -p "$out/patches/$PG_MAJOR/upstream.conf" "$tmp/patches/" 2>/dev/null || true
	cp -p "$out/patches/$PG_MAJOR"/cover-letter* "$out/patches/$PG_MAJOR"/export-message-* "$tmp/patches/" 2>/dev/null || true
	cp -a "$out/patches/$PG_MAJOR"/export-without-* "$tmp/patches/" 2>/dev/null || true
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
	refresh_into "$TOP"
	g rev-parse HEAD >"$WORKDIR/.applied-head"
	series_stamp >"$WORKDIR/.applied-stamp"
	note "wrote $(series | wc -l) patches and their overlay files back into $TOP"
	git -C "$TOP" status --short -- patches src contrib doc >&2 || true
}

# ---------------------------------------------------------------- export
# The whole series, or, with EXPORT_SPLIT in upstream.conf (master), the
# threads it is posted as: "core:1-4 monitoring:5-11" gives $out/core and
# $out/monitoring, each numbered from 1 with its own cover letter
# (patches/MAJOR/cover-letter-NAME), a later thread on top of the earlier
# ones (its patches name them as prerequisite-patch-id).  Split threads
# are shaped for review (export_shape); patches/ and the packages keep
# everything.  EXPORT_SPLIT= (empty) exports the whole series.
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
	local shaped=$WORKDIR/export-tree part name from to base
	export_shape "$shaped"
	local commits=($(git -c safe.directory='*' -C "$shaped" rev-list --reverse upstream..HEAD))
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
		export_range "$shaped" "$out/$name" "$base" "${commits[$((to - 1))]}" "$SERIES_DIR/cover-letter-$name"
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

# export_shape DIR: the work tree's commits re-made in DIR for review.  The
# commit that adds contrib/mptcpinfo gets one SQL version: the latest
# install script as mptcpinfo--1.0.sql, without the update scripts, their
# regression test and the documentation of earlier versions; and, unless
# EXPORT_NO_ONE_VERSION is set, the C without the earlier versions' entry
# points (patches/MAJOR/export-without-earlier-versions: its PATH.diff
# files, applied exactly).
export_shape() {
	local dir=$1 c n=0
	rm -rf "$dir"
	git -c safe.directory='*' clone -q --no-checkout "$TREE" "$dir"
	local sg=(git -c safe.directory='*' -c user.name=export -c user.email=export@localhost -C "$dir")
	# (the clone has the tree's tag upstream)
	"${sg[@]}" checkout -q --detach upstream
	for c in $(g rev-list --reverse upstream..HEAD); do
		n=$((n + 1))
		"${sg[@]}" cherry-pick -n "$c" >/dev/null 2>&1 ||
			die "export: $(g log -1 --format=%s "$c") does not apply to the shaped series"
		if ! g diff --quiet --diff-filter=A "$c^" "$c" -- contrib/mptcpinfo/mptcpinfo.control; then
			(cd "$dir/contrib/mptcpinfo" && shape_one_sql_version) ||
				die "export: could not shape contrib/mptcpinfo to one SQL version"
			"${sg[@]}" add -A contrib/mptcpinfo doc
			[ -n "${EXPORT_NO_ONE_VERSION:-}" ] || export_apply_layer "$dir" earlier-versions
		fi
		"${sg[@]}" commit -q --no-verify --allow-empty -C "$c"
		# patches/MAJOR/export-message-N: patch N's message for review
		if [ -f "$SERIES_DIR/export-message-$n" ]; then
			"${sg[@]}" commit -q --no-verify --amend --cleanup=verbatim -F "$SERIES_DIR/export-message-$n"
		fi
	done
	[ -n "${EXPORT_NO_LAYERS:-}" ] || ! has_export_layers || export_layers "$dir"
}

# Are some of mptcpinfo's layers still made by removal diffs
# (patches/MAJOR/export-without-NAME)?
has_export_layers() {
	local layer
	for layer in $EXPORT_LAYERS_ORDER; do
		[ ! -d "$SERIES_DIR/export-without-$layer" ] || return 0
	done
	return 1
}

# export-layers: remake patches/MAJOR/export-without-*/ after mptcpinfo
# changed: each layer's files are left out and its diffs applied (with
# fuzz) to the exported contrib commit, then written back exactly.  A
# diff that does not apply leaves its .rej in the scratch tree named, to
# resolve there by hand and run again with EXPORT_LAYERS_KEEP=1.
cmd_export_layers() {
	local tmp=$WORKDIR/export-layers layer d f prev c
	has_export_layers || die "patches/$PG_MAJOR has no export layers"
	[ -d "$TREE/.git" ] || cmd_apply
	local sg=(git -c safe.directory='*' -c user.name=export -c user.email=export@localhost -C "$tmp")
	if [ -z "${EXPORT_LAYERS_KEEP:-}" ]; then
		EXPORT_NO_LAYERS=1 EXPORT_NO_ONE_VERSION=1 export_shape "$tmp"
		for c in $("${sg[@]}" rev-list --reverse upstream..HEAD); do
			"${sg[@]}" diff --quiet --diff-filter=A "$c^" "$c" -- contrib/mptcpinfo/mptcpinfo.control || prev=$c
		done
		"${sg[@]}" checkout -q --detach "$prev"
	fi
	# (the earlier versions' entry points first: export_shape takes them
	# out of the contrib commit itself, and the layers follow from there)
	for layer in earlier-versions $EXPORT_LAYERS_ORDER; do
		d=$SERIES_DIR/export-without-$layer
		[ -d "$d" ] || continue
		# (with EXPORT_LAYERS_KEEP, a layer resolved by hand is kept)
		c=$("${sg[@]}" log --format=%H --grep="^without $layer\$" -1 HEAD)
		if [ -z "$c" ]; then
			local failed=
			export_omit "$tmp" "$layer"
			for f in $(cd "$d" && find . -name '*.diff' | sed 's|^\./||' | sort); do
				(cd "$tmp" && patch -s -p1 -F3 --no-backup-if-mismatch <"$d/$f") || failed+=" $f"
			done
			[ -z "$failed" ] ||
				die "export-layers: of export-without-$layer,$failed did not apply: resolve them in $tmp
  (the .rej files), commit all there as \"without $layer\", and run again with EXPORT_LAYERS_KEEP=1"
			"${sg[@]}" add -A
			"${sg[@]}" commit -q --no-verify --allow-empty -m "without $layer"
			c=$("${sg[@]}" rev-parse HEAD)
		fi
		prev=$c^
		find "$d" -name '*.diff' -delete
		"${sg[@]}" diff --name-only --diff-filter=D "$prev" "$c" >"$d/omit"
		for f in $("${sg[@]}" diff --name-only --diff-filter=M "$prev" "$c"); do
			mkdir -p "$d/$(dirname "$f")"
			"${sg[@]}" diff "$prev" "$c" -- "$f" >"$d/$f.diff"
		done
		find "$d" -depth -type d -empty -delete
		note "remade patches/$PG_MAJOR/export-without-$layer"
	done
}

# export_omit DIR NAME: the files that patches/MAJOR/export-without-NAME/omit
# lists, removed from the index and files of DIR.
export_omit() {
	local f
	while read -r f; do
		# (-f: a layer taken out before may have changed the file)
		[ -z "$f" ] || git -c safe.directory='*' -C "$1" rm -rqf -- "$f" ||
			die "export: could not leave out $f (patches/$PG_MAJOR/export-without-$2/omit)"
	done <"$SERIES_DIR/export-without-$2/omit"
}

# export_apply_layer DIR NAME: the diffs of patches/MAJOR/export-without-NAME
# applied exactly to the index and files of DIR, and its omitted files
# removed.
export_apply_layer() {
	local dir=$1 d=$SERIES_DIR/export-without-$2 f
	local sg=(git -c safe.directory='*' -C "$dir")
	[ -d "$d" ] || return 0
	export_omit "$dir" "$2"
	for f in $(cd "$d" && find . -name '*.diff' | sed 's|^\./||' | sort); do
		"${sg[@]}" apply --index "$d/$f" ||
			die "export: patches/$PG_MAJOR/export-without-$2/$f does not apply:
  make it the diff from the exported file to its version without that layer (make export-layers)"
	done
}

# The layers of contrib/mptcpinfo that the export still takes out of the
# series' first mptcpinfo patch (patches/MAJOR/export-without-NAME), in the
# order they are taken out: each is described without the ones before it.
# (The report path is a patch of the series, after core's hooks.)
EXPORT_LAYERS_ORDER="diagnostics lookups walreceiver"

# export_layers DIR: the series' first mptcpinfo patch (the one that adds
# mptcpinfo.control) posted in layers, the views first: that patch without
# every layer of EXPORT_LAYERS_ORDER, then each layer added back, from the
# last one taken out to the first (those whose
# patches/MAJOR/export-without-NAME exists).  export-without-NAME says how
# the patch looks without a layer (without the diagnostics, then also
# without the lookups, and so on): "omit" lists the files left out,
# PATH.diff turns a file into its version without the layer (exactly, like
# an overlay diff), and "message" is the message of the patch that adds
# the layer.  The views take the patch's own message.  The commits after
# it (core's hooks, the report path, the lab tests) follow unchanged.
export_layers() {
	local dir=$1
	local sg=(git -c safe.directory='*' -c user.name=export -c user.email=export@localhost -C "$dir")
	local commits i contrib=-1 full prev tree c layer layers=()
	for layer in $EXPORT_LAYERS_ORDER; do
		[ ! -d "$SERIES_DIR/export-without-$layer" ] || layers+=("$layer")
	done
	commits=($("${sg[@]}" rev-list --reverse upstream..HEAD))
	for i in "${!commits[@]}"; do
		"${sg[@]}" diff --quiet --diff-filter=A "${commits[i]}^" "${commits[i]}" -- contrib/mptcpinfo/mptcpinfo.control || contrib=$i
	done
	[ "$contrib" -ge 1 ] || die "export: no commit adds contrib/mptcpinfo"
	full=${commits[contrib]}
	# (commit-tree with a commit's author and date, and a message)
	as_commit() {
		GIT_AUTHOR_NAME=$("${sg[@]}" log -1 --format=%an "$1") GIT_AUTHOR_EMAIL=$("${sg[@]}" log -1 --format=%ae "$1") \
			GIT_AUTHOR_DATE=$("${sg[@]}" log -1 --format=%ad "$1") "${sg[@]}" commit-tree "$2" -p "$3" -F "$4"
	}
	# without LAYER...: the patch's tree without the layers
	without() {
		local layer
		"${sg[@]}" checkout -q -f --detach "$full"
		for layer in "$@"; do
			export_apply_layer "$dir" "$layer"
		done
		"${sg[@]}" write-tree
	}
	tree=$(without "${layers[@]}") || exit 1
	prev=$(as_commit "$full" "$tree" "${commits[contrib - 1]}" <("${sg[@]}" log -1 --format=%B "$full"))
	# (then each layer, the last one taken out first)
	for ((i = ${#layers[@]} - 1; i >= 1; i--)); do
		tree=$(without "${layers[@]:0:i}") || exit 1
		prev=$(as_commit "$full" "$tree" "$prev" "$SERIES_DIR/export-without-${layers[i]}/message")
	done
	prev=$(as_commit "$full" "$full^{tree}" "$prev" "$SERIES_DIR/export-without-${layers[0]}/message")
	for c in "${commits[@]:contrib+1}"; do
		prev=$(as_commit "$c" "$c^{tree}" "$prev" <("${sg[@]}" log -1 --format=%B "$c"))
	done
	"${sg[@]}" checkout -q -f --detach "$prev"
}

# In contrib/mptcpinfo: the latest version's script as the only one, 1.0.
shape_one_sql_version() {
	local v f
	v=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" mptcpinfo.control)
	[ -f "mptcpinfo--$v.sql" ] || install_script_of "$v" || return 1
	for f in mptcpinfo--*.sql; do
		[ "$f" = "mptcpinfo--$v.sql" ] || rm "$f"
	done
	if [ "$v" != 1.0 ]; then
		sed "1s|mptcpinfo--[0-9.]*\.sql|mptcpinfo--1.0.sql|" "mptcpinfo--$v.sql" >mptcpinfo--1.0.sql
		rm "mptcpinfo--$v.sql"
	fi
	sed -i "s/^default_version = .*/default_version = '1.0'/" mptcpinfo.control
	rm -f sql/mptcpinfo_upgrade.sql expected/mptcpinfo_upgrade.out
	perl -0pi -e 's/^DATA = .*?(?<!\\)\n/DATA = mptcpinfo--1.0.sql\n/ms; s/^REGRESS = mptcpinfo mptcpinfo_upgrade$/REGRESS = mptcpinfo/m' Makefile
	perl -0pi -e "s/^  'mptcpinfo--(?!1\.0\.sql)[^']*\.sql',\n//mg; s/^      'mptcpinfo_upgrade',\n//m; s/^  'mptcpinfo--[^']*\.sql',/  'mptcpinfo--1.0.sql',/m" meson.build
	perl -0pi -e "s/( extversion \n-+\n) \Q$v\E\n/\${1} 1.0\n/" expected/mptcpinfo.out
	perl -0pi -e 's/ \(updates from earlier versions: mptcpinfo_upgrade.sql\)//' sql/mptcpinfo.sql expected/mptcpinfo.out
	perl -0pi -e 's{\n *<para>\s*In version 1\.\d and earlier.*?</para>\n}{\n}gs' ../../doc/src/sgml/mptcpinfo.sgml
	! grep -q -e mptcpinfo_upgrade -e "mptcpinfo--1\.[1-9]" Makefile meson.build sql/*.sql expected/*.out
}

# install_script_of V: mptcpinfo--V.sql made from the newest install script
# and the update scripts from it to V, as upstream adds a version with an
# update script only.  An update that drops and creates an object again
# puts its new definition where the install script had the old one; its
# grants that the install script already has are left out; anything else
# it does comes after.  Fails on a statement it does not know.
install_script_of() {
	local v=$1 cur base next
	base=$(ls mptcpinfo--*.sql | grep -v -- '--.*--' | sort -V | tail -1)
	cur=${base#mptcpinfo--}
	cur=${cur%.sql}
	cp "$base" "mptcpinfo--$v.sql.new"
	while [ "$cur" != "$v" ]; do
		next=$(ls "mptcpinfo--$cur--"*.sql 2>/dev/null) && [ "$(wc -w <<<"$next")" = 1 ] || return 1
		perl -0 -e '
			my ($script, $update) = map { local $/; open my $f, "<", $_ or die "$_: $!"; <$f> } @ARGV;
			$update =~ s/\A.*?\\quit\n//s or die "no header\n";
			my (%dropped, $after);
			while ($update =~ /\G((?:[ \t]*(?:--[^\n]*)?\n)*)((?:CREATE|DROP|GRANT|REVOKE|ALTER|COMMENT)\b[^;]*;\n)/gc)
			{
				my ($comment, $stmt) = ($1, $2);
				if ($stmt =~ /^DROP (?:VIEW|FUNCTION) (\w+)/) { $dropped{$1} = 1; next; }
				if ($stmt =~ /^CREATE (VIEW|FUNCTION) (\w+)\b/ && $dropped{$2})
				{
					$script =~ s/^CREATE $1 $2\b[^;]*;\n/$stmt/m or die "no CREATE $1 $2 to replace\n";
					next;
				}
				next if $stmt =~ /^(?:GRANT|REVOKE) / && index($script, $stmt) >= 0;
				$after .= $comment . $stmt;
			}
			$update =~ /\G\s*\z/gc or die "a statement not understood: " . substr($update, pos($update) // 0, 60) . "\n";
			$after =~ s/\A\n+//;
			print $script, (defined $after ? "\n$after" : "");
		' "mptcpinfo--$v.sql.new" "$next" >"mptcpinfo--$v.sql.tmp" || return 1
		mv "mptcpinfo--$v.sql.tmp" "mptcpinfo--$v.sql.new"
		cur=${next#mptcpinfo--$cur--}
		cur=${cur%.sql}
	done
	mv "mptcpinfo--$v.sql.new" "mptcpinfo--$v.sql"
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

	# (master's review export shapes the series; every major checks the
	# shaping, since CI cannot fetch master.  shape_one_sql_version leaves
	# one script or fails.)
	export_shape "$tmp/shaped"
	note "verify: the series shaped for review has one SQL script, mptcpinfo--1.0.sql"

	local hits
	# (README.md and .gitignore are ours at the top; upstream has its own)
	hits=$(cd "$TOP" && git ls-files | grep -v -x -e README.md -e .gitignore | while read -r f; do
		git -C "$TREE" -c safe.directory='*' cat-file -e "upstream:$f" 2>/dev/null && echo "$f"
	done || true)
	[ -z "$hits" ] || die "verify: these repository files have upstream paths: $hits"
	note "verify: no repository file has an upstream path"
	rm -rf "$tmp"
}

