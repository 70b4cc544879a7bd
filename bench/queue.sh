#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Throughput, efficiency and turnaround of job queues (the seed paper's
# group C), in one guest boot (run by `cargo xtask bench`). Each
# experiment is a queue of primary jobs and a queue of guest jobs, all
# submitted at time 0, every job using the whole node (one thread per CPU):
#
#   dedicated   the kernel's scheduler, one job at a time, primaries first
#               (the paper's set 5: guests wait for the node to be free)
#   <policy>    the primary queue and the guest queue run side by side,
#               one job at a time each, the guests under <policy> (the
#               paper's sets 6 and 7)
#
# Group A, each job alone, is the dedicated run: its jobs never overlap.
# Prints one raw line per job.
#
# usage: queue.sh AGENT BIN_DIR REPEATS BURSTS
set -u
AGENT=$1 BIN=$2 REPEATS=${3:-3} BURSTS=${4:-100}
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
ITERS=$("$BIN/duty" calibrate 10)
echo "# kernel=$(uname -r) cpus=$NCPU iters_per_10ms=$ITERS bursts=$BURSTS"
setup_cgroups

# A job of kind cpu computes BURSTS bursts of 10 ms per thread, one thread
# per CPU; io sleeps 10 ms after every burst (half busy, like a rank
# waiting for its messages). bench/src/bin/job.rs runs a whole queue.
SLEEP_MS=10

# name:primary queue:guest queue. Guests are CPU-bound, as in the paper
# (the point is to use the CPU the primaries leave).
EXPERIMENTS="cpu-bound:cpu,cpu:cpu,cpu,cpu io-bound:io,io:cpu,cpu,cpu mixed:cpu,io,io:cpu,cpu,cpu"

# run_queue HOW KINDS NPRIMARY: the jobs of KINDS one after another in
# one process, run as a guest under policy HOW (none: an ordinary job);
# the first NPRIMARY are primaries. One line per job.
run_queue() {
	(as_guest "$1" "$BIN/job" "$T0" "$NCPU" "$BURSTS" "$ITERS" "$SLEEP_MS" "$2") > /tmp/queue.$1 || {
		echo "queue.sh: the queue $2 ($1) failed" >&2
		exit 1
	}
	awk -v np="$3" -v pre="case=$case exp=$exp rep=$rep" \
		'{ print pre, "role=" (NR <= np ? "primary" : "guest"), $0 }' /tmp/queue.$1
}

# Every queue of a run starts at T0, a second ahead: by then each has
# been started (exec'd), which is not what is measured.
start_clock() {
	T0=$(( $(date +%s%N) + 1000000000 ))
}

# run_all CASE: every experiment, REPEATS times, under policy CASE
# (dedicated: one queue, primaries first; otherwise both queues at once).
run_all() {
	case=$1
	for rep in $(seq "$REPEATS"); do
		for e in $EXPERIMENTS; do
			exp=${e%%:*}
			rest=${e#*:}
			primaries=${rest%%:*}
			guests=${rest#*:}
			np=$(echo "$primaries" | tr , '\n' | wc -l)
			settle
			start_clock
			if [ "$case" = dedicated ]; then
				run_queue none "$primaries,$guests" "$np"
				continue
			fi
			run_queue none "$primaries" "$np" &
			p=$!
			run_queue "$case" "$guests" 0 &
			g=$!
			wait $p || exit 1
			wait $g || exit 1
		done
	done
}

# A sched_ext scheduler is loaded once per policy: under emulation its
# BPF verification costs more host time than the runs.
run_all dedicated
for case in nice19 sched_idle cpu_idle layered linger linger_partial; do
	# shellcheck disable=SC2046 # the scheduler's name, then its arguments
	start_sched $(sched_of $case)
	run_all $case
	stop_sched
done
