/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_linger - a sched_ext scheduler for shared compute nodes.
 *
 * Two classes share the machine with strict priority between them:
 *
 *  - primary: the owners' jobs, system daemons, kernel threads.
 *  - guest: jobs that may only soak up the cycles primaries leave idle
 *    (Linger-Longer; Stiehr & Chamberlain 2006). A guest never runs on a
 *    CPU while a primary that could use that CPU waits.
 *
 * Each class has one shared dispatch queue (DSQ) ordered by virtual time
 * (vtime): a task's vtime advances by the CPU time it used, divided by its
 * weight (nice times its cgroup's cpu.weight), so within a class heavier
 * tasks get proportionally more CPU. A CPU that needs work takes the
 * smallest-vtime task of the highest class that has one; a primary whose
 * slice ended keeps its CPU unless a primary with a smaller vtime waits.
 *
 *  - A waking primary that finds an idle CPU goes straight to that CPU's
 *    local DSQ. Else, if a CPU it may use runs a guest, it goes to that
 *    CPU and preempts the guest on arrival; else it queues, and a CPU that
 *    starts running a guest meanwhile is kicked (preempt.bpf.h). Guests
 *    always go through the guest DSQ, so a CPU choosing its next task
 *    always sees waiting primaries first.
 *  - Per-CPU primaries (kworkers, ksoftirqd, pinned tasks) go straight to
 *    their CPU's local DSQ, where they run before anything queued in a
 *    class DSQ: they must not wait behind a compute job's long slice.
 *  - Starved guests get a bounded trickle of CPU (guard.bpf.h), so the
 *    kernel's watchdog never sees a task wait too long and a guest holding
 *    something a primary needs always gets through.
 *
 * Which class a task is in comes from labels on its cgroup
 * (classify.bpf.h); the agent keeps those in a map.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

/*
 * Tunables. The agent writes them before load; they are constant for the
 * life of the BPF program, which lets the verifier prune dead branches.
 */

/*
 * Slice of CPU a primary may run before its CPU looks for other work. Long:
 * compute jobs lose cache and TLB state at every switch, and on a batch
 * node throughput matters more than interactivity (Kolivas). Only a higher
 * class preempts; within the class, the slice end is the switch point.
 */
const volatile u64 primary_slice_ns = LINGER_DEFAULT_PRIMARY_SLICE_US * 1000;

/*
 * Slice of a guest. Guests are kicked off the moment a primary wants their
 * CPU, so this bounds nothing for primaries; it only sets how often guests
 * rotate among themselves.
 */
const volatile u64 guest_slice_ns = LINGER_DEFAULT_GUEST_SLICE_US * 1000;

/*
 * Starvation guard: when guests have waited this long with no guest
 * dispatched, a CPU gives one of them guard_slice_ns (see guard.bpf.h).
 */
const volatile u64 guard_interval_ns = LINGER_DEFAULT_GUARD_INTERVAL_MS * 1000000;
const volatile u64 guard_slice_ns = LINGER_DEFAULT_GUARD_SLICE_US * 1000;

/*
 * Relief for ordinary primaries while gangs hold the CPUs. Ordinary work
 * is sure of the open phase that ends each cycle, but between two open
 * phases a waking shell, sshd or node daemon would wait up to a whole
 * cycle (222 ms with two 100 ms slots), and wake-up-heavy work crawls.
 * Once the head of the primary queue has waited relief_wait_ns, the next
 * CPU to choose during a slot gives ordinary work a turn of
 * relief_slice_ns, at most once per relief_wait_ns on the whole node
 * (gang_relief()). 0 disables.
 */
const volatile u64 relief_wait_ns = LINGER_DEFAULT_RELIEF_WAIT_US * 1000;
const volatile u64 relief_slice_ns = LINGER_DEFAULT_RELIEF_SLICE_US * 1000;
/* A task that joins a turn about to end still gets this much. */
#define RELIEF_MIN_SLICE_NS	100000ULL

/* The kernel watchdog's timeout (ops.timeout_ms), which the guard beats. */
const volatile u64 watchdog_ns = LINGER_DEFAULT_WATCHDOG_MS * 1000000;

/* Class of tasks in cgroups that no label reaches (root's stay primary). */
const volatile u32 default_class = LINGER_CLASS_PRIMARY;

/*
 * Per-class and per-job accounting for the operator's view (account.bpf.h).
 * Off, the scheduler decides the same way; only the figures are missing.
 * It exists so that the cost of counting can be measured.
 */
const volatile bool accounting = true;

/*
 * Testing only (the agent's hidden --debug-fail-after-ms): this long after
 * init, fail with scx_bpf_error(), so that the agent's handling of a
 * scheduler error (report, back-off, restart, give up) can be staged on a
 * real kernel. 0: never.
 */
const volatile u64 debug_fail_after_ns = 0;
static u64 initialised_at;

/* Exit information the agent reports when the scheduler stops. */
UEI_DEFINE(uei);

/*
 * Per-class vtime clocks: the vtime of the task of that class that most
 * recently started running. New and waking tasks are placed against it.
 */
static u64 vtime_now[LINGER_NR_CLASSES];

/* Per-CPU state, touched only by its own CPU. */
struct cpu_ctx {
	u64	last_grant;	/* when this CPU last made a guard grant */
	bool	grant_pending;	/* the guest being moved here is a grant */
	bool	relief_pending;	/* the primary being moved here is a relief */
	u64	relief_end;	/* this CPU's relief turn lasts until then */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct cpu_ctx);
	__uint(max_entries, 1);
} cpu_ctxs SEC(".maps");

