/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * relief.bpf.c - ordinary primary work inside primary gang slots.
 *
 * While primary gangs hold every CPU of a slot, ordinary primary work (a
 * shell, sshd, a node daemon, a batch system's step daemon starting the
 * next job) is sure only of the open phase that ends each cycle (222 ms
 * apart with two 100 ms slots). Work that wakes often would then crawl:
 * a step daemon's start-up is thousands of short runs, each one waiting
 * for the next open phase.
 *
 * Relief is a CPU budget the gangs give up: ordinary work may run
 * relief_slice_ns in every relief_period_ns on the whole node (2 ms in
 * 40 by default: 5% of one CPU), on top of the open phase. The budget is
 * charged what ordinary work actually runs, so a short run costs only
 * itself, and it is spent at once: a waking ordinary task whose usual run
 * the budget covers preempts the gang member on its CPU (relief_kick()),
 * and that CPU's dispatch() moves it there (relief_dispatch()). A backlog
 * of CPU-bound work, which runs whole turns, gets one turn per period, as
 * it would from a timer. What a gang can lose to relief is bounded by the
 * budget, whatever ordinary work does, and a member's partners spin for
 * no longer than the turn that displaced it.
 *
 * The budget is one word for the node (pure.h: relief_budget()): a CPU
 * claims a turn with one compare-and-swap, its run is settled against
 * the claim when its slice ends (relief_charge()). A budget unused for a
 * period is not saved up beyond one turn, so a quiet stretch does not buy
 * a long break in the gangs later.
 */
#include "ctx.bpf.h"
#include "gang.bpf.h"
#include "llc.bpf.h"
#include "relief.bpf.h"
#include "stats.bpf.h"
#include "vtime.bpf.h"

/* The shortest turn: less is not worth a member's displacement. */
#define RELIEF_MIN_SLICE_NS	(100 * 1000ULL)
/* The longest run a settlement charges (a runaway's tick-late stop). */
#define RELIEF_MAX_CHARGE_NS	(100 * 1000 * 1000ULL)

/* The budget's clock (pure.h); every CPU reads and claims from it. */
static u64 relief_clock;

/*
 * What a turn for @tctx's task should hold: its usual run (the larger of
 * its average run per wake-up and its run since it last woke,
 * vtime.bpf.c), within [RELIEF_MIN_SLICE_NS, one turn].
 * A CPU-bound task needs a whole turn, so it waits for one.
 */
static u64 relief_need(const struct task_ctx *tctx)
{
	u64 need = task_usual_run(tctx);

	if (need < RELIEF_MIN_SLICE_NS)
		need = RELIEF_MIN_SLICE_NS;
	return need < relief_slice_ns ? need : relief_slice_ns;
}

static u64 budget_now(u64 now)
{
	return relief_budget(relief_clock, now, relief_period_ns, relief_slice_ns);
}

/*
 * Give @grant ns back to the budget, or take @ran - @grant more. Global,
 * with scalars only: verified once, not in each op that ends a turn.
 */
__noinline int relief_settle(u64 grant, u64 ran)
{
	if (ran > RELIEF_MAX_CHARGE_NS)
		ran = RELIEF_MAX_CHARGE_NS;
	if (ran == grant)
		return 0;
	/* A wrapping add: a refund moves the clock back. */
	__sync_fetch_and_add(&relief_clock,
			     relief_cost(ran, relief_period_ns, relief_slice_ns) -
			     relief_cost(grant, relief_period_ns, relief_slice_ns));
	return 0;
}

/*
 * Global: verified once on its own, or dispatch() outgrows the verifier.
 * Called at every dispatch outside the open phase, gangs or none: the
 * cheap tests first (the cached admission before a DSQ lookup).
 */
