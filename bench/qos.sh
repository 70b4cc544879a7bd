#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Primary quality of service beside guests (the seed paper's group B), in
# one guest boot (run by `cargo xtask bench`): half-busy primary jobs (one
# per CPU) alone and beside one CPU-bound guest per CPU, with the guests
# under each policy an operator has today, under scx_layered and under
# scx_linger. Prints one raw line per run.
#
# usage: qos.sh AGENT BIN_DIR REPEATS ROUNDS
set -u
AGENT=$1 BIN=$2 REPEATS=${3:-3} ROUNDS=${4:-100}
. "$(dirname "$0")/lib.sh"
stage_bins
SLEEP_MS=10
NCPU=$(nproc)
ITERS=$("$BIN/duty" calibrate 10)
echo "# kernel=$(uname -r) cpus=$NCPU iters_per_10ms=$ITERS rounds=$ROUNDS sleep_ms=$SLEEP_MS"
setup_cgroups

guest_run_ns() {
	t=0
	for g in $guests; do t=$((t + $(cut -d' ' -f1 /proc/$g/schedstat))); done
	echo $t
}

# Idle CPU time of the whole machine so far, in ns (from /proc/stat ticks).
idle_ns() {
	awk -v hz="$(getconf CLK_TCK)" '/^cpu / {printf "%d\n", ($5 + $6) * 1000000000 / hz}' /proc/stat
}

# One measurement: NCPU duty jobs at once; print their figures.
measure() {
	case=$1
	settle
	# The span encloses the guest reading, so harvest is never overstated.
	t0=$(date +%s%N)
	i0=$(idle_ns)
	g0=$( [ -n "$guests" ] && guest_run_ns || echo 0 )
	pids=
	for i in $(seq "$NCPU"); do
		"$BIN/duty" "$ROUNDS" "$ITERS" "$SLEEP_MS" > /tmp/duty.$i &
		pids="$pids $!"
	done
	wait $pids
	g1=$( [ -n "$guests" ] && guest_run_ns || echo 0 )
	i1=$(idle_ns)
	t1=$(date +%s%N)
	for i in $(seq "$NCPU"); do
		echo "case=$case rep=$rep $(cat /tmp/duty.$i) guest_run=$(( (g1 - g0) / 1000 ))e-6 idle=$(( (i1 - i0) / 1000 ))e-6 span=$(( (t1 - t0) / 1000 ))e-6"
	done
}

# Each policy's repeats run back to back, so that a sched_ext scheduler
# is loaded once per policy: under emulation its BPF verification costs
# more host time than the measurements.
reps() {
	for rep in $(seq "$REPEATS"); do measure "$1"; done
}
reps eevdf_alone
for how in nice19 sched_idle cpu_idle; do
	start_guests $how
	reps $how
	stop_guests
done
for sched in layered linger; do
	start_sched $sched
	reps ${sched}_alone
	start_guests $sched
	reps $sched
	stop_guests
	stop_sched
done
# sched_ext's partial mode: the primaries stay in the fair class, and only
# the SCHED_EXT guests run under scx_linger.
start_sched linger --partial
start_guests linger_partial
reps linger_partial
stop_guests
stop_sched
