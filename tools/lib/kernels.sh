# shellcheck shell=bash
# check-kernels: the MPTCP suites on Debian's own kernels, under qemu.
# Part of tools/workspace (sourced by it; see that file for the layout).
#
# Each kernel of tools/kernels.conf (Debian's packages, fetched by name with
# a private apt state and checked against the pinned sha256) boots with
# virtme-ng (PyPI, pinned in tools/kernels-requirements.txt) on this
# machine's root file system, and tools/lib/kernels-guest.sh runs the TAP
# suites there against the production build installed in KERNELS_PREFIX,
# with every server started without capabilities.
#
# Settings: KERNELS="6.1 6.12 7.2" (names from kernels.conf; default all),
# KERNEL_TESTS="mptcp/002_connect mptcpinfo/001_live ..." or "ci" (the CI
# subset) or "all" (default), KERNELS_KVM=auto|0|1, KERNELS_MEMORY (3G),
# KERNELS_JOBS (kernels booted at once, default 1), KERNELS_NICE (qemu's
# niceness, default 10: emulation is as heavy as a build), KERNEL_BOOT_TIMEOUT
# (seconds for one kernel's boot and tests, default 5400),
# KERNEL_TEST_TIMEOUT (seconds for one test script, default 1800),
# KERNELS_PREPARE_ONLY=1 (install and fetch what the boots need, boot nothing),
# KERNELS_NO_INSTALL=1 (use KERNELS_PREFIX as installed), KERNELS_SUMMARY_ONLY=1
# (print the table of the last runs of KERNELS, boot nothing).
# Besides kernels.conf's names, KERNELS and BENCH_KERNEL take kc-unpatched
# and kc-patched: the kernels "make kernel-compare" built (Linux from
# source without and with kernel/{mptcp-next,rfc}/0*.patch; everything built
# in, no modules).

KERNELS_DIR=$TOP/.work/kernels
KERNELS_CONF=$TOP/tools/kernels.conf
KERNELS_REQUIREMENTS=$TOP/tools/kernels-requirements.txt
KERNELS_APT_PACKAGES="qemu-system-x86 kmod busybox-static file python3-venv"
# "make install" without PREFIX= installs to $WORKDIR/install; the kernels
# get their own prefix unless one is given.
# (KERNELS_PREFIX=DIR: that installation, whatever PREFIX says, e.g. the
# one a check made, with KERNELS_NO_INSTALL=1)
if [ -n "${KERNELS_PREFIX:-}" ]; then
	:
elif [ "$PREFIX" = "$WORKDIR/install" ]; then
	KERNELS_PREFIX=$KERNELS_DIR/pg$PG_MAJOR
else
	KERNELS_PREFIX=$PREFIX
fi
# mptcpinfo's views and the connection tests: what CI runs on 6.12
# (what fits beside the other checks in check-all: the start-up messages,
# the reports of server processes, the views over loopback with a standby
# and IPv6 clients, the connection tests and socket options).  Not
# 001_live: its pg_basebackup through the lab took 235 s quiet, and in CI,
# beside the builds, over 7 minutes, or more than the whole budget
# (2026-11-28: the emulated kernel starved of CPU).  Not 009_stalled and
# 011_loopback_reports: 561 s and 398 s there on 2026-11-29 (011's backend
# creates 8,000 tables), the two longest, and CI took 2,599 s with 011, too
# near its 45 minutes.  "make check-kernels KERNELS=6.12" runs all three.
KERNEL_TESTS_CI="mptcpinfo/004_startup mptcpinfo/008_reports mptcpinfo/010_loopback mptcp/002_connect"

kernel_names() { awk '!/^#/ && NF { print $1 }' "$KERNELS_CONF" | uniq; }

# kernels_built NAME: NAME is one of kernel-compare's builds
kernels_built() { case $1 in kc-unpatched | kc-patched) return 0 ;; *) return 1 ;; esac; }

# kernels_known NAME: dies unless NAME can boot
kernels_known() {
	kernels_built "$1" && return 0
	awk -v n="$1" '!/^#/ && $1 == n { f = 1 } END { exit !f }' "$KERNELS_CONF" ||
		die "no kernel $1 in tools/kernels.conf (there: $(kernel_names | paste -sd' '); and kc-unpatched, kc-patched)"
}

