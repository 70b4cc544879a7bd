/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wakeup.bpf.c - preemption within the primary tier, by deadline.
 *
 * Primaries run 20 ms slices (throughput for compute jobs, main.bpf.c).
 * Were the slice end the only switch point within the tier, a primary
 * that wakes for microseconds (a shell, sshd, a node daemon, an MPI
 * progress thread) would wait up to a whole slice behind a CPU-bound
 * primary, where EEVDF lets it in within about a millisecond.
 *
 * The rule is the tier's one order (vtime.bpf.c): a primary whose
 * deadline comes before the running primary's takes its CPU. The running
 * task's deadline is its key as it started until it has run its request,
 * and from then on moves with what it runs (pure.h: running_deadline()).
 * Until then it is also protected from tasks asking for as much as it
 * does (comes_first()): a task that sleeps most of its time asks for
 * little and wakes with a deadline up to a slice ahead (it banks at most
 * a slice, vtime_wake()), so it gets in at once; CPU-bound tasks ask for
 * whole slices and never cut one another's short; a short sleeper that
 * runs long loses its early deadline as it runs. What a task runs, its
 * vtime is charged, so shares still follow the weights.
 *
 * It is applied at three moments, and only there:
 *  - As a primary wakes and finds no idle CPU (enqueue()): against the
 *    primary running on the CPU it last ran on, where its cache is, one
 *    lookup however many CPUs the node has. It goes straight to that
 *    CPU's local DSQ with SCX_ENQ_PREEMPT, which ends the running task's
 *    slice there and then: no trip through the shared queue and no kick.
 *  - As a slice begins for a primary handed a guest's CPU past the queue
 *    (select_cpu()): against the head of its LLC's primary queue. Two
 *    primaries woken by one timer interrupt, the first of which claims a
 *    guest's CPU, are the common case: the second finds no CPU to take
 *    and queues. The CPU is kicked, and dispatch() chooses again. Any
 *    other start came from dispatch(), which took the smallest key.
 *  - At every scheduler tick of a CPU running an ordinary primary
 *    (tick()): against the head again. That covers a waker whose own CPU
 *    ran a task it could not preempt while another CPU runs one it can,
 *    and a running task that has used up its request since (a short
 *    sleeper that went on running). Ending the slice hands the choice to
 *    dispatch(). The wait this leaves is a tick at most (4 ms at
 *    HZ=250), EEVDF's own granularity without HRTICK.
 *
 * Not on a wake-up with SCX_WAKE_SYNC: the waker's word that it is about
 * to sleep itself (a pipe or socket write), so the woken task gets the
 * CPU soon anyway; preempting then only adds a switch per message. A
 * wake-up from an interrupt (a timer, the network, a disk) is never
 * sync. select_cpu() passes the flag on; a task that may run on one CPU
 * only skips select_cpu(), and counts as not sync.
 *
 * Gang members neither preempt nor are preempted here: they run by slot
 * (gang.bpf.c), and relief.bpf.c gives ordinary work its turns beside
 * them. Events: wake_preempt (at a wake-up) and queue_preempt (as a slice
 * begins or at a tick); --no-wake-preempt turns both off.
 */
#include "ctx.bpf.h"
#include "gang.bpf.h"
#include "llc.bpf.h"
#include "stats.bpf.h"
#include "vtime.bpf.h"
#include "wakeup.bpf.h"
#include "weight.bpf.h"

__hidden void wakeup_note_jump(struct task_ctx *tctx)
{
	if (tctx)
		tctx->wk.jumped = true;
}

__hidden void wakeup_note_select(struct task_ctx *tctx, u64 wake_flags)
{
	if (tctx)
		tctx->wk.sync_wake = wake_flags & SCX_WAKE_SYNC;
}

/* How long the primary running as @wc has run in this slice. */
static u64 ran_so_far(const struct wakeup_cpu *wc)
{
	u64 now = scx_bpf_now();

	return time_before(wc->started, now) ? now - wc->started : 0;
}

