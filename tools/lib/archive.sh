# shellcheck shell=bash
# The Debian archive: which versions of the source package the suite's index
# lists, which of them (and the pin) can still be downloaded, and which one
# to build.  Part of tools/workspace (sourced by it; see that file).
#
# Debian replaces a point release in place: the suite's index lists the new
# version, and the pool drops the old one's files later (here the index has
# also been seen listing a version whose files were not there yet).  So:
#   - the pin alone is enough to fetch: its files come by their pool path,
#     listed or not, and PG_DSC_SHA256 is the trust anchor (the .dsc names
#     the sha256 of each tarball);
#   - a listed version is trusted through apt's signed index (its Sources
#     paragraph gives the .dsc's sha256);
#   - by default the newest version that can be downloaded is built, never
#     one older than what the archive serves; STRICT_PIN=1 accepts the pin
#     only (a reproducible build), PG_DEBIAN_VERSION=V exactly V.
# What was chosen, and why, is one line in $SOURCE_NOTE_FILE ("check-all"
# prints it).

APT_HELPER=/usr/lib/apt/apt-helper
SOURCE_NOTE_FILE=$CACHE/source-note

# archive_target REPO_URI|FILENAME: the suite's deb-src entry, as apt has it.
# (apt-get indextargets takes seconds: asked once per run)
ARCHIVE_TARGET=
archive_target() {
	if [ -z "$ARCHIVE_TARGET" ]; then
		ARCHIVE_TARGET=$(apt-get indextargets --format '$(REPO_URI) $(FILENAME)' 'Created-By: Sources' \
			"Release: $PG_DEBIAN_SUITE" 2>/dev/null | head -1)
		ARCHIVE_TARGET=${ARCHIVE_TARGET:-none}
	fi
	[ "$ARCHIVE_TARGET" != none ] || return 0
	case $1 in
	REPO_URI) echo "${ARCHIVE_TARGET%% *}" ;;
	FILENAME) echo "${ARCHIVE_TARGET#* }" ;;
	esac
}

# One line per file of each version the suite's index lists:
# "VERSION DIRECTORY SHA256 NAME".  (apt checked the index against the
# suite's signed Release file when it downloaded it.)
archive_listing() {
	local index
	index=$(archive_target FILENAME)
	[ -n "$index" ] && [ -f "$index" ] || return 0
	"$APT_HELPER" cat-file "$index" | awk -v pkg="$PG_SOURCE_PACKAGE" '
		function flush(i) {
			if (p == pkg)
				for (i = 1; i <= n; i++) print v, d, sha[i], name[i]
			p = v = d = ""; n = 0; s = 0
		}
		/^$/ { flush(); next }
		/^[^ ]/ { s = 0 }
		/^Package: / { p = $2 }
		/^Version: / { v = $2 }
		/^Directory: / { d = $2 }
		/^Checksums-Sha256:/ { s = 1; next }
		s && /^ / { n++; sha[n] = $1; name[n] = $3 }
		END { flush() }'
}

