/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang_run.bpf.h - gang members on CPUs: their queues, their placement,
 * and the per-CPU and per-gang bookkeeping the ops do at every switch.
 * Design: gang.bpf.c (the whole of gangs) and gang_run.bpf.c.
 */
#ifndef __SCX_LINGER_GANG_RUN_BPF_H
#define __SCX_LINGER_GANG_RUN_BPF_H

#include "gang.bpf.h"

u64 task_dsq(const struct task_ctx *tctx, u32 tier, u32 llc);
/* A member of a gang, if @tctx's task is one, is displaced by a higher class. */
void gang_note_displaced(const struct task_ctx *tctx);
void gang_enqueue(struct task_struct *p, struct task_ctx *tctx, u32 gang, u64 enq_flags);
bool gang_send_home(struct task_struct *p __arg_trusted, const struct task_ctx *tctx,
		    s32 cpu, u64 now);
bool gang_swap_enqueue(struct task_struct *p, const struct task_ctx *tctx, u64 enq_flags);
bool gang_leave_pinned(struct task_struct *p __arg_trusted, const struct task_ctx *tctx,
		       s32 cpu, u64 now);
/* What gang_dispatch() did with the CPU. */
enum gang_dispatch {
	GANG_NOTHING,		/* no member for it: the caller goes on */
	GANG_DISPATCHED,	/* a waiting member moves here */
	GANG_KEEP_PREV,		/* prev, a member, keeps it: the caller refills it */
};
enum gang_dispatch gang_dispatch(u32 tier, s32 cpu, struct task_struct *prev,
				 struct task_ctx *ptctx, u64 now);
u64 guest_gangs_queued(void);
bool guard_grant_guest_gang(void);
void gang_note_running(s32 cpu, struct task_ctx *tctx, u64 now);

/*
 * The ops' bookkeeping below runs at every wake-up or switch, on every
 * node, gangs or not, and mostly finds nothing to do: the test is
 * inlined, and only a change calls into gang_run.bpf.c (a BPF-to-BPF call
 * cost more than the test, the profile in bench/README.md).
 */
void gang_recount_runnable(struct task_ctx *tctx);
void gang_uncount_counted(struct task_ctx *tctx);
void gang_charge_ran(s32 cpu, struct task_ctx *tctx, u64 ran);

/*
 * How many members of each gang want a CPU: counted from runnable() to
 * quiescent() (gang_run.bpf.c), and re-synced by enqueue() and running(),
 * for a task whose gang changed while it stayed runnable.
 */
static __always_inline void gang_count_runnable(struct task_ctx *tctx)
{
	if (tctx->gang.counted != tctx->cls.gang)
		gang_recount_runnable(tctx);
}

static __always_inline void gang_uncount_runnable(struct task_ctx *tctx)
{
	if (tctx->gang.counted != LINGER_GANG_NONE)
		gang_uncount_counted(tctx);
}

/*
 * Charge @ran ns of CPU: a member's to its gang, a non-member's run during
 * a primary gang slot to the slot's gangs as back-fill.
 */
static __always_inline void gang_charge_run(s32 cpu, struct task_ctx *tctx, u64 ran)
{
	if (ran && ((tctx && tctx->cls.gang != LINGER_GANG_NONE) ||
		    (active_primary && !gang_open)))
		gang_charge_ran(cpu, tctx, ran);
}

/*
 * stopping(), after gang_charge_run(): a member that sleeps leaves its CPU
 * to whoever wants it. One still @runnable does not: dispatch() has
 * already chosen what runs next here (a fellow member's turn, a relief
 * turn, the node's machinery), and its running() rewrites the word. Until
 * then the CPU stays its gang's, so that the member's own enqueue(), which
 * comes first, finds it taken (cpu_free_for()). Cleared, the member
 * claimed its CPU back and preempted the very task chosen in its place,
 * whose own enqueue() did the same: a rank and OpenMPI's launcher, one
 * gang on a 1-CPU node, threw each other off every 80-120 us, each run
 * little more than the switch, until the launcher slept.
 */
static __always_inline void gang_note_stopping(s32 cpu, bool runnable)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);

	if (!runnable && cg && cg->running)
		cg->running = 0;
}

/*
 * How long a CPU counts as one ordinary work is pinned to after such work
 * last waited or began a slice there (gang_run.bpf.c: pinned work).
 * Long beside a pinned task's period (cyclictest's 1-2 ms, a daemon's
 * second), so that members do not drift back between its wake-ups; a
 * mark that outlives its task costs only a member's first choice.
 */
#define GANG_PINNED_NS		(1000 * 1000 * 1000ULL)

/*
 * Ordinary primary work (@tctx's task @p) queues or begins a slice on
 * @cpu: if it may run nowhere else, mark the CPU for the members. Only
 * with primary gangs scheduled, and at most every GANG_PINNED_NS / 8:
 * other CPUs read the line. Not a kernel thread: every CPU has per-CPU
 * ones, and the node's machinery has its own turn (machinery.bpf.c).
 */
static __always_inline void gang_note_pinned(const struct task_struct *p,
					     const struct task_ctx *tctx, s32 cpu)
{
	struct cpu_gang *cg;
	u64 now;

	if (!scheduled_primary || p->nr_cpus_allowed != 1 ||
	    (p->flags & PF_KTHREAD) || sched_gang(tctx) != LINGER_GANG_NONE)
		return;
	cg = lookup_cpu_gang(cpu);
	now = scx_bpf_now();
	if (cg && now - cg->pinned_at > GANG_PINNED_NS / 8)
		cg->pinned_at = now;
}

/* dispatch() begins: a reservation on this CPU has served its purpose. */
static __always_inline void gang_cpu_dispatching(s32 cpu)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);

	if (cg && (cg->reserved || cg->released)) {
		cg->reserved = 0;
		cg->released = false;
	}
}

/* A higher sched class took @cpu (@released), or one of ours runs there again. */
static __always_inline void gang_cpu_released(s32 cpu, bool released)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);

	if (cg)
		cg->released = released;
}

#endif /* __SCX_LINGER_GANG_RUN_BPF_H */
