# shellcheck shell=bash
# kernel-compare: Linux 7.2.8 built twice, as released and with both series
# of kernel/ (kernel/mptcp-next/0*.patch, then kernel/rfc/0*.patch), each
# booted under qemu to run the same checks: the kernel's MPTCP selftests
# and bench/kernel-repro's dead-subflow reproducer.
# Part of tools/workspace (sourced by it; see that file for the layout).
#
# The source is Debian's linux_7.2.8.orig.tar.xz (upstream's tree; Debian's
# own patches stay unapplied), fetched by its pool path and checked against
# the pinned sha256.  Both kernels take the options of
# tools/kernel-compare.config (x86_64 tinyconfig + virtme-ng's needs + MPTCP,
# namespaces, qdiscs, netfilter for the selftests; all built in).  The
# patched kernel is built from a copy of the unpatched tree and its build
# directory (make O=o, a subdirectory, so that kbuild's paths are relative):
# the patches are the only newer files, so only what they touch is rebuilt.
#
# Layout ($KC_DIR, never committed):
#   linux_7.2.8.orig.tar.xz   the tarball (sha256 checked)
#   unpatched/ patched/       source trees, each with its build directory o/
#   ccache/                   the compiler cache of both
#   runs/NAME/kselftest/      the MPTCP selftests built against NAME's headers
#   runs/NAME/run/            the last guest's one writable directory
#   runs/NAME/repro/          the last reproducer runs: repro.txt, each run's logs
#                             (stuck.txt where the server stopped), the console
#   runs/NAME/repro.TIME/     the sets before it
#   runs/NAME/selftests/      the last selftest run: results, each test's log and TAP
#   runs/NAME/build.txt       build seconds, kernel release, the patches applied
#   compare.txt               the last comparison (also printed)
#
# Settings: KERNEL_COMPARE_RUNS (reproducer runs per kernel, default 10; 0:
# none), KERNEL_COMPARE_SELFTESTS=1 (also the selftests: long under
# emulation), KERNEL_COMPARE_SELFTESTS_LIST (default: the selftests that
# the series add, then "mptcp_sockopt.sh diag.sh mptcp_connect.sh
# mptcp_join.sh"; an entry SCRIPT:OPTION runs SCRIPT with that option, as
# "mptcp_join.sh:-f" for one of its groups of tests, so that mptcp_join.sh,
# hours under emulation, can run a few groups per boot: each entry's
# results replace only its own earlier ones; "SCRIPT:OPT,ARG" passes both,
# as "mptcp_join.sh:-l,2" for its second link-failure test; SCRIPT@N runs it N times,
# reported as SCRIPT.1 to SCRIPT.N), KERNEL_SELFTEST_TIMEOUT (seconds
# for one selftest file, default 2400), KERNEL_COMPARE_KERNELS ("unpatched
# patched"), KERNEL_COMPARE_BUILD_ONLY=1, KERNEL_COMPARE_PUBLISH=1 (copy the
# results to bench/results/kernel-compare/; KERNEL_COMPARE_PUBLISH_DIR=SUB
# into its subdirectory SUB), KERNEL_COMPARE_TARBALL_DIR=DIR (a
# directory that may already hold the tarball: used if its sha256 matches),
# KERNEL_COMPARE_REPORT_ONLY=1 (print, and publish if asked, the last results),
# KERNEL_COMPARE_JOBS (make -j, default: the cores), KERNEL_COMPARE_BOOT_JOBS=2
# (boot both guests at once: for the selftests only), KERNEL_REPRO_<KNOB>
# (RATE, DURATION, T_CUT, CUT_GAP, BURST_AT, BURST_KB, BULK_MB, SYSCTLS:
# passed to the reproducer in the guest), KERNELS_MEMORY (2G), KERNELS_NICE
# (0), KERNEL_BOOT_TIMEOUT (seconds for one guest; default from the runs
# and selftests asked).

