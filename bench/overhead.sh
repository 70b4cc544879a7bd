#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Scheduler overhead, in one guest boot (run by `cargo xtask bench
# --overhead`): hackbench (rt-tests), nothing but wake-ups and context
# switches, under the kernel's own scheduler (EEVDF), under scx_bpfland
# (a general-purpose sched_ext scheduler), under scx_linger,
# under scx_linger with its accounting off, and under scx_linger without
# its wake-up preemption among primaries. The first ratio is what
# scheduling through BPF costs, the next what counting for the stats
# costs, the last what the wake-up rule costs hackbench's throughput.
# Prints one raw line per run.
#
# usage: overhead.sh AGENT BIN_DIR REPEATS GROUPS LOOPS
set -u
AGENT=$1 REPEATS=${3:-5} NGROUPS=${4:-2} LOOPS=${5:-100}
. "$(dirname "$0")/lib.sh"
echo "# kernel=$(uname -r) cpus=$(nproc) hackbench -p -g $NGROUPS -l $LOOPS"

hb() { hackbench -p -g "$NGROUPS" -l "$LOOPS" | awk '/^Time:/ {print $2}'; }

# Which cases to run (CASES, words from the list below): all by default;
# `bench --scaling` runs the schedulers and scx_linger with one queue for
# the node (linger_nodeq) at every size.
CASES=${CASES:-"eevdf bpfland linger linger_noacct linger_nowp"}
run_case() {
	case $1 in
	eevdf) echo "case=eevdf rep=$2 time=$(hb)" ;;
	bpfland) start_sched bpfland; echo "case=bpfland rep=$2 time=$(hb)"; stop_sched ;;
	linger) start_sched linger; echo "case=linger rep=$2 time=$(hb)"; stop_sched ;;
	linger_noacct) start_sched linger --no-accounting; echo "case=linger_noacct rep=$2 time=$(hb)"; stop_sched ;;
	linger_nowp) start_sched linger --no-wake-preempt; echo "case=linger_nowp rep=$2 time=$(hb)"; stop_sched ;;
	linger_nodeq) start_sched linger --queues node; echo "case=linger_nodeq rep=$2 time=$(hb)"; stop_sched ;;
	esac
}

# Warm up: binaries and libraries in the page cache.
hb > /dev/null
for rep in $(seq "$REPEATS"); do
	for c in $CASES; do
		run_case "$c" "$rep"
	done
done
