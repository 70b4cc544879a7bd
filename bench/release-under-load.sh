#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# release-under-load.sh: how long the kernel takes to release removed
# cgroups while primaries want every CPU, under the kernel's default
# scheduler (EEVDF) and then with scx_linger loaded, in one boot. An rmdir
# returns before the kernel has released the cgroup: a workqueue's
# kworker then frees it (css_release_work_fn), holding cgroup_mutex while
# it flushes the cgroup's per-CPU statistics, and every cgroup write on
# the node (a job's start, the agent's own moves) waits for that lock.
# Each run makes N cgroups with a process run in each (so that each has
# statistics to flush), starts two CPU-bound primaries per CPU, removes
# the cgroups, and then, until the kernel has released them all, makes
# and removes a probe cgroup every 0.5 s as a job manager would. Prints,
# per run: the removal's wall time, how long the release took, and the
# probes' count and longest mkdir + rmdir.
#
# usage (in the guest, e.g. through `cargo xtask vm --cpus 4 -- ...`;
# on single-threaded TCG a preemption sent to another vCPU lands only at
# that vCPU's turn, which weighs on this workload: see
# results/soak-runs.md, "Cgroups removed beside full load"):
#   release-under-load.sh AGENT BIN_DIR [N] [LIMIT_S]
set -u
AGENT=$1 BIN=$2 N=${3:-300} LIMIT=${4:-600}
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
echo +cpu > $CG/cgroup.subtree_control
mkdir -p $CG/rel $CG/load || exit 1

now() { date +%s.%N; }
dying() { awk '/^nr_dying_descendants/ { print $2 }' $CG/rel/cgroup.stat; }

release_run() {
	i=0
	while [ $i -lt "$N" ]; do
		mkdir $CG/rel/c$i || exit 1
		sh -c 'echo $$ > "$1/cgroup.procs" && exec true' sh $CG/rel/c$i
		i=$((i + 1))
	done
	hogs=
	for _ in $(seq $((2 * NCPU))); do
		run_in $CG/load "$BIN/spin" > /dev/null 2>&1 &
		hogs="$hogs $!"
	done
	sleep 1
	t0=$(now)
	i=0
	while [ $i -lt "$N" ]; do rmdir $CG/rel/c$i || exit 1; i=$((i + 1)); done
	t1=$(now)
	probes=0 longest=0
	while [ "$(dying)" -gt 0 ]; do
		p0=$(now)
		mkdir $CG/probe && rmdir $CG/probe
		p1=$(now)
		probes=$((probes + 1))
		longest=$(awk -v a="$longest" -v x="$p0" -v y="$p1" \
			'BEGIN { d = y - x; print (d > a) ? d : a }')
		if awk -v t="$p1" -v s="$t0" -v l="$LIMIT" 'BEGIN { exit !(t - s > l) }'; then
			echo "$1: $(dying) cgroups still dying after ${LIMIT} s" >&2
			break
		fi
		sleep 0.5
	done
	t2=$(now)
	kill $hogs
	wait $hogs 2> /dev/null
	awk -v who="$1" -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v p="$probes" \
		-v l="$longest" -v c="$((2 * NCPU))" 'BEGIN {
		printf "%s: %d cgroups beside %d CPU-bound primaries: removed in %.1f s, released %.1f s later; %d probes, longest mkdir + rmdir %.2f s\n",
			who, n, c, t1 - t0, t2 - t1, p, l
	}'
}

release_run eevdf
settle
start_sched linger
sleep 2
release_run scx_linger
stop_sched
rmdir $CG/rel $CG/load
