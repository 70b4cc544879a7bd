/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_linger - a sched_ext scheduler for shared compute nodes.
 *
 * The foundation is a weighted virtual-time (vtime) scheduler with one
 * shared dispatch queue (DSQ) per scheduling class:
 *
 *  - A waking task that finds an idle CPU goes straight to that CPU's local
 *    DSQ: no queueing, no lock on a shared queue.
 *  - Otherwise it waits in its class DSQ, ordered by vtime. A task's vtime
 *    advances by the time it ran, scaled down by its weight (nice, cgroup
 *    cpu.weight), so heavier tasks get proportionally more CPU.
 *  - A CPU that needs work takes the task with the smallest vtime from the
 *    highest class that has one.
 *  - Tasks that may run on one CPU only (per-CPU kthreads, pinned tasks)
 *    go straight to that CPU's local DSQ, where they run before anything
 *    queued in a class DSQ: kworkers and ksoftirqd must not wait behind a
 *    compute job's long slice.
 *
 * Every runnable task is always in a DSQ that some CPU drains, and every
 * slice is finite, so no task can wait forever: the kernel's watchdog
 * never has a reason to eject us.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

/*
 * Tunables. The agent writes them before load; they are constant for the
 * life of the BPF program, which lets the verifier prune dead branches.
 */

/*
 * Slice of CPU a task may run before the CPU looks for other work. Long by
 * default: compute jobs lose cache and TLB state at every switch, and on a
 * batch node throughput matters more than interactivity (Kolivas).
 */
const volatile u64 slice_ns = LINGER_DEFAULT_SLICE_US * 1000;

/*
 * How much vtime a sleeper may bank: a task that slept for long wakes with
 * at most this much advantage over the tasks that kept running. One slice
 * is enough to let it run first without letting it monopolise the CPU.
 */
const volatile u64 vtime_lag_ns = LINGER_DEFAULT_SLICE_US * 1000;

/* Exit information the agent reports when the scheduler stops. */
UEI_DEFINE(uei);

/*
 * Global vtime clock: the vtime of the task that most recently started
 * running. New and waking tasks are placed relative to it.
 */
static u64 vtime_now;

/* Per-CPU event counters (see enum linger_stat in intf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64) * LINGER_NR_STATS);
	__uint(max_entries, 1);
} stats SEC(".maps");

static void stat_inc(enum linger_stat idx)
{
	u32 zero = 0;
	u64 *cnts = bpf_map_lookup_elem(&stats, &zero);

	if (cnts && idx < LINGER_NR_STATS)
		cnts[idx]++;
}

/*
 * The class a task belongs to. Everything is primary for now; the class
 * labels read from cgroups plug in here.
 */
static u32 task_class(const struct task_struct *p)
{
	return LINGER_CLASS_PRIMARY;
}

/* The shared DSQ of a class: its id is the class number. */
static u64 class_dsq(u32 class)
{
	return class;
}

/*
 * The vtime a task queues with: its own, but never more than vtime_lag_ns
 * behind the global clock, so a long sleep does not buy a long burst.
 */
static u64 task_queue_vtime(const struct task_struct *p)
{
	u64 vtime = p->scx.dsq_vtime;

	if (time_before(vtime, vtime_now - vtime_lag_ns))
		vtime = vtime_now - vtime_lag_ns;
	return vtime;
}

s32 BPF_STRUCT_OPS(linger_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	/*
	 * The kernel's default idle-CPU search prefers prev_cpu, then an idle
	 * SMT core, then any idle CPU in the same LLC and NUMA node. If it
	 * found an idle CPU, run there at once: the DSQ of an idle CPU is
	 * empty, so this cannot delay anyone.
	 */
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle) {
		stat_inc(LINGER_STAT_DIRECT_IDLE);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
	}
	return cpu;
}

void BPF_STRUCT_OPS(linger_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu;

	/*
	 * A task that can only run on the CPU it is on gains nothing from a
	 * shared queue; give it that CPU's local DSQ.
	 */
	if (p->nr_cpus_allowed == 1 || is_migration_disabled(p)) {
		stat_inc(LINGER_STAT_DIRECT_PINNED);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
		return;
	}

	stat_inc(LINGER_STAT_ENQ_SHARED);
	scx_bpf_dsq_insert_vtime(p, class_dsq(task_class(p)), slice_ns,
				 task_queue_vtime(p), enq_flags);

	/*
	 * select_cpu() is skipped for tasks that did not just wake (preempted
	 * or yielding tasks, new tasks on some paths), so an idle CPU may
	 * exist that nobody told: wake one that may run the task.
	 */
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (cpu >= 0) {
		stat_inc(LINGER_STAT_KICK_IDLE);
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	}
}

void BPF_STRUCT_OPS(linger_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 class;

	/* Highest class first; within a class, smallest vtime first. */
	for (class = 0; class < LINGER_NR_CLASSES; class++) {
		if (scx_bpf_dsq_move_to_local(class_dsq(class), 0)) {
			stat_inc(LINGER_STAT_DISPATCH);
			return;
		}
	}

	/*
	 * Nothing is waiting. If the previous task still wants the CPU, let it
	 * run another slice instead of going through the idle loop.
	 */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		stat_inc(LINGER_STAT_KEEP_PREV);
		prev->scx.slice = slice_ns;
	}
}

void BPF_STRUCT_OPS(linger_running, struct task_struct *p)
{
	/* The global clock follows the vtime of whatever starts running. */
	if (time_before(vtime_now, p->scx.dsq_vtime))
		vtime_now = p->scx.dsq_vtime;
}

void BPF_STRUCT_OPS(linger_stopping, struct task_struct *p, bool runnable)
{
	u64 used = slice_ns - p->scx.slice;

	/*
	 * Charge the time used, inversely to weight: at the default weight of
	 * 100, one nanosecond of CPU costs one nanosecond of vtime. A slice
	 * refilled by dispatch() can leave more than slice_ns remaining for a
	 * moment; never charge a negative amount.
	 */
	if (p->scx.slice > slice_ns)
		used = 0;
	p->scx.dsq_vtime += used * 100 / p->scx.weight;
}

void BPF_STRUCT_OPS(linger_enable, struct task_struct *p)
{
	/* A task joining the scheduler starts level with the others. */
	p->scx.dsq_vtime = vtime_now;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(linger_init)
{
	u32 class;
	s32 ret;

	for (class = 0; class < LINGER_NR_CLASSES; class++) {
		ret = scx_bpf_create_dsq(class_dsq(class), -1);
		if (ret) {
			scx_bpf_error("failed to create DSQ %u: %d", class, ret);
			return ret;
		}
	}
	return 0;
}

void BPF_STRUCT_OPS(linger_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(linger_ops,
	       .select_cpu	= (void *)linger_select_cpu,
	       .enqueue		= (void *)linger_enqueue,
	       .dispatch	= (void *)linger_dispatch,
	       .running		= (void *)linger_running,
	       .stopping	= (void *)linger_stopping,
	       .enable		= (void *)linger_enable,
	       .init		= (void *)linger_init,
	       .exit		= (void *)linger_exit,
	       .name		= "scx_linger");
