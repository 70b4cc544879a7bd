#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# light-slice-ab.sh: two builds of the agent judged in one guest boot, for
# a change to the slice of tasks lighter than the default weight (nice 17
# to 19, a cgroup's cpu.weight under 3: the only ones whose weighted slice
# falls under the floor). Each round loads A, then B, and runs two cases,
# one task of each kind per CPU:
#   hogs  a nice-0 and a nice-19 spinner, SECS seconds: the work each did
#         (spin's chunks), and how many runs the nice-19 one had
#         (schedstat's third field);
#   duty  a primary computing 10 ms and sleeping 10 ms beside a nice-19
#         spinner: the primary's wall time and how late it ran after each
#         sleep (p50, p99), and the spinner's work.
# Prints one line per case and run.
#
# usage (in the guest, through `cargo xtask vm --icount --cpus N -- ...`):
#   light-slice-ab.sh AGENT_A AGENT_B BIN_DIR [ROUNDS] [SECS]
set -u
A=$1 B=$2 BIN=$3 ROUNDS=${4:-3} SECS=${5:-5}
AGENT=$A
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
ITERS=$("$BIN/duty" calibrate 10)
OUT=/run/light-slice-ab
mkdir -p $OUT

# spin_report PID...: print each spinner's run count, and stop it (its
# chunks go to the file it prints to).
spin_report() {
	for p in "$@"; do
		runs=$(awk '{ print $3 }' /proc/"$p"/schedstat)
		kill -TERM "$p"
		wait "$p" > /dev/null 2>&1
		echo -n " runs=$runs"
	done
}

for r in $(seq "$ROUNDS"); do
	for who in A B; do
		if [ $who = A ]; then AGENT=$A; else AGENT=$B; fi
		start_sched linger
		settle
		heavy= light=
		for i in $(seq "$NCPU"); do
			"$BIN/spin" > $OUT/heavy.$i &
			heavy="$heavy $!"
			nice -n 19 "$BIN/spin" > $OUT/light.$i &
			light="$light $!"
		done
		sleep "$SECS"
		lr=$(spin_report $light)
		spin_report $heavy > /dev/null
		h=$(cat $OUT/heavy.* | awk -F= '{ s += $2 } END { print s }')
		l=$(cat $OUT/light.* | awk -F= '{ s += $2 } END { print s }')
		echo "$who r$r hogs heavy_chunks=$h light_chunks=$l light$lr"
		settle

		light=
		for i in $(seq "$NCPU"); do
			nice -n 19 "$BIN/spin" > $OUT/light.$i &
			light="$light $!"
		done
		duties=
		for i in $(seq "$NCPU"); do
			"$BIN/duty" 200 "$ITERS" 10 > $OUT/duty.$i &
			duties="$duties $!"
		done
		wait $duties
		spin_report $light > /dev/null
		l=$(cat $OUT/light.* | awk -F= '{ s += $2 } END { print s }')
		echo "$who r$r duty $(cat $OUT/duty.* | tr '\n' ' ')light_chunks=$l"
		stop_sched
		settle
	done
done
