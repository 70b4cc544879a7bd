#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Primary wake-up latency, in one guest boot (run by `cargo xtask bench
# --latency`): rt-tests' cyclictest as an ordinary (SCHED_OTHER) primary,
# waking every millisecond, measured
#  - on a quiet node: EEVDF, scx_bpfland, scx_linger, and scx_linger with
#    the full cgroup rescan every second it had before it watched cgroupfs;
#  - beside the project's duty primaries (one per CPU, 10 ms on, 10 ms
#    off), alone and beside one CPU-bound guest per CPU, under each guest
#    policy (EEVDF with SCHED_IDLE or cpu.idle guests, scx_layered,
#    scx_linger, scx_linger without its wake-up preemption, and
#    scx_linger in sched_ext's partial mode with SCHED_EXT guests).
# Then, with the kernel's BPF run-time statistics on, what each of
# scx_linger's ops costs per call in the busiest of those cases.
# cyclictest's SCHED_OTHER task goes through sched_ext like any primary;
# an RT one would bypass it. Prints one raw line per run (its latency
# histogram in 1 us buckets) and one per BPF program. (Debian's bpftool
# does not show verified_insns: the report takes those from
# bpf/verifier-budget.toml, which the verifier guest test holds.)
#
# usage: latency.sh AGENT BIN_DIR REPEATS LOOPS
set -u
AGENT=$1 BIN=$2 REPEATS=${3:-2} LOOPS=${4:-10000}
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
ITERS=$("$BIN/duty" calibrate 10)
echo "# kernel=$(uname -r) cpus=$NCPU cyclictest SCHED_OTHER -i 1000 -l $LOOPS (x$REPEATS); duty primaries iters_per_10ms=$ITERS"
setup_cgroups

duty=
start_duty() {
	duty=
	for _ in $(seq "$NCPU"); do
		"$BIN/duty" 1000000 "$ITERS" 10 > /dev/null &
		duty="$duty $!"
	done
}
stop_duty() {
	for d in $duty; do kill -TERM $d; done
	wait $duty 2> /dev/null
	duty=
}

# One cyclictest run (lib.sh); prints its non-empty histogram buckets as
# us:count pairs and its overflow count.
cyclic() {
	settle
	cyclictest_other "$LOOPS" /tmp/cyc.out || exit 1
	awk '/^[0-9]/ { if ($2 > 0) printf "%d:%d ", $1, $2 }
	     /Histogram Overflows/ { printf "over=%d", $NF }' /tmp/cyc.out
}
reps() {
	for rep in $(seq "$REPEATS"); do
		# A failed run fails the bench, not just its command substitution.
		hist=$(cyclic) || exit 1
		echo "case=$1 rep=$rep $hist"
	done
}

# On a quiet node.
reps quiet_eevdf
start_sched bpfland
reps quiet_bpfland
stop_sched
start_sched linger
reps quiet_linger
stop_sched
start_sched linger --rescan-ms 1000
reps quiet_linger_rescan1s
stop_sched

# Beside the duty primaries, alone and beside guests.
start_duty
reps eevdf_alone
for how in sched_idle cpu_idle; do
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
# The within-tier wake-up rule's share: scx_linger without it.
start_sched linger --no-wake-preempt
reps linger_alone_nowp
start_guests linger
reps linger_nowp
stop_guests
stop_sched
# Partial mode: the primaries (cyclictest too) stay in the fair class;
# only the SCHED_EXT guests run under scx_linger.
start_sched linger --partial
reps linger_partial_alone
start_guests linger_partial
reps linger_partial
stop_guests
stop_sched

# What each op costs: the kernel's own count and run time of every BPF
# program, over one run beside duty primaries and guests.
prog_stats() {
	bpftool -j prog show | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name", "").startswith("linger_"):
        print(p["name"], p.get("run_time_ns", 0), p.get("run_cnt", 0))
' | sort
}
start_sched linger
start_guests linger
sysctl -q kernel.bpf_stats_enabled=1
prog_stats > /tmp/ops.0
hist=$(cyclic) || exit 1
echo "case=linger_stats rep=1 $hist"
prog_stats > /tmp/ops.1
sysctl -q kernel.bpf_stats_enabled=0
join /tmp/ops.0 /tmp/ops.1 | while read -r name ns0 cnt0 ns1 cnt1; do
	echo "op=$name calls=$((cnt1 - cnt0)) ns=$((ns1 - ns0))"
done
stop_guests
stop_sched
stop_duty
