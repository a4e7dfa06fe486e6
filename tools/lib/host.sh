# shellcheck shell=bash
# host-tools: what pg-mptcp-failover ships beside PostgreSQL that needs a
# build: the sock_ops program of host/ (clang -target bpf, libbpf's
# headers), which host/host-setup loads with bpftool.
# Part of tools/workspace (sourced by it; see that file for the layout).

HOST_APT_PACKAGES="clang llvm libbpf-dev bpftool linux-libc-dev"
HOST_BPF_SOURCE=$TOP/host/pg-mptcp-subflow.bpf.c
HOST_BPF_OBJECT=$TOP/.work/host/pg-mptcp-subflow.bpf.o

# host_bpf_compile SOURCE OBJECT: the one compile command, shared with the
# package build (tools/lib/deb.sh)
host_bpf_compile() {
	local multiarch
	multiarch=$(clang -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
	# (linux/types.h includes asm/types.h, which Debian keeps per
	# architecture)
	clang -O2 -g -Wall -Werror -target bpf -I"/usr/include/$multiarch" -c "$1" -o "$2"
}

cmd_host_tools() {
	local absent= p status
	for p in $HOST_APT_PACKAGES; do
		status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) || status=
		[ "${status:0:2}" = ii ] || absent="$absent $p"
	done
	if [ -n "$absent" ]; then
		is_root || die "host-tools needs$absent (root installs them)"
		note "installing:$absent"
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $absent; } \
			>"$TOP/.work/host-apt.log" 2>&1 || { tail -20 "$TOP/.work/host-apt.log" >&2; die "apt-get install failed (output above)"; }
	fi
	mkdir -p "$(dirname "$HOST_BPF_OBJECT")"
	if [ ! -f "$HOST_BPF_OBJECT" ] || [ "$HOST_BPF_SOURCE" -nt "$HOST_BPF_OBJECT" ]; then
		host_bpf_compile "$HOST_BPF_SOURCE" "$HOST_BPF_OBJECT" || die "could not compile $HOST_BPF_SOURCE"
		note "built $HOST_BPF_OBJECT"
	fi
	export PG_MPTCP_BPF_OBJECT=$HOST_BPF_OBJECT
}

# check-host-setup: host/tests/host-setup.sh against the program built
# here, on this machine's kernel (root; make check-all runs it), and
# mend-paths' unit test (host/tests/test_mend_paths.py, no root).  Prints
# one summary line last.
cmd_check_host_setup() {
	local line rc=0 mend mend_rc=0
	if [ -n "${HOST_SETUP_KERNEL:-}" ]; then
		host_setup_in_guest "$HOST_SETUP_KERNEL"
		return
	fi
	if [ -n "${HOST_SETUP_LADDER:-}" ]; then
		is_root || die "HOST_SETUP_LADDER needs root (a BPF program on a cgroup)"
		cmd_host_tools
		bash "$TOP/bench/outage-ladder.sh" "$TOP/host/host-setup" "$TOP/src/test/mptcp/lab.sh" \
			"${LADDER_OUT:-$TOP/.work/host/ladder}" "$HOST_SETUP_LADDER"
		return
	fi
	mend=$(python3 "$TOP/host/tests/test_mend_paths.py" "$TOP/host/mend-paths" 2>&1) || mend_rc=1
	printf '%s\n' "$mend" >&2
	line=$(host_setup_program) || rc=1
	printf '%s\n' "$line" | sed '$d'
	echo "$(printf '%s\n' "$line" | tail -1); $(printf '%s\n' "$mend" | tail -1)"
	[ $rc = 0 ] && [ $mend_rc = 0 ]
}

host_setup_program() {
	local out=$TOP/.work/host/test start=$SECONDS rc=0
	if ! is_root; then
		echo "host-setup's program: skipped, it needs root (a BPF program on a cgroup)"
		return 0
	fi
	if [ ! -e /sys/kernel/btf/vmlinux ]; then
		echo "host-setup's program: skipped, this kernel has no BTF (/sys/kernel/btf/vmlinux), which the program needs"
		return 0
	fi
	cmd_host_tools
	rm -rf "$out"
	bash "$TOP/host/tests/host-setup.sh" "$TOP/host/host-setup" "$TOP/src/test/mptcp/lab.sh" "$out" >"$TOP/.work/host/test.log" 2>&1 || rc=$?
	host_setup_result "$(uname -r)" "$TOP/.work/host/test.log" "$rc" "$((SECONDS - start)) s"
}

