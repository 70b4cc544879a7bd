#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Gang effects, in one guest boot (run by `cargo xtask bench --gang`, on
# multi-threaded TCG so that vCPUs really run in parallel): k spinning-
# barrier jobs of one thread per CPU each, started together, under the
# kernel's default scheduler (EEVDF), under scx_bpfland (a general-purpose
# sched_ext scheduler, no gang notion) and as scx_linger gangs. The ideal
# wall time is k x the job's time alone; the ideal CPU time is k x its CPU
# time alone. Prints one raw line per run.
#
# With LAYOUTS set, jobs are bound to cpusets instead (Slurm's
# ConstrainCores): LAYOUTS="NAME*IDEAL:CPUS/THREADS,CPUS/THREADS ..."
# runs, per layout, one job per CPUS/THREADS (bound to CPUS, THREADS
# threads) at once. The baselines, under EEVDF: one 2-thread job bound
# to CPUs 0-1 alone ("alone"), and two at once bound to CPUs 0-1 and 2-3
# ("full": every vCPU busy, nothing to schedule, which is how fast the
# emulator runs a job when it must run 4 vCPUs on the host's cores);
# IDEAL is the best schedule's makespan in units of one job's time.
#
# With MPI set to bench/mpi/ring.py's path, each job is a real MPI job
# instead: `mpirun -np NCPU` of the ring (OpenMPI through mpi4py, ITERS
# its work per round), launched inside the job's cgroup as users launch
# it, so mpirun and its helper threads are in the job beside the ranks.
#
# usage: gang.sh AGENT BIN_DIR REPEATS ROUNDS ITERS KS
set -u
AGENT=$1 BIN=$2 REPEATS=${3:-3} ROUNDS=${4:-8000} ITERS=${5:-12000} KS=${6:-"2 3"}
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
if [ -n "${MPI:-}" ]; then
	# OpenMPI refuses to run as root unless told twice.
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	JOB="mpirun -np $NCPU /usr/bin/python3 $MPI --rounds $ROUNDS --work $ITERS"
	kind=mpi-ring
else
	kind=barrier
	JOB="$BIN/barrier --threads $NCPU --rounds $ROUNDS --iters $ITERS"
fi
echo "# kernel=$(uname -r) cpus=$NCPU rounds=$ROUNDS iters=$ITERS threads=$NCPU job=$kind"

agent=
agent_log=/dev/null
start_agent() {
	agent_log=$1
	"$AGENT" run >"$agent_log" 2>&1 &
	agent=$!
	until [ "$(cat /sys/kernel/sched_ext/state)" = enabled ]; do sleep 0.05; done
}
stop_agent() {
	[ -n "$agent" ] && kill -TERM $agent && wait $agent
	agent=
}

# run_k CASE K GANG: K jobs at once; with GANG, each in its own gang cgroup.
run_k() {
	case=$1 k=$2 gang=$3 rep=$4 out=/tmp/gang-out.$$
	: > $out
	pids=
	if [ "$gang" = yes ]; then
		for i in $(seq "$k"); do
			mkdir -p $CG/bench-gang/j$i
			"$AGENT" tag bench-gang/j$i gang >/dev/null
		done
	fi
	# Wall time is the makespan, from launch to the last job's end: a
	# job's own clock starts only in its main(), and a gang left out of a
	# crowded slot may not get to exec before its slot comes.
	t0=$(date +%s%N)
	for i in $(seq "$k"); do
		if [ "$gang" = yes ]; then
			sh -c "echo \$\$ > $CG/bench-gang/j$i/cgroup.procs; exec $JOB" >> $out &
		else
			$JOB >> $out &
		fi
		pids="$pids $!"
	done
	wait $pids
	t1=$(date +%s%N)
	# The makespan; the jobs' summed CPU time.
	awk -v c="$case" -v k="$k" -v r="$rep" -v wall=$(( (t1 - t0) / 1000000 )) '
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		  cpu += v["cpu_ms"] }
		END { printf "case=%s k=%d rep=%d wall_ms=%d cpu_ms=%d\n", c, k, r, wall, cpu }' $out
	rm -f $out
}

