#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# exit-storm.sh: the soak's thread-exit storm alone, under the kernel's
# default scheduler (EEVDF) and then under scx_linger, in one boot. SPIN
# CPU-bound primaries run beside it; then one primary process starts
# THREADS threads (a small duty cycle each), and 5 s after the last one
# started all are told to end at once. For each scheduler it prints how
# long the process took to be gone, and the kernel's own view of that
# time (schedstat, summed over the CPUs): the wake-ups, the share of them
# run on the waker's CPU, and how long runnable tasks waited for a CPU
# in all, per wake-up. The kernel's hung-task reports meanwhile are
# counted from its log.
#
# usage (in the guest, e.g. through
# `cargo xtask vm --topology 2s16c2t2n --single-thread --mem 8G -- ...`):
#   exit-storm.sh AGENT BIN [THREADS [SPIN [AGENT ARGS...]]]
# BIN holds the bench binaries (swarm, spin). STORM_EEVDF=0 skips the
# EEVDF half.
set -u
AGENT=$1 BIN=$2 THREADS=${3:-2000}
NCPU=$(nproc)
SPIN=${4:-$((NCPU * 3 / 4))}
[ $# -gt 4 ] && shift 4 || set --
. "$(dirname "$0")/lib.sh"
stage_bins
echo 1 > /proc/sys/kernel/sched_schedstats || exit 1
# The kernel reports ten hung tasks a boot and then falls silent: a first
# half that spent them would hide the second's. -1: report every one.
echo -1 > /proc/sys/kernel/hung_task_warnings || exit 1
echo +cpu > $CG/cgroup.subtree_control
mkdir -p $CG/storm || exit 1

# Wake-ups, wake-ups on the waker's CPU, and ns runnable tasks waited,
# summed over the CPUs (/proc/schedstat: cpuN's fields 5, 6 and 8).
schedstat() {
	awk '/^cpu[0-9]/ { w += $6; l += $7; d += $9 } END { printf "%d %d %.0f\n", w, l, d }' /proc/schedstat
}
hung_reports() { dmesg | grep -c "blocked for more than"; }

spinners=
start_spinners() {
	mkdir -p $CG/storm/spin
	for _ in $(seq "$SPIN"); do
		(run_in $CG/storm/spin "$BIN/spin") > /dev/null &
		spinners="$spinners $!"
	done
}
stop_spinners() {
	for s in $spinners; do kill -TERM "$s"; done
	wait $spinners 2> /dev/null
	spinners=
}

storm() {
	mkdir -p $CG/storm/swarm
	(run_in $CG/storm/swarm "$BIN/swarm" --threads "$THREADS" --iters 500 --sleep-ms 400) > /dev/null &
	pid=$!
	until [ "$(awk '/^Threads:/ { print $2 }' /proc/$pid/status 2> /dev/null || echo 0)" -gt "$THREADS" ]; do
		sleep 1
	done
	sleep 5
	set -- $(schedstat)
	w0=$1 l0=$2 d0=$3 h0=$(hung_reports) t0=$(date +%s.%N)
	kill -TERM $pid
	wait $pid
	t1=$(date +%s.%N)
	set -- $(schedstat)
	awk -v t0="$t0" -v t1="$t1" -v w="$(($1 - w0))" -v l="$(($2 - l0))" \
		-v d="$(($3 - d0))" -v h="$(($(hung_reports) - h0))" -v who="$WHO" 'BEGIN {
		printf "%s: %d threads gone in %.1f s; %d wake-ups, %.0f%% on the waker'"'"'s CPU; runnable waits %.1f s in all, %.2f ms per wake-up; %d hung-task reports\n",
			who, '"$THREADS"', t1 - t0, w, w ? 100 * l / w : 0, d / 1e9, w ? d / w / 1e6 : 0, h
	}'
	rmdir $CG/storm/swarm
}

echo "$NCPU CPUs, $SPIN spinning primaries, a storm of $THREADS threads"
if [ "${STORM_EEVDF:-1}" = 1 ]; then
	start_spinners
	WHO=eevdf storm
	stop_spinners
fi
# Loaded on a quiet node: on emulated vCPUs that all spin, a load takes
# minutes of CPU time the storm is not about.
start_sched linger "$@"
"$AGENT" tag storm primary > /dev/null || exit 1
start_spinners
WHO="scx_linger${*:+ $*}" storm
stop_spinners
stop_sched
rmdir $CG/storm/spin $CG/storm
