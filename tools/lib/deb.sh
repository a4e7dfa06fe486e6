# shellcheck shell=bash
# Packages: Debian's own source package with our series appended as quilt
# patches (deb), built in a clean chroot of the target suite, and the package
# test (deb-test): stock server -> ours -> stock again, data intact.
# Part of tools/workspace (sourced by it; see that file for the layout).
#
# What Percona and others do for a patched PostgreSQL: keep Debian's debian/
# directory, package names and paths (/usr/lib/postgresql/NN), add patches to
# debian/patches/series, and add a changelog entry.  pg_ctlcluster, the
# systemd units and every extension package keep working.

# (a build for another suite than the source's keeps its own directory)
DEB_DIR=$WORKDIR/deb
[ "$DEB_SUITE" = "$PG_DEBIAN_SUITE" ] || DEB_DIR=$WORKDIR/deb-$DEB_SUITE
DEB_OUT=$DEB_DIR/out
DEB_MIRROR=${DEB_MIRROR:-http://deb.debian.org/debian}
# Our packages' version: the stock one plus "+mptcpN".  It sorts above the
# stock version it was built from and below Debian's next upload (18.6-3 <
# 18.6-3+mptcp1 < 18.6-4), as backports do.  A host that installs from our
# apt repository (deb_repo) pins its origin above 1000, so that a later
# stock upload never replaces ours: the next build of ours, from that
# upload's source, does.  Built for another suite, "~debNN" follows
# (18.6-3+mptcp1~deb13 < 18.6-3+mptcp1): common.sh's use_debian_version.
# The series' author, who signs the changelog entry.
DEB_MAINTAINER="pg-mptcp <pg-mptcp@users.noreply.github.com>"

deb_need_debian_major() {
	[ "$SOURCE_KIND" = debian ] ||
		die "PostgreSQL $PG_MAJOR comes from git, not from a Debian source package: packages are built for $(grep -l '^PG_SOURCE_PACKAGE=' "$TOP"/patches/*/upstream.conf | xargs -n1 dirname | xargs -n1 basename | sort -rn | paste -sd' ')"
}

# Debian's source package, unpacked without its patches applied, with our
# series appended to debian/patches/series (debian/patches/mptcp/*), our
# changelog entry, and the new libpq symbol.  Leaves the tree in $1.
deb_source_tree() {
	local dir=$1 tmp p name
	cmd_fetch
	# (the series exactly as patches/ has it)
	cmd_apply >/dev/null
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	# (dpkg-source checks the tarballs against the .dsc; the .dsc's own
	# sha256 was checked by fetch.  The signature needs debian-keyring,
	# which the pinned sha256 makes unnecessary.)
	dpkg-source -q -x --skip-patches "$DSC" "$dir" >"$DEB_DIR/dpkg-source.log" 2>&1 ||
		{ cat "$DEB_DIR/dpkg-source.log" >&2; die "dpkg-source -x $(basename "$DSC") failed"; }
	tmp=$(mktemp -d)
	EXPORT_DIR=$tmp EXPORT_SPLIT= cmd_export 2>/dev/null
	mkdir -p "$dir/debian/patches/mptcp"
	for p in $(ls "$tmp"/*.patch | grep -v -e '-0000-cover-letter.patch$'); do
		name=$(basename "$p")
		name=${name#v*-}
		cp "$p" "$dir/debian/patches/mptcp/$name"
		echo "mptcp/$name" >>"$dir/debian/patches/series"
	done
	rm -rf "$tmp"
	deb_changelog_entry "$dir/debian/changelog"
	# The series' new libpq.so.5 functions (PQmptcpInUse,
	# PQconnectTimeRemaining and PQconnectPollNext): a program that calls
	# one needs our libpq5 (dpkg-gensymbols turns these lines into that
	# dependency).  In the symbols file's order.
	local sym
	for sym in $(awk 'NF == 2 && $1 !~ /^#/ { print $1 }' "$TREE/src/interfaces/libpq/exports.txt" |
		grep -vxF -f <(awk 'NF == 2 && $1 !~ /^#/ { print $1 }' "$dir/src/interfaces/libpq/exports.txt")); do
		awk -v line=" $sym@Base $DEB_VERSION" -v sym="$sym@Base" '
			!done && /^ [A-Za-z_]/ && $1 > sym { print line; done = 1 }
			{ print }
			END { if (!done) print line }' "$dir/debian/libpq5.symbols" >"$dir/debian/libpq5.symbols.new"
		mv "$dir/debian/libpq5.symbols.new" "$dir/debian/libpq5.symbols"
	done
	grep -q "^ PQmptcpInUse@Base" "$dir/debian/libpq5.symbols" || die "debian/libpq5.symbols: could not add PQmptcpInUse"
}

deb_changelog_entry() {
	local changelog=$1 dist date
	dist=$(head -1 "$changelog" | sed -n 's/^[^ ]* ([^)]*) \([^;]*\);.*/\1/p')
	[ "$DEB_SUITE" = "$PG_DEBIAN_SUITE" ] || dist=$DEB_SUITE
	# (the date of the series' last change: the same entry on every build)
	date=$(git -C "$TOP" log -1 --format=%aD -- "patches/$PG_MAJOR" 2>/dev/null || true)
	date=${date:-$(date -R)}
	{
		cat <<-EOF
		$PG_SOURCE_PACKAGE ($DEB_VERSION) $dist; urgency=medium

		  * Multipath TCP (RFC 8684): the pg-mptcp series for PostgreSQL $PG_MAJOR,
		    in debian/patches/mptcp/: the listen_mptcp setting, libpq's mptcp
		    connection option (so every libpq5 client gains it), psql's
		    \\conninfo line, and the contrib module mptcpinfo.

		 -- $DEB_MAINTAINER  $date

		EOF
		cat "$changelog"
	} >"$changelog.new"
	mv "$changelog.new" "$changelog"
}

# ---- the series check: our series on top of Debian's own patches, quilt push
# with no fuzz (what the package build does, minus the build).
cmd_verify_debian_patches() {
	if [ "$SOURCE_KIND" != debian ]; then
		echo "skipped: PostgreSQL $PG_MAJOR is not built from a Debian source package"
		exit 77
	fi
	command -v quilt >/dev/null || die "quilt is not installed: run 'make deps' as root"
	mkdir -p "$DEB_DIR"
	local dir=$DEB_DIR/quilt-check/src
	deb_source_tree "$dir"
	(cd "$dir" && QUILT_PATCHES=debian/patches QUILT_PC=.pc quilt --quiltrc /dev/null push -a --fuzz=0 -q) >"$DEB_DIR/quilt.log" 2>&1 ||
		{ cat "$DEB_DIR/quilt.log" >&2; die "our series does not apply with quilt (no fuzz) on top of Debian's patches of $PG_SOURCE_PACKAGE $PG_DEBIAN_VERSION"; }
	note "quilt: $(grep -c . "$dir/debian/patches/series") patches ($(grep -c '^mptcp/' "$dir/debian/patches/series") ours) apply with no fuzz to $PG_SOURCE_PACKAGE $PG_DEBIAN_VERSION"
	rm -rf "$DEB_DIR/quilt-check"
}

# ---- chroots: made by mmdebstrap from Debian's archive, used in a private
# mount namespace (the mounts go away with it).
deb_host_tools() {
	is_root || die "'make $1' needs root: it makes a chroot with mmdebstrap and mounts /proc, /dev in it"
	local missing= p
	for p in mmdebstrap quilt bpftool; do command -v "$p" >/dev/null || missing="$missing $p"; done
	if [ -n "$missing" ]; then
		note "installing:$missing"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >"$DEB_DIR/apt.log" 2>&1 ||
			{ tail -20 "$DEB_DIR/apt.log" >&2; die "apt-get install$missing failed"; }
	fi
}

# deb_chroot DIR [PACKAGE,...]: a fresh minimal chroot of the target suite
deb_chroot() {
	local root=$1 include=${2:-}
	rm -rf "$root"
	note "mmdebstrap $DEB_SUITE -> $root${include:+ (with $include)}"
	# The chroot's apt sees the archive as the host's does: where the host
	# accepts a Release file past its Valid-Until (a frozen mirror), so does it.
	local aptopt=()
	[ "$(apt-config dump Acquire::Check-Valid-Until | sed -n 's/^Acquire::Check-Valid-Until "\(.*\)";/\1/p')" != false ] ||
		aptopt=(--aptopt='Acquire::Check-Valid-Until "false"')
	mmdebstrap --quiet --mode=root --variant=apt --include="ca-certificates${include:+,$include}" "${aptopt[@]}" \
		"$DEB_SUITE" "$root" "$DEB_MIRROR" >"$DEB_DIR/mmdebstrap.log" 2>&1 ||
		{ tail -30 "$DEB_DIR/mmdebstrap.log" >&2; die "mmdebstrap $DEB_SUITE failed"; }
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	# Packages start no service here (the test starts clusters itself).
	# (After mmdebstrap: it removes its own policy-rc.d when it finishes.)
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
}

# deb_run [-n] ROOT CMD...: run CMD in the chroot, in a private mount
# namespace with what programs there need: /proc, /dev and a tmpfs on
# /dev/shm (PostgreSQL's shared memory).  The mounts go away with it.  -n: in
# a new network namespace too (loopback only, and down).
deb_run() {
	local net=
	[ "$1" != -n ] || { net=-n; shift; }
	unshare -m $net --propagation private bash -c "$(declare -f deb_mount_all)"'
		root=$1; shift
		deb_mount_all "$root" && exec chroot "$root" "$@"' sh "$@"
}

# ---- make deb
cmd_deb() {
	deb_need_debian_major
	mkdir -p "$DEB_DIR"
	deb_host_tools deb
	local start=$SECONDS root=$DEB_DIR/build-root src
	src=/build/$PG_SOURCE_PACKAGE-$UPVER
	deb_chroot "$root" "build-essential,fakeroot,passwd,util-linux"
	deb_source_tree "$root$src"
	note "build-dependencies of $PG_SOURCE_PACKAGE $DEB_VERSION (from Debian $DEB_SUITE only)"
	# (mmdebstrap leaves no package lists behind)
	{ deb_run "$root" apt-get update -q && deb_run "$root" apt-get build-dep -y -q -o APT::Install-Recommends=false "$src"; } >"$DEB_DIR/build-deps.log" 2>&1 ||
		{ tail -30 "$DEB_DIR/build-deps.log" >&2; die "installing the build-dependencies failed"; }
	local setup=$((SECONDS - start)) opts="parallel=$(nproc)"
	# Debian's own test suite (make check-world against the build, ~same
	# time again) runs only with DEB_CHECK=1: our suites run in "make check".
	[ -n "${DEB_CHECK:-}" ] || opts="nocheck $opts"
	note "dpkg-buildpackage -b (DEB_BUILD_OPTIONS=$opts), as an unprivileged user, without network"
	chroot "$root" useradd --create-home builder
	chroot "$root" chown -R builder: /build
	# (unshare -n: the build cannot reach the network, as on Debian's buildds)
	deb_run -n "$root" runuser -u builder -- env -i PATH=/usr/bin:/bin HOME=/home/builder LANG=C.UTF-8 \
		DEB_BUILD_OPTIONS="$opts" sh -c "cd $src && dpkg-buildpackage -b -uc -us -rfakeroot" >"$DEB_DIR/build.log" 2>&1 ||
		{ tail -40 "$DEB_DIR/build.log" >&2; die "dpkg-buildpackage failed (log: $DEB_DIR/build.log)"; }
	rm -rf "$DEB_OUT"
	mkdir -p "$DEB_OUT"
	cp "$root"/build/*.deb "$root"/build/*.buildinfo "$root"/build/*.changes "$DEB_OUT"/
	rm -rf "$root"
	local total=$((SECONDS - start))
	echo "$PG_SOURCE_PACKAGE $DEB_VERSION: built in $((total / 60)) min $((total % 60)) s (chroot and build-dependencies $setup s; DEB_BUILD_OPTIONS=$opts)" |
		tee "$DEB_DIR/build-time"
	note "packages in $DEB_OUT:"
	(cd "$DEB_OUT" && ls *.deb) >&2
	deb_repo
}

# ---- pg-mptcp-failover: host/'s tools as a package, made beside the server's
# packages and put in the same repository: the scoped failover timeouts
# (host-setup, run by a drop-in of Debian's postgresql@.service before each
# cluster starts), mend-paths (a path that comes back gets its subflow
# again), pg-mptcp-paths (limits and endpoints from /etc/pg-mptcp/paths.conf,
# at every boot), the MPTCP sysctls, and pg-mptcp-check (is all of it in
# place).  Its one build step compiles host/'s sock_ops program with
# Debian's clang and libbpf headers (make host-tools); the object is BPF
# bytecode of the build machine's byte order, so the package is built per
# architecture.  Installing it enables the two units; systemd starts them (a
# chroot's policy-rc.d keeps them stopped).  Its version is the UTC date and
# time of the last commit that changed host/ or guide/failover/ (the
# examples it ships), as 1.20261128.093000: two changes on one day still make
# a newer version.
deb_failover_package() {
	local out=$1 h=$TOP/host g=$TOP/guide/failover pkg ver root arch
	pkg=pg-mptcp-failover
	ver=$(TZ=UTC git -C "$TOP" log -1 --format=%cd --date=format-local:%Y%m%d.%H%M%S -- host guide/failover 2>/dev/null || true)
	ver=1.${ver:-0}
	root=$(mktemp -d)
	chmod 755 "$root"
	install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib/systemd/system/postgresql@.service.d" \
		"$root/usr/lib/sysctl.d" "$root/etc/pg-mptcp" "$root/usr/share/doc/$pkg/examples" "$root/usr/lib/pg-mptcp"
	cmd_host_tools
	host_bpf_compile "$HOST_BPF_SOURCE" "$root/usr/lib/pg-mptcp/pg-mptcp-subflow.bpf.o" ||
		die "could not compile $HOST_BPF_SOURCE"
	# (no DWARF or build paths; the BTF the loader reads stays)
	llvm-strip -g "$root/usr/lib/pg-mptcp/pg-mptcp-subflow.bpf.o"
	chmod 644 "$root/usr/lib/pg-mptcp/pg-mptcp-subflow.bpf.o"
	arch=$(dpkg --print-architecture)
	install -m 755 "$h/host-setup" "$root/usr/sbin/pg-mptcp-host-setup"
	install -m 755 "$h/mend-paths" "$root/usr/sbin/pg-mptcp-mend-paths"
	install -m 755 "$h/paths" "$root/usr/sbin/pg-mptcp-paths"
	# (in /usr/bin: a monitoring agent's user runs it too)
	install -m 755 "$h/check" "$root/usr/bin/pg-mptcp-check"
	# (host/'s units name /usr/local/sbin, where a DBA copies the programs by
	# hand: guide/failover.md)
	sed 's|/usr/local/sbin/|/usr/sbin/|g' "$h/mend-paths.service" >"$root/usr/lib/systemd/system/pg-mptcp-mend-paths.service"
	sed 's|/usr/local/sbin/|/usr/sbin/|g' "$h/paths.service" >"$root/usr/lib/systemd/system/pg-mptcp-paths.service"
	sed 's|/usr/local/sbin/|/usr/sbin/|g' "$h/failover-status.service" >"$root/usr/lib/systemd/system/pg-mptcp-failover-status.service"
	install -m 644 "$h/failover-status.timer" "$root/usr/lib/systemd/system/pg-mptcp-failover-status.timer"
	sed 's|/usr/local/sbin/|/usr/sbin/|g' "$h/systemd-dropin.conf" >"$root/usr/lib/systemd/system/postgresql@.service.d/pg-mptcp-failover.conf"
	install -m 644 "$h/sysctl.conf" "$root/usr/lib/sysctl.d/60-pg-mptcp-failover.conf"
	install -m 644 "$h/paths.conf" "$root/etc/pg-mptcp/paths.conf"
	install -m 644 "$g/primary.conf" "$g/standby.conf" "$g/sysctl-host-wide.conf" "$root/usr/share/doc/$pkg/examples/"
	install -m 644 "$TOP/LICENSE" "$root/usr/share/doc/$pkg/copyright"
	# (the program's source, GPL: beside the object it was built into)
	install -m 644 "$HOST_BPF_SOURCE" "$root/usr/share/doc/$pkg/"
	chmod 644 "$root"/usr/lib/systemd/system/*.service "$root"/usr/lib/systemd/system/*.timer "$root"/usr/lib/systemd/system/*/*.conf
	echo /etc/pg-mptcp/paths.conf >"$root/DEBIAN/conffiles"
	cat >"$root/DEBIAN/control" <<-EOF
	Package: $pkg
	Version: $ver
	Architecture: $arch
	Maintainer: $DEB_MAINTAINER
	Depends: python3, iproute2, bpftool, mount, postgresql-common
	Section: database
	Priority: optional
	Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
	Description: failover settings for PostgreSQL over Multipath TCP
	 Bounds how long a dead network path can hold a PostgreSQL replication
	 connection's commits, without changing any host-wide TCP setting: a BPF
	 program on each cluster's cgroup closes an MPTCP subflow whose path is
	 dead while another path delivers, leaves an outage of every path to the
	 kernel, and bounds a connection attempt on a dead address
	 (pg-mptcp-host-setup, run before each cluster starts). pg-mptcp-mend-paths gives a connection back a path that
	 comes back; pg-mptcp-paths sets the MPTCP limits and endpoints of
	 /etc/pg-mptcp/paths.conf at every boot. pg-mptcp-check tells, with a
	 monitoring plugin's exit status, whether all of it is in place.
	EOF
	cat >"$root/DEBIAN/postinst" <<-'EOF'
	#!/bin/sh
	set -e
	if [ "$1" = configure ]; then
		systemctl --system daemon-reload >/dev/null 2>&1 || true
		if command -v deb-systemd-helper >/dev/null; then
			deb-systemd-helper enable pg-mptcp-paths.service pg-mptcp-mend-paths.service pg-mptcp-failover-status.timer >/dev/null || true
		fi
		if [ -d /run/systemd/system ] && command -v deb-systemd-invoke >/dev/null; then
			deb-systemd-invoke restart pg-mptcp-mend-paths.service pg-mptcp-failover-status.timer >/dev/null || true
		fi
		# clusters running now get the program without a restart (the
		# drop-in gives it to those that start later)
		if [ -d /run/systemd/system ]; then
			cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
			for unit in $(systemctl list-units --state=active --plain --no-legend 'postgresql@*.service' 2>/dev/null | awk '{ print $1 }'); do
				cg=$(systemctl show -P ControlGroup "$unit" 2>/dev/null || true)
				[ -n "$cg2" ] && [ -n "$cg" ] || continue
				/usr/sbin/pg-mptcp-host-setup "$cg2$cg" >/dev/null 2>&1 ||
					echo "pg-mptcp-failover: could not attach the failover program to $unit (pg-mptcp-host-setup $cg2$cg says why)" >&2
			done
		fi
	fi
	EOF
	cat >"$root/DEBIAN/prerm" <<-'EOF'
	#!/bin/sh
	set -e
	if [ "$1" = remove ] && [ -d /run/systemd/system ] && command -v deb-systemd-invoke >/dev/null; then
		deb-systemd-invoke stop pg-mptcp-mend-paths.service pg-mptcp-failover-status.timer pg-mptcp-failover-status.service >/dev/null || true
	fi
	# the program leaves with the package, from every cgroup this host's
	# pg-mptcp-host-setup attached it to (/run/pg-mptcp/attached)
	if [ "$1" = remove ] || [ "$1" = upgrade ]; then
		/usr/sbin/pg-mptcp-host-setup --remove --all >/dev/null 2>&1 || true
	fi
	EOF
	cat >"$root/DEBIAN/postrm" <<-'EOF'
	#!/bin/sh
	set -e
	systemctl --system daemon-reload >/dev/null 2>&1 || true
	[ "$1" != purge ] || rm -rf /run/pg-mptcp
	if [ "$1" = purge ] && command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper purge pg-mptcp-paths.service pg-mptcp-mend-paths.service pg-mptcp-failover-status.timer >/dev/null || true
	fi
	EOF
	chmod 755 "$root"/DEBIAN/postinst "$root"/DEBIAN/prerm "$root"/DEBIAN/postrm
	rm -f "$out/${pkg}_"*.deb
	dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${pkg}_${ver}_${arch}.deb" >/dev/null ||
		{ rm -rf "$root"; die "dpkg-deb could not build $pkg"; }
	rm -rf "$root"
}

# ---- make deb-rebuild: a build machine's timer runs it.  fetch picks the
# newest version of the source that the archive serves (archive.sh); when
# the repository's server package is already that version, nothing happens.
# Otherwise make deb builds and signs it, and DEB_PUBLISH (a directory that
# a web server serves, or that is copied to the hosts) gets the new
# repository in one rename.  Hosts then take it with apt upgrade;
# pg-mptcp-check warns on them meanwhile.
cmd_deb_rebuild() {
	deb_need_debian_major
	mkdir -p "$DEB_DIR"
	cmd_fetch
	local built= f
	f=$(ls "$DEB_REPO/postgresql-${MAJOR_NUMBER}_"*.deb 2>/dev/null | head -1 || true)
	[ -z "$f" ] || built=$(dpkg-deb -f "$f" Version)
	if [ "$built" = "$DEB_VERSION" ]; then
		note "$DEB_REPO has $DEB_VERSION, built from the newest source the archive serves: nothing to do"
	else
		note "the archive serves $PG_DEBIAN_VERSION; the repository has ${built:-nothing}: make deb"
		cmd_deb
	fi
	[ -n "${DEB_PUBLISH:-}" ] || return 0
	case $DEB_PUBLISH in /*) ;; *) die "DEB_PUBLISH=$DEB_PUBLISH: an absolute path" ;; esac
	if [ -f "$DEB_PUBLISH/InRelease" ] && cmp -s "$DEB_REPO/InRelease" "$DEB_PUBLISH/InRelease"; then
		return 0
	fi
	rm -rf "$DEB_PUBLISH.new" "$DEB_PUBLISH.old"
	cp -a "$DEB_REPO" "$DEB_PUBLISH.new"
	chmod -R a+rX "$DEB_PUBLISH.new"
	[ ! -e "$DEB_PUBLISH" ] || mv "$DEB_PUBLISH" "$DEB_PUBLISH.old"
	mv "$DEB_PUBLISH.new" "$DEB_PUBLISH"
	rm -rf "$DEB_PUBLISH.old"
	note "published $DEB_REPO to $DEB_PUBLISH"
}

# ---- make deb-repo (and the end of make deb): a signed apt repository of
# the packages in $DEB_OUT, in $DEB_REPO, with Debian's own tools
# (apt-ftparchive, gpg).  A flat repository ("deb URI ./"), which a team
# serves as it is over HTTP, or copies to its hosts.  Its Release says
# Origin "pg-mptcp", which the hosts' apt preferences pin (DEB_REPO_PIN).
# Signed with DEB_REPO_KEY from DEB_REPO_GNUPGHOME (the team's key), or
# else with a key made once for this workspace ($TOP/.work/apt-key), whose
# public half is the repository's keyring.
DEB_REPO=$DEB_DIR/repo
DEB_REPO_ORIGIN=pg-mptcp
DEB_REPO_PIN="Package: *
Pin: release o=$DEB_REPO_ORIGIN
Pin-Priority: 1001"

cmd_deb_repo() {
	deb_need_debian_major
	ls "$DEB_OUT"/*.deb >/dev/null 2>&1 || die "no packages in $DEB_OUT: run 'make deb PG_MAJOR=$PG_MAJOR' first"
	deb_repo
}

deb_repo() {
	local missing= p home=${DEB_REPO_GNUPGHOME:-$TOP/.work/apt-key} key=${DEB_REPO_KEY:-}
	for p in apt-ftparchive:apt-utils gpg:gpg; do
		command -v "${p%%:*}" >/dev/null || missing="$missing ${p#*:}"
	done
	if [ -n "$missing" ]; then
		note "installing:$missing"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >"$DEB_DIR/apt.log" 2>&1 ||
			{ tail -20 "$DEB_DIR/apt.log" >&2; die "apt-get install$missing failed"; }
	fi
	if [ -z "$key" ] && [ -z "${DEB_REPO_GNUPGHOME:-}" ]; then
		key="pg-mptcp archive (workspace key) <pg-mptcp@localhost>"
		if ! gpg --homedir "$home" --list-secret-keys "$key" >/dev/null 2>&1; then
			note "a signing key for this workspace's repository, in $home (DEB_REPO_GNUPGHOME and DEB_REPO_KEY: the team's own)"
			mkdir -p "$home" && chmod 700 "$home"
			gpg --homedir "$home" --batch --quiet --passphrase '' \
				--quick-gen-key "$key" ed25519 sign never 2>>"$DEB_DIR/gpg.log" ||
				die "gpg could not make a key (log: $DEB_DIR/gpg.log)"
		fi
	fi
	[ -n "$key" ] || die "DEB_REPO_GNUPGHOME is set: set DEB_REPO_KEY to the key that signs"
	rm -rf "$DEB_REPO"
	mkdir -p "$DEB_REPO"
	deb_failover_package "$DEB_OUT"
	cp "$DEB_OUT"/*.deb "$DEB_REPO"/
	(
		cd "$DEB_REPO"
		apt-ftparchive packages . >Packages 2>>"$DEB_DIR/gpg.log"
		gzip -9nk Packages
		apt-ftparchive -o APT::FTPArchive::Release::Origin="$DEB_REPO_ORIGIN" \
			-o APT::FTPArchive::Release::Label="$DEB_REPO_ORIGIN" \
			-o APT::FTPArchive::Release::Suite="$DEB_SUITE" \
			-o APT::FTPArchive::Release::Description="PostgreSQL $MAJOR_NUMBER with Multipath TCP, for Debian $DEB_SUITE" \
			release . >"$DEB_DIR/Release.new"
		# (written apart: apt-ftparchive would list a Release it finds here)
		mv "$DEB_DIR/Release.new" Release
		gpg --homedir "$home" --batch --yes --local-user "$key" --clearsign -o InRelease Release
		gpg --homedir "$home" --batch --yes --local-user "$key" -abs -o Release.gpg Release
		gpg --homedir "$home" --batch --export "$key" >pg-mptcp-archive-keyring.gpg
		printf '%s\n' "$DEB_REPO_PIN" >pg-mptcp.pref
	) 2>>"$DEB_DIR/gpg.log" || die "the repository could not be made or signed (log: $DEB_DIR/gpg.log)"
	gpgconf --homedir "$home" --kill gpg-agent 2>/dev/null || true
	note "signed apt repository in $DEB_REPO ($(ls "$DEB_REPO"/*.deb | wc -l) packages; keyring pg-mptcp-archive-keyring.gpg, pin pg-mptcp.pref)"
}

# ---- make deb-test: like an autopkgtest, in a fresh chroot of the target
# suite.  Needs root: mmdebstrap's chroot, mounts, and network namespaces for
# the multipath lab (src/test/mptcp/lab.sh, 2 paths, 198.18.0.0/15).  The
# server runs in a namespace of its own, the clients and the standby in the
# lab's client namespace; apt reaches Debian's archive from the host's.
cmd_deb_test() {
	deb_need_debian_major
	mkdir -p "$DEB_DIR"
	deb_host_tools deb-test
	ls "$DEB_OUT"/*.deb >/dev/null 2>&1 || die "no packages in $DEB_OUT: run 'make deb PG_MAJOR=$PG_MAJOR' first"
	local start=$SECONDS rc=0
	deb_chroot "$DEB_DIR/test-root"
	unshare -m --propagation private "$TOP/tools/workspace" deb-test-run 2>&1 | tee "$DEB_DIR/test.log" || rc=1
	grep -q '^deb-test: PASS' "$DEB_DIR/test.log" || rc=1
	rm -rf "$DEB_DIR/test-root"
	note "deb-test took $((SECONDS - start)) s (log: $DEB_DIR/test.log)"
	return $rc
}

# The package tests' harness (deb-test, deb-test-clients), called from their
# run function, whose locals R (the chroot), lab, lab_sh, srv and n it uses
# (and lab_paths, if set: the lab's number of paths, default 2):
# the chroot's mounts; a network namespace for the server (its holder
# process in srv) with the lab; TAP helpers ok/fail/expect that stop
# at the first failure, as does any failing command; and in_root, in_server
# (the server's namespace) and in_client (the lab's client namespace), which
# run a command in the chroot with a clean environment.
# deb_harness NAME CLEANUP FILE: NAME prefixes the FAIL line, CLEANUP R LAB
# SRV runs at exit, FILE is the caller's file for the line of an error.
deb_harness() {
	DEB_HARNESS_NAME=$1 DEB_HARNESS_FILE=$3
	deb_mount_all "$R"
	unshare -n sleep 1800 &
	srv=$!
	# shellcheck disable=SC2064
	trap "$2 '$R' '$lab' $srv" EXIT
	nsenter -t "$srv" -n ip link set lo up
	rm -rf "$lab"
	nsenter -t "$srv" -n env LAB_LIFETIME=1800 "$lab_sh" up "$lab" "${lab_paths:-2}" >/dev/null
	ok() { n=$((n + 1)); echo "ok $n - $*"; }
	fail() { echo "not ok $((n + 1)) - $*"; echo "$DEB_HARNESS_NAME: FAIL"; exit 1; }
	expect() { [ "$2" = "$3" ] && ok "$1" || fail "$1: got '$2', expected '$3'"; }
	# (any other command that fails stops the test and says which)
	set -E
	trap 'fail "$BASH_COMMAND (line $LINENO of $DEB_HARNESS_FILE)"' ERR
	in_root() { chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
	in_server() { nsenter -t "$srv" -n chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
	in_client() { "$lab_sh" client "$lab" chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
}

deb_test_run() {
	local R=$DEB_DIR/test-root lab=$DEB_DIR/lab V=$MAJOR_NUMBER srv n=0
	local lab_sh=$TOP/src/test/mptcp/lab.sh
	deb_harness deb-test deb_test_cleanup tools/lib/deb.sh
	psql_at() { in_root runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -p "$@"; }
	apt_in() { in_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0 "$@" >>"$DEB_DIR/test-apt.log" 2>&1; }
	local checksum_sql="SELECT count(*) || ' ' || md5(string_agg(id || ':' || t || ':' || v::text, ',' ORDER BY id)) FROM items"
	local vector_sql="SET enable_seqscan = off; SELECT string_agg(round(d::numeric, 4)::text, ',') FROM (SELECT v <-> '[1,2,3]' AS d FROM items ORDER BY v <-> '[1,2,3]' LIMIT 5) s"
	# The standby's checksum once it equals WANT, or as it is after 10 s.
	standby_checksum() {
		local got=
		for _ in $(seq 1 50); do
			got=$(psql_at 5433 -c "$checksum_sql" 2>/dev/null || true)
			[ "$got" != "$1" ] || break
			sleep 0.2
		done
		echo "$got"
	}
	local stock_pkgs="postgresql-$V postgresql-client-$V libpq5"
	: >"$DEB_DIR/test-apt.log"

	apt_in update
	# The stock version is what the suite serves now, which is what a DBA
	# has; ours should be built from it (fetch builds the newest version it
	# can download).  Where the archive lists a newer version whose source
	# could not be downloaded, ours is older: installing it is a downgrade,
	# which the test does, and says.  A suite without this major (18 on
	# trixie, built with SUITE=) has no stock server: then the round trip is
	# the suite's own libpq5 -> ours -> its own, and the cluster's data
	# survives removing our server and installing it again.
	local stock downgrade= stock_libpq=
	stock=$(in_root apt-cache policy "postgresql-$V" | sed -n 's/^ *Candidate: //p')
	if [ -z "$stock" ] || [ "$stock" = "(none)" ]; then
		stock=
		stock_libpq=$(in_root apt-cache policy libpq5 | sed -n 's/^ *Candidate: //p')
		[ "$DEB_SUITE" != "$PG_DEBIAN_SUITE" ] || fail "Debian $DEB_SUITE serves no postgresql-$V"
	elif dpkg --compare-versions "$stock" gt "$PG_DEBIAN_VERSION"; then
		echo "# WARNING: Debian $DEB_SUITE serves $stock, newer than the $PG_DEBIAN_VERSION our packages are built from: installing ours is a downgrade (make upstream-status)"
		downgrade=--allow-downgrades
	fi
	# pgvector, where the suite builds it for this major: an extension
	# package built against the stock server must keep working on ours
	local vector=
	# (bookworm has none: pgvector came to Debian in trixie)
	[ -z "$stock" ] || [ -z "$(in_root apt-cache policy "postgresql-$V-pgvector" | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ] ||
		vector=postgresql-$V-pgvector
	local sum vec=
	# the cluster "main", as a DBA makes it, with 100,000 rows
	new_cluster_with_data() {
		# (postgresql-common made a "main" cluster: make ours as a DBA would)
		in_root pg_dropcluster --stop "$V" main 2>/dev/null || true
		in_root pg_createcluster "$V" main >/dev/null || fail "pg_createcluster $V main"
		in_root pg_conftool -s "$V" main set listen_addresses '*'
		printf 'host all all 198.18.0.0/15 trust\nhost replication all 198.18.0.0/15 trust\n' >>"$R/etc/postgresql/$V/main/pg_hba.conf"
		in_server pg_ctlcluster "$V" main start || fail "pg_ctlcluster $V main start"
		ok "pg_createcluster and pg_ctlcluster start the server"
		local v_expr="('[' || g % 97 || ',' || g % 89 || ',' || g % 83 || ']')"
		[ -z "$vector" ] || v_expr="$v_expr::vector(3)"
		psql_at 5432 ${vector:+-c "CREATE EXTENSION vector"} \
			-c "CREATE TABLE items AS SELECT g AS id, md5(g::text) AS t, $v_expr AS v FROM generate_series(1, 100000) g" \
			${vector:+-c "SET maintenance_work_mem = '256MB'" -c "CREATE INDEX ON items USING hnsw (v vector_l2_ops)"} || fail "loading data"
		sum=$(psql_at 5432 -c "$checksum_sql")
		expect "data loaded (checksum $sum)" "${sum%% *}" 100000
		[ -z "$vector" ] || vec=$(psql_at 5432 -c "$vector_sql")
		[ -z "$vector" ] || { [ -n "$vec" ] && ok "pgvector: hnsw index answers ($vec)" || fail "pgvector query"; }
	}
	if [ -n "$stock" ]; then
		echo "# 1. Debian's stock server $stock${vector:+ and pgvector built against it}"
		apt_in install --no-install-recommends $(for p in $stock_pkgs; do echo "$p=$stock"; done) \
			${vector:+"$vector"} python3-psycopg2 || fail "apt-get install of the stock packages (log: $DEB_DIR/test-apt.log)"
		expect "stock postgresql-$V installed" "$(in_root dpkg-query -W -f='${Version}' "postgresql-$V")" "$stock"
		new_cluster_with_data
	else
		echo "# 1. Debian $DEB_SUITE has no PostgreSQL $V: its own libpq5 $stock_libpq and a client of it"
		apt_in install --no-install-recommends "libpq5=$stock_libpq" python3-psycopg2 postgresql-common ||
			fail "apt-get install of the stock libpq5 (log: $DEB_DIR/test-apt.log)"
		expect "stock libpq5 installed" "$(in_root dpkg-query -W -f='${Version}' libpq5)" "$stock_libpq"
	fi

	echo "# 2. our packages${stock:+ over the stock ones}, from our signed apt repository, pinned"
	[ -f "$DEB_REPO/InRelease" ] || fail "no repository in $DEB_REPO: run 'make deb-repo PG_MAJOR=$PG_MAJOR'"
	local names=() f p
	mkdir -p "$R/srv/pg-mptcp"
	cp "$DEB_REPO"/* "$R/srv/pg-mptcp/"
	chmod -R a+rX "$R/srv/pg-mptcp"
	# (what guide/install.md has a host do, with the repository at file:)
	install -m 644 "$DEB_REPO/pg-mptcp-archive-keyring.gpg" "$R/usr/share/keyrings/"
	echo "deb [signed-by=/usr/share/keyrings/pg-mptcp-archive-keyring.gpg] file:/srv/pg-mptcp ./" >"$R/etc/apt/sources.list.d/pg-mptcp.list"
	install -m 644 "$DEB_REPO/pg-mptcp.pref" "$R/etc/apt/preferences.d/pg-mptcp.pref"
	apt_in update || fail "apt-get update with our repository (log: $DEB_DIR/test-apt.log)"
	# (the signature is what apt trusts: a Release changed after signing is refused)
	cp -a "$R/srv/pg-mptcp" "$R/srv/pg-mptcp.good"
	sed -i 's/^Label: .*/Label: tampered/' "$R/srv/pg-mptcp/InRelease" "$R/srv/pg-mptcp/Release"
	# (apt keeps the index it had, and says why: gpgv's BADSIG up to
	# bookworm, sqv's "Message has been manipulated" from trixie on)
	in_root env DEBIAN_FRONTEND=noninteractive apt-get -q update >"$DEB_DIR/test-apt-tampered.log" 2>&1 || true
	if grep -qiE "BADSIG|signature verification failed|manipulated" "$DEB_DIR/test-apt-tampered.log" &&
		! in_root apt-cache policy | grep -q "l=tampered"; then
		ok "apt refuses the repository once its Release is changed after signing"
	else
		fail "apt accepted a Release changed after signing (log: $DEB_DIR/test-apt-tampered.log)"
	fi
	rm -rf "$R/srv/pg-mptcp" && mv "$R/srv/pg-mptcp.good" "$R/srv/pg-mptcp"
	apt_in update || fail "apt-get update with our repository again (log: $DEB_DIR/test-apt.log)"
	expect "pinned: ours is postgresql-$V's candidate" \
		"$(in_root apt-cache policy "postgresql-$V" | sed -n 's/^ *Candidate: //p')" "$DEB_VERSION"
	[ -n "$stock" ] || names=("postgresql-$V" "postgresql-client-$V" libpq5)
	for f in "$DEB_REPO"/*.deb; do
		[ -n "$stock" ] || break
		p=$(dpkg-deb -f "$f" Package)
		# (what a DBA does: upgrade the packages installed from this source)
		# (no "| grep -q": with pipefail, dpkg-query's SIGPIPE would fail the test)
		case $(in_root dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true) in
		ii*) names+=("$p") ;;
		esac
	done
	apt_in install --no-install-recommends $downgrade "${names[@]}" || fail "apt-get install of our packages (log: $DEB_DIR/test-apt.log)"
	for p in "${names[@]}"; do
		expect "$p upgraded" "$(in_root dpkg-query -W -f='${Version}' "$p")" "$DEB_VERSION"
	done
	# (the pin, not a hold: apt upgrade keeps ours, and upgrades the rest)
	expect "apt upgrade would change none of ours" \
		"$(in_root apt-get -s upgrade | awk '/^Inst / { print $2 }' | grep -Fxc -f <(printf '%s\n' "${names[@]}") || true)" 0
	expect "no package held" "$(in_root apt-mark showhold | wc -l)" 0
	[ -n "$stock" ] || new_cluster_with_data
	in_server pg_ctlcluster "$V" main restart || fail "restart on our server"
	expect "our server runs (listen_mptcp known)" "$(psql_at 5432 -c 'SHOW listen_mptcp')" off
	expect "data intact after the upgrade" "$(psql_at 5432 -c "$checksum_sql")" "$sum"
	[ -z "$vector" ] || expect "pgvector still works" "$(psql_at 5432 -c "$vector_sql")" "$vec"
	in_root pg_conftool -s "$V" main set listen_mptcp on
	in_server pg_ctlcluster "$V" main restart || fail "restart with listen_mptcp = on"
	expect "listen_mptcp = on (pg_conftool, restart)" "$(psql_at 5432 -c 'SHOW listen_mptcp')" on
	psql_at 5432 -c "CREATE EXTENSION mptcpinfo" || fail "CREATE EXTENSION mptcpinfo"
	# A join subflow follows the connection by a few milliseconds: wait (10 s at most).
	local wait_sql="DO \$\$BEGIN FOR i IN 1..50 LOOP EXIT WHEN (SELECT subflows FROM pg_stat_mptcp WHERE pid = pg_backend_pid()) >= 2; PERFORM pg_sleep(0.2); END LOOP; END\$\$; SELECT mptcp || ' ' || subflows FROM pg_stat_mptcp WHERE pid = pg_backend_pid()"
	expect "psql mptcp=require over the lab: multipath in pg_stat_mptcp" \
		"$(in_client runuser -u postgres -- psql -X -q -At "host=198.18.1.1 dbname=postgres mptcp=require" -c "${wait_sql}")" "true 2"
	expect "python3-psycopg2 (the system libpq) mptcp=require: multipath" \
		"$(in_client runuser -u postgres -- python3 -c "
import psycopg2, sys
c = psycopg2.connect('host=198.18.1.1 dbname=postgres mptcp=require')
c.autocommit = True
cur = c.cursor()
cur.execute(sys.argv[1])
print(cur.fetchone()[0])" "$wait_sql")" "true 2"

	echo "# pg_basebackup with PGMPTCP=1 to a second cluster (a standby in the client namespace)"
	in_root pg_createcluster "$V" standby >/dev/null || fail "pg_createcluster $V standby"
	local sdata=/var/lib/postgresql/$V/standby
	rm -rf "${R:?}$sdata" && install -d -o "$(stat -c %u "$R/var/lib/postgresql")" -m 700 "$R$sdata"
	in_client runuser -u postgres -- env PGMPTCP=1 pg_basebackup -h 198.18.1.1 -D "$sdata" -R -X stream -c fast ||
		fail "pg_basebackup over MPTCP"
	grep -q "mptcp=1" "$R$sdata/postgresql.auto.conf" && ok "pg_basebackup -R wrote mptcp=1 into primary_conninfo" ||
		fail "primary_conninfo lacks mptcp=1: $(grep primary_conninfo "$R$sdata/postgresql.auto.conf")"
	"$lab_sh" client "$lab" chroot "$R" pg_ctlcluster "$V" standby start || fail "starting the standby"
	psql_at 5432 -c "INSERT INTO items VALUES (100001, 'after basebackup', '[0,0,0]')"
	local sum2
	sum2=$(psql_at 5432 -c "$checksum_sql")
	expect "the standby has the primary's data (checksum)" "$(standby_checksum "$sum2")" "$sum2"
	expect "the standby's walreceiver is multipath" "$(psql_at 5433 -c "DO \$\$BEGIN FOR i IN 1..50 LOOP EXIT WHEN (SELECT subflows FROM pg_stat_mptcp JOIN pg_stat_wal_receiver USING (pid)) >= 2; PERFORM pg_sleep(0.2); END LOOP; END\$\$; SELECT mptcp || ' ' || subflows FROM pg_stat_mptcp JOIN pg_stat_wal_receiver USING (pid)")" "true 2"

	echo "# 3. back to the stock packages (guide/going-back.md)"
	psql_at 5432 -c "DROP EXTENSION mptcpinfo" || fail "DROP EXTENSION mptcpinfo"
	in_root pg_conftool "$V" main remove listen_mptcp || fail "pg_conftool remove listen_mptcp"
	local conninfo
	conninfo=$(psql_at 5433 -c "SHOW primary_conninfo")
	conninfo=$(printf '%s' "$conninfo" | sed 's/ *mptcp=[^ ]*//')
	psql_at 5433 -c "ALTER SYSTEM SET primary_conninfo = '${conninfo//\'/\'\'}'" || fail "removing mptcp from primary_conninfo"
	if [ -z "$stock" ]; then
		deb_test_no_stock_back
		return
	fi
	rm "$R/etc/apt/sources.list.d/pg-mptcp.list" "$R/etc/apt/preferences.d/pg-mptcp.pref"
	apt_in update
	apt_in install --no-install-recommends --allow-downgrades $(for p in "${names[@]}"; do echo "$p=$stock"; done) ||
		fail "apt-get install of the stock packages again (log: $DEB_DIR/test-apt.log)"
	for p in "${names[@]}"; do
		expect "$p back to stock" "$(in_root dpkg-query -W -f='${Version}' "$p")" "$stock"
	done
	in_server pg_ctlcluster "$V" main restart || fail "the stock server does not start"
	"$lab_sh" client "$lab" chroot "$R" pg_ctlcluster "$V" standby restart || fail "the stock standby does not start"
	[ "$(psql_at 5432 -c "SELECT count(*) FROM pg_settings WHERE name = 'listen_mptcp'")" = 0 ] &&
		ok "the stock server runs (no listen_mptcp)" || fail "still our server"
	expect "data intact after going back" "$(psql_at 5432 -c "$checksum_sql")" "$sum2"
	[ -z "$vector" ] || expect "pgvector still works" "$(psql_at 5432 -c "$vector_sql")" "$vec"
	psql_at 5432 -c "INSERT INTO items VALUES (100002, 'after going back', '[0,0,0]')"
	sum2=$(psql_at 5432 -c "$checksum_sql")
	expect "the standby streams with the stock libpq (checksum)" "$(standby_checksum "$sum2")" "$sum2"
	echo "deb-test: PASS ($n checks: $PG_SOURCE_PACKAGE $stock -> $DEB_VERSION -> $stock, Debian $DEB_SUITE)"
}

# deb_test_run's step 3 on a suite without this major (its locals): our
# server and client removed (the clusters' data and configuration stay, as
# apt-get remove leaves them), the suite's own libpq5 back under its
# clients, then ours installed again from the repository over the same data.
deb_test_no_stock_back() {
	in_server pg_ctlcluster "$V" main stop || fail "pg_ctlcluster $V main stop"
	"$lab_sh" client "$lab" chroot "$R" pg_ctlcluster "$V" standby stop || fail "stopping the standby"
	mv "$R/etc/apt/sources.list.d/pg-mptcp.list" "$R/etc/apt/preferences.d/pg-mptcp.pref" "$R/srv/"
	apt_in update
	apt_in remove "postgresql-$V" "postgresql-client-$V" || fail "apt-get remove of our server (log: $DEB_DIR/test-apt.log)"
	apt_in install --no-install-recommends --allow-downgrades "libpq5=$stock_libpq" ||
		fail "apt-get install of the stock libpq5 again (log: $DEB_DIR/test-apt.log)"
	expect "libpq5 back to stock" "$(in_root dpkg-query -W -f='${Version}' libpq5)" "$stock_libpq"
	expect "python3-psycopg2 runs on the stock libpq" \
		"$(in_root python3 -c 'import psycopg2; print(psycopg2.extensions.libpq_version() // 10000)')" "${stock_libpq%%.*}"
	[ -d "$R/var/lib/postgresql/$V/main/base" ] && ok "the cluster's data stays after our server is removed" ||
		fail "no /var/lib/postgresql/$V/main after apt-get remove"
	echo "# our packages again, over the same clusters"
	mv "$R/srv/pg-mptcp.list" "$R/etc/apt/sources.list.d/"
	mv "$R/srv/pg-mptcp.pref" "$R/etc/apt/preferences.d/"
	apt_in update
	apt_in install --no-install-recommends "postgresql-$V" || fail "apt-get install of our server again (log: $DEB_DIR/test-apt.log)"
	for p in "${names[@]}"; do
		expect "$p ours again" "$(in_root dpkg-query -W -f='${Version}' "$p")" "$DEB_VERSION"
	done
	in_server pg_ctlcluster "$V" main start || fail "our server does not start again"
	"$lab_sh" client "$lab" chroot "$R" pg_ctlcluster "$V" standby start || fail "the standby does not start again"
	expect "data intact after removing and installing again" "$(psql_at 5432 -c "$checksum_sql")" "$sum2"
	psql_at 5432 -c "INSERT INTO items VALUES (100002, 'after installing again', '[0,0,0]')"
	sum2=$(psql_at 5432 -c "$checksum_sql")
	expect "the standby streams again (checksum)" "$(standby_checksum "$sum2")" "$sum2"
	echo "deb-test: PASS ($n checks: libpq5 $stock_libpq -> $DEB_VERSION -> $stock_libpq, $PG_SOURCE_PACKAGE $DEB_VERSION removed and installed again, Debian $DEB_SUITE)"
}

# deb_need_ours: our libpq5, server and client packages are built (make deb)
deb_need_ours() {
	local p
	for p in libpq5 "postgresql-$MAJOR_NUMBER" "postgresql-client-$MAJOR_NUMBER"; do
		ls "$DEB_OUT/${p}"_*.deb >/dev/null 2>&1 ||
			die "no $p package in $DEB_OUT: run 'make deb PG_MAJOR=$PG_MAJOR' first"
	done
}

# deb_copy_ours: our libpq5, server and client packages into the chroot $R
# (/tmp/debs), for the package tests; sets the caller's debs (their paths
# in the chroot) and ver (our version).
deb_copy_ours() {
	local f p
	mkdir -p "$R/tmp/debs"
	for p in libpq5 "postgresql-$V" "postgresql-client-$V"; do
		f=$(ls "$DEB_OUT/${p}"_*.deb)
		cp "$f" "$R/tmp/debs/"
		debs+=("/tmp/debs/$(basename "$f")")
	done
	ver=$(dpkg-deb -f "$f" Version)
}

deb_mount_all() {
	mount -t proc proc "$1/proc" &&
		mount --rbind /dev "$1/dev" &&
		mount -t tmpfs -o mode=1777 tmpfs "$1/dev/shm"
}

deb_test_cleanup() {
	local R=$1 lab=$2 srv=$3
	chroot "$R" pg_ctlcluster "$MAJOR_NUMBER" standby stop -m immediate >/dev/null 2>&1 || true
	chroot "$R" pg_ctlcluster "$MAJOR_NUMBER" main stop -m immediate >/dev/null 2>&1 || true
	nsenter -t "$srv" -n "$TOP/src/test/mptcp/lab.sh" down "$lab" >/dev/null 2>&1 || true
	kill "$srv" 2>/dev/null || true
}