KC_DIR=$TOP/.work/kernel-compare
KC_VERSION=7.2.8
KC_ORIG=linux_$KC_VERSION.orig.tar.xz
KC_ORIG_SHA256=08f058f9de8d487e32a5c9e2855ee7e35bee1a047e77d37ba797d734c0cc07b3
KC_ORIG_POOL=pool/main/l/linux/$KC_ORIG
KC_CONFIG=$TOP/tools/kernel-compare.config
# (iptables, ping: the selftests' tools; the guest runs this machine's)
KC_APT_PACKAGES="build-essential bc bison flex libelf-dev libssl-dev xz-utils rsync ccache iptables iputils-ping iproute2 python3"
# (the short ones first: a timeout stops the long ones with what they did)
KC_SELFTESTS_DEFAULT="mptcp_sockopt.sh diag.sh mptcp_connect.sh mptcp_join.sh"
KC_REPRO_KNOBS="RATE DURATION T_CUT CUT_GAP BURST_AT BURST_KB BULK_MB SYSCTLS"
# the series of kernel/, applied in this order (each applies alone too)
KC_SERIES="mptcp-next rfc"

# kc_patches: the patch files of every series, in order, relative to kernel/
kc_patches() {
	local series p
	for series in $KC_SERIES; do
		for p in "$TOP/kernel/$series"/0*.patch; do
			[ -f "$p" ] && echo "$series/$(basename "$p")"
		done
	done
}

kc_deps() {
	kernels_apt_install "$KC_DIR/apt-install.log" $KC_APT_PACKAGES $KERNELS_APT_PACKAGES
	kernels_venv
}

# The tarball: from KERNEL_COMPARE_TARBALL_DIR if it has the pinned one,
# else from Debian's pool (the index lists only the newest linux, so by
# path), checked by the pinned sha256 either way.
kc_fetch() {
	local file=$KC_DIR/$KC_ORIG given=${KERNEL_COMPARE_TARBALL_DIR:-}
	kc_sha_ok "$file" && return 0
	rm -f "$file"
	if [ -n "$given" ] && kc_sha_ok "$given/$KC_ORIG"; then
		note "$KC_ORIG from $given (sha256 checked)"
		cp "$given/$KC_ORIG" "$file.part" && mv "$file.part" "$file"
		return 0
	fi
	note "fetching $DEB_MIRROR_URL/$KC_ORIG_POOL (160 MB, sha256 checked)"
	/usr/lib/apt/apt-helper download-file "$DEB_MIRROR_URL/$KC_ORIG_POOL" "$file" "SHA256:$KC_ORIG_SHA256" \
		>"$KC_DIR/fetch.log" 2>&1 || { cat "$KC_DIR/fetch.log" >&2; rm -f "$file"; die "could not fetch $KC_ORIG_POOL"; }
	kc_sha_ok "$file" || { rm -f "$file"; die "$KC_ORIG: sha256 differs from the pin"; }
}
kc_sha_ok() { [ -f "$1" ] && [ "$(sha256sum <"$1" | cut -d' ' -f1)" = "$KC_ORIG_SHA256" ]; }

kc_make() {
	local src=$1
	shift
	# ccache: a second unpatched build from scratch (a new .work) costs
	# minutes, not the full build
	CCACHE_DIR=$KC_DIR/ccache CCACHE_MAXSIZE=2G \
		make -C "$src" O=o ARCH=x86_64 CC="ccache gcc" -j"${KERNEL_COMPARE_JOBS:-$(nproc)}" "$@"
}

