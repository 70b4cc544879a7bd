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
 * A task that sleeps most of its time wakes with a small request and a
 * deadline up to a slice ahead of the CPU-bound tasks' (it banks at most
 * a slice, vtime_wake()), so it gets in at once; CPU-bound tasks ask for
 * whole slices and never preempt one another; a short sleeper that runs
 * long loses its early deadline as it runs. What a task runs, its vtime
 * is charged, so shares still follow the weights.
 *
 * It is applied at three moments, and only there:
 *  - As a primary wakes and finds no idle CPU (enqueue()): against the
 *    primary running on the CPU it last ran on, where its cache is, one
 *    lookup however many CPUs the node has. It goes straight to that
 *    CPU's local DSQ with SCX_ENQ_PREEMPT, which ends the running task's
 *    slice there and then: no trip through the shared queue and no kick.
 *  - As a slice of an ordinary primary begins (running(), or dispatch()
 *    keeps it): against the head of its LLC's primary queue. dispatch()
 *    took the smallest key, so the head comes first only if the starting
 *    task came past the queue (an idle CPU or a guest's CPU was handed
 *    it as it woke) or the head arrived since; two primaries woken by one
 *    timer interrupt, the first of which claims a guest's CPU, are the
 *    common case. The CPU is kicked, and dispatch() chooses again.
 *  - At a scheduler tick of a CPU whose ordinary primary has used up its
 *    request (tick()): against the head again. That covers a running
 *    task whose deadline was earlier when it started and has since moved
 *    (a short sleeper that went on running). Ending the slice hands the
 *    choice to dispatch(). Before its request is used up the running
 *    task goes on, as under EEVDF, which re-schedules at a tick only
 *    then: a task woken since, with a slice of sleeper's credit
 *    (vtime_wake()), would otherwise take every CPU at the next tick
 *    from whatever runs, and tasks that talk through pipes (hackbench)
 *    would switch at every tick instead of every few messages. The
 *    wait this leaves a short sleeper is a tick at most past the
 *    running task's request (4 ms at HZ=250).
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
#include "llc.bpf.h"
#include "stats.bpf.h"

/* What runs on each CPU: written by that CPU, read by wakers elsewhere. */
struct wakeup_cpu {
	u64	key;		/* the running task's key when its slice began */
	u64	req;		/* and its request, ns */
	u64	weight;		/* and its weight (task_weight()) */
	u64	started;	/* when the slice began (0: no ordinary primary) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct wakeup_cpu);
	__uint(max_entries, 1);
} wakeup_cpus SEC(".maps");

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

/* Does key @key come before the deadline of the primary running as @wc? */
static bool comes_first(u64 key, const struct wakeup_cpu *wc, u64 ran)
{
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
	if (!q || !bpf_cpumask_test_cpu(cpu, q->cpus_ptr) ||
	    !comes_first(q->scx.dsq_vtime, wc, ran))
		return false;
	qctx = lookup_task_ctx(q);
	return qctx && !qctx->wk.sync_wake;
}

__hidden void wakeup_note_start(struct task_struct *p, struct task_ctx *tctx,
				s32 cpu)
{
	u32 zero = 0;
	struct wakeup_cpu *wc = bpf_map_lookup_elem(&wakeup_cpus, &zero);

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
	wc->req = request_ns(tctx->vt.avg_burst, tctx->vt.burst,
			     tier_slice(LINGER_TIER_PRIMARY));
	wc->weight = task_weight(p, tctx, false) ?: 1;
	wc->started = scx_bpf_now() ?: 1;
	if (!tctx->wk.jumped)
		return;
	tctx->wk.jumped = false;
	if (wake_preempt && head_comes_first(cpu, wc, 0)) {
		stat_inc(LINGER_STAT_QUEUE_PREEMPT);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
}

__hidden void wakeup_note_stopping(void)
{
	u32 zero = 0;
	struct wakeup_cpu *wc = bpf_map_lookup_elem(&wakeup_cpus, &zero);

	if (wc)
		wc->started = 0;
}

__hidden bool wakeup_preempts(struct task_struct *p, struct task_ctx *tctx)
{
	struct wakeup_cpu *wc;
	u32 zero = 0;
	s32 cpu;

	/* Cleared as it starts running (wakeup_note_start()). */
	if (!wake_preempt || !tctx || tctx->wk.sync_wake)
		return false;
	cpu = scx_bpf_task_cpu(p);
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	wc = bpf_map_lookup_percpu_elem(&wakeup_cpus, &zero, cpu);
	if (!wc || !wc->started ||
	    !comes_first(p->scx.dsq_vtime, wc, ran_so_far(wc)))
		return false;
	stat_inc(LINGER_STAT_WAKE_PREEMPT);
	return true;
}

__hidden void wakeup_tick(struct task_struct *p, s32 cpu)
{
	u32 zero = 0;
	struct wakeup_cpu *wc = bpf_map_lookup_elem(&wakeup_cpus, &zero);
	u64 ran;

	if (!wake_preempt || !wc || !wc->started)
		return;
	/* Until its request is used up, the running task goes on (EEVDF). */
	ran = ran_so_far(wc);
	if (ran < wc->req || !head_comes_first(cpu, wc, ran))
		return;
	stat_inc(LINGER_STAT_QUEUE_PREEMPT);
	p->scx.slice = 0;
}
