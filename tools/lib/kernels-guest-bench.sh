#!/bin/bash
# The guest side of "make bench BENCH_KERNEL=NAME" (tools/lib/kernels.sh,
# kernels_bench): runs as root inside a virtme-ng guest booted with one of
# Debian's kernels, and runs one bench/ scenario there as "make bench" does
# on the host (tools/lib/lab.sh, run_in_lab): the test user in a private
# user + network namespace, the server without capabilities.  Not sourced
# by tools/workspace.
#
#   kernels-guest-bench.sh RUN PREFIX TOP TEST_USER SCRIPT
#
# RUN (the one directory shared with the host) holds "settings" (the
# BENCH_* variables, as `declare -p` prints them) and gets guest.log, kernel,
# host-setup.txt and out/ (the scenario's results).  The scenario works in
# the guest's private /tmp: on RUN, a 9p share, every file belongs to the
# host's root.
set -uo pipefail
run=$1 prefix=$2 top=$3 user=$4 script=$5
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
cd "$run" || exit 1
# shellcheck source=/dev/null
. "$run/settings"
echo "release $(uname -r)" >kernel
# (a kernel without modules, kernel-compare's, has them built in)
[ ! -e /proc/modules ] ||
	for m in mptcp_diag inet_diag tcp_diag veth bridge sch_tbf sch_htb sch_prio sch_netem cls_u32 tcp_bbr nf_tables nft_numgen; do
		modprobe -q "$m" 2>/dev/null || echo "modprobe $m failed" >>kernel
	done

work=/tmp/bench-guest
rm -rf "$work"
mkdir -p "$work/lab" "$work/out" "$work/home"
chown -R "$user:" "$work"
uid=$(id -u "$user") gid=$(id -g "$user")

# What a package sets up beside PostgreSQL (BENCH_HOST_SETUP), on a cgroup
# v2 directory the whole lab then runs in, as on the host.
cg=
if [ -n "${BENCH_HOST_SETUP:-}" ] && [ "$BENCH_HOST_SETUP" != none ]; then
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -z "$cg2" ]; then
		cg2=/sys/fs/cgroup
		mount -t cgroup2 none "$cg2" || { echo "FAIL: no cgroup v2 hierarchy in the guest"; exit 1; }
	fi
	cg=$cg2/pg-mptcp-lab
	mkdir -p "$cg"
	"$BENCH_HOST_SETUP" "$cg" >"$run/host-setup.txt" 2>&1 ||
		{ echo "FAIL: $BENCH_HOST_SETUP $cg: $(tail -1 "$run/host-setup.txt")"; exit 1; }
	export BENCH_HOST_SETUP_CGROUP=$cg
fi

libdir=$("$prefix/bin/pg_config" --libdir)
settings=()
while IFS= read -r v; do settings+=("$v"); done < <(env | grep -E '^BENCH_')
rc=0
# (modes without it beside the modes with it: bench/host-setup-switch.sh)
switch=
if [ -n "$cg" ]; then
	echo attach >"$work/lab/host-setup.state"
	bash "$top/bench/host-setup-switch.sh" "$BENCH_HOST_SETUP" "$cg" "$work/lab" $$ &
	switch=$!
fi
(
	[ -z "$cg" ] || echo $BASHPID >"$cg/cgroup.procs"
	exec setpriv --reuid="$uid" --regid="$gid" --init-groups --inh-caps=-all -- \
		env -i PATH="$PATH" HOME="$work/home" LANG=C.UTF-8 LD_LIBRARY_PATH="$libdir" "${settings[@]}" \
		unshare -Un --map-user="$uid" --map-group="$gid" --keep-caps \
		bash "$top/bench/$script" "$prefix/bin" "$work/lab" "$top/src/test/mptcp/lab.sh" "$work/out"
) || rc=$?
if [ -n "$switch" ]; then
	touch "$work/lab/host-setup.stop"
	wait "$switch"
fi
if [ -n "$cg" ]; then
	"$BENCH_HOST_SETUP" --status "$cg" >>"$run/host-setup.txt" 2>&1
	"$BENCH_HOST_SETUP" --remove "$cg" >/dev/null 2>&1
	rmdir "$cg" 2>/dev/null
fi
cp -r "$work/out" "$run/out"
echo "$rc" >"$run/finished"