# kc_config SRC: SRC/o/.config from tinyconfig and tools/kernel-compare.config
# (again when the fragment changed); says which options did not survive
# olddefconfig (a dependency missing from the fragment).
kc_config() {
	local src=$1 sum k v want have
	sum=$(sha256sum <"$KC_CONFIG" | cut -d' ' -f1)
	[ -f "$src/o/.config" ] && [ "$(cat "$src/o/.kc-config" 2>/dev/null)" = "$sum" ] && return 0
	mkdir -p "$src/o"
	{
		kc_make "$src" tinyconfig &&
			(cd "$src" && scripts/kconfig/merge_config.sh -m -O o o/.config "$KC_CONFIG") &&
			kc_make "$src" olddefconfig
	} >"$src/o/config.log" 2>&1 || { tail -20 "$src/o/config.log" >&2; die "kernel configuration failed (see $src/o/config.log)"; }
	while IFS== read -r k v; do
		want="$k=$v"
		[ "$v" != n ] || want="# $k is not set"
		have=$(grep -E "^$k=|^# $k is not set" "$src/o/.config" | head -1 || :)
		[ "$have" = "$want" ] || note "config: $want asked, olddefconfig made it: ${have:-absent}"
	done < <(grep -E '^CONFIG_[A-Z0-9_]+=' "$KC_CONFIG")
	echo "$sum" >"$src/o/.kc-config"
}

