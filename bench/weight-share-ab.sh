#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# weight-share-ab.sh: two builds of the agent judged in one guest boot, for
# a change to what light tasks (nice above 0) get beside default-weight
# work, with EEVDF in the same boot as the bar. Each round runs EEVDF, A,
# then B, and for each:
#   share   one light task per CPU beside one nice-0 spinner per CPU, for
#           each nice in NICES: a spinner, then a duty task (10 ms compute,
#           10 ms sleep); the light tasks' share of the CPU time the two
#           kinds ran over 4 s (schedstat);
#   wakeup  cyclictest (1 ms, SCHED_OTHER, 3,000 wake-ups) beside two
#           nice-19 duty tasks and a nice-0 spinner per CPU: p50, p99 and
#           the longest wait (us).
#
# usage (in the guest, through `cargo xtask vm --icount --cpus N -- ...`):
#   weight-share-ab.sh AGENT_A AGENT_B BIN_DIR [ROUNDS] [NICES]
set -u
A=$1 B=$2 BIN=$3 ROUNDS=${4:-1} NICES=${5:-19 15 10}
AGENT=$A
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
ITERS=$("$BIN/duty" calibrate 10)

# ran PID...: their summed run time so far (ns).
ran() { for p in "$@"; do awk '{ print $1 }' /proc/"$p"/schedstat; done | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# light_share NICE KIND: the light tasks' share over 4 s (KIND spin or duty).
light_share() {
	heavy= light=
	for _ in $(seq "$NCPU"); do
		"$BIN/spin" > /dev/null &
		heavy="$heavy $!"
		if [ "$2" = spin ]; then
			nice -n "$1" "$BIN/spin" > /dev/null &
		else
			nice -n "$1" "$BIN/duty" 1000000 "$ITERS" 10 > /dev/null &
		fi
		light="$light $!"
	done
	sleep 1
	h0=$(ran $heavy) l0=$(ran $light)
	sleep 4
	h1=$(ran $heavy) l1=$(ran $light)
	kill $heavy $light
	wait $heavy $light 2> /dev/null
	awk -v h=$((h1 - h0)) -v l=$((l1 - l0)) 'BEGIN { printf "%.2f%%", 100 * l / (h + l) }'
}

# pct FILE Q: the Q-quantile of cyclictest's histogram (us).
pct() {
	awk -v q="$2" '/^[0-9]+ / { n[$1 + 0] = $2; t += $2 }
		END { c = 0; for (i = 0; i < 20000; i++) { c += n[i]; if (c >= t * q) { print i; exit } } print ">20000" }' "$1"
}

for r in $(seq "$ROUNDS"); do
	for who in eevdf A B; do
		case $who in A) AGENT=$A ;; B) AGENT=$B ;; esac
		[ $who = eevdf ] || start_sched linger
		settle
		line="$who r$r share"
		for n in $NICES; do
			line="$line nice-$n spin $(light_share "$n" spin) duty $(light_share "$n" duty);"
		done
		echo "$line"
		pids=
		for _ in $(seq "$NCPU"); do
			nice -n 19 "$BIN/duty" 1000000 "$ITERS" 10 > /dev/null &
			pids="$pids $!"
			nice -n 19 "$BIN/duty" 1000000 "$ITERS" 10 > /dev/null &
			pids="$pids $!"
			"$BIN/spin" > /dev/null &
			pids="$pids $!"
		done
		sleep 0.5
		cyclictest_other 3000 /run/weight-share-cyc || exit 1
		kill $pids
		wait $pids 2> /dev/null
		echo "$who r$r wakeup p50 $(pct /run/weight-share-cyc 0.5) p99 $(pct /run/weight-share-cyc 0.99)" \
			"max $(awk '/Max Latencies/ { print $NF + 0 }' /run/weight-share-cyc) us"
		[ $who = eevdf ] || stop_sched
		settle
	done
done