static struct cpu_ctx *lookup_cpu_ctx(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_ctxs, &zero);
}

static u64 class_slice(u32 class)
{
	return class == LINGER_CLASS_GUEST ? guest_slice_ns : primary_slice_ns;
}

static u64 *class_vtime_now(u32 class)
{
	return &vtime_now[class < LINGER_NR_CLASSES ? class : 0];
}

#include "stats.bpf.h"
#include "classify.bpf.h"
#include "account.bpf.h"
#include "preempt.bpf.h"
#include "weight.bpf.h"

/*
 * The vtime a task queues with. Normally its own: that is what makes
 * weights work. But vtime is only comparable within a class, so a task
 * whose class changed since it last queued starts level with its new
 * class's clock. (Sleepers are handled in runnable().)
 */
static u64 task_queue_vtime(const struct task_struct *p, struct task_ctx *tctx,
			    u32 class)
{
	u64 vtime = p->scx.dsq_vtime;

	/*
	 * Load the task's vtime before deciding: otherwise clang may merge the
	 * two loads into one instruction on two kinds of pointer, which the
	 * verifier rejects.
	 */
	barrier_var(vtime);
	if (tctx && tctx->vclass != class) {
		tctx->vclass = class;
		vtime = *class_vtime_now(class);
	}
	return vtime;
}

/*
 * The vtime @p will have once charged for what it used of its current
 * slice, inversely to its weight (nice and cpu.weight, see weight.bpf.h):
 * at the default weight of 100, one nanosecond of CPU costs one nanosecond
 * of vtime. @refresh: see task_weight().
 */
static u64 charged_vtime(struct task_struct *p, struct task_ctx *tctx,
			 bool refresh)
{
	u32 class = tctx ? tctx->class : LINGER_CLASS_PRIMARY;
	u64 slice = class_slice(class);

	if (tctx && tctx->granted)
		slice = guard_slice_ns;
	else if (tctx && tctx->relief_slice)
		slice = tctx->relief_slice;
	/* A slice can be refilled above the default; never charge < 0. */
	u64 used = p->scx.slice < slice ? slice - p->scx.slice : 0;

	return p->scx.dsq_vtime + used * 100 / task_weight(p, tctx, refresh);
}

/*
 * Let @prev run another slice: charge it for the one it just used first
 * (no stopping()/running() pair happens in between).
 */
