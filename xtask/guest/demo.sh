#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The demo, as run inside the sched_ext guest by `cargo xtask demo`: load
# scx_linger, start a primary job and a guest job in their own cgroups, tag
# the guest, and show what an operator sees (`scx_linger top` and `stats`)
# beside each job's CPU use as the kernel counts it. While the primary job is busy the guest gets
# (almost) nothing; when the primary job ends the guest takes the idle CPUs.
set -u
AGENT=${1:?usage: demo.sh AGENT SECONDS}
SECONDS_TO_RUN=${2:-20}
CG=/sys/fs/cgroup
NCPU=$(nproc)

echo "kernel: $(uname -r), $NCPU CPUs, sched_ext state: $(cat /sys/kernel/sched_ext/state)"

"$AGENT" run &
agent=$!
i=0
until [ "$(cat /sys/kernel/sched_ext/state)" = enabled ]; do
	i=$((i + 1))
	if [ $i -gt 300 ] || ! kill -0 $agent 2>/dev/null; then
		echo "demo: scx_linger did not come up" >&2
		exit 1
	fi
	sleep 0.1
done
echo "sched_ext state: $(cat /sys/kernel/sched_ext/state)"
echo "root/ops: $(cat /sys/kernel/sched_ext/root/ops)"

# Two jobs in their own cgroups, as a batch system would start them.
mkdir -p $CG/demo/owner-job $CG/demo/guest-job
"$AGENT" tag demo/guest-job guest
"$AGENT" ls
spin() { sh -c 'echo $$ > '"$1"'/cgroup.procs; exec sh -c "while :; do :; done"' & }
for _ in $(seq "$NCPU"); do
	spin $CG/demo/owner-job
	spin $CG/demo/guest-job
done
echo "started owner-job ($NCPU CPU-bound threads, primary) and guest-job ($NCPU, guest)"

usage() { awk '/usage_usec/ {print $2}' "$CG/demo/$1/cpu.stat"; }
now_us() { echo $(( $(date +%s%N) / 1000 )); }
report() {
	a1=$(usage owner-job) b1=$(usage guest-job) w1=$(now_us)
	span=$((w1 - w0))
	echo "t=${t}s  owner-job $(( (a1 - a0) * 100 / span ))%  guest-job $(( (b1 - b0) * 100 / span ))%  (of one CPU, $NCPU in all; sched_ext $(cat /sys/kernel/sched_ext/state))"
	a0=$a1 b0=$b1 w0=$w1
}
STEP=5
t=0 a0=$(usage owner-job) b0=$(usage guest-job) w0=$(now_us)
half=$((SECONDS_TO_RUN / 2))
# What an operator watching the node sees: `scx_linger top` (run in tmux,
# since this script has no terminal) and `scx_linger stats`.
tmux new-session -d -s demo -x 130 -y 40 "$AGENT top" 2>/dev/null
while [ $t -lt "$half" ]; do sleep $STEP; t=$((t + STEP)); report; done
echo "---- scx_linger top, both jobs running ----"
tmux capture-pane -p -t demo 2>/dev/null || echo "(tmux is missing: cargo xtask deps installs it)"
echo "---- scx_linger stats ----"
"$AGENT" stats
echo "owner-job finishes; its CPUs fall idle"
echo 1 > $CG/demo/owner-job/cgroup.kill
while [ $t -lt "$SECONDS_TO_RUN" ]; do sleep $STEP; t=$((t + STEP)); report; done
echo "---- scx_linger stats, owner-job gone: the guest takes the idle CPUs ----"
"$AGENT" stats
tmux kill-session -t demo 2>/dev/null
echo "root/ops while the jobs ran: $(cat /sys/kernel/sched_ext/root/ops)"

echo 1 > $CG/demo/guest-job/cgroup.kill
kill -TERM $agent
wait $agent
rc=$?
echo "scx_linger exited with $rc; sched_ext state: $(cat /sys/kernel/sched_ext/state)"
exit $rc
