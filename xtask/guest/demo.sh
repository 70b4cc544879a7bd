#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The demo, as run inside the sched_ext guest by `cargo xtask demo`: load
# scx_linger, start two demo jobs in their own cgroups, and show the
# scheduler's live counters and each job's CPU time as the kernel counts it.
set -u
AGENT=${1:?usage: demo.sh AGENT SECONDS}
SECONDS_TO_RUN=${2:-20}
CG=/sys/fs/cgroup

echo "kernel: $(uname -r), $(nproc) CPUs, sched_ext state: $(cat /sys/kernel/sched_ext/state)"

"$AGENT" run --stats 2 &
agent=$!
i=0
until [ "$(cat /sys/kernel/sched_ext/state)" = enabled ]; do
	i=$((i + 1))
	if [ $i -gt 300 ] || ! kill -0 $agent 2>/dev/null; then
		echo "demo: scx_linger did not come up" >&2
		exit 1
	fi
	sleep 0.1
done
echo "sched_ext state: $(cat /sys/kernel/sched_ext/state)"
echo "root/ops: $(cat /sys/kernel/sched_ext/root/ops)"

# Two jobs in their own cgroups, as a batch system would start them.
echo "+cpu" > $CG/cgroup.subtree_control 2>/dev/null
for job in job-a job-b; do
	mkdir -p $CG/demo/$job
done
spin() { sh -c 'echo $$ > '"$1"'/cgroup.procs; while :; do :; done' & }
spin $CG/demo/job-a
spin $CG/demo/job-a
spin $CG/demo/job-b
echo "started job-a (2 CPU-bound threads) and job-b (1) under scx_linger"

t=0
while [ $t -lt "$SECONDS_TO_RUN" ]; do
	sleep 5
	t=$((t + 5))
	a=$(awk '/usage_usec/ {print $2}' $CG/demo/job-a/cpu.stat)
	b=$(awk '/usage_usec/ {print $2}' $CG/demo/job-b/cpu.stat)
	echo "t=${t}s  job-a cpu=$((a / 1000)) ms  job-b cpu=$((b / 1000)) ms  sched_ext: $(cat /sys/kernel/sched_ext/state)"
done
echo "root/ops while the jobs ran: $(cat /sys/kernel/sched_ext/root/ops)"

kill $(cat $CG/demo/job-a/cgroup.procs $CG/demo/job-b/cgroup.procs) 2>/dev/null
kill -TERM $agent
wait $agent
rc=$?
echo "scx_linger exited with $rc; sched_ext state: $(cat /sys/kernel/sched_ext/state)"
exit $rc
