#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# pinned-beside-gangs-ab.sh: two builds of the agent judged in one guest
# boot, for a change to how ordinary primary work that may run only on
# CPUs a gang holds gets the CPU (bpf/relief.bpf.c). The soak's mix in
# small: CPU-bound primaries on a quarter of the CPUs, guests on half,
# cyclictest (SCHED_OTHER, a thread per eight CPUs, each pinned to one CPU
# from CPU 0, waking every 2 ms), and gang jobs of barrier threads that
# nap every 100 rounds: one of two threads bound to J1_CPUS (CPUs 0-1,
# where cyclictest's threads are, unless given; `all`: unbound), one of
# four bound to CPUs 2-3, two of two unbound, and a guest-gang of two. Each run reads SECS seconds of
# sched_wakeup and sched_switch with the mix alone, then again under full
# primary load (one CPU-bound primary per CPU and one more, with the
# bound gangs and the guest-gang frozen, as the soak's full load). Runs:
# EEVDF (no BPF scheduler), then A, then B. Prints, per run and phase,
# how long cyclictest's threads waited from wake-up (or preemption) to
# running: the count, p50, p99 and longest (us).
#
# usage (in the guest, on a node-shaped guest of single-threaded TCG:
# `cargo xtask vm --topology 2s4c2t2n --single-thread --mem 8G -- ...`):
#   pinned-beside-gangs-ab.sh AGENT_A AGENT_B BIN_DIR [SECS [J1_CPUS]]
set -u
A=$1 B=$2 BIN=$3 SECS=${4:-8} J1_CPUS=${5:-0-1}
AGENT=$A
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
setup_cgroups
echo +cpuset > $CG/cgroup.subtree_control
echo +cpuset > $CG/bench/cgroup.subtree_control
for c in cpu lat full gang0 gang1 gg j1 j2 j3; do mkdir -p $CG/bench/$c || exit 1; done
[ "$J1_CPUS" = all ] || echo "$J1_CPUS" > $CG/bench/j1/cpuset.cpus
echo 2-3 > $CG/bench/gang1/cpuset.cpus
for _ in $(seq $((NCPU / 4))); do (run_in $CG/bench/cpu "$BIN/spin") > /dev/null 2>&1 & done
for _ in $(seq $((NCPU / 2))); do (run_in $CG/bench/guest "$BIN/spin") > /dev/null 2>&1 & done
(run_in $CG/bench/lat cyclictest -q -t $((NCPU / 8 > 0 ? NCPU / 8 : 1)) -a 0-$((NCPU / 8 > 1 ? NCPU / 8 - 1 : 0)) \
	-i 2000 -D 100000) > /dev/null 2>&1 &
gang() {
	(run_in $CG/bench/$1 "$BIN/barrier" --threads "$2" --rounds 1000000000 \
		--iters 20000 --nap-ms 20 --nap-every 100) > /dev/null 2>&1 &
}
gang gang0 2
gang gang1 4
gang gg 2
gang j1 2
gang j2 2
gang j3 2
bound="gang0 gang1 gg"

# Read SECS s of the kernel's trace; print cyclictest's waits as TAG.
waits() {
	trace_switches "$SECS" 16384
	comm_waits cyclictest | wait_summary "$1 cyclictest waits"
}

for who in EEVDF A B; do
	if [ $who != EEVDF ]; then
		if [ $who = A ]; then AGENT=$A; else AGENT=$B; fi
		start_sched linger
		for g in gang0 gang1 j1 j2 j3; do "$AGENT" tag bench/$g gang > /dev/null || exit 1; done
		"$AGENT" tag bench/gg guest-gang > /dev/null || exit 1
	fi
	sleep 3
	waits "$who mix"
	for g in $bound; do echo 1 > $CG/bench/$g/cgroup.freeze; done
	hogs=
	for _ in $(seq $((NCPU + 1))); do
		(run_in $CG/bench/full "$BIN/spin") > /dev/null 2>&1 &
		hogs="$hogs $!"
	done
	sleep 3
	waits "$who full load"
	# shellcheck disable=SC2086
	kill $hogs
	wait $hogs 2> /dev/null
	for g in $bound; do echo 0 > $CG/bench/$g/cgroup.freeze; done
	stop_sched
	settle
done
