#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rt-displace-ab.sh: two builds of the agent judged in one guest boot, for
# a change to what becomes of a task a real-time task throws off its CPU
# (stopping() with slice left, bpf/main.bpf.c). A SCHED_FIFO busy loop
# takes one CPU for SECS seconds, beside one of two workloads:
#   hogs       two spinning primaries: the share of the window each ran
#              (fair sharing of the CPU left gives each half of it);
#   hackbench  `hackbench -p -g 1 -l LOOPS`, whose tasks pass messages
#              through pipes, so one task left waiting stops the rest:
#              its time with the loop taking CPU 0 from 0.3 s on, and
#              without the loop, in the same round.
# Each round loads A, then B. Prints one line per case and run.
#
# usage (in the guest, through `cargo xtask vm --icount --cpus 2 -- ...`):
#   rt-displace-ab.sh AGENT_A AGENT_B BIN_DIR [ROUNDS] [SECS] [LOOPS]
set -u
A=$1 B=$2 BIN=$3 ROUNDS=${4:-3} SECS=${5:-2} LOOPS=${6:-200}
AGENT=$A
. "$(dirname "$0")/lib.sh"
stage_bins
[ "$(nproc)" = 2 ] || { echo "rt-displace-ab.sh: written for 2 vCPUs" >&2; exit 1; }

# rt_loop CPU SECS: a SCHED_FIFO busy loop on CPU for SECS seconds.
rt_loop() {
	timeout "$2" chrt -f 50 taskset -c "$1" sh -c 'while :; do :; done'
}
# Run time (ns) of a task so far.
ran() { awk '{ print $1 }' /proc/"$1"/schedstat; }

for r in $(seq "$ROUNDS"); do
	for who in A B; do
		if [ $who = A ]; then AGENT=$A; else AGENT=$B; fi
		start_sched linger
		settle

		"$BIN/spin" > /dev/null &
		h1=$!
		"$BIN/spin" > /dev/null &
		h2=$!
		sleep 1
		taken=$(awk '{ print $39 }' /proc/$h1/stat)
		rt_loop "$taken" "$SECS" &
		rt=$!
		sleep 0.2
		b1=$(ran $h1) b2=$(ran $h2) t0=$(date +%s%N)
		wait $rt
		a1=$(ran $h1) a2=$(ran $h2) t1=$(date +%s%N)
		kill -TERM $h1 $h2
		wait $h1 $h2 2> /dev/null
		echo "$who r$r hogs cpu$taken taken: shares" \
			"$(awk -v a=$((a1 - b1)) -v b=$((a2 - b2)) -v w=$((t1 - t0)) \
				'BEGIN { printf "%.2f %.2f", a / w, b / w }')"
		settle

		alone=$(hackbench -p -g 1 -l "$LOOPS" | awk '/^Time/ { print $2 }')
		hackbench -p -g 1 -l "$LOOPS" > /run/rt-displace-hb &
		hb=$!
		sleep 0.3
		rt_loop 0 "$SECS"
		wait $hb
		beside=$(awk '/^Time/ { print $2 }' /run/rt-displace-hb)
		echo "$who r$r hackbench alone=${alone}s beside_rt=${beside}s"
		stop_sched
		settle
	done
done
