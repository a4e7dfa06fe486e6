#!/bin/bash
# host-setup-switch.sh HOST_SETUP CGROUP DIR PARENT: run as root beside a lab that
# runs in CGROUP as an unprivileged user, so that one benchmark run can
# measure modes with and without what a package sets up (host-setup's
# program on the cgroup) side by side.  The lab asks by writing "attach" or
# "detach" to DIR/host-setup.want; this script acts and writes the state it
# reached to DIR/host-setup.state.  Before each detach it writes what the
# program did (host-setup --status) to DIR/host-setup.status.  It stops
# when DIR goes, when DIR/host-setup.stop exists, or after
# BENCH_SWITCH_LIFETIME seconds (default 6 h), or when process PARENT
# (the caller) is gone.  The caller attaches the program first, writes
# "attach" to DIR/host-setup.state before the lab starts (so the lab knows
# a switch is there), and removes the program after.
#   host-setup-switch.sh HOST_SETUP CGROUP DIR PARENT
hs=$1 cg=$2 dir=$3 parent=$4
state=attach acted=attach
end=$(($(date +%s) + ${BENCH_SWITCH_LIFETIME:-21600}))
publish() { echo "$1" >"$dir/host-setup.state.new" && mv -f "$dir/host-setup.state.new" "$dir/host-setup.state"; }
publish "$state"
while [ -d "$dir" ] && [ ! -e "$dir/host-setup.stop" ] && [ "$(date +%s)" -lt "$end" ] && kill -0 "$parent" 2>/dev/null; do
	want=$(head -c 16 "$dir/host-setup.want" 2>/dev/null || true)
	if [ -n "$want" ] && [ "$want" != "$acted" ]; then
		acted=$want
		case $want in
		attach)
			if "$hs" "$cg" >"$dir/host-setup.attach.txt" 2>&1; then state=attach; else state="failed: $(tail -1 "$dir/host-setup.attach.txt")"; fi
			publish "$state" ;;
		detach)
			"$hs" --status "$cg" >"$dir/host-setup.status" 2>&1 || true
			"$hs" --remove "$cg" >/dev/null 2>&1 || true
			state=detach
			publish "$state" ;;
		*) publish "unknown request: $want" ;;
		esac
	fi
	sleep 0.2
done