static void gang_charge_run(s32 cpu, struct task_ctx *tctx, u64 ran);

static void keep_running(struct task_struct *prev, struct task_ctx *tctx,
			 s32 cpu)
{
	u32 class = tctx ? tctx->class : LINGER_CLASS_PRIMARY;

	/* The figures see the slice it ran, before the next one begins. */
	gang_charge_run(cpu, tctx, account_checkpoint(tctx, scx_bpf_now()));
	prev->scx.dsq_vtime = charged_vtime(prev, tctx, false);
	if (tctx) {
		tctx->granted = false;
		tctx->relief_slice = 0;
	}
	prev->scx.slice = class_slice(class);
	mark_guest_cpu(cpu, class == LINGER_CLASS_GUEST);
	stat_inc(LINGER_STAT_KEEP_PREV);
}

/* Does the first task queued on @dsq come before @vtime? */
static bool dsq_head_before(u64 dsq, u64 vtime)
{
	struct task_struct *q;
	bool before = false;

	bpf_for_each(scx_dsq, q, dsq, 0) {
		before = time_before(q->scx.dsq_vtime, vtime);
		break;
	}
	return before;
}

/* See debug_fail_after_ns. Called from the gang timer, which always ticks. */
static void debug_staged_failure(u64 now)
{
	if (debug_fail_after_ns && now - initialised_at >= debug_fail_after_ns)
		scx_bpf_error("staged failure (--debug-fail-after-ms), as a test asked");
}

#include "gang.bpf.h"
#include "gang_admit.bpf.h"
#include "gang_clock.bpf.h"
#include "gang_run.bpf.h"
#include "guard.bpf.h"
#include "reclassify.bpf.h"

s32 BPF_STRUCT_OPS(linger_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u32 class = task_class(p, tctx);
	bool is_idle = false;
	s32 cpu;

	/* Gang members are placed by enqueue(), in step with their slot. */
	if (sched_gang(tctx))
		return prev_cpu;

	/*
	 * The kernel's default idle-CPU search prefers prev_cpu, then an idle
	 * SMT core, then any idle CPU in the same LLC and NUMA node. A primary
	 * that finds one runs there at once. A guest goes through the guest
	 * DSQ even then, so that the CPU, when it wakes, takes any primary
	 * that arrived in the meantime first.
	 */
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (class != LINGER_CLASS_PRIMARY)
		return cpu;
	if (is_idle) {
		stat_inc(LINGER_STAT_DIRECT_IDLE);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns, 0);
		return cpu;
	}

	/*
	 * No idle CPU. If one it may use runs a guest, go straight to that
	 * CPU and preempt the guest on arrival: the wake-up IPI that brings
	 * the task there is also what ends the guest's slice, so the primary
	 * waits no longer than it would for an idle CPU.
	 */
	cpu = guest_cpu_for(p, prev_cpu);
	if (cpu >= 0) {
		stat_inc(LINGER_STAT_PREEMPT_GUEST);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns,
				   SCX_ENQ_PREEMPT);
		return cpu;
	}
	return prev_cpu;
}

