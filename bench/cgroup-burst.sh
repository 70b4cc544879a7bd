#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# cgroup-burst.sh: how fast a node makes and removes N cgroups, one at a
# time from a shell loop as a job manager under load would, under the
# kernel's default scheduler (EEVDF) and then with scx_linger loaded, in
# one boot. Prints each phase's wall time, the node's busy CPU time and
# the agent's own CPU time (s). A cgroup made or removed is an event the
# agent reacts to (src/labels/watch.rs); this is the figure for what that
# costs the node.
#
# usage (in the guest, e.g. through
# `cargo xtask vm --cpus 16 --single-thread --mem 4G -- ...`):
#   cgroup-burst.sh AGENT [N]
set -u
AGENT=$1 N=${2:-1000}
CG=/sys/fs/cgroup
HZ=$(getconf CLK_TCK)
mkdir -p $CG/burst || exit 1

busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
agent_ticks() { if [ -n "${agent:-}" ]; then awk '{ print $14 + $15 }' /proc/$agent/stat; else echo 0; fi; }
now() { date +%s.%N; }

phase() {
	b0=$(busy) a0=$(agent_ticks) t0=$(now)
	i=0
	while [ $i -lt "$N" ]; do mkdir $CG/burst/c$i || exit 1; i=$((i + 1)); done
	t1=$(now)
	i=0
	while [ $i -lt "$N" ]; do rmdir $CG/burst/c$i || exit 1; i=$((i + 1)); done
	t2=$(now) b1=$(busy) a1=$(agent_ticks)
	awk -v who="$1" -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v hz="$HZ" \
		-v b="$((b1 - b0))" -v a="$((a1 - a0))" 'BEGIN {
		printf "%s: %d cgroups: make %.1f s, remove %.1f s; node busy %.1f s, agent %.1f s\n",
			who, n, t1 - t0, t2 - t1, b / hz, a / hz
	}'
}

agent=
phase eevdf
"$AGENT" run > /tmp/cgroup-burst-agent.log 2>&1 &
agent=$!
until [ "$(cat /sys/kernel/sched_ext/state)" = enabled ]; do
	kill -0 $agent 2> /dev/null || { echo "scx_linger did not start" >&2; exit 1; }
	sleep 0.1
done
sleep 2
phase scx_linger
kill -TERM $agent
wait $agent
rmdir $CG/burst
