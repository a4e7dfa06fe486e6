#!/bin/bash
# The guest side of "make kernel-compare" (tools/lib/kernel-compare.sh): runs
# as root inside a virtme-ng guest of a kernel built from Linux's source
# (everything built in), on this machine's root file system (read-only, /tmp
# private).  Not sourced by tools/workspace.
#
#   kernel-compare-guest.sh RUN
#
# RUN, the one directory shared with the host, holds settings (KC_RUNS,
# KC_SELFTESTS, KC_SELFTEST_TIMEOUT, the reproducer's knobs), bin/ (the
# reproducer and this script) and kselftest/ (the kernel's MPTCP selftests,
# built against its headers).  Writes:
#   kernel                    uname and the MPTCP sysctls
#   selftests/results         "TEST RC SECONDS OK NOT-OK SKIP", a line a test
#   selftests/TEST.log .tap   its output; the TAP lines it printed
#   repro/N.out .err, repro/N/  a reproducer run: output and logs
#   repro.txt                 "N LONGEST over|under RESULT...", a line a run
#   finished                  (at the end)
set -uo pipefail
run=$1
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
cd "$run" || exit 1
KC_RUNS=0 KC_SELFTESTS= KC_SELFTEST_TIMEOUT=2400
# shellcheck source=/dev/null
. "$run/settings"
{
	echo "release $(uname -r)"
	echo "version $(uname -v)"
	echo "mptcp.enabled $(cat /proc/sys/net/mptcp/enabled 2>/dev/null || echo absent)"
} >kernel

# selftests/results: "TEST RC SECONDS OK NOT-OK SKIP"
kc_result() {
	local t=$1 rc=$2 start=$3
	echo "$t $rc $(($(date +%s) - start)) $(grep -E '^ok [0-9]+ ' "selftests/$t.tap" | grep -vc '# SKIP' | tr -d '\n') \
$(grep -E '^not ok [0-9]+ ' "selftests/$t.tap" | grep -vc '# SKIP' | tr -d '\n') \
$(grep -c '# SKIP' "selftests/$t.tap" | tr -d '\n')" >>selftests/results
}