void BPF_STRUCT_OPS(linger_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u32 class = task_class(p, tctx);
	u32 gang = sched_gang(tctx);
	s32 cpu;

	if (tctx)
		gang_count_runnable(tctx);
	if (gang && tctx) {
		gang_enqueue(p, tctx, gang, enq_flags);
		return;
	}
	if (class == LINGER_CLASS_PRIMARY) {
		/*
		 * A primary that can only run on the CPU it is on gains nothing
		 * from the shared queue: give it that CPU's local DSQ, and take
		 * the CPU from a guest if one holds it.
		 */
		if (p->nr_cpus_allowed == 1 || is_migration_disabled(p)) {
			stat_inc(LINGER_STAT_DIRECT_PINNED);
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns,
					   enq_flags);
			cpu = scx_bpf_task_cpu(p);
			if (cpu_runs_guest(cpu)) {
				scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
				stat_inc(LINGER_STAT_PREEMPT_GUEST);
			}
			return;
		}
		stat_inc(LINGER_STAT_ENQ_PRIMARY);
		if (tctx)
			tctx->queued_at = scx_bpf_now();
		scx_bpf_dsq_insert_vtime(p, LINGER_CLASS_PRIMARY, primary_slice_ns,
					 task_queue_vtime(p, tctx, class), enq_flags);
	} else {
		u64 vtime = task_queue_vtime(p, tctx, class);

		stat_inc(LINGER_STAT_ENQ_GUEST);
		if (time_after(vtime, guest_vtime_tail))
			guest_vtime_tail = vtime;
		scx_bpf_dsq_insert_vtime(p, LINGER_CLASS_GUEST, guest_slice_ns,
					 vtime, enq_flags);
	}

	/*
	 * select_cpu() is skipped for tasks that did not just wake (preempted
	 * or yielding tasks, new tasks on some paths), so an idle CPU may
	 * exist that nobody told: wake one that may run the task.
	 */
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (cpu >= 0) {
		stat_inc(LINGER_STAT_KICK_IDLE);
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}
	/* No idle CPU: a primary takes one from a guest. */
	if (class == LINGER_CLASS_PRIMARY)
		preempt_guest_for(p);
}

void BPF_STRUCT_OPS(linger_dispatch, s32 cpu, struct task_struct *prev)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx();
	u64 now = scx_bpf_now();
	struct task_ctx *tctx = NULL;
	bool prev_ordinary = false;

	gang_cpu_dispatching(cpu);

	/* Starved guests first, but only as often as the guard allows. */
	if (cctx && guard_due(cctx, now)) {
		cctx->grant_pending = true;
		if (scx_bpf_dsq_move_to_local(LINGER_CLASS_GUEST, 0) ||
		    guard_grant_guest_gang()) {
			cctx->last_grant = now;
			guard_note_guest_dispatch(now);
			stat_inc(LINGER_STAT_GUARD_GRANT);
			return;
		}
		cctx->grant_pending = false;
	}

	/* Labels or the gang table changed: re-sort the tasks already waiting. */
	reclassify_queued();

	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		tctx = lookup_task_ctx(prev);
		/*
		 * An ordinary primary: not a guest, not a member of a slotted
		 * gang. Its class is re-derived here, not taken from the cache:
		 * a task kept on its CPU slice after slice never passes
		 * enqueue(), and it may have moved or been relabelled since.
		 */
		prev_ordinary = task_class(prev, tctx) == LINGER_CLASS_PRIMARY &&
				!sched_gang(tctx);
	} else {
		prev = NULL;
	}

	/*
	 * In a gang slot, the slot's primary gangs come first, but ordinary
	 * work that has waited too long gets a short relief turn before them.
	 */
	if (!gang_open && gang_relief(now))
		return;
	if (!gang_open && gang_dispatch(LINGER_CLASS_PRIMARY, cpu, prev, tctx, now))
		return;

	/*
	 * An ordinary primary that is still runnable keeps its CPU unless a
	 * primary with a smaller vtime waits: fair among primaries, and never
	 * handed to a guest (strict priority covers the task on the CPU too).
	 */
	if (prev_ordinary &&
	    !dsq_head_before(LINGER_CLASS_PRIMARY, charged_vtime(prev, tctx, false))) {
		keep_running(prev, tctx, cpu);
		return;
	}

	if (scx_bpf_dsq_move_to_local(LINGER_CLASS_PRIMARY, 0)) {
		stat_inc(LINGER_STAT_DISPATCH_PRIMARY);
		return;
	}

	/* The head was not for this CPU: a runnable primary still wins. */
	if (prev_ordinary) {
		keep_running(prev, tctx, cpu);
		return;
	}

	/* The open phase: the next primary gang fills what ordinary work leaves. */
	if (gang_open && gang_dispatch(LINGER_CLASS_PRIMARY, cpu, prev, tctx, now))
		return;

	/*
	 * No primary for this CPU. Announce that it is about to run a guest,
	 * then look at the primary DSQ once more: see preempt.bpf.h for why
	 * this order means no primary is ever left waiting behind a guest.
	 */
	mark_guest_cpu(cpu, true);
	if (scx_bpf_dsq_move_to_local(LINGER_CLASS_PRIMARY, 0)) {
		stat_inc(LINGER_STAT_DISPATCH_PRIMARY);
		return;
	}
	/* Guests: those in the slot's guest gangs first, then the rest. */
	if (gang_dispatch(LINGER_CLASS_GUEST, cpu, prev, tctx, now))
		return;
	if (scx_bpf_dsq_move_to_local(LINGER_CLASS_GUEST, 0)) {
		guard_note_guest_dispatch(now);
		stat_inc(LINGER_STAT_DISPATCH_GUEST);
		return;
	}

	/*
	 * Nothing is waiting. If the previous task still wants the CPU, let it
	 * run another slice instead of going through the idle loop (unless it
	 * is a gang member whose slot is over). It keeps running without a
	 * new running() call, so fix the CPU's mark here.
	 */
	if (prev && !waits_for_slot(tctx))
		keep_running(prev, tctx, cpu);
}