# kernels_image NAME: prints the kernel image to boot: Debian's, fetched, or
# kernel-compare's bzImage, which must have been built already
kernels_image() {
	local image
	if kernels_built "$1"; then
		image=$KC_DIR/${1#kc-}/o/arch/x86/boot/bzImage
		[ -f "$image" ] || die "kernel $1: no $image (\"make kernel-compare KERNEL_COMPARE_BUILD_ONLY=1\" builds it)"
		echo "$image"
	else
		kernels_fetch "$1"
	fi
}

# kernels_boot_options NAME: virtme-ng's options for NAME: Debian's kernels
# get their modules mounted; kernel-compare's have none, and so no
# initramfs, and mount virtme-ng's 9p root themselves, which 7.2 wants
# named "root=" (tools/lib/kernel-compare.sh, kc_boot)
kernels_boot_options() {
	if kernels_built "$1"; then echo "--append root=/dev/root"; else echo "--rodir $KERNELS_DIR/$1/root"; fi
}

kernel_tests() {
	local t=${KERNEL_TESTS:-all}
	case $t in
	ci) echo $KERNEL_TESTS_CI ;;
	all)
		(cd "$TOP/src/test/mptcp/t" && ls [0-9]*.pl | sed 's/\.pl$//; s/^/mptcp\//')
		(cd "$TOP/contrib/mptcpinfo/t" && ls [0-9]*.pl | sed 's/\.pl$//; s/^/mptcpinfo\//') ;;
	*) echo "$t" ;;
	esac
}

# apt-get with a private state: the suites of kernels.conf only, Debian's
# archive keyring, this machine's own apt untouched.
kernels_apt() {
	local tool=$1
	shift
	"$tool" -o Dir::Etc::SourceList="$KERNELS_DIR/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$KERNELS_DIR/apt/lists" -o Dir::State::Status=/dev/null \
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Architecture=amd64 \
		-o Acquire::Languages=none -o APT::Sandbox::User=root "$@"
}

kernels_apt_update() {
	local suites
	suites=$(awk '!/^#/ && NF { print $2 }' "$KERNELS_CONF" | sort -u)
	mkdir -p "$KERNELS_DIR/apt/lists/partial"
	for s in $suites; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEB_MIRROR_URL $s main"
	done >"$KERNELS_DIR/apt/sources.list"
	note "apt-get update (private state in $KERNELS_DIR/apt: $(echo $suites))"
	kernels_apt apt-get update -qq >"$KERNELS_DIR/apt.log" 2>&1 ||
		{ cat "$KERNELS_DIR/apt.log" >&2; die "apt-get update for the kernel suites failed"; }
	touch "$KERNELS_DIR/apt/updated"
}
DEB_MIRROR_URL=${DEB_MIRROR_URL:-http://deb.debian.org/debian}

# The host's part: qemu, depmod, busybox for virtme-ng's initramfs; the
# virtme-ng venv.
kernels_deps() {
	cmd_deps
	kernels_apt_install "$KERNELS_DIR/apt-install.log" $KERNELS_APT_PACKAGES
	kernels_venv
}

# kernels_apt_install LOG PACKAGE...: the packages not installed yet, from
# this machine's apt (also for kernel-compare)
kernels_apt_install() {
	local log=$1 p status missing=
	shift
	for p in "$@"; do
		status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) || status=
		[ "${status:0:2}" = ii ] || missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	is_root || die "not root: install$missing first"
	note "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
		>"$log" 2>&1 ||
		{ tail -30 "$log" >&2; die "apt-get install failed"; }
}

# virtme-ng in $KERNELS_DIR/venv, pinned (also for kernel-compare)
kernels_venv() {
	local venv=$KERNELS_DIR/venv
	mkdir -p "$KERNELS_DIR"
	if ! cmp -s "$KERNELS_REQUIREMENTS" "$venv/requirements.txt"; then
		note "virtme-ng into $venv (pinned, hashes checked)"
		rm -rf "$venv"
		# Debian's python, not root's pyenv shims
		/usr/bin/python3 -m venv "$venv" || die "python3 -m venv failed"
		"$venv/bin/pip" install -q --require-hashes --only-binary=:all: -r "$KERNELS_REQUIREMENTS" \
			>"$KERNELS_DIR/pip.log" 2>&1 || { cat "$KERNELS_DIR/pip.log" >&2; die "pip install of virtme-ng failed"; }
		cp "$KERNELS_REQUIREMENTS" "$venv/requirements.txt"
	fi
}

