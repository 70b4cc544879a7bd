# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the bench scripts: the cgroups they use, how each policy
# runs a guest, one spinning guest per CPU, and starting and stopping the
# sched_ext schedulers.
#
# Needs AGENT (scx_linger); SCX_LAYERED, LAYERED_CONFIG and SCX_BPFLAND
# (the pinned builds from `cargo xtask bench`) for the cases that use them.
CG=/sys/fs/cgroup

# bench-idle (cpu.idle = 1) and bench/guest (labelled by scx_linger,
# matched by the scx_layered config). The idle cgroup sits at the top
# level, beside the primaries (in the root cgroup): cpu.idle makes a
# cgroup idle against its siblings, so one nested in a normal cgroup
# would still compete with the primaries at full weight.
setup_cgroups() {
	echo +cpu > $CG/cgroup.subtree_control
	mkdir -p $CG/bench-idle $CG/bench/guest
	echo 1 > $CG/bench-idle/cpu.idle || exit 1
}

# start_filling_gangs AGENT: stage the binaries, set up the cgroups, and
# start two spinning-barrier gangs of one thread per CPU (NCPU is set),
# bench/gang-a and bench/gang-b, tagged gang through AGENT, so that gangs
# fill every CPU for as long as the script runs.
start_filling_gangs() {
	stage_bins
	NCPU=$(nproc)
	setup_cgroups
	for g in gang-a gang-b; do
		mkdir -p "$CG/bench/$g"
		run_in "$CG/bench/$g" "$BIN/barrier" --threads "$NCPU" \
			--rounds 1000000000 --iters 20000 > /dev/null 2>&1 &
		"$1" tag "bench/$g" gang > /dev/null || exit 1
	done
}

# Copy the workload binaries (BIN) to a tmpfs and point BIN there: run
# from the host's 9p share, every exec of a job would spend guest time
# reading it, time no job accounts for.
stage_bins() {
	mkdir -p /run/bench-bin
	mountpoint -q /run/bench-bin || mount -t tmpfs bench-bin /run/bench-bin || exit 1
	for b in duty spin job barrier swarm; do
		[ -x "$BIN/$b" ] && cp "$BIN/$b" /run/bench-bin/
	done
	BIN=/run/bench-bin
}

# run_in CGROUP CMD...: exec CMD inside CGROUP (every thread it makes is
# in it from the start).
run_in() {
	exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$@"
}

# `python3 -c "$EXT_EXEC" CMD...` runs CMD as a SCHED_EXT task (util-linux's
# chrt learnt --ext in 2.41, after the Debian release this guest runs).
EXT_EXEC='import os, sys
os.sched_setscheduler(0, 7, os.sched_param(0))  # SCHED_EXT
os.execvp(sys.argv[1], sys.argv[1:])'

# as_guest HOW CMD...: exec CMD the way policy HOW runs a guest job. HOW:
# none (an ordinary job), nice19, sched_idle, cpu_idle, linger, layered,
# linger_partial (scx_linger --partial: SCHED_EXT in the guest cgroup).
# It replaces the calling shell, so call it with & (then $! is the job's
# pid, whatever the policy) or in a ( subshell ).
as_guest() {
	how=$1
	shift
	case $how in
	none) exec "$@" ;;
	nice19) exec nice -n 19 "$@" ;;
	sched_idle) exec chrt --idle 0 "$@" ;;
	cpu_idle) run_in $CG/bench-idle "$@" ;;
	linger | layered) run_in $CG/bench/guest "$@" ;;
	linger_partial) run_in $CG/bench/guest python3 -c "$EXT_EXEC" "$@" ;;
	*) echo "as_guest: unknown policy $how" >&2; exit 1 ;;
	esac
}

# start_guests HOW: one spinner per CPU (NCPU; BIN), as guest under policy HOW.
guests=
start_guests() {
	guests=
	for _ in $(seq "$NCPU"); do
		as_guest "$1" "$BIN/spin" > /dev/null &
		guests="$guests $!"
	done
	sleep 0.2
}
stop_guests() {
	for g in $guests; do kill -TERM $g; done
	wait $guests 2> /dev/null
	guests=
}

# The sched_ext scheduler a policy needs, if any, and its arguments.
sched_of() {
	case $1 in
	linger_partial) echo linger --partial ;;
	linger | linger_*) echo linger ;;
	layered | layered_*) echo layered ;;
	bpfland) echo bpfland ;;
	*) echo none ;;
	esac
}

