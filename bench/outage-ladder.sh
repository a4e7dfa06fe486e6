#!/bin/bash
# bench/outage-ladder.sh HOST_SETUP LAB_SH OUTDIR ROUNDS: how long a steady
# MPTCP stream waits for an answer when every path is out for 1.5 s and for
# 3 s, under each of host-setup's settings, without PostgreSQL (its load
# swamps an emulated guest).  The stream and the lab are host-setup's test's
# (host/tests/host-setup.sh, its outage phases only: 2 paths of 25 Mbit/s,
# a 1 KiB record every 10 ms, each answered).  The modes alternate within
# each round; each mode attaches the program afresh:
#   defaults  the program closes nothing and sets no timer (the kernel's
#             own backoff; TCP_SYNCNT only)
#   guide     host-setup's defaults
# LADDER_MODES="name=options;..." replaces them; LADDER_FAULTS picks the
# faults among host-setup.sh's phases (default "outage outage3"; also
# "delay", "loss", "cut").  Writes OUTDIR/ladder.csv
# (round, mode, fault, longest wait, subflows closed on a timeout and by
# the program, records sent and answered) and prints one line per mode:
# the longest waits per outage, median and range.
# Runs as root, on this machine's kernel, or in a guest through
# HOST_SETUP_KERNEL=NAME HOST_SETUP_LADDER=ROUNDS make check-host-setup.
set -euo pipefail
hs=$1 lab_sh=$2 out=$3 rounds=$4
here=$(cd "$(dirname "$0")" && pwd)
test_sh=$here/../host/tests/host-setup.sh
modes=${LADDER_MODES:-"defaults=--close-after-rtos 0 --rto-max-ms 0;guide="}
faults=${LADDER_FAULTS:-outage outage3}
mkdir -p "$out"
csv=$out/ladder.csv
echo "round,mode,fault,longest_wait_s,closed_on_timeout,closed_by_program,sent,answered,load1" >"$csv"
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' "$1" "$2"; }
for round in $(seq "$rounds"); do
	IFS=';' read -ra list <<<"$modes"
	# (alternate the order from round to round)
	if [ $((round % 2)) = 0 ]; then
		for ((i = ${#list[@]} - 1; i >= 0; i--)); do rev+=("${list[i]}"); done
		list=("${rev[@]}") rev=()
	fi
	for m in "${list[@]}"; do
		name=${m%%=*} opts=${m#*=} dir=$out/r$round-${m%%=*}
		HOST_SETUP_OPTS=$opts HOST_SETUP_PHASES="$faults" HOST_SETUP_TEST_TIMEOUT=${HOST_SETUP_TEST_TIMEOUT:-600} \
			bash "$test_sh" "$hs" "$lab_sh" "$dir" >"$dir.log" 2>&1 || true
		load=$(cut -d' ' -f1 /proc/loadavg)
		for phase in $faults; do
			line=$(grep "^$phase: " "$dir.log" || true)
			aborts= closed=
			read -r aborts closed < <(sed -n 's/.*subflows closed on a timeout \([0-9]*\), by the program \([0-9]*\)$/\1 \2/p' <<<"$line") || true
			if [ -f "$dir/$phase.client.json" ]; then
				echo "$round,$name,$phase,$(field "$dir/$phase.client.json" longest_wait_s),${aborts:-},${closed:-},$(field "$dir/$phase.client.json" sent),$(field "$dir/$phase.client.json" answered),$load" >>"$csv"
			else
				# (a run that never finished counts as the worst)
				echo "$round,$name,$phase,unfinished,,,,,$load" >>"$csv"
			fi
		done
		echo "round $round $name: $(grep -E "^(${faults// /|}): " "$dir.log" | sed -e 's/; server.*//' -e 's/"sha256": "[0-9a-f]*", //' | paste -sd' ')"
	done
done
python3 - "$csv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for mode in dict.fromkeys(r["mode"] for r in rows):
    parts = []
    for fault in dict.fromkeys(r["fault"] for r in rows):
        w = [r["longest_wait_s"] for r in rows if r["mode"] == mode and r["fault"] == fault]
        done = sorted(float(x) for x in w if x != "unfinished")
        unf = len(w) - len(done)
        med = statistics.median(done + [float("inf")] * unf) if w else float("nan")
        parts.append("%s: longest wait %s s (median %.2f)%s" % (
            fault, " ".join(x for x in w), med, ", %d unfinished" % unf if unf else ""))
    closed = sum(int(r["closed_on_timeout"] or 0) for r in rows if r["mode"] == mode)
    print("%s: %s; subflows closed on a timeout %d" % (mode, "; ".join(parts), closed))
EOF