/*
 * Does a task with key @key and request @req ns come before the primary
 * running as @wc, @ran ns into its slice? By deadline; but until it has
 * used up its request the running task goes on, except for a task that
 * asks for less: EEVDF's RUN_TO_PARITY and PREEMPT_SHORT. So tasks
 * asking for as much (two compute jobs) never cut each other's runs
 * short, however much credit the waker banked while it slept, and
 * tasks that talk through pipes or sockets switch every few messages
 * rather than at each.
 */
static bool comes_first(u64 key, u64 req, const struct wakeup_cpu *wc,
			u64 ran)
{
	if (ran < wc->req && req >= wc->req)
		return false;
	return time_before(key, running_deadline(wc->key, wc->req, ran,
						 wc->weight));
}

/*
 * Does the head of @cpu's LLC's primary queue come before the primary
 * running there as @wc, and may it run on @cpu? Not a head woken with
 * SCX_WAKE_SYNC: as at its wake-up, its waker is about to sleep.
 */
static bool head_comes_first(s32 cpu, const struct wakeup_cpu *wc, u64 ran)
{
	struct task_struct *q;
	struct task_ctx *qctx;

	q = __COMPAT_scx_bpf_dsq_peek(tier_dsq(LINGER_TIER_PRIMARY,
					       cpu_llc_of(cpu)));
	/*
	 * The deadlines first: on most ticks they settle it, and the head's
	 * task storage and cpumask are read only when they do not.
	 */
	if (!q || !time_before(q->scx.dsq_vtime,
			       running_deadline(wc->key, wc->req, ran,
						wc->weight)) ||
	    !bpf_cpumask_test_cpu(cpu, q->cpus_ptr))
		return false;
	qctx = lookup_task_ctx(q);
	return qctx && !qctx->wk.sync_wake &&
	       comes_first(q->scx.dsq_vtime, task_request_ns(qctx), wc, ran);
}

__hidden void wakeup_note_start(struct task_struct *p, struct task_ctx *tctx,
				s32 cpu, u64 now)
{
	struct wakeup_cpu *wc = lookup_wakeup_cpu(cpu);

	/*
	 * How it was woken has been used (wakeup_preempts()): select_cpu()
	 * sets it for the next wake-up, which comes before its runnable() and
	 * enqueue().
	 */
	if (tctx)
		tctx->wk.sync_wake = false;
	if (!wc)
		return;
	/*
	 * Decided here, not by the caller: a branch in running() itself
	 * doubles what the verifier walks through there.
	 */
	if (!tctx || tctx->cls.tier != LINGER_TIER_PRIMARY ||
	    sched_gang(tctx) != LINGER_GANG_NONE) {
		wc->started = 0;
		return;
	}
	wc->key = p->scx.dsq_vtime;
	wc->req = task_request_ns(tctx);
	wc->weight = task_weight(p, tctx, false) ?: 1;
	wc->started = now ?: 1;
	if (!tctx->wk.jumped)
		return;
	tctx->wk.jumped = false;
	if (wake_preempt && head_comes_first(cpu, wc, 0)) {
		stat_inc(LINGER_STAT_QUEUE_PREEMPT);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
}

__hidden bool wakeup_preempts(struct task_struct *p, struct task_ctx *tctx)
{
	struct wakeup_cpu *wc;
	s32 cpu;

	/* Cleared as it starts running (wakeup_note_start()). */
	if (!wake_preempt || !tctx || tctx->wk.sync_wake)
		return false;
	cpu = scx_bpf_task_cpu(p);
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	wc = lookup_wakeup_cpu(cpu);
	if (!wc || !wc->started ||
	    !comes_first(p->scx.dsq_vtime, task_request_ns(tctx), wc,
			 ran_so_far(wc)))
		return false;
	stat_inc(LINGER_STAT_WAKE_PREEMPT);
	return true;
}

__hidden void wakeup_tick(struct task_struct *p, s32 cpu)
{
	struct wakeup_cpu *wc = lookup_wakeup_cpu(cpu);

	if (!wake_preempt || !wc || !wc->started ||
	    !head_comes_first(cpu, wc, ran_so_far(wc)))
		return;
	stat_inc(LINGER_STAT_QUEUE_PREEMPT);
	p->scx.slice = 0;
}