if [ -n "$KC_SELFTESTS" ]; then
	mkdir -p selftests
	# ("mptcp_join.sh:-f": the script with one option, e.g. one of
	# mptcp_join.sh's groups of tests, reported as mptcp_join.sh-f;
	# "silent_path.sh@7": 7 runs in this boot, reported as silent_path.sh.1 to .7)
	for entry in $(for e in $KC_SELFTESTS; do
		case $e in
		*@[0-9]*) for i in $(seq "${e##*@}"); do echo "${e%@*}@$i"; done ;;
		*) echo "$e" ;;
		esac
	done); do
		rep= script=${entry%%:*} args=
		case $entry in *@*) rep=.${entry##*@} entry=${entry%@*} script=${entry%%:*} ;; esac
		[ "$script" = "$entry" ] || args=${entry#*:}
		# ("mptcp_join.sh:-l,2": options and test ids, comma-separated)
		t=$script$args$rep start=$(date +%s)
		args=${args//,/ }
		# (their own directory: they source mptcp_lib.sh and ../lib.sh)
		(cd kselftest/net/mptcp && timeout --kill-after=30 "$KC_SELFTEST_TIMEOUT" "./$script" $args) \
			>"selftests/$t.log" 2>&1 </dev/null
		rc=$?
		grep -E '^(not )?ok [0-9]+ ' "selftests/$t.log" >"selftests/$t.tap"
		# stopped by the timeout, it printed no TAP: the "[ OK ]" and
		# "[FAIL]" marks it printed so far, each named by the title above it
		[ -s "selftests/$t.tap" ] || sed 's/\x1b\[[0-9;]*m//g' "selftests/$t.log" | awk '
			/^[0-9][0-9][0-9] / { title = $0; sub(/ +$/, "", title); next }
			/\[ OK \]|\[FAIL\]|\[SKIP\]/ {
				line = $0; gsub(/ +/, " ", line); sub(/^ /, "", line)
				sub(/ *\[(( OK )|FAIL|SKIP)\].*/, "", line)
				name = title (line != "" ? ": " line : "")
				if ($0 ~ /\[FAIL\]/) print "not ok 0 - " name
				else if ($0 ~ /\[SKIP\]/) print "ok 0 - " name " # SKIP"
				else print "ok 0 - " name }' >"selftests/$t.tap"
		kc_result "$t" "$rc" "$start"
	done
	# kernel/tests: each program, IPv4 and IPv6, in a namespace of its own
	# (exit 0 pass, 1 fail, 4 skip)
	for p in ktests/*; do
		[ -x "$p" ] || continue
		case $p in *.sh) continue ;; esac
		for v in 4 6; do
			t=kernel-tests/$(basename "$p")-v$v start=$(date +%s)
			mkdir -p selftests/kernel-tests
			timeout 120 unshare -n sh -c "ip link set lo up && ./$p $([ $v = 4 ] || echo -6)" \
				>"selftests/$t.log" 2>&1 </dev/null
			rc=$?
			if [ $rc = 0 ]; then echo "ok 1 - $t"; elif [ $rc = 4 ]; then echo "ok 1 - $t # SKIP"; else echo "not ok 1 - $t"; fi >"selftests/$t.tap"
			kc_result "$t" "$rc" "$start"
		done
	done
	# user-timeout-subflow.sh: TCP_USER_TIMEOUT on the accepted socket (as
	# PostgreSQL sets it) reaches the initial subflow and the one that joined
	# after (exit 0 the subflow closed in time, 1 not, 2 setup failed)
	for cut in 1 2; do
		[ -x ktests/user-timeout-subflow.sh ] || break
		t=kernel-tests/user-timeout-subflow-cut$cut start=$(date +%s)
		mkdir -p selftests/kernel-tests
		CUT=$cut timeout 120 ./ktests/user-timeout-subflow.sh >"selftests/$t.log" 2>&1 </dev/null
		rc=$?
		if [ $rc = 0 ]; then echo "ok 1 - $t"; else echo "not ok 1 - $t"; fi >"selftests/$t.tap"
		kc_result "$t" "$rc" "$start"
	done
fi

# The reproducer: a run is "over" when its longest record wait after the
# cut exceeds 1 s (records still unacked at the end, HUNG, count with their
# wait so far: the last ones sent are often unacked, by a few ms), or when
# it gave no result.
# A run reads and writes only the guest's own /tmp, and is copied to RUN
# after it: RUN is a 9p mount, and once a run of 40 stopped for 23 s with
# its server and its sampler both blocked at a write or read there.
mkdir -p repro
: >repro.txt
rm -rf /tmp/kc-bin
cp -r bin /tmp/kc-bin
for i in $(seq "$KC_RUNS"); do
	rm -rf "/tmp/kc-repro-$i"
	mkdir -p "/tmp/kc-repro-$i"
	LOGDIR=/tmp/kc-repro-$i/logs timeout --kill-after=30 $((${DURATION:-80} + 150)) \
		bash /tmp/kc-bin/mptcp-dead-subflow-stall.sh >"/tmp/kc-repro-$i/out" 2>"/tmp/kc-repro-$i/err" </dev/null
	rc=$?
	cp -r "/tmp/kc-repro-$i/logs" "repro/$i"
	cp "/tmp/kc-repro-$i/out" "repro/$i.out"
	cp "/tmp/kc-repro-$i/err" "repro/$i.err"
	rm -rf "/tmp/kc-repro-$i"
	res=$(grep -m1 '^RESULT' "repro/$i.out")
	if [ -z "$res" ]; then
		echo "$i none over no RESULT (rc $rc): $(tail -1 "repro/$i.err")" >>repro.txt
		continue
	fi
	longest=$(sed -n 's/^RESULT longest latency after cut >\{0,1\}=\{0,1\}\([0-9.]*\) s.*/\1/p' <<<"$res")
	verdict=$(awk -v l="${longest:-0}" 'BEGIN { print (l > 1.0 ? "over" : "under") }')
	echo "$i ${longest:-none} $verdict ${res#RESULT }" >>repro.txt
done
echo 0 >finished
