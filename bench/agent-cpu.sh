#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The agent's own CPU time on an idle node (run by `cargo xtask bench
# --latency`) with the system's own cgroups only (about 10), and with
# 1,000 and 10,000 more: the agent runs as a primary, so what it uses is
# CPU a waking owner's task may wait behind. Each count is measured with
# cgroupfs events (the default); 1,000 also with the full rescan every
# second the agent did before. Prints one raw line per run: the agent's
# CPU time (its threads' schedstat) over SECS seconds, after its start-up
# scan.
#
# usage: agent-cpu.sh AGENT BIN_DIR SECS
set -u
AGENT=$1 SECS=${3:-30}
. "$(dirname "$0")/lib.sh"
echo "# kernel=$(uname -r) cpus=$(nproc) idle node, agent CPU over $SECS s"
mkdir -p $CG/many

# make_cgroups N: N job cgroups under many/ in all, 100 per parent (one
# mkdir per parent: under emulation a process per cgroup takes minutes).
made=0
make_cgroups() {
	while [ $made -lt "$1" ]; do
		p=$CG/many/p$((made / 100))
		mkdir -p "$p"
		(cd "$p" && seq -f "j%.0f" $made $((made + 99)) | xargs mkdir)
		made=$((made + 100))
	done
}

# run_ns PID: its CPU time so far, from the kernel's schedstat.
run_ns() {
	total=0
	for t in /proc/"$1"/task/*/schedstat; do
		total=$((total + $(cut -d' ' -f1 "$t")))
	done
	echo $total
}

for n in 0 1000 10000; do
	make_cgroups $n
	for how in events rescan1s; do
		# The rescan's cost is plain at 1,000 (it was most of a CPU).
		[ $how = rescan1s ] && [ $n != 1000 ] && continue
		if [ $how = events ]; then
			start_sched linger
		else
			start_sched linger --rescan-ms 1000
		fi
		sleep 3
		c0=$(run_ns $sched_pid)
		t0=$(date +%s%N)
		sleep "$SECS"
		c1=$(run_ns $sched_pid)
		t1=$(date +%s%N)
		echo "agent cgroups=$(find $CG -mindepth 1 -type d | wc -l) how=$how cpu_ns=$((c1 - c0)) span_ns=$((t1 - t0))"
		stop_sched
	done
done