# kernels_fetch NAME: NAME's packages in $KERNELS_DIR/debs (sha256 checked),
# unpacked into $KERNELS_DIR/NAME/root with modules.dep; prints the vmlinuz.
kernels_fetch() {
	local name=$1 root=$KERNELS_DIR/$name/root debs=$KERNELS_DIR/debs
	local suite pkg ver sha pool file fetched=
	mkdir -p "$debs"
	while read -r _ suite pkg ver sha pool; do
		file=$debs/${pkg}_${ver}_amd64.deb
		if [ ! -f "$file" ] || [ "$(sha256sum <"$file" | cut -d' ' -f1)" != "$sha" ]; then
			rm -f "$file"
			[ -f "$KERNELS_DIR/apt/updated" ] || kernels_apt_update
			note "apt-get download $pkg=$ver ($suite)"
			if ! (cd "$debs" && kernels_apt apt-get download -qq "$pkg=$ver") >>"$KERNELS_DIR/apt.log" 2>&1; then
				[ "${KERNELS_ALLOW_POOL:-1}" = 1 ] ||
					die "$pkg=$ver is not in $suite's index any more (KERNELS_ALLOW_POOL=0)"
				note "$pkg=$ver is not in $suite's index: fetching $pool, checked by its pinned sha256"
				/usr/lib/apt/apt-helper download-file "$DEB_MIRROR_URL/$pool" "$file" "SHA256:$sha" \
					>>"$KERNELS_DIR/apt.log" 2>&1 || die "could not fetch $pool (see $KERNELS_DIR/apt.log)"
			fi
			[ "$(sha256sum <"$file" | cut -d' ' -f1)" = "$sha" ] ||
				{ rm -f "$file"; die "$pkg=$ver: sha256 differs from the pin in tools/kernels.conf"; }
			fetched=1
		fi
		if [ -n "$fetched" ] || [ ! -f "$root/.unpacked-$pkg-$ver" ]; then
			mkdir -p "$root"
			dpkg-deb -x "$file" "$root"
			touch "$root/.unpacked-$pkg-$ver"
			fetched=1
		fi
	done < <(awk -v n="$name" '!/^#/ && $1 == n' "$KERNELS_CONF")
	[ -e "$root/lib" ] || ln -s usr/lib "$root/lib"   # trixie and later: /lib is /usr/lib
	local mod kver
	mod=$(ls -d "$root"/lib/modules/*/kernel 2>/dev/null | head -1)
	[ -n "$mod" ] || die "kernel $name: no modules in its packages"
	kver=$(basename "$(dirname "$mod")")
	[ -f "$root/lib/modules/$kver/modules.dep" ] && [ -z "$fetched" ] || depmod -b "$root" "$kver"
	if [ -f "$root/boot/vmlinuz-$kver" ]; then echo "$root/boot/vmlinuz-$kver"
	elif [ -f "$root/lib/modules/$kver/vmlinuz" ]; then echo "$root/lib/modules/$kver/vmlinuz"
	else die "kernel $name: no vmlinuz in its packages"
	fi
}

# (vng runs virtme-run from its venv by name)
VNG=(env "PATH=$KERNELS_DIR/venv/bin:$PLAIN_PATH" "$KERNELS_DIR/venv/bin/vng")

# KVM only where qemu can really use it (here -cpu host aborts or the guest
# hangs: CONVENTIONS.md); the probe's answer is kept for this qemu.
# (kernels_kvm_option VMLINUZ [VNG-OPTION...]: the options the boot needs)
kernels_kvm_option() {
	local want=${KERNELS_KVM:-auto} vmlinuz=$1 stamp
	shift
	[ "$want" = 0 ] && { echo --disable-kvm; return; }
	[ "$want" = 1 ] && return
	[ -w /dev/kvm ] || { echo --disable-kvm; return; }
	stamp=$KERNELS_DIR/kvm-probe.$(qemu-system-x86_64 --version | head -1 | tr -c 'a-zA-Z0-9.\n' _)
	if [ ! -f "$stamp" ]; then
		# (a boot with KVM runs "true" in seconds; where KVM hangs, the
		# probe's whole bound is lost, in CI too: 30 s, not 90)
		note "probing KVM (a boot with it, at most 30 s)"
		if timeout 30 "${VNG[@]}" -r "$vmlinuz" "$@" --user root --exec true >/dev/null 2>&1; then
			echo kvm >"$stamp"
		else
			echo emulation >"$stamp"
		fi
	fi
	[ "$(cat "$stamp")" = kvm ] || echo --disable-kvm
}

# kernels_boot NAME VMLINUZ KVM-OPTION TESTS: one kernel's guest, its
# results in $KERNELS_DIR/NAME/run.  A guest that stops before its script
# has started (no RUN/kernel: qemu or the boot failed, not a test) is booted
# once more within the same KERNEL_BOOT_TIMEOUT: CI once lost its only
# kernel run that way, 48 s in, with nothing in either log.
kernels_boot() {
	local name=$1 vmlinuz=$2 kvm=$3 tests=$4 run=$KERNELS_DIR/$1/run start secs
	local budget=${KERNEL_BOOT_TIMEOUT:-5400} attempt rc
	rm -rf "$run"
	mkdir -p "$run"
	chown "$TEST_USER:" "$run"
	note "kernel $name: booting $(basename "$vmlinuz") ${kvm:-with KVM}; tests: $tests"
	start=$(date +%s)
	for attempt in 1 2; do
		# The guest sees the host's root read-only, but not what lies under
		# its own /tmp or /var/tmp, where a clone may be: the script, the
		# tree, the installation and the kernel's modules (virtme links
		# /lib/modules to their host path) are mounted explicitly.
		# (--verbose: the kernel's console in vng.log, for a boot that fails)
		rc=0
		timeout "$((budget - ($(date +%s) - start)))" nice -n "${KERNELS_NICE:-10}" "${VNG[@]}" -r "$vmlinuz" $kvm \
			--verbose --memory "${KERNELS_MEMORY:-3G}" --cpus 2 --user root --rwdir "$run" \
			--rodir "$TOP/tools/lib" --rodir "$TREE" --rodir "$KERNELS_PREFIX" $(kernels_boot_options "$name") \
			--exec "bash $TOP/tools/lib/kernels-guest.sh $run $KERNELS_PREFIX $TREE $TEST_USER $tests >$run/guest.log 2>&1" \
			>"$run/vng.log" 2>&1 || rc=$?
		echo "$rc" >"$run/rc"
		[ "$rc" != 124 ] || touch "$run/timed-out"
		[ "$attempt" = 1 ] && [ ! -f "$run/kernel" ] && [ ! -f "$run/timed-out" ] &&
			[ $(($(date +%s) - start)) -lt $((budget / 2)) ] || break
		note "kernel $name: the guest stopped before its tests began (qemu's exit status $rc, after $(($(date +%s) - start)) s; its console: $run/vng-1.log): booting once more"
		kernels_last_lines "$run" | sed 's/^/    /' >&2
		mv "$run/vng.log" "$run/vng-1.log"
	done
	secs=$(($(date +%s) - start))
	echo "$secs" >"$run/seconds"
	if [ ! -f "$run/finished" ]; then
		note "kernel $name: the guest did not finish$([ ! -f "$run/timed-out" ] || echo " within KERNEL_BOOT_TIMEOUT") (qemu's exit status $rc; see $run/vng.log, $run/guest.log); its last lines:"
		kernels_last_lines "$run" | sed 's/^/    /' >&2
	fi
	note "kernel $name: $secs s"
}

cmd_check_kernels() {
	local names tests name kvm all_start summary=$KERNELS_DIR/summary.txt
	all_start=$(date +%s)
	names=${KERNELS:-$(kernel_names | paste -sd' ')}
	tests=$(kernel_tests | paste -sd' ')
	for name in $names; do kernels_known "$name"; done
	if [ "${KERNELS_SUMMARY_ONLY:-0}" = 1 ]; then
		kernels_summary $names | tee "$summary"
		return 0
	fi
	is_root || die "check-kernels needs root (qemu, the guest's root sets up the lab)"
	mkdir -p "$KERNELS_DIR"
	kernels_deps
	# (KERNELS_NO_INSTALL=1: use the installation as it is, e.g. while
	# another check-kernels runs from it)
	[ "${KERNELS_NO_INSTALL:-0}" = 1 ] || PREFIX=$KERNELS_PREFIX cmd_install
	own_workspace
	local -A image
	# (a kernel the archive no longer serves is not a test failure: CI
	# says so in one line, as it does for git sources)
	rm -f "$KERNELS_DIR/unfetchable"
	for name in $names; do
		image[$name]=$(kernels_image "$name") || {
			kernels_built "$name" && die "kernel $name is not built"
			echo "$name" >>"$KERNELS_DIR/unfetchable"
			die "kernel $name could not be fetched (see $KERNELS_DIR/apt.log)"
		}
	done
	# (KERNELS_PREPARE_ONLY=1: packages, virtme-ng and kernels only, so that
	# a run in the background installs nothing beside another apt)
	[ "${KERNELS_PREPARE_ONLY:-0}" = 1 ] && return 0
	kvm=$(kernels_kvm_option "${image[${names%% *}]}")
	local jobs=${KERNELS_JOBS:-1} running=0
	for name in $names; do
		if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
		kernels_boot "$name" "${image[$name]}" "$kvm" "$tests" &
		running=$((running + 1))
	done
	wait
	kernels_summary $names | tee "$summary"
	note "summary in $summary ($(($(date +%s) - all_start)) s in all)"
	! grep -qE '^[^ ]+ +[^ ]+ +(FAIL|TIMEOUT|UNFINISHED|NOT-RUN)' "$summary"
}

# kernels_last_lines RUN: why a guest stopped, as it said it (its own log,
# else qemu's)
kernels_last_lines() {
	local log
	for log in "$1/guest.log" "$1/vng.log"; do
		if [ -s "$log" ]; then
			grep -v '^[[:space:]]*$' "$log" | tail -5
			return
		fi
	done
	echo "(no output from the guest)"
}

# One table: a line per kernel and test, then each kernel's socket options.
kernels_summary() {
	local name run
	printf '%-6s %-22s %-8s %5s %4s %4s  %s\n' kernel test result secs ok 'not' 'failed subtests (or why skipped)'
	for name in "$@"; do
		run=$KERNELS_DIR/$name/run
		if [ ! -s "$run/results" ]; then
			if [ -f "$run/timed-out" ]; then
				printf '%-6s %-22s %-8s %5s %4s %4s  %s\n' "$name" '(all)' TIMEOUT "$(cat "$run/seconds")" - - \
					'KERNEL_BOOT_TIMEOUT reached before the first result'
			else
				printf '%-6s %-22s %-8s %5s %4s %4s  %s\n' "$name" '(all)' NOT-RUN "$(cat "$run/seconds" 2>/dev/null || echo -)" - - \
					"$(kernels_last_lines "$run" | tail -1)"
			fi
			continue
		fi
		while read -r t result secs ok bad names; do
			printf '%-6s %-22s %-8s %5s %4s %4s  %s\n' "$name" "$t" "$result" "$secs" "$ok" "$bad" "$names"
		done <"$run/results"
		for t in $(kernel_tests); do
			grep -q "^$t " "$run/results" && continue
			if [ -f "$run/${t//\//_}.tap" ]; then
				# the guest stopped (timeout, killed) during this test:
				# what had failed so far
				printf '%-6s %-22s %-8s %5s %4s %4s  %s\n' "$name" "$t" UNFINISHED - - - \
					"$(sed -n "s/^#   Failed test '\(.*\)'\$/\1/p" "$run/${t//\//_}.tap" | paste -sd '|')"
			else
				printf '%-6s %-22s %-8s\n' "$name" "$t" NOT-RUN
			fi
		done
	done
	echo
	for name in "$@"; do
		run=$KERNELS_DIR/$name/run
		echo "kernel $name: $(sed -n 's/^release //p' "$run/kernel" 2>/dev/null), $(cat "$run/seconds" 2>/dev/null || echo '?') s for boot and tests"
		sed 's/^/  setsockopt on MPTCP, /' "$run/sockopt" 2>/dev/null
		[ -s "$run/server-caps" ] &&
			echo "  server starts: $(wc -l <"$run/server-caps"), with CapEff other than 0: $(grep -vc 'CapEff: 0000000000000000' "$run/server-caps")"
		true
	done
}

# kernels_bench SCRIPT OUT: "make bench BENCH_KERNEL=NAME": the scenario
# bench/SCRIPT inside a guest of kernel NAME (tools/kernels.conf), run there
# by tools/lib/kernels-guest-bench.sh as "make bench" runs it here; its
# results end up in OUT.  Emulation (no KVM here) slows the guest: compare a
# figure with the same lab in a guest of the host's own kernel, not with
# the host.
kernels_bench() {
	local script=$1 out=$2 name=$BENCH_KERNEL vmlinuz kvm run rc=0 start
	kernels_known "$name"
	is_root || die "BENCH_KERNEL needs root (qemu, and the guest's root sets up the lab)"
	mkdir -p "$KERNELS_DIR"
	kernels_deps
	[ "${KERNELS_NO_INSTALL:-0}" = 1 ] || PREFIX=$KERNELS_PREFIX cmd_install
	own_workspace
	vmlinuz=$(kernels_image "$name") || die "kernel $name: no image to boot (see above, or $KERNELS_DIR/apt.log)"
	kvm=$(kernels_kvm_option "$vmlinuz")
	run=$KERNELS_DIR/$name/bench
	rm -rf "$run"
	mkdir -p "$run"
	# What the guest runs, copied: a clone may be under /tmp or /var/tmp,
	# which the guest does not see, and each directory mounted is a boot
	# parameter, of which the kernel takes few ("Too many boot env vars").
	mkdir -p "$run/top/src/test" "$run/top/tools/lib"
	cp -r "$TOP/bench" "$TOP/guide" "$TOP/host" "$run/top/"
	cp -r "$TOP/src/test/mptcp" "$run/top/src/test/"
	cp "$TOP/tools/lib/kernels-guest-bench.sh" "$run/top/tools/lib/"
	# the settings, as the guest's script reads them back (host-setup from
	# the copy)
	(for v in $(compgen -e | grep -E '^BENCH_'); do declare -p "$v"; done) | sed 's/^declare -x/export/' >"$run/settings"
	if [ -n "${BENCH_HOST_SETUP:-}" ] && [ "$BENCH_HOST_SETUP" != none ]; then
		echo "export BENCH_HOST_SETUP=$run/top/host/$(basename "$BENCH_HOST_SETUP")" >>"$run/settings"
		cp "$PG_MPTCP_BPF_OBJECT" "$run/top/host/"
		echo "export PG_MPTCP_BPF_OBJECT=$run/top/host/$(basename "$PG_MPTCP_BPF_OBJECT")" >>"$run/settings"
	fi
	note "kernel $name: booting $(basename "$vmlinuz") ${kvm:-with KVM} for bench/$script"
	start=$(date +%s)
	timeout "${KERNEL_BOOT_TIMEOUT:-5400}" "${VNG[@]}" -r "$vmlinuz" $kvm \
		--memory "${KERNELS_MEMORY:-3G}" --cpus 2 --user root --rwdir "$run" \
		--rodir "$KERNELS_PREFIX" $(kernels_boot_options "$name") \
		--exec "bash $run/top/tools/lib/kernels-guest-bench.sh $run $KERNELS_PREFIX $run/top $TEST_USER $script >$run/guest.log 2>&1" \
		>"$run/vng.log" 2>&1 || rc=$?
	note "kernel $name: $(($(date +%s) - start)) s$([ "$rc" != 124 ] || echo " (KERNEL_BOOT_TIMEOUT reached)")"
	grep '^==>' "$run/guest.log" | tail -40 >&2 || true
	[ -f "$run/finished" ] || { note "kernel $name: the guest did not finish; its last lines:"; kernels_last_lines "$run" | sed 's/^/    /' >&2; }
	mkdir -p "$out"
	[ ! -d "$run/out" ] || cp -r "$run/out/." "$out/"
	cp "$run/kernel" "$out/kernel.txt" 2>/dev/null || true
	cp "$run/host-setup.txt" "$out/host-setup.txt" 2>/dev/null || true
	chown -R --reference="$TOP" "$out"
	note "results in $out"
	if [ "$script" = failover-stall.sh ]; then
		failover_summary "$name" "$out/runs.csv" \
			$((${BENCH_RUNS:-3} * $(echo ${BENCH_STALL_MODES:-mptcp tcp tcp_tuned} | wc -w)))
	fi
	[ -f "$run/finished" ] && [ "$(cat "$run/finished")" = 0 ]
}