# run_layout CASE NAME IDEAL SPEC GANG REP: the jobs of SPEC, each in its
# own cgroup bound to its CPUs; with GANG, each labelled a gang.
run_layout() {
	case=$1 lname=$2 ideal=$3 spec=$4 gang=$5 rep=$6 out=/tmp/gang-out.$$
	: > $out
	pids= i=0
	echo +cpuset > $CG/cgroup.subtree_control
	mkdir -p $CG/bench-gang
	echo +cpuset > $CG/bench-gang/cgroup.subtree_control
	for job in $(echo "$spec" | tr , ' '); do
		i=$((i + 1))
		mkdir -p $CG/bench-gang/j$i
		echo "${job%/*}" > $CG/bench-gang/j$i/cpuset.cpus || exit 1
		[ "$gang" = yes ] && "$AGENT" tag bench-gang/j$i gang >/dev/null
	done
	t0=$(date +%s%N)
	i=0
	for job in $(echo "$spec" | tr , ' '); do
		i=$((i + 1))
		sh -c "echo \$\$ > $CG/bench-gang/j$i/cgroup.procs; exec $BIN/barrier --threads ${job#*/} --rounds $ROUNDS --iters $ITERS" >> $out &
		pids="$pids $!"
	done
	wait $pids
	t1=$(date +%s%N)
	awk -v c="$case" -v n="$lname" -v ideal="$ideal" -v r="$rep" -v wall=$(( (t1 - t0) / 1000000 )) '
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		  cpu += v["cpu_ms"] }
		END { printf "case=%s layout=%s ideal=%s rep=%d wall_ms=%d cpu_ms=%d\n", c, n, ideal, r, wall, cpu }' $out
	rm -f $out
	for d in $CG/bench-gang/j*; do rmdir "$d" 2>/dev/null; done
}

if [ -n "${LAYOUTS:-}" ]; then
	set -f	# the layouts' "*" is no glob
	for rep in $(seq "$REPEATS"); do
		run_layout alone alone 1 0-1/2 no "$rep"
		run_layout alone full 1 0-1/2,2-3/2 no "$rep"
		for l in $LAYOUTS; do
			# Not "name": lib.sh's start_sched sets that.
			head=${l%%:*} spec=${l#*:}
			layout=${head%\**} ideal=${head#*\*}
			run_layout eevdf "$layout" "$ideal" "$spec" no "$rep"
			start_sched bpfland
			run_layout bpfland "$layout" "$ideal" "$spec" no "$rep"
			stop_sched
			start_agent /tmp/gang-agent.$$
			run_layout linger "$layout" "$ideal" "$spec" yes "$rep"
			stop_agent
			sed -n 's/^\[INFO\] gang \//gang_stats layout='"$layout"' rep='"$rep"' gang=\//p' /tmp/gang-agent.$$
		done
	done
	rmdir $CG/bench-gang 2>/dev/null
	echo "# done"
	exit 0
fi

for rep in $(seq "$REPEATS"); do
	run_k alone 1 no "$rep"
	for k in $KS; do
		run_k eevdf "$k" no "$rep"
		start_sched bpfland
		run_k bpfland "$k" no "$rep"
		stop_sched
		start_agent /tmp/gang-agent.$$
		run_k linger "$k" yes "$rep"
		stop_agent
		# Per-gang slot figures the agent printed at exit (BPF's counts).
		sed -n 's/^\[INFO\] gang \//gang_stats k='"$k"' rep='"$rep"' gang=\//p' /tmp/gang-agent.$$
		for d in $CG/bench-gang/j*; do rmdir "$d" 2>/dev/null; done
	done
done
rmdir $CG/bench-gang 2>/dev/null
echo "# done"
