#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# latency-ab.sh: two builds of the agent judged in one guest boot, for a
# change to the wake-up rule. Between boots the baselines move (EEVDF's
# own 2-vCPU p99 beside the duty primaries was 1.9 ms in one run and
# 2.5 ms in the next), so a change is judged against the build before it
# in the same boot: one duty primary per CPU runs throughout, and each
# round loads A, then B, for one cyclictest run beside the duty primaries
# alone and one beside guests, after one beside the same guests under the
# kernel's SCHED_IDLE (no sched_ext scheduler), the bar a guest class is
# held to. Prints p50, p99, p99.9 and max (us) per run, and the count past
# the 20 ms histogram. DUTY=0 leaves the duty primaries out: cyclictest
# alone beside the guests, where every wake-up takes a guest's CPU.
#
# usage (in the guest, e.g. through `cargo xtask vm --icount --cpus 2 --`):
#   [DUTY=0] latency-ab.sh AGENT_A AGENT_B BIN_DIR [ROUNDS]
set -u
A=$1 B=$2 BIN=$3 ROUNDS=${4:-3}
AGENT=$A
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
ITERS=$("$BIN/duty" calibrate 10)
setup_cgroups
if [ "${DUTY:-1}" != 0 ]; then
	for _ in $(seq "$NCPU"); do "$BIN/duty" 1000000 "$ITERS" 10 > /dev/null & done
fi

one() {
	settle
	cyclictest_other 10000 /tmp/cyc.out || exit 1
	awk -v tag="$1" '
	/^[0-9]/ { n[$1 + 0] += $2; total += $2 }
	/Histogram Overflows/ { over = $NF; total += over }
	END {
		p50 = p99 = p999 = -1
		for (i = 0; i < 20000; i++) {
			if (!n[i]) continue
			seen += n[i]; max = i
			if (p50 < 0 && seen >= 0.5 * total) p50 = i
			if (p99 < 0 && seen >= 0.99 * total) p99 = i
			if (p999 < 0 && seen >= 0.999 * total) p999 = i
		}
		printf "%s p50=%d p99=%d p999=%d max=%d over_20ms=%d\n", tag, p50, p99, p999, max, over
	}' /tmp/cyc.out
}

for r in $(seq "$ROUNDS"); do
	start_guests sched_idle
	one "SCHED_IDLE guests r$r"
	stop_guests
	for who in A B; do
		if [ $who = A ]; then AGENT=$A; else AGENT=$B; fi
		start_sched linger
		one "$who alone r$r"
		start_guests linger
		one "$who guests r$r"
		stop_guests
		stop_sched
	done
done