# host_setup_result KERNEL LOG RC TIME: the test's log on stderr, then its
# one summary line; fails if the test did
host_setup_result() {
	local kernel=$1 log=$2 rc=$3 took=$4
	cat "$log" >&2 2>/dev/null || true
	if grep -q '^host-setup test: skipped' "$log"; then
		echo "host-setup's program on $kernel: $(sed -n 's/^host-setup test: //p' "$log")"
	elif [ "$rc" = 0 ] && ! grep -q '^FAIL' "$log"; then
		echo "host-setup's program on $kernel: PASS, $(grep -c '^ok' "$log") checks ($took)"
	else
		echo "host-setup's program on $kernel: FAILED: $(grep '^FAIL' "$log" | head -3 | paste -sd' ') ($took)"
		return 1
	fi
}

# HOST_SETUP_KERNEL=NAME make check-host-setup: the same test in a guest of
# kernel NAME (tools/kernels.conf, as check-kernels boots them), with the
# files it needs copied where the guest sees them (it does not see /tmp or
# /var/tmp).  Emulated (no KVM here): its waits are the emulator's as much
# as the kernel's, its checks are the kernel's.
host_setup_in_guest() {
	local name=$1 run vmlinuz kvm start=$SECONDS
	kernels_known "$name"
	is_root || die "HOST_SETUP_KERNEL needs root (qemu, and the guest's root attaches the program)"
	kernels_deps
	cmd_host_tools
	vmlinuz=$(kernels_image "$name") || die "kernel $name: no image to boot (see above, or $KERNELS_DIR/apt.log)"
	kvm=$(kernels_kvm_option "$vmlinuz")
	run=$KERNELS_DIR/$name/host-setup-test
	rm -rf "$run"
	mkdir -p "$run/top/host" "$run/top/src/test/mptcp" "$run/top/bench"
	cp -r "$TOP/host/tests" "$run/top/host/"
	cp "$TOP/bench/outage-ladder.sh" "$run/top/bench/"
	cp "$TOP/host/host-setup" "$run/top/host/"
	cp "$TOP/src/test/mptcp/lab.sh" "$run/top/src/test/mptcp/"
	cp "$HOST_BPF_OBJECT" "$run/top/host/"
	local guest_cmd="bash $run/top/host/tests/host-setup.sh $run/top/host/host-setup $run/top/src/test/mptcp/lab.sh $run/out"
	# (HOST_SETUP_LADDER=ROUNDS: bench/outage-ladder.sh instead of the test)
	[ -z "${HOST_SETUP_LADDER:-}" ] ||
		guest_cmd="LADDER_MODES='${LADDER_MODES:-}' LADDER_FAULTS='${LADDER_FAULTS:-}' bash $run/top/bench/outage-ladder.sh $run/top/host/host-setup $run/top/src/test/mptcp/lab.sh $run/out $HOST_SETUP_LADDER"
	note "kernel $name: booting $(basename "$vmlinuz") ${kvm:-with KVM} for host/tests/host-setup.sh"
	timeout "${KERNEL_BOOT_TIMEOUT:-1800}" "${VNG[@]}" -r "$vmlinuz" $kvm \
		--memory "${KERNELS_MEMORY:-3G}" --cpus 2 --user root --rwdir "$run" $(kernels_boot_options "$name") \
		--exec "HOST_SETUP_TEST_TIMEOUT=900 PG_MPTCP_BPF_OBJECT=$run/top/host/$(basename "$HOST_BPF_OBJECT") $guest_cmd >$run/test.log 2>&1; echo \$? >$run/rc" \
		>"$run/vng.log" 2>&1 || true
	if [ ! -f "$run/rc" ]; then
		cat "$run/test.log" >&2 2>/dev/null || true
		echo "host-setup's program on $name: FAILED: the guest did not finish ($run/vng.log)"
		return 1
	fi
	if [ -n "${HOST_SETUP_LADDER:-}" ]; then
		cat "$run/test.log"
		[ -z "${LADDER_OUT:-}" ] || { mkdir -p "$LADDER_OUT" && cp -r "$run/out/." "$LADDER_OUT/"; }
		return
	fi
	host_setup_result "$name" "$run/test.log" "$(cat "$run/rc")" "$((SECONDS - start)) s, emulated"
}