# start_sched NAME [ARGS...]: load scheduler NAME (linger, layered,
# bpfland; none does nothing) and wait until sched_ext is enabled.
sched_pid=
start_sched() {
	name=$1
	shift
	case $name in
	none) return ;;
	linger) "$AGENT" run "$@" > /dev/null 2>&1 & ;;
	layered) "$SCX_LAYERED" "$@" "f:$LAYERED_CONFIG" > /dev/null 2>&1 & ;;
	bpfland) "$SCX_BPFLAND" "$@" > /dev/null 2>&1 & ;;
	esac
	sched_pid=$!
	until [ "$(cat /sys/kernel/sched_ext/state)" = enabled ]; do
		kill -0 $sched_pid 2> /dev/null || {
			echo "$name did not start" >&2
			exit 1
		}
		sleep 0.05
	done
	# Label the guests' cgroup, where the script made one.
	if [ "$name" = linger ] && [ -d $CG/bench/guest ]; then
		"$AGENT" tag bench/guest guest > /dev/null || exit 1
	fi
}

# Let what the last run left behind (a scheduler's unload, exiting
# processes) finish before the next run's clock starts.
settle() {
	sync
	sleep 0.5
}

# Unload the scheduler start_sched loaded and wait until sched_ext is off.
stop_sched() {
	[ -n "$sched_pid" ] || return 0
	kill -TERM $sched_pid
	wait $sched_pid
	sched_pid=
	until [ "$(cat /sys/kernel/sched_ext/state)" = disabled ]; do sleep 0.05; done
}

# cyclictest_other LOOPS OUT: one cyclictest run of LOOPS 1 ms wake-ups
# as an ordinary (SCHED_OTHER) task, its output (with a histogram in 1 us
# buckets up to 20 ms) in OUT; fails unless it ran as SCHED_OTHER. No -p:
# cyclictest's -p makes the measuring thread SCHED_FIFO whatever
# --policy says, and an RT thread bypasses sched_ext (the bench would
# measure the kernel's RT class, not the scheduler), so the run checks its
# threads' class while it runs: the main thread and the measuring one,
# both TS.
cyclictest_other() {
	cyclictest -i 1000 -l "$1" -t 1 -q -h 20000 --policy=other > "$2" 2>&1 &
	cyc=$!
	sleep 0.5
	classes=$(ps -L -o cls= -p $cyc | tr -d ' ' | sort | uniq -c | tr '\n' ' ')
	case $classes in
	*" 2 TS "* | "2 TS "*) ;;
	*)
		echo "cyclictest's threads are not the two SCHED_OTHER ones expected: $classes" >&2
		kill $cyc 2> /dev/null
		return 1
		;;
	esac
	wait $cyc || {
		echo "cyclictest failed: $(tail -2 "$2")" >&2
		return 1
	}
}

# trace_switches SECS [KB]: SECS seconds of the kernel's sched_wakeup and
# sched_switch events, left in $T/trace for the caller to read (KB: the
# per-CPU buffer, 4096 by default).
T=/sys/kernel/tracing
trace_switches() {
	mountpoint -q $T || mount -t tracefs nodev $T || exit 1
	echo 0 > $T/tracing_on
	echo "${2:-4096}" > $T/buffer_size_kb
	echo 1 > $T/events/sched/sched_wakeup/enable
	echo 1 > $T/events/sched/sched_switch/enable
	echo > $T/trace
	echo 1 > $T/tracing_on
	sleep "$1"
	echo 0 > $T/tracing_on
	echo 0 > $T/events/sched/sched_wakeup/enable
	echo 0 > $T/events/sched/sched_switch/enable
}

# wait_summary LABEL: waits in us, one a line and sorted, on stdin; prints
# LABEL=count and their p50, p99 and longest.
wait_summary() {
	awk -v label="$1" '{ w[NR] = $1 } END {
		printf "%s=%d p50=%d p99=%d max=%d us\n", label, NR,
			w[int(NR * 0.5) + 1], w[int(NR * 0.99) + 1], w[NR]
	}'
}

# comm_waits COMM: from $T/trace, how long each wait of a task named COMM
# lasted, from its wake-up (or its preemption) to its next run: in us, one
# a line, sorted.
comm_waits() {
	awk -v comm="$1" '
	function ts(line, a, n) { sub(/: sched_.*/, "", line); n = split(line, a, " "); return a[n] + 0 }
	/sched_wakeup:/ {
		if (index($0, "comm=" comm " ") == 0) next
		p = $0; sub(/.* pid=/, "", p); sub(/ .*/, "", p)
		if (!(p in since)) since[p] = ts($0)
		next
	}
	/sched_switch:/ {
		if (index($0, "prev_comm=" comm " ") && $0 ~ /prev_state=R/) {
			p = $0; sub(/.*prev_pid=/, "", p); sub(/ .*/, "", p)
			since[p] = ts($0)
		}
		p = $0; sub(/.*next_pid=/, "", p); sub(/ .*/, "", p)
		if (!(p in since)) next
		printf "%d\n", (ts($0) - since[p]) * 1e6
		delete since[p]
	}' $T/trace | sort -n
}