# The versions listed, newest first.
archive_versions() {
	local listing=$1
	awk 'NF {print $1}' <<<"$listing" | sort -u | archive_sort_desc
}
archive_sort_desc() {
	# (dpkg's order, not sort -V's: "~" and revisions)
	local vs=() v i j t
	while read -r v; do vs+=("$v"); done
	for ((i = 0; i < ${#vs[@]}; i++)); do
		for ((j = i + 1; j < ${#vs[@]}; j++)); do
			if dpkg --compare-versions "${vs[j]}" gt "${vs[i]}"; then
				t=${vs[i]} vs[i]=${vs[j]} vs[j]=$t
			fi
		done
	done
	[ ${#vs[@]} -eq 0 ] || printf '%s\n' "${vs[@]}"
}

# The file names of a version: "NAME" for its .dsc.
archive_dsc_name() { echo "${PG_SOURCE_PACKAGE}_${1#*:}.dsc"; }

# archive_download URL DEST SHA256: one file, checked by apt against SHA256.
# On failure, prints apt's reason (e.g. "404  Not Found") and returns 1.
archive_download() {
	local url=$1 dest=$2 sha=$3 log
	log=$(mktemp)
	if "$APT_HELPER" -o APT::Sandbox::User=root -o Acquire::Retries=1 download-file "$url" "$dest" "SHA256:$sha" >"$log" 2>&1; then
		rm -f "$log"
		return 0
	fi
	rm -f "$dest" "$dest.FAILED"
	sed -n 's/^E: Failed to fetch [^ ]* *//p' "$log" | head -1 | sed 's/ *\[IP:.*//; s/  */ /g'
	grep -q '^E: Failed to fetch' "$log" || sed -n 's/^E: //p' "$log" | head -1
	rm -f "$log"
	return 1
}

# archive_fetch_version V DSC_SHA256 DIR DESTDIR: the .dsc (checked against
# DSC_SHA256), then every file it names (checked against the .dsc's sha256),
# into DESTDIR.  On failure prints the reason and returns 1.
archive_fetch_version() {
	local v=$1 dsc_sha=$2 dir=$3 dest=$4 uri dsc why sha name
	uri=$(archive_target REPO_URI)
	[ -n "$uri" ] || { echo "no deb-src entry for $PG_DEBIAN_SUITE"; return 1; }
	dsc=$(archive_dsc_name "$v")
	mkdir -p "$dest"
	why=$(archive_download "$uri$dir/$dsc" "$dest/$dsc" "$dsc_sha") || { echo "$dsc: $why"; return 1; }
	while read -r sha name; do
		# (a tarball fetched before: the cache has it under the same name)
		if [ -f "$CACHE/$name" ] && [ "$(sha256_of "$CACHE/$name")" = "$sha" ]; then
			cp "$CACHE/$name" "$dest/$name"
			continue
		fi
		why=$(archive_download "$uri$dir/$name" "$dest/$name" "$sha") || { echo "$name: $why"; return 1; }
	done < <(awk '/^Checksums-Sha256:/{s=1;next} /^[^ ]/{s=0} s && NF == 3 {print $1, $3}' "$dest/$dsc")
}

# The sha256 of a listed version's .dsc in the index, or nothing.
archive_listed_dsc_sha() {
	awk -v v="$2" -v n="$(archive_dsc_name "$2")" '$1 == v && $4 == n {print $3; exit}' <<<"$1"
}

# The pool directory of the package (from the index, else Debian's rule).
archive_pool_dir() {
	local d
	d=$(awk 'NR == 1 {print $2}' <<<"$1")
	if [ -z "$d" ]; then
		case $PG_SOURCE_PACKAGE in
		lib*) d=pool/main/${PG_SOURCE_PACKAGE:0:4}/$PG_SOURCE_PACKAGE ;;
		*) d=pool/main/${PG_SOURCE_PACKAGE:0:1}/$PG_SOURCE_PACKAGE ;;
		esac
	fi
	echo "$d"
}

# archive_choose DESTDIR: decide which version to build and fetch its files
# into DESTDIR.  Sets CHOSEN_VERSION, CHOSEN_DSC_SHA256, SOURCE_NOTE (one
# line, empty when the pin was built as listed) and ARCHIVE_LISTED (the
# versions the index lists, on one line).  Dies with what the archive
# offers when nothing can be fetched.
archive_choose() {
	archive_target REPO_URI >/dev/null
	local dest=$1 listing versions pin=$PINNED_DEBIAN_VERSION candidates=() v sha why tried= dir
	listing=$(archive_listing)
	versions=$(archive_versions "$listing")
	dir=$(archive_pool_dir "$listing")
	local mode=$DEBIAN_VERSION_MODE
	if [ "$mode" = override ]; then
		candidates=("$PG_DEBIAN_VERSION")
	elif [ "$mode" = strict ]; then
		candidates=("$pin")
	else
		while read -r v; do
			[ -n "$v" ] && dpkg --compare-versions "$v" gt "$pin" && candidates+=("$v")
		done <<<"$versions"
		candidates+=("$pin")
	fi
	CHOSEN_VERSION= SOURCE_NOTE=
	for v in "${candidates[@]}"; do
		sha=$(archive_listed_dsc_sha "$listing" "$v")
		if [ "$v" = "$pin" ]; then
			[ -z "$sha" ] || [ -z "$PG_DSC_SHA256" ] || [ "$sha" = "$PG_DSC_SHA256" ] ||
				die "the archive's index gives the .dsc of the pinned $PG_SOURCE_PACKAGE $pin sha256 $sha, not the pinned $PG_DSC_SHA256: nothing was built"
			sha=${PG_DSC_SHA256:-$sha}
		elif [ -z "$sha" ] && [ "$mode" = override ]; then
			sha=${OVERRIDE_PG_DSC_SHA256:-}
		fi
		if [ -z "$sha" ]; then
			tried="$tried
    $v: not listed by $PG_DEBIAN_SUITE's index, and no PG_DSC_SHA256 to check it against"
			continue
		fi
		rm -rf "$dest"
		if why=$(archive_fetch_version "$v" "$sha" "$dir" "$dest"); then
			CHOSEN_VERSION=$v CHOSEN_DSC_SHA256=$sha
			break
		fi
		tried="$tried
    $v: $why"
	done
	ARCHIVE_LISTED=$(echo $versions)
	if [ -z "$CHOSEN_VERSION" ]; then
		die "no version of $PG_SOURCE_PACKAGE could be fetched from Debian $PG_DEBIAN_SUITE; nothing was built.
  pinned: $pin$(case $mode in override) echo " (asked for: PG_DEBIAN_VERSION=$PG_DEBIAN_VERSION)" ;; strict) echo " (STRICT_PIN=1: the pin only)" ;; esac)
  the index lists: ${ARCHIVE_LISTED:-nothing}
  tried:$tried"
	fi
	local listed=no
	grep -qxF "$CHOSEN_VERSION" <<<"$versions" && listed=yes
	if [ "$CHOSEN_VERSION" = "$pin" ]; then
		if [ -n "$tried" ]; then
			SOURCE_NOTE="$PG_MAJOR: built the pin $pin; the index lists ${ARCHIVE_LISTED} but its files cannot be downloaded (${tried#*: })"
		elif [ $listed = no ]; then
			SOURCE_NOTE="$PG_MAJOR: built the pin $pin from the pool (the index no longer lists it; it lists ${ARCHIVE_LISTED:-nothing})"
		fi
	elif [ "$mode" = override ]; then
		SOURCE_NOTE="$PG_MAJOR: built $CHOSEN_VERSION as asked (PG_DEBIAN_VERSION), not the pin $pin"
	else
		# Newer than the pin: is the pin still there, or gone?
		local probe
		probe=$(mktemp -d)
		if [ -n "$PG_DSC_SHA256" ] && archive_download "$(archive_target REPO_URI)$dir/$(archive_dsc_name "$pin")" \
			"$probe/pin.dsc" "$PG_DSC_SHA256" >/dev/null; then
			SOURCE_NOTE="$PG_MAJOR: pinned $pin is older than what the archive serves; built $CHOSEN_VERSION from the archive: re-pin"
		else
			SOURCE_NOTE="$PG_MAJOR: pinned $pin is gone; built $CHOSEN_VERSION from the archive: re-pin"
		fi
		rm -rf "$probe"
	fi
}

# ---- make upstream-status: for each major, the pin and what upstream offers
# now.  Reads the indexes apt has (run "apt-get update" for fresh ones) and
# asks the archive for each listed .dsc; a git major's branch is read from
# PG_GIT or the cache, when at hand.
cmd_upstream_status() {
	local m
	for m in $(supported_majors); do
		PG_MAJOR=$m WORKDIR=${GIVEN_WORKDIR:+$GIVEN_WORKDIR/$m} "$TOP/tools/workspace" upstream-status-one || true
	done
}

upstream_status_one() {
	echo "PostgreSQL $PG_MAJOR"
	archive_target REPO_URI >/dev/null
	if [ "$SOURCE_KIND" = git ]; then
		echo "  pin:        $PG_GIT_BRANCH at ${PG_GIT_COMMIT:0:12} ($PG_GIT_DATE)"
		local src= head=
		if [ -n "${PG_GIT:-}" ]; then src=$PG_GIT
		elif [ -d "$GIT_CACHE" ]; then src=$GIT_CACHE
		fi
		if [ -n "$src" ]; then
			head=$(git -c safe.directory='*' -C "$src" rev-parse -q --verify "refs/heads/$PG_GIT_BRANCH^{commit}" 2>/dev/null ||
				git -c safe.directory='*' -C "$src" rev-parse -q --verify "refs/remotes/origin/$PG_GIT_BRANCH^{commit}" 2>/dev/null || true)
		fi
		if [ -z "$head" ]; then
			echo "  branch now: unknown (no source at hand: PG_GIT=/path/to/postgresql.git)"
		elif [ "$head" = "$PG_GIT_COMMIT" ]; then
			echo "  branch now: ${head:0:12}, the pin ($src)"
		else
			local ahead
			ahead=$(git -c safe.directory='*' -C "$src" rev-list --count "$PG_GIT_COMMIT..$head" 2>/dev/null || echo '?')
			echo "  branch now: ${head:0:12}, $ahead commits after the pin ($src, $(git -c safe.directory='*' -C "$src" log -1 --format=%cs "$head"))"
			echo "  re-pin:     PG_GIT_COMMIT=$head in patches/$PG_MAJOR/upstream.conf, then make check PG_MAJOR=$PG_MAJOR"
		fi
		return 0
	fi
	echo "  pin:        $PG_SOURCE_PACKAGE $PINNED_DEBIAN_VERSION (Debian $PG_DEBIAN_SUITE)"
	local listing versions v sha dir probe newest= state
	listing=$(archive_listing)
	versions=$(archive_versions "$listing")
	dir=$(archive_pool_dir "$listing")
	probe=$(mktemp -d)
	if [ -z "$(archive_target REPO_URI)" ]; then
		echo "  index:      no deb-src entry for $PG_DEBIAN_SUITE (make deps PG_MAJOR=$PG_MAJOR)"
		rm -rf "$probe"
		return 0
	fi
	for v in $versions; do
		sha=$(archive_listed_dsc_sha "$listing" "$v")
		if state=$(archive_download "$(archive_target REPO_URI)$dir/$(archive_dsc_name "$v")" "$probe/x.dsc" "$sha"); then
			state=downloadable
			[ -n "$newest" ] || newest=$v
		fi
		echo "  index:      $v ($state)"
	done
	[ -n "$versions" ] || echo "  index:      lists no $PG_SOURCE_PACKAGE"
	if ! grep -qxF "$PINNED_DEBIAN_VERSION" <<<"$versions"; then
		if state=$(archive_download "$(archive_target REPO_URI)$dir/$(archive_dsc_name "$PINNED_DEBIAN_VERSION")" "$probe/p.dsc" "$PG_DSC_SHA256"); then
			state="still downloadable from the pool"
		fi
		echo "  the pin:    not listed; $state"
	fi
	rm -rf "$probe"
	if [ -n "$newest" ] && dpkg --compare-versions "$newest" gt "$PINNED_DEBIAN_VERSION"; then
		echo "  re-pin:     PG_DEBIAN_VERSION=$newest in patches/$PG_MAJOR/upstream.conf (make fetch prints its sha256 values)"
	else
		echo "  re-pin:     nothing to do (nothing newer can be downloaded)"
	fi
}