void BPF_STRUCT_OPS(linger_runnable, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u32 class = task_class(p, tctx);
	u64 floor = *class_vtime_now(class) - class_slice(class);

	if (tctx)
		gang_count_runnable(tctx);
	account_runnable(tctx, scx_bpf_now());

	/*
	 * A task waking from sleep may bank at most one slice of vtime over
	 * the tasks that kept running: enough to run soon, not enough to
	 * monopolise the CPU after a long sleep. Tasks that stay runnable
	 * (preempted, slice expired) keep their vtime untouched, so weights
	 * hold exactly.
	 */
	if (time_before(p->scx.dsq_vtime, floor))
		p->scx.dsq_vtime = floor;
}

void BPF_STRUCT_OPS(linger_running, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	struct cpu_ctx *cctx = lookup_cpu_ctx();
	u32 class = tctx ? tctx->class : LINGER_CLASS_PRIMARY;
	u64 *clock = class_vtime_now(class);
	u64 now = scx_bpf_now();
	bool granted = false;

	if (cctx) {
		if (class == LINGER_CLASS_GUEST && cctx->grant_pending && tctx) {
			tctx->granted = true;
			p->scx.slice = guard_slice_ns;
		}
		cctx->grant_pending = false;
		if (class == LINGER_CLASS_PRIMARY && cctx->relief_pending && tctx) {
			/* What is left of this CPU's relief turn. */
			tctx->relief_slice = time_before(now + RELIEF_MIN_SLICE_NS,
							 cctx->relief_end) ?
					     cctx->relief_end - now : RELIEF_MIN_SLICE_NS;
			p->scx.slice = tctx->relief_slice;
		}
		cctx->relief_pending = false;
	}
	if (tctx)
		granted = tctx->granted;

	/* Only a guest that is not on a guard grant may be kicked off. */
	mark_guest_cpu(scx_bpf_task_cpu(p), class == LINGER_CLASS_GUEST && !granted);
	account_running(tctx, now);
	gang_note_running(scx_bpf_task_cpu(p), tctx, now);

	/*
	 * The class clock follows the vtime of whatever starts running, except
	 * members of slotted gangs. They run by slot, not by vtime: one that
	 * holds a CPU all slot long would drive the clock far ahead of the
	 * ordinary tasks sharing the other CPUs, and every waking task, placed
	 * no earlier than the clock minus a slice, would then wait behind all
	 * of them for as long as the gang runs (measured: the kernel's own
	 * watchdog work starved for 30 s, and the kernel ejected us).
	 */
	if (!sched_gang(tctx) && time_before(*clock, p->scx.dsq_vtime))
		*clock = p->scx.dsq_vtime;
}

