#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# schbench as primaries, in one guest boot (run by `cargo xtask bench
# --schbench`): one message thread and two workers per CPU, each request
# two short sleeps around a few milliseconds of matrix work under a
# per-CPU lock (schbench's model of a web server: long slices and short
# wake-up delays both count). Each case runs under EEVDF and under
# scx_linger, with no guests and beside one CPU-bound guest per CPU
# (SCHED_IDLE under EEVDF, the guest class under scx_linger):
#  - saturated: as many requests as the workers complete;
#  - fixed rate: half of EEVDF's saturated rate in this boot (-R), where
#    the request latency, not the throughput, tells (schbench's wake-up
#    latency there counts from a worker's last request: its idle wait).
# Prints one line per run: requests/s, and the wake-up and request
# latency p50 and p99 (us) of schbench's final summary.
#
# usage: schbench.sh AGENT BIN_DIR SCHBENCH [RUNTIME_S (at least 30)] [REPEATS]
set -u
AGENT=$1 BIN=$2 SCHBENCH=$3 RUNTIME=${4:-30} REPEATS=${5:-1}
. "$(dirname "$0")/lib.sh"
stage_bins
cp "$SCHBENCH" /run/bench-bin/schbench || exit 1
NCPU=$(nproc)
WORKERS=$((2 * NCPU))
# A request's matrix work scaled to emulated CPUs: schbench's defaults
# (-F 256 -n 5) take about a second of CPU per request here, where its
# model is a request shorter than one time slice.
FOOTPRINT=32 OPS=2
# The first seconds (every thread starting at once) are left out of the
# figures; schbench keeps no warm-up in runs under 30 s.
WARMUP=5
echo "# kernel=$(uname -r) cpus=$NCPU schbench -m 1 -t $WORKERS -F $FOOTPRINT -n $OPS -r $RUNTIME -w $WARMUP (x$REPEATS)"
setup_cgroups

# One schbench run with ARGS; prints its final figures as key=value.
one() {
	settle
	"$BIN/schbench" -m 1 -t "$WORKERS" -F "$FOOTPRINT" -n "$OPS" \
		-r "$RUNTIME" -w "$WARMUP" "$@" > /tmp/schbench.out 2>&1 || {
		echo "schbench failed: $(tail -3 /tmp/schbench.out)" >&2
		exit 1
	}
	awk '
	/percentiles/ { sect = $1 }
	/th:/ {
		for (i = 1; i <= NF; i++) if ($i ~ /th:$/) { q = $i; v = $(i + 1) }
		if (sect == "Wakeup" && q == "50.0th:") wake50 = v
		if (sect == "Wakeup" && q == "99.0th:") wake99 = v
		if (sect == "Request" && q == "50.0th:") req50 = v
		if (sect == "Request" && q == "99.0th:") req99 = v
	}
	/^average rps:/ { rps = $3 }
	END {
		if (rps == "" || wake99 == "" || req99 == "") exit 1
		printf "rps=%s wake_p50=%s wake_p99=%s req_p50=%s req_p99=%s\n", rps, wake50, wake99, req50, req99
	}' /tmp/schbench.out || {
		echo "schbench printed no summary: $(tail -5 /tmp/schbench.out)" >&2
		exit 1
	}
}

# case_ NAME SCHED GUESTS [ARGS...]: REPEATS runs under SCHED (none or
# linger), beside guests under policy GUESTS (or with none).
case_() {
	cname=$1 sched=$2 how=$3
	shift 3
	start_sched "$sched"
	[ "$how" != none ] && start_guests "$how"
	for rep in $(seq "$REPEATS"); do
		line=$(one "$@") || exit 1
		echo "case=$cname rep=$rep $line" | tee -a /tmp/schbench.cases
	done
	[ "$how" != none ] && stop_guests
	stop_sched
}

rm -f /tmp/schbench.cases
case_ eevdf_sat none none
# Half of EEVDF's saturated rate in this boot, for the one message thread.
RATE=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rps=/) { sub("rps=", "", $i); s += $i; n++ } }
	END { r = int(s / n / 2); print (r < 1 ? 1 : r) }' /tmp/schbench.cases)
echo "# fixed rate: -R $RATE"
case_ linger_sat linger none
case_ eevdf_sat_guests none sched_idle
case_ linger_sat_guests linger linger
case_ eevdf_rate none none -R "$RATE"
case_ linger_rate linger none -R "$RATE"
case_ eevdf_rate_guests none sched_idle -R "$RATE"
case_ linger_rate_guests linger linger -R "$RATE"
