#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kthread-ab.sh: two builds of the agent judged in one guest boot, for a
# change to how per-CPU kernel threads run beside gangs that fill every
# CPU. Two spinning-barrier gangs of one thread per CPU run throughout, and
# a loop makes every CPU's kworker run (compact_memory drains each CPU's
# LRU lists through a work item on that CPU). Each round loads A, then B,
# and reads SECS seconds of sched_wakeup and sched_switch: how long bound
# kworkers and ksoftirqd waited from wake-up to running. Prints the count,
# p50, p99 and longest wait (us) per run.
#
# usage (in the guest, through `cargo xtask vm --cpus 2 -- ...`; plain
# TCG, so that the gangs' threads run in parallel):
#   kthread-ab.sh AGENT_A AGENT_B BIN_DIR [ROUNDS] [SECS]
set -u
A=$1 B=$2 BIN=$3 ROUNDS=${4:-2} SECS=${5:-10}
AGENT=$A
. "$(dirname "$0")/lib.sh"
start_filling_gangs "$A"
(while true; do echo 1 > /proc/sys/vm/compact_memory; sleep 0.05; done) &
gen=$!

for r in $(seq "$ROUNDS"); do
	for who in A B; do
		if [ $who = A ]; then AGENT=$A; else AGENT=$B; fi
		start_sched linger
		settle
		trace_switches "$SECS"
		# Each per-CPU kernel thread's wait, wake-up to switch-in (us).
		awk '
		/sched_wakeup:/ {
			c = $0; sub(/.*comm=/, "", c); sub(/ pid=.*/, "", c)
			if (c !~ /^(kworker\/[0-9]+:|ksoftirqd\/)/) next
			p = $0; sub(/.* pid=/, "", p); sub(/ .*/, "", p)
			ts = $0; sub(/: sched_wakeup.*/, "", ts); n = split(ts, a, " ")
			woke[p] = a[n] + 0
			next
		}
		/sched_switch:/ {
			p = $0; sub(/.*next_pid=/, "", p); sub(/ .*/, "", p)
			if (!(p in woke)) next
			ts = $0; sub(/: sched_switch.*/, "", ts); n = split(ts, a, " ")
			printf "%d\n", (a[n] - woke[p]) * 1e6
			delete woke[p]
		}' $T/trace | sort -n | wait_summary "$who r$r kthread wake-ups"
		stop_sched
	done
done
kill $gen
