#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Primary quality of service beside guests, in one guest boot (run by
# `cargo xtask bench`): half-busy primary jobs (one per CPU) alone and beside
# one CPU-bound guest per CPU, with the guests under each policy an operator
# has today and under scx_linger. Prints one raw line per run.
#
# usage: qos.sh AGENT BIN_DIR REPEATS ROUNDS
set -u
AGENT=$1 BIN=$2 REPEATS=${3:-3} ROUNDS=${4:-100}
SLEEP_MS=10
NCPU=$(nproc)
CG=/sys/fs/cgroup
ITERS=$("$BIN/duty" calibrate 10)
echo "# kernel=$(uname -r) cpus=$NCPU iters_per_10ms=$ITERS rounds=$ROUNDS sleep_ms=$SLEEP_MS"

echo +cpu > $CG/cgroup.subtree_control
mkdir -p $CG/bench
echo +cpu > $CG/bench/cgroup.subtree_control
mkdir -p $CG/bench/idle $CG/bench/guest
echo 1 > $CG/bench/idle/cpu.idle || exit 1

agent=
start_agent() {
	"$AGENT" run >/dev/null 2>&1 &
	agent=$!
	until [ "$(cat /sys/kernel/sched_ext/state)" = enabled ]; do sleep 0.05; done
	"$AGENT" tag bench/guest guest >/dev/null
}
stop_agent() {
	[ -n "$agent" ] && kill -TERM $agent && wait $agent
	agent=
}

# start_guests HOW: one spinner per CPU, as guest under policy HOW.
guests=
start_guests() {
	guests=
	for _ in $(seq "$NCPU"); do
		case $1 in
		nice19) nice -n 19 "$BIN/spin" > /dev/null & ;;
		sched_idle) chrt --idle 0 "$BIN/spin" > /dev/null & ;;
		cpu_idle) sh -c "echo \$\$ > $CG/bench/idle/cgroup.procs; exec $BIN/spin" > /dev/null & ;;
		linger) sh -c "echo \$\$ > $CG/bench/guest/cgroup.procs; exec $BIN/spin" > /dev/null & ;;
		esac
		guests="$guests $!"
	done
	sleep 0.2
}
guest_run_ns() {
	t=0
	for g in $guests; do t=$((t + $(cut -d' ' -f1 /proc/$g/schedstat))); done
	echo $t
}
stop_guests() {
	for g in $guests; do kill -TERM $g; done
	wait $guests 2>/dev/null
	guests=
}

# Idle CPU time of the whole machine so far, in ns (from /proc/stat ticks).
idle_ns() {
	awk -v hz="$(getconf CLK_TCK)" '/^cpu / {printf "%d\n", ($5 + $6) * 1000000000 / hz}' /proc/stat
}

# One measurement: NCPU duty jobs at once; print their mean figures.
measure() {
	case=$1
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

for rep in $(seq "$REPEATS"); do
	measure eevdf_alone
	for how in nice19 sched_idle cpu_idle; do
		start_guests $how
		measure "eevdf_$how"
		stop_guests
	done
	start_agent
	measure linger_alone
	start_guests linger
	measure linger_guest
	stop_guests
	stop_agent
done
