#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# relief-ab.sh: two builds (or two flag sets) of the agent judged in one
# guest boot, for a change to how ordinary primary work runs beside gangs
# that fill every CPU (bpf/relief.bpf.c). Two spinning-barrier gangs of
# one thread per CPU run throughout; each round loads A, then B, and runs
# cyclictest (1 ms period, SCHED_OTHER, an ordinary primary) for SECS
# seconds. Prints cyclictest's cycles, average and longest wait (us) per
# run. Ordinary work's waits here are tens of milliseconds, past the other
# benches' 20 ms histogram, so its summary line is what is kept.
#
# usage (in the guest, through `cargo xtask vm --cpus 2 -- ...`; plain
# TCG, so that the gangs' threads run in parallel):
#   relief-ab.sh AGENT_A AGENT_B BIN_DIR [ROUNDS] [SECS]
# ARGS_A / ARGS_B: extra arguments for each agent's `run` (for example
# ARGS_B="--relief-period-us 0" to judge relief against none).
set -u
A=$1 B=$2 BIN=$3 ROUNDS=${4:-3} SECS=${5:-12}
AGENT=$A
. "$(dirname "$0")/lib.sh"
start_filling_gangs "$A"

for r in $(seq "$ROUNDS"); do
	for who in A B; do
		if [ $who = A ]; then AGENT=$A args=${ARGS_A:-}; else AGENT=$B args=${ARGS_B:-}; fi
		# shellcheck disable=SC2086
		start_sched linger $args
		settle
		cyclictest -i 1000 -D "$SECS" -t 1 -q --policy=other > /tmp/cyc.out 2>&1 ||
			{ echo "cyclictest failed: $(tail -2 /tmp/cyc.out)" >&2; exit 1; }
		# cyclictest pads its figures, or joins wide ones to the label.
		awk -v tag="$who r$r" '
		function field(k,   s) {
			if (!match(line, k " *[0-9]+")) return -1
			s = substr(line, RSTART + length(k), RLENGTH - length(k))
			gsub(/ /, "", s)
			return s + 0
		}
		/^T:/ {
			line = $0
			printf "%s cycles=%d avg=%d max=%d\n", tag, field("C:"), field("Avg:"), field("Max:")
		}' /tmp/cyc.out
		stop_sched
	done
done