# kc_build NAME: bzImage, uapi headers and the MPTCP selftests of
# $KC_DIR/NAME; the build's seconds in runs/NAME/build.txt
kc_build() {
	local name=$1 src=$KC_DIR/$1 out=$KC_DIR/runs/$1 start secs files p log=$KC_DIR/runs/$1/build.log
	mkdir -p "$out"
	kc_config "$src"
	note "kernel $name: building ($src/o; log in $log)"
	start=$(date +%s)
	kc_make "$src" bzImage >"$log" 2>&1 || { tail -30 "$log" >&2; die "kernel $name: build failed (see $log)"; }
	secs=$(($(date +%s) - start)) files=$(grep -c '^  CC ' "$log" || :)
	kc_make "$src" headers_install >>"$log" 2>&1 || { tail -30 "$log" >&2; die "kernel $name: headers_install failed"; }
	# the selftests as the kernel's CI builds them, installed with their
	# shared shell library (tools/testing/selftests/net/lib.sh)
	rm -rf "$out/kselftest"
	make -C "$src/tools/testing/selftests" TARGETS=net/mptcp O="$src/o/kselftest" \
		KHDR_INCLUDES="-isystem $src/o/usr/include" INSTALL_PATH="$out/kselftest" \
		-j"${KERNEL_COMPARE_JOBS:-$(nproc)}" install >>"$log" 2>&1 ||
		{ tail -30 "$log" >&2; die "kernel $name: the MPTCP selftests did not build (see $log)"; }
	# kernel/tests/*.c, the series' own checks, against the same headers
	rm -rf "$out/ktests"
	mkdir -p "$out/ktests"
	for p in "$TOP"/kernel/tests/*.c; do
		[ -f "$p" ] || continue
		gcc -Wall -Wextra -O2 -isystem "$src/o/usr/include" -o "$out/ktests/$(basename "$p" .c)" "$p" >>"$log" 2>&1 ||
			die "kernel $name: kernel/tests/$(basename "$p") did not build (see $log)"
	done
	# (and the scripts, which set up namespaces of their own)
	cp "$TOP"/kernel/tests/*.sh "$out/ktests/" 2>/dev/null || true
	# (each build's time and files compiled, a line each: a run that
	# compiled nothing does not hide what the real build took)
	echo "$(date -u +%FT%TZ) $secs s, $files files compiled" >>"$out/builds"
	{
		echo "kernel $name: $(cat "$src/o/include/config/kernel.release"), kernel/ patches: $(sed 's,/\([0-9]*\)-[^ ]*,/\1,g' "$src/.kc-patches" 2>/dev/null || echo none)"
		echo "  bzImage builds: $(awk '$4 > 0' "$out/builds" | tail -3 | paste -sd';' | sed 's/;/; /g')"
	} >"$out/build.txt"
	note "kernel $name: bzImage in $secs s ($files files compiled)"
}

# The patched tree: a copy of the unpatched one, build directory included,
# then every series of kernel/ in order.  Made again when the patches, the
# options or the unpatched build changed.
kc_patched_tree() {
	local sig p patches=() dst=$KC_DIR/patched
	for p in $(kc_patches); do patches+=("$TOP/kernel/$p"); done
	[ ${#patches[@]} -gt 0 ] || die "no patch in kernel/{${KC_SERIES// /,}}/"
	sig=$( (cd "$TOP/kernel" && sha256sum $(kc_patches); cat "$KC_DIR/unpatched/o/.kc-config"; stat -c %Y "$KC_DIR/unpatched/o/arch/x86/boot/bzImage") | sha256sum | cut -d' ' -f1)
	[ "$(cat "$dst/.kc-sig" 2>/dev/null)" = "$sig" ] && return 0
	note "patched tree: a copy of the unpatched one, then ${#patches[@]} patches"
	# (copied to its final path at once: objtool, below, records it)
	rm -rf "$dst"
	cp -a "$KC_DIR/unpatched" "$dst"
	for p in "${patches[@]}"; do
		patch -d "$dst" -p1 -F0 -s --no-backup-if-mismatch <"$p" ||
			die "kernel/${p#"$TOP/kernel/"} does not apply to $KC_VERSION"
	done
	# objtool is built with absolute paths (tools/, not kbuild), so the copy
	# links it again, and every object lists objtool as a prerequisite:
	# link it now and give it and its objects the old binary's time, or
	# the whole kernel is compiled again
	kc_make "$dst" tools/objtool >"$dst/o/objtool.log" 2>&1 ||
		{ tail -20 "$dst/o/objtool.log" >&2; die "objtool did not build in the patched tree"; }
	find "$dst/o/tools/objtool" -exec touch -h -r "$KC_DIR/unpatched/o/tools/objtool/objtool" {} +
	kc_patches | paste -sd' ' >"$dst/.kc-patches"
	echo "$sig" >"$dst/.kc-sig"
}

kc_unpack() {
	[ -f "$KC_DIR/unpatched/.kc-unpacked" ] && return 0
	note "unpacking $KC_ORIG"
	rm -rf "$KC_DIR/unpatched" "$KC_DIR/unpack"
	mkdir -p "$KC_DIR/unpack"
	tar -C "$KC_DIR/unpack" -xf "$KC_DIR/$KC_ORIG" || die "could not unpack $KC_ORIG"
	mv "$KC_DIR/unpack/linux-$KC_VERSION" "$KC_DIR/unpatched"
	rmdir "$KC_DIR/unpack"
	touch "$KC_DIR/unpatched/.kc-unpacked"
}

# kc_boot NAME: one guest of kernel NAME runs tools/lib/kernel-compare-guest.sh
# on copies of what it needs (a clone under /tmp is invisible to it; RUN is
# the one directory it writes).
kc_boot() {
	local name=$1 run=$KC_DIR/runs/$1/run src=$KC_DIR/$1 start rc=0 v kvm
	rm -rf "$run"
	mkdir -p "$run/bin"
	cp "$TOP/bench/kernel-repro/mptcp-dead-subflow-stall.sh" "$TOP/bench/kernel-repro/pingpong.py" \
		"$TOP/tools/lib/kernel-compare-guest.sh" "$run/bin/"
	cp -r "$KC_DIR/runs/$name/kselftest" "$KC_DIR/runs/$name/ktests" "$run/"
	# the series' new selftests run on the unpatched kernel too (with its
	# own programs): they must fail there
	for t in $(kc_new_selftests); do
		cp -n "$KC_DIR/runs/patched/kselftest/net/mptcp/$t" "$run/kselftest/net/mptcp/"
	done
	{
		echo "KC_RUNS=${KERNEL_COMPARE_RUNS:-10}"
		if [ "${KERNEL_COMPARE_SELFTESTS:-0}" = 1 ]; then
			echo "KC_SELFTESTS='$(kc_selftests_list)'"
		else
			echo "KC_SELFTESTS="
		fi
		echo "KC_SELFTEST_TIMEOUT=${KERNEL_SELFTEST_TIMEOUT:-2400}"
		for v in $KC_REPRO_KNOBS; do
			eval "[ -z \"\${KERNEL_REPRO_$v+set}\" ]" || printf 'export %s=%q\n' "$v" "$(eval "echo \"\$KERNEL_REPRO_$v\"")"
		done
	} >"$run/settings"
	kvm=$(kernels_kvm_option "$src/o/arch/x86/boot/bzImage" --append root=/dev/root)
	echo "${kvm:-kvm}" >"$run/kvm"
	# (root=/dev/root: without an initramfs, which a kernel without modules
	# does not get, the kernel mounts virtme-ng's 9p root itself, and 7.2
	# wants the share's tag as "root=")
	note "kernel $name: booting ${kvm:-with KVM} ($(sed -n 's/^KC_//p' "$run/settings" | paste -sd' '))"
	start=$(date +%s)
	# (the guest's bound, unless KERNEL_BOOT_TIMEOUT: what each run and
	# each selftest may take, and 10 minutes)
	local bound=$((600 + ${KERNEL_COMPARE_RUNS:-10} * (${KERNEL_REPRO_DURATION:-80} + 180)))
	[ "${KERNEL_COMPARE_SELFTESTS:-0}" != 1 ] ||
		bound=$((bound + ($(kc_selftests_list | wc -w) + 1) * ${KERNEL_SELFTEST_TIMEOUT:-2400}))
	timeout "${KERNEL_BOOT_TIMEOUT:-$bound}" nice -n "${KERNELS_NICE:-0}" "${VNG[@]}" \
		-r "$src/o/arch/x86/boot/bzImage" $kvm --memory "${KERNELS_MEMORY:-2G}" --cpus 2 --user root \
		--append root=/dev/root \
		--verbose --rwdir "$run" --exec "bash $run/bin/kernel-compare-guest.sh $run >$run/guest.log 2>&1" \
		>"$run/vng.log" 2>&1 || rc=$?
	echo "$(($(date +%s) - start))" >"$run/seconds"
	[ "$rc" != 124 ] || touch "$run/timed-out"
	if [ ! -f "$run/finished" ]; then
		note "kernel $name: the guest did not finish$([ ! -f "$run/timed-out" ] || echo " within KERNEL_BOOT_TIMEOUT"); its last lines:"
		kernels_last_lines "$run" | sed 's/^/    /' >&2
	fi
	note "kernel $name: $(cat "$run/seconds") s in the guest"
	# kept apart, so that a selftest run leaves the reproducer's last
	# results in place, and the other way round
	local out=$KC_DIR/runs/$name
	if [ "${KERNEL_COMPARE_RUNS:-10}" -gt 0 ]; then
		# (the sets before stay, by their time: a run that never finished
		# is read after a rerun, with the guest's console)
		[ ! -d "$out/repro" ] || mv "$out/repro" "$out/repro.$(date -u -r "$out/repro" +%Y%m%dT%H%M%SZ)"
		mkdir -p "$out/repro"
		cp -r "$run/repro/." "$out/repro/" 2>/dev/null
		cp "$run/repro.txt" "$run/kernel" "$run/vng.log" "$run/guest.log" "$out/repro/" 2>/dev/null
	fi
	# (the selftests run now replace their own earlier results only)
	if [ "${KERNEL_COMPARE_SELFTESTS:-0}" = 1 ] && [ -f "$run/selftests/results" ]; then
		mkdir -p "$out/selftests"
		touch "$out/selftests/results"
		local t line
		while read -r t line; do
			{ grep -v "^$t " "$out/selftests/results" || :; } >"$out/selftests/results.new"
			echo "$t $line" >>"$out/selftests/results.new"
			mv "$out/selftests/results.new" "$out/selftests/results"
		done <"$run/selftests/results"
		while read -r t line; do
			mkdir -p "$(dirname "$out/selftests/$t")"
			cp "$run/selftests/$t".* "$(dirname "$out/selftests/$t")/"
		done <"$run/selftests/results"
		cp "$run/kernel" "$out/selftests/" 2>/dev/null
	fi
	true
}

# The selftests the series adds: scripts in the patched tree's install, not
# in the unpatched one's.
kc_new_selftests() {
	local t
	[ -d "$KC_DIR/runs/patched/kselftest/net/mptcp" ] || return 0
	for t in $(cd "$KC_DIR/runs/patched/kselftest/net/mptcp" && ls -- *.sh); do
		[ -e "$KC_DIR/runs/unpatched/kselftest/net/mptcp/$t" ] || echo "$t"
	done
}
kc_selftests_list() {
	if [ -n "${KERNEL_COMPARE_SELFTESTS_LIST:-}" ]; then
		echo "$KERNEL_COMPARE_SELFTESTS_LIST"
	else
		echo $(kc_new_selftests) $KC_SELFTESTS_DEFAULT
	fi
}

# kc_repro_counts NAME: "over total" of NAME's reproducer runs (a run whose
# longest wait after the cut exceeds 1 s, or that hung or gave no result,
# is over)
kc_repro_counts() {
	local f=$KC_DIR/runs/$1/repro/repro.txt
	[ -s "$f" ] || { echo "0 0"; return; }
	awk '{ n++; if ($3 == "over") o++ } END { print o + 0, n + 0 }' "$f"
}

# The comparison: selftests side by side (a subtest that passes unpatched
# and fails patched is a regression), then the reproducer's runs.
kc_report() {
	local names=$1 name t u p runs over total line r=$KC_DIR/runs
	echo "kernel-compare: Linux $KC_VERSION, $(date -u +%Y-%m-%d), qemu $(qemu-system-x86_64 --version | head -1 | awk '{ print $4 }')$(grep -q disable-kvm "$r"/*/run/kvm 2>/dev/null && echo ' (emulation, no KVM)')"
	for name in $names; do
		cat "$r/$name/build.txt" 2>/dev/null
		[ -s "$r/$name/run/kernel" ] && sed -n 's/^version /  guest: /p' "$r/$name/run/kernel"
	done
	if ls "$r"/*/selftests/results >/dev/null 2>&1; then
		echo
		printf '%-36s %-36s %s\n' selftest unpatched patched
		for t in $(cat "$r"/*/selftests/results 2>/dev/null | awk '{ print $1 }' | awk '!s[$0]++'); do
			u=$(kc_selftest_cell unpatched "$t") p=$(kc_selftest_cell patched "$t")
			printf '%-36s %-36s %s\n' "$t" "$u" "$p"
		done
		for t in $(cat "$r"/*/selftests/results 2>/dev/null | awk '{ print $1 }' | awk '!s[$0]++'); do
			kc_subtest_diff "$t"
		done
	fi
	echo
	line=
	for name in unpatched patched; do
		read -r over total < <(kc_repro_counts "$name")
		runs=$total
		[ "${KERNEL_COMPARE_RUNS:-10}" = 0 ] || [ "$total" = "${KERNEL_COMPARE_RUNS:-10}" ] ||
			runs="$total (of ${KERNEL_COMPARE_RUNS:-10} asked)"
		[ -f "$r/$name/repro/repro.txt" ] && sed "s/^/  $name run /" "$r/$name/repro/repro.txt"
		line="$line${line:+; }$name $over of $runs runs over 1 s"
	done
	echo "kernel-repro: $line"
}

# "PASS 12/0 340s" from a guest's selftests/results: "TEST RC SECONDS OK NOTOK SKIP"
kc_selftest_cell() {
	local f=$KC_DIR/runs/$1/selftests/results
	[ -f "$f" ] || { echo -; return; }
	awk -v t="$2" '$1 == t {
		r = ($2 == 0 ? "PASS" : $2 == 4 ? "SKIP" : $2 == 124 ? "TIMEOUT" : "FAIL")
		printf "%-7s %3d ok %2d fail %2d skip %5d s", r, $4, $5, $6, $3; f = 1 }
		END { if (!f) print "-" }' "$f"
}

# subtests of TEST that fail on one kernel and not on the other
kc_subtest_diff() {
	local t=$1 u=$KC_DIR/runs/unpatched/selftests/$1.tap p=$KC_DIR/runs/patched/selftests/$1.tap
	[ -f "$u" ] && [ -f "$p" ] || return 0
	local only_p only_u both
	only_p=$(comm -13 <(kc_failed "$u") <(kc_failed "$p") | paste -sd'|')
	only_u=$(comm -23 <(kc_failed "$u") <(kc_failed "$p") | paste -sd'|')
	both=$(comm -12 <(kc_failed "$u") <(kc_failed "$p") | paste -sd'|')
	[ -z "$only_p" ] || echo "  $t: fails only patched: $only_p"
	[ -z "$only_u" ] || echo "  $t: fails only unpatched: $only_u"
	[ -z "$both" ] || echo "  $t: fails on both: $both"
}
# (the names without their "# time=...ms", which differ from run to run)
kc_failed() {
	sed -n 's/^not ok [0-9]* - \(.*\)$/\1/p' "$1" | grep -v '# SKIP' |
		sed 's/ *# *\(timeout \)\{0,1\}time=[0-9]*ms$//' | sort -u
}

cmd_kernel_compare() {
	local names=${KERNEL_COMPARE_KERNELS:-unpatched patched} name all_start
	all_start=$(date +%s)
	# (KERNEL_COMPARE_REPORT_ONLY=1: the last results again, and published
	# if asked; nothing built or booted)
	if [ "${KERNEL_COMPARE_REPORT_ONLY:-0}" = 1 ]; then
		mkdir -p "$KC_DIR"
		KERNEL_COMPARE_RUNS=0 kc_report "$names" | tee "$KC_DIR/compare.txt"
		kc_publish "$names"
		return 0
	fi
	is_root || die "kernel-compare needs root (qemu; the guest's root sets up namespaces)"
	mkdir -p "$KC_DIR"
	kc_deps
	kc_fetch
	kc_unpack
	kc_build unpatched
	case " $names " in *" patched "*)
		kc_patched_tree
		kc_build patched ;;
	esac
	[ "${KERNEL_COMPARE_BUILD_ONLY:-0}" = 1 ] && return 0
	# (KERNEL_COMPARE_BOOT_JOBS=2: both guests at once, for the selftests;
	# the reproducer's timings want one guest at a time)
	if [ "${KERNEL_COMPARE_BOOT_JOBS:-1}" -gt 1 ]; then
		for name in $names; do kc_boot "$name" & done
		wait
	else
		for name in $names; do kc_boot "$name"; done
	fi
	kc_report "$names" | tee "$KC_DIR/compare.txt"
	note "$KC_DIR/compare.txt; the guests' logs in $KC_DIR/runs/*/ ($(($(date +%s) - all_start)) s in all)"
	kc_publish "$names"
}

# KERNEL_COMPARE_PUBLISH=1: the report and the per-run lines (text, a few
# KB) in bench/results/kernel-compare/, or in its subdirectory
# KERNEL_COMPARE_PUBLISH_DIR (so that a new series' runs do not replace
# the files an older report names)
kc_publish() {
	local names=$1 name out=$TOP/bench/results/kernel-compare${KERNEL_COMPARE_PUBLISH_DIR:+/$KERNEL_COMPARE_PUBLISH_DIR}
	[ "${KERNEL_COMPARE_PUBLISH:-0}" = 1 ] || return 0
	mkdir -p "$out"
	cp "$KC_DIR/compare.txt" "$out/compare.txt"
	for name in $names; do
		[ ! -f "$KC_DIR/runs/$name/repro/repro.txt" ] || cp "$KC_DIR/runs/$name/repro/repro.txt" "$out/repro-$name.txt"
		[ ! -f "$KC_DIR/runs/$name/selftests/results" ] || cp "$KC_DIR/runs/$name/selftests/results" "$out/selftests-$name.txt"
	done
	chown -R --reference="$TOP" "$out"
	note "published to $out"
}
