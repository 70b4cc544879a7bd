#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# pinned-requeue-ab.sh: two builds of the agent judged in one guest boot,
# for how a gang's member leaves a CPU that ordinary work is pinned to
# when the member is preempted there and queued again (bpf/gang_run.bpf.c,
# "Ordinary work pinned where members run"). A small node kept full: one
# unbound CPU-bound primary per CPU, a new 0.3-s CPU-bound primary every
# 100 ms (new work keeps starting, as jobs' helpers do), cyclictest's one
# thread (SCHED_OTHER, waking every 2 ms) pinned to CPU 0, and one
# unbound gang of two barrier threads that nap every 100 rounds. Every
# CPU's kernel threads break a member's run, and a member that came back
# to CPU 0 at each break held it for its whole slot. Runs: EEVDF (no BPF
# scheduler), then A, then B, each reading SECS seconds of sched_wakeup
# and sched_switch after 3 s to settle. Prints, per run, how long
# cyclictest's thread waited from wake-up (or preemption) to running: the
# count, p50, p99 and longest (us); then, for A and B, how many times a
# member left a pinned CPU (the agent's gang_pin_swap).
#
# usage (in the guest: `cargo xtask vm --cpus 4 --single-thread -- ...`):
#   pinned-requeue-ab.sh AGENT_A AGENT_B BIN_DIR [SECS]
set -u
A=$1 B=$2 BIN=$3 SECS=${4:-8}
AGENT=$A
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
setup_cgroups
for c in cpu lat churn gang; do mkdir -p $CG/bench/$c || exit 1; done
for _ in $(seq "$NCPU"); do (run_in $CG/bench/cpu "$BIN/spin") > /dev/null 2>&1 & done
(run_in $CG/bench/lat cyclictest -q -t 1 -a 0 -i 2000 -D 100000) > /dev/null 2>&1 &
(run_in $CG/bench/gang "$BIN/barrier" --threads 2 --rounds 1000000000 \
	--iters 20000 --nap-ms 20 --nap-every 100) > /dev/null 2>&1 &
(
	while :; do
		(run_in $CG/bench/churn timeout 0.3 "$BIN/spin") > /dev/null 2>&1 &
		sleep 0.1
	done
) &
churn=$!

pin_swaps() {
	"$AGENT" stats --json 2> /dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["events"].get("gang_pin_swap", "?"))' 2> /dev/null
}

for who in EEVDF A B; do
	if [ $who != EEVDF ]; then
		if [ $who = A ]; then AGENT=$A; else AGENT=$B; fi
		start_sched linger
		"$AGENT" tag bench/gang gang > /dev/null || exit 1
		before=$(pin_swaps)
	fi
	sleep 3
	trace_switches "$SECS" 16384
	comm_waits cyclictest | wait_summary "$who cyclictest waits"
	if [ $who != EEVDF ]; then
		echo "$who gang_pin_swap=$before..$(pin_swaps)"
		stop_sched
	fi
	settle
done
kill $churn