__noinline bool relief_dispatch(u64 now)
{
	struct cpu_ctx *cctx = lookup_this_cpu_ctx();
	u64 clock, budget, need = 0;
	u32 llc;

	if (!relief_period_ns || !cctx)
		return false;
	/*
	 * The turn this CPU ran (prev) ends here: dispatch() comes before
	 * prev's stopping(), and a new claim would overwrite its grant.
	 */
	if (cctx->relief.grant && !cctx->relief.pending) {
		relief_settle(cctx->relief.grant, now - cctx->relief.started);
		cctx->relief.grant = 0;
	}
	if (!gang_admitted(LINGER_TIER_PRIMARY) || !tier_nr_queued(LINGER_TIER_PRIMARY))
		return false;
	clock = relief_clock;
	budget = relief_budget(clock, now, relief_period_ns, relief_slice_ns);
	if (budget < RELIEF_MIN_SLICE_NS)
		return false;
	/*
	 * The least a waiting head needs, on any LLC: the CPU takes the head
	 * of its own LLC's queue first, which is near enough. A head that
	 * needs more than the budget holds waits for it to grow.
	 */
	bpf_for(llc, 0, nr_llcs) {
		struct task_struct *q;
		struct task_ctx *qctx;
		u64 n;

		q = __COMPAT_scx_bpf_dsq_peek(tier_dsq(LINGER_TIER_PRIMARY, llc));
		qctx = q ? lookup_task_ctx(q) : NULL;
		if (!qctx || !qctx->guard.ready_at)
			continue;
		n = relief_need(qctx);
		if (!need || n < need)
			need = n;
	}
	if (!need || budget < need)
		return false;
	/* One CPU claims it; another that lost the race looks again later. */
	if (__sync_val_compare_and_swap(&relief_clock, clock,
					relief_claim(clock, now, need, relief_period_ns,
						     relief_slice_ns)) != clock)
		return false;
	cctx->relief.grant = need;
	cctx->relief.pending = true;
	if (tier_move_to_local(LINGER_TIER_PRIMARY, bpf_get_smp_processor_id())) {
		stat_inc(LINGER_STAT_GANG_RELIEF);
		return true;
	}
	cctx->relief.pending = false;
	cctx->relief.grant = 0;
	relief_settle(need, 0);
	return false;
}

/*
 * Global, with scalars only: verified once, not in every path of
 * enqueue(). @cpu runs a member of an admitted primary gang (not the
 * open phase) and the budget covers @need: preempt it, so that its
 * dispatch() gives the turn.
 */
__noinline bool relief_kick_cpu(s32 cpu, u64 need, u64 now)
{
	if (gang_open || !primary_member_holds(lookup_cpu_gang(cpu)) ||
	    budget_now(now) < need)
		return false;
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	return true;
}

__hidden void relief_kick(const struct task_struct *p, const struct task_ctx *tctx,
			  u64 enq_flags)
{
	/*
	 * Only a primary gang's slot holds a CPU from ordinary work: with
	 * none scheduled, or in the open phase, the wake-up path pays no
	 * call here.
	 */
	if (!relief_period_ns || !scheduled_primary || gang_open || !tctx ||
	    !(enq_flags & SCX_ENQ_WAKEUP))
		return;
	relief_kick_cpu(scx_bpf_task_cpu(p), relief_need(tctx), scx_bpf_now());
}

/*
 * Global, with scalars only: verified once, beside running()'s paths.
 * Called with a turn pending (relief.bpf.h: relief_running()).
 */
__noinline u64 relief_turn_running(u32 tier, u64 now)
{
	struct cpu_ctx *cctx = lookup_this_cpu_ctx();

	if (!cctx || !cctx->relief.pending)
		return 0;
	cctx->relief.pending = false;
	if (tier == LINGER_TIER_PRIMARY) {
		cctx->relief.started = now;
		return cctx->relief.grant;
	}
	/* Something else took the CPU first: the claim goes back. */
	relief_settle(cctx->relief.grant, 0);
	cctx->relief.grant = 0;
	return 0;
}

/*
 * Global, with scalars only: verified once, not in every slice's end.
 * Called with a turn granted (relief.bpf.h: relief_charge()).
 */
__noinline int relief_turn_charge(u64 ran)
{
	struct cpu_ctx *cctx = lookup_this_cpu_ctx();
	u64 grant;

	/* Pending: the claim is for the task moved here, not the one ending. */
	if (!cctx || !cctx->relief.grant || cctx->relief.pending)
		return 0;
	grant = cctx->relief.grant;
	cctx->relief.grant = 0;
	return relief_settle(grant, ran);
}
