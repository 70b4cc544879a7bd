#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Where a primary's wake-up goes, instruction by instruction (run by
# `cargo xtask bench --profile`, with bench/profile/insn_profile.c loaded
# into QEMU): cyclictest as an ordinary primary beside the duty primaries,
# under EEVDF and under scx_linger, alone and beside one CPU-bound guest
# per CPU, alone with `--no-accounting` (what the per-class and per-job
# accounting costs), and under scx_bpfland alone (a peer on the same
# sched_ext path). Each case is one profile window: the plugin counts the guest
# kernel's instructions while it is open. Leaves out.<case> (the
# plugin's counts), cyc.<case> (cyclictest's histogram), kallsyms (taken
# while scx_linger is loaded, so its BPF programs have names),
# kallsyms.noacct and kallsyms.bpfland (likewise for the load without
# accounting and for scx_bpfland's) in the results folder,
# and prints one line per case.
#
# usage: profile.sh AGENT BIN_DIR LOOPS
set -u
AGENT=$1 BIN=$2 LOOPS=${3:-5000}
OUT=${SCX_LINGER_RESULTS:?run it through cargo xtask bench --profile}
. "$(dirname "$0")/lib.sh"
stage_bins
NCPU=$(nproc)
ITERS=$("$BIN/duty" calibrate 10)
echo "# kernel=$(uname -r) cpus=$NCPU cyclictest SCHED_OTHER -i 1000 -l $LOOPS per case; duty primaries iters_per_10ms=$ITERS"
setup_cgroups

# Wait until the plugin has answered (it polls the shared folder on the
# host's clock, which the guest's does not follow).
await() {
	while [ "$(test -e "$OUT/$1" && echo y)" != "$2" ]; do sleep 0.01; done
}

# window CASE: one cyclictest run inside an open profile window.
window() {
	settle
	touch "$OUT/on"
	await on.seen y
	# The arguments of lib.sh's cyclictest_other, without its check: the
	# ps that reads the threads' class would count in the window (the
	# latency bench checks that these arguments give SCHED_OTHER).
	cyclictest -i 1000 -l "$LOOPS" -t 1 -q -h 20000 --policy=other > /tmp/cyc.out 2>&1 || exit 1
	rm "$OUT/on"
	await on.seen ""
	echo "$1" > "$OUT/dump.tmp"
	mv "$OUT/dump.tmp" "$OUT/dump"
	await dump ""
	hist=$(awk '/^[0-9]/ { if ($2 > 0) printf "%d:%d ", $1, $2 }' /tmp/cyc.out)
	echo "$hist" > "$OUT/cyc.$1"
	echo "case=$1 $hist"
}

duty=
for _ in $(seq "$NCPU"); do
	"$BIN/duty" 1000000 "$ITERS" 10 > /dev/null &
	duty="$duty $!"
done
window eevdf
start_guests sched_idle
window eevdf_guests
stop_guests
start_sched linger
cat /proc/kallsyms > "$OUT/kallsyms"
window linger
start_guests linger
window linger_guests
stop_guests
stop_sched
start_sched linger --no-accounting
cat /proc/kallsyms > "$OUT/kallsyms.noacct"
window linger_noacct
stop_sched
start_sched bpfland
cat /proc/kallsyms > "$OUT/kallsyms.bpfland"
window bpfland
stop_sched
for d in $duty; do kill -TERM $d; done
wait $duty 2> /dev/null
exit 0
