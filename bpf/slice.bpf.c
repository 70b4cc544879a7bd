/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * slice.bpf.c - a slice's start and end, and the ways dispatch() keeps a
 * CPU's task on it (the ops: main.bpf.c).
 */
#include "ctx.bpf.h"
#include "account.bpf.h"
#include "bandwidth.bpf.h"
#include "gang.bpf.h"
#include "gang_run.bpf.h"
#include "llc.bpf.h"
#include "machinery.bpf.h"
#include "preempt.bpf.h"
#include "relief.bpf.h"
#include "slice.bpf.h"
#include "smt.bpf.h"
#include "stats.bpf.h"
#include "vtime.bpf.h"
#include "wakeup.bpf.h"

/*
 * Per-slice bookkeeping, written once. A slice ends when its task stops
 * (stopping()) or when dispatch() keeps it for another (keep_running(),
 * with no stopping()/running() pair in between); a slice begins at
 * running() or there. What a run as a whole means (its run delay, the
 * wait clock, the gang slot's member count) stays with running() and
 * stopping().
 */

/*
 * The slice is over: charge @ran ns, the kernel's own charge
 * (account.bpf.c), to the task's vtime (and renew its request), its
 * cgroups' cpu.max budgets and its gang (or the slot's back-fill), and to
 * relief's budget if it ran a relief turn. @refresh: read its cgroup
 * weight afresh (at a stop; a kept task's weight is the one it ran
 * with).
 */
__hidden void charge_slice(struct task_struct *p, struct task_ctx *tctx,
			   u64 ran, u64 now, bool refresh)
{
	s32 cpu = scx_bpf_task_cpu(p);

	vtime_charge(p, tctx, ran, refresh);
	bw_charge(p, tctx, ran, now);
	gang_charge_run(cpu, tctx, ran);
	relief_charge(ran);
	machinery_charge(tctx, cpu, ran);
}

/*
 * A slice of @slice ns (before weighting) begins for @p on @cpu: no
 * longer than its cgroups' cpu.max leaves it; the CPU's marks for the
 * preemption and SMT rules; and the tier clock follows its vtime
 * (vtime.bpf.c), a kept task's too, else a task kept for seconds would
 * leave the clock behind and every newcomer that far ahead of it; and
 * what the preemption rule compares wakers with (wakeup.bpf.c). A slice
 * on a guard grant (tctx->guard.granted) is one no primary may preempt.
 */
__hidden void start_slice(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
			  u64 slice, u64 now)
{
	u32 tier = tctx ? tctx->cls.tier : LINGER_TIER_PRIMARY;
	bool granted = tctx && tctx->guard.granted;

	p->scx.slice = weighted_slice(p, tctx, slice);
	/*
	 * cpu.max: with nothing left, a slice of 0. A task already picked
	 * stops at once (the kick makes its CPU schedule again) and enqueue()
	 * holds it; a kept one is enqueued by the kernel instead of kept.
	 */
	if (!bw_none()) {
		u64 left = bw_left(p, tctx, now, NULL);

		if (left < p->scx.slice)
			p->scx.slice = left;
		if (!left)
			scx_bpf_kick_cpu(cpu, 0);
	}
	/* Only a guest that is not on a guard grant may be kicked off. */
	mark_guest_cpu(cpu, tier == LINGER_TIER_GUEST && !granted);
	if (tier == LINGER_TIER_PRIMARY)
		gang_note_pinned(p, tctx, cpu);
	smt_note_cpu(cpu, tier == LINGER_TIER_PRIMARY);
	vtime_advance(p, tctx, sched_gang(tctx) != LINGER_GANG_NONE, cpu);
	wakeup_note_start(p, tctx, cpu, now);
}

/*
 * Let @prev, still runnable, run another slice on @cpu. A BPF function of
 * its own (it returns a scalar, as 6.12 requires of one), not inlined:
 * dispatch() calls it in three places and dispatch_gang() in one, and
 * the verifier would walk an inlined copy on every path to each.
 */
__noinline int keep_running(struct task_struct *prev __arg_trusted,
			    struct task_ctx *tctx, s32 cpu)
{
	u32 tier = tctx ? tctx->cls.tier : LINGER_TIER_PRIMARY;
	/* The figures see the slice it ran, before the next one begins. */
	u64 now = scx_bpf_now();

	charge_slice(prev, tctx, account_checkpoint(prev, tctx, now), now, false);
	/* A guard grant is one slice. */
	if (tctx)
		tctx->guard.granted = false;
	start_slice(prev, tctx, cpu, tier_slice(tier), now);
	stat_inc(LINGER_STAT_KEEP_PREV);
	return 0;
}

/*
 * May @prev, still runnable, run on? Not once its cgroups' cpu.max has
 * nothing left with its run so far counted: then it is no candidate to
 * keep its CPU (stopping() charges it, enqueue() holds it), and the CPU
 * takes what waits instead of idling with a task that may not run.
 */
__hidden bool may_run_on(struct task_struct *prev, struct task_ctx *tctx, u64 now)
{
	if (bw_none())
		return true;
	return bw_left(prev, tctx, now, NULL) > account_ran(tctx, now);
}

/*
 * The active gangs of @tier take this CPU: a member on it keeps it, or it
 * takes a waiting member. True if dispatch() is done. A global function,
 * verified once rather than at each of dispatch()'s three calls.
 */
__noinline bool dispatch_gang(u32 tier, s32 cpu,
			      struct task_struct *prev __arg_trusted __arg_nullable,
			      struct task_ctx *tctx, u64 now)
{
	switch (gang_dispatch(tier, cpu, prev, tctx, now)) {
	case GANG_KEEP_PREV:
		/* Or, outside its gang's home, it goes there: keep nothing. */
		if (gang_send_home(prev, tctx, cpu, now))
			return true;
		/*
		 * Or, on a CPU ordinary work is pinned to, it goes where none
		 * is, and that work, if it waits, runs here now (the CPU
		 * idles until it wakes if not).
		 */
		if (gang_leave_pinned(prev, tctx, cpu, now)) {
			tier_move_to_local(LINGER_TIER_PRIMARY, cpu);
			return true;
		}
		keep_running(prev, tctx, cpu);
		return true;
	case GANG_DISPATCHED:
		return true;
	default:
		return false;
	}
}