void BPF_STRUCT_OPS(linger_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 ran = account_stopping(tctx, runnable, scx_bpf_now());

	p->scx.dsq_vtime = charged_vtime(p, tctx, true);
	gang_note_stopping(scx_bpf_task_cpu(p), tctx, ran);
	if (tctx)
		tctx->relief_slice = 0;

	/* A guard grant sends its guest to the back of the guest queue. */
	if (tctx && tctx->granted) {
		tctx->granted = false;
		if (time_before(p->scx.dsq_vtime, guest_vtime_tail))
			p->scx.dsq_vtime = guest_vtime_tail + 1;
	}
}

void BPF_STRUCT_OPS(linger_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx)
		gang_uncount_runnable(tctx);
	account_quiescent(tctx);
}

/*
 * A higher sched class (RT, deadline, stop) takes this CPU. Tasks waiting
 * in its local DSQ, and the one it ran, would wait until the CPU comes
 * back: send them through enqueue() again. For a gang member that means
 * moving to another CPU, so the gang keeps running together (as the
 * kernel's scx_pair example reacts for its pairs).
 */
void BPF_STRUCT_OPS(linger_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	gang_cpu_released(cpu, true);
	scx_bpf_reenqueue_local();
}

void BPF_STRUCT_OPS(linger_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	gang_cpu_released(cpu, false);
}

void BPF_STRUCT_OPS(linger_enable, struct task_struct *p)
{
	/* A task joining the scheduler starts level with the primaries. */
	p->scx.dsq_vtime = vtime_now[LINGER_CLASS_PRIMARY];
}

s32 BPF_STRUCT_OPS(linger_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	if (!bpf_task_storage_get(&task_ctxs, p, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE))
		return -ENOMEM;
	return 0;
}

s32 BPF_STRUCT_OPS(linger_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	set_cgroup_weight(cgrp, args->weight);
	return 0;
}

void BPF_STRUCT_OPS(linger_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	set_cgroup_weight(cgrp, weight);
}

void BPF_STRUCT_OPS(linger_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx) {
		tctx->cgw = cgroup_weight(to);
		tctx->wgen = weight_gen;
	}
}

s32 BPF_STRUCT_OPS_SLEEPABLE(linger_init)
{
	u32 class, g;
	s32 ret;

	for (class = 0; class < LINGER_NR_CLASSES; class++) {
		ret = scx_bpf_create_dsq(class, -1);
		if (ret) {
			scx_bpf_error("failed to create DSQ %u: %d", class, ret);
			return ret;
		}
	}
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		ret = scx_bpf_create_dsq(GANG_DSQ(g), -1);
		if (ret) {
			scx_bpf_error("failed to create gang DSQ %u: %d", g, ret);
			return ret;
		}
	}
	initialised_at = scx_bpf_now();
	ret = init_guest_cpus();
	if (ret)
		return ret;
	ret = gang_timer_init();
	if (ret)
		scx_bpf_error("failed to start the gang slot timer: %d", ret);
	return ret;
}

void BPF_STRUCT_OPS(linger_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(linger_ops,
	       .select_cpu	= (void *)linger_select_cpu,
	       .enqueue		= (void *)linger_enqueue,
	       .dispatch	= (void *)linger_dispatch,
	       .runnable	= (void *)linger_runnable,
	       .running		= (void *)linger_running,
	       .stopping	= (void *)linger_stopping,
	       .quiescent	= (void *)linger_quiescent,
	       .cpu_release	= (void *)linger_cpu_release,
	       .cpu_acquire	= (void *)linger_cpu_acquire,
	       .enable		= (void *)linger_enable,
	       .init_task	= (void *)linger_init_task,
	       .cgroup_init	= (void *)linger_cgroup_init,
	       .cgroup_set_weight = (void *)linger_cgroup_set_weight,
	       .cgroup_move	= (void *)linger_cgroup_move,
	       .init		= (void *)linger_init,
	       .exit		= (void *)linger_exit,
	       .timeout_ms	= LINGER_DEFAULT_WATCHDOG_MS,
	       .name		= "scx_linger");
