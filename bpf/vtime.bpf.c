/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vtime.bpf.c - the order within a tier: one rule, a deadline.
 *
 * Each tier has a dispatch queue (DSQ) per LLC. A task's vtime advances
 * by the CPU time it used, divided by its weight (nice times its
 * cgroup's cpu.weight, weight.bpf.c), so within a tier heavier tasks get
 * proportionally more CPU. It queues by its deadline, as under EEVDF:
 * its vtime plus its request, what it asks to run before it sleeps
 * again, in vtime (pure.h: request_ns(): its usual run per wake-up, at
 * most a slice). A task that sleeps most of its time asks for little and
 * is ahead of a CPU-bound task of the same vtime; a CPU-bound task asks
 * for the whole slice, so compute jobs order among themselves by vtime
 * alone and keep their long slices. What a task runs, its vtime is
 * charged, so the request only orders: it gives no task more CPU.
 *
 * The deadline is the task's key, kept in p->scx.dsq_vtime, the field the
 * kernel orders a DSQ by; the request in vtime is kept beside it (req),
 * and the vtime is the key less the request. Both change only while the
 * task is on no DSQ: when a slice is charged (vtime_charge(), which also
 * renews the request from the run just ended) and when it wakes
 * (vtime_wake(), a new burst).
 *
 * The same deadline decides the rest: a CPU that needs work takes the
 * smallest key of the highest tier that has one; a primary whose slice
 * ended keeps its CPU unless a primary with a smaller key waits; and a
 * waking primary takes a primary's CPU when its deadline comes first
 * (wakeup.bpf.c).
 *
 * Per-tier clocks, one per LLC (each LLC has its own queues: llc.bpf.c):
 * the vtime of the task of that tier that most recently started running
 * there. Every task that arrives at a tier's queue (it woke, it is new,
 * or its tier changed) is placed against it by one rule, tier_floor().
 *
 * Keys are compared only against one LLC's clock. A task that moves to
 * another LLC (queued there, stolen, or handed an idle CPU there) keeps
 * its distance from the clock: rebased() moves it by the difference of
 * the two clocks. One clock shared by per-LLC queues would instead let
 * an LLC whose tasks run more push every other LLC's newcomers behind
 * their own queue (scx_layered found this collapse vtime ordering, its
 * PR 1026), and every CPU of the node would write one cache line.
 */
#include "ctx.bpf.h"
#include "llc.bpf.h"
#include "vtime.bpf.h"
#include "weight.bpf.h"

/* An LLC's clocks, a cache line of their own: only its CPUs write them. */
struct llc_clocks {
	u64	tier[LINGER_NR_TIERS];
} __attribute__((aligned(64)));

static struct llc_clocks vtime_now[LINGER_MAX_LLCS];

static u64 *tier_clock(u32 tier, u32 llc)
{
	/*
	 * Out of range is a bug elsewhere; any clock will do then. Masks, not
	 * comparisons: clang may test a copy of the index and use the
	 * original, which the verifier then sees unbounded.
	 */
	_Static_assert(!(LINGER_MAX_LLCS & (LINGER_MAX_LLCS - 1)) &&
		       !(LINGER_NR_TIERS & (LINGER_NR_TIERS - 1)),
		       "tier_clock() masks with these");
	return &vtime_now[llc & (LINGER_MAX_LLCS - 1)]
			.tier[tier & (LINGER_NR_TIERS - 1)];
}

/* @vtime of @tier, measured on LLC @from's clock, measured on @to's. */
static u64 rebased(u64 vtime, u32 tier, u32 from, u32 to)
{
	if (from == to)
		return vtime;
	return vtime - *tier_clock(tier, from) + *tier_clock(tier, to);
}

/*
 * Where a task arriving at @tier's queue on @llc stands, with a request
 * of @req in vtime: its vtime @credit behind the tier's clock, but its
 * key never behind the queue's head (pure.h: arrival_vtime() says why).
 * Waking tasks are raised to it with a slice of credit (vtime_wake()
 * says how much), tasks whose tier changed start a slice behind, and
 * new tasks start on it with none (vtime_enable() says why).
 */
static u64 tier_floor(u32 tier, u32 llc, u64 req, u64 credit)
{
	struct task_struct *head;

	head = __COMPAT_scx_bpf_dsq_peek(tier_dsq(tier, llc));
	return arrival_vtime(*tier_clock(tier, llc) + req, credit, head,
			     head ? head->scx.dsq_vtime : 0);
}

/*
 * The key a task queues with on @llc. Normally its own: that is what
 * makes weights work. But keys are only comparable within a tier and an
 * LLC, so a task whose tier changed since it last queued starts on its
 * new tier's floor, and one that changed LLC is rebased. (Sleepers are
 * handled in vtime_wake().) A global function: reclassify_dsq() and
 * release_held() call it inside their DSQ walks.
 */
__noinline u64 task_queue_vtime(const struct task_struct *p __arg_trusted,
				struct task_ctx *tctx, u32 tier, u32 llc)
{
	u64 vtime = p->scx.dsq_vtime;

	/*
	 * Load the task's vtime before deciding: otherwise clang may merge the
	 * two loads into one instruction on two kinds of pointer, which the
	 * verifier rejects.
	 */
	barrier_var(vtime);
	if (!tctx)
		return vtime;
	if (tctx->vt.vtier != tier)
		vtime = tier_floor(tier, llc, tctx->vt.req, tier_slice(tier));
	else
		vtime = rebased(vtime, tier, tctx->vt.llc, llc);
	tctx->vt.vtier = tier;
	tctx->vt.llc = llc;
	return vtime;
}

/*
 * A task lighter than the default weight (nice above 0, SCHED_IDLE, a
 * cgroup with a low cpu.weight) runs a proportionally shorter slice, as
 * EEVDF gives it a smaller request: the same share, in shorter runs more
 * often. Its vtime is charged at 100/weight per nanosecond, so one whole
 * 20 ms slice at nice 19 (weight 1) would put it 2 s of vtime past the
 * clock, to wait until every other task of its tier had run 2 s more
 * (the age guard in guard.bpf.c bounds what is left of such waits).
 * No floor under it: the kernel ends a slice only at a tick or at a
 * scheduling event, so a nice-19 task's 200 us runs to the next tick as
 * a longer one would (a 500 us floor changed nothing measurable,
 * bench/light-slice-ab.sh).
 */
__hidden u64 weighted_slice(struct task_struct *p, struct task_ctx *tctx,
			    u64 slice)
{
	u32 tier = tctx ? tctx->cls.tier : LINGER_TIER_PRIMARY;
	u64 w = task_weight(p, tctx, false), most;

	if (w >= 100)
		return slice;
	most = tier_slice(tier) * w / 100;
	return slice < most ? slice : most;
}

/*
 * The key @p will have once charged for @ran ns on a CPU, inversely to
 * its weight: at the default weight of 100, one nanosecond of CPU costs
 * one nanosecond of vtime. @refresh: see task_weight().
 *
 * @ran is the time it really held the CPU (account.bpf.c's run clock),
 * not the part of its slice that is gone: a preempting kick
 * (SCX_KICK_PREEMPT) zeroes the slice of the task it throws off, so that
 * measure would charge a guest kicked after 50 us for its whole 10 ms
 * slice. Any waking primary may kick a guest; the kicked guest would then
 * queue a slice behind the guests that were not kicked, and wait until
 * each of them had run that much more: among many guests, for seconds.
 */
__hidden u64 charged_vtime(struct task_struct *p, struct task_ctx *tctx,
			   u64 ran, bool refresh)
{
	return p->scx.dsq_vtime + ran * 100 / task_weight(p, tctx, refresh);
}

/*
 * Renew @p's request from its bursts, in vtime at @weight: its key moves
 * by the change, its vtime stays. @p is on no DSQ (its key may change).
 */
static void renew_request(struct task_struct *p, struct task_ctx *tctx,
			  u64 weight)
{
	u64 req = task_request_ns(tctx) * 100 / (weight ?: 1);

	p->scx.dsq_vtime += req - tctx->vt.req;
	tctx->vt.req = req;
}

__hidden void vtime_charge(struct task_struct *p, struct task_ctx *tctx,
			   u64 ran, bool refresh)
{
	u64 weight = task_weight(p, tctx, refresh);

	p->scx.dsq_vtime += ran * 100 / weight;
	if (!tctx)
		return;
	tctx->vt.burst += ran;
	renew_request(p, tctx, weight);
}

/*
 * Every LLC's head, not only @cpu's own: a CPU whose primary keeps it
 * slice after slice would otherwise never serve another LLC's backlog
 * (stealing happens only when a CPU has nothing of its own). Rebased, so
 * the heads' keys compare with @vtime as if they had queued here.
 */
__hidden bool primary_waits_before(s32 cpu, u64 vtime)
{
	u32 own = cpu_llc_of(cpu), llc;

	bpf_for(llc, 0, nr_llcs) {
		struct task_struct *q;

		q = __COMPAT_scx_bpf_dsq_peek(tier_dsq(LINGER_TIER_PRIMARY, llc));
		if (q && time_before(rebased(q->scx.dsq_vtime, LINGER_TIER_PRIMARY,
					     llc, own), vtime))
			return true;
	}
	return false;
}

/*
 * A task wakes: its run since it last woke goes into its running
 * average (about four wake-ups), and a new burst, so a new request,
 * begins. It may bank at most one slice of vtime over the tasks that
 * kept running, and a light task one slice of its own CPU time (vtime at
 * its weight, as its runs are charged): enough to run soon, not enough
 * to monopolise the CPU after a long sleep. Banked in plain vtime, a
 * nice-19 task (charged 100 ns a ns) kept a fifth of a millisecond of its
 * CPU time across a sleep, and light tasks that slept between runs got
 * 0.4-0.7 of their weight's share (bench/results/rule-ab-runs.md). A
 * heavy task keeps the plain slice: at its weight the slice would be a
 * sliver of vtime, and it would queue behind every default sleeper.
 * Tasks that stay runnable (preempted, slice expired) keep their vtime
 * untouched, so weights hold exactly.
 */
__hidden void vtime_wake(struct task_struct *p, struct task_ctx *tctx, u32 tier)
{
	u64 weight, credit, floor;

	if (!tctx)
		return;
	tctx->vt.avg_burst = (tctx->vt.avg_burst * 3 + tctx->vt.burst) / 4;
	tctx->vt.burst = 0;
	weight = task_weight(p, tctx, false);
	renew_request(p, tctx, weight);
	credit = tier_slice(tier) * 100 / (weight < 100 ? weight : 100);
	floor = tier_floor(tier, tctx->vt.llc, tctx->vt.req, credit);
	if (time_before(p->scx.dsq_vtime, floor))
		p->scx.dsq_vtime = floor;
}

/*
 * The tier clock follows the vtime of whatever starts running, except
 * members of slotted gangs. They run by slot, not by vtime: one that
 * holds a CPU all slot long would drive the clock far ahead of the
 * ordinary tasks sharing the other CPUs, and every waking task, placed
 * no earlier than the clock minus a slice, would then wait behind all of
 * them for as long as the gang runs: long enough for the kernel's
 * watchdog to eject the scheduler.
 */
__hidden void vtime_advance(struct task_struct *p, struct task_ctx *tctx,
			    bool slotted, s32 cpu)
{
	u32 tier = tctx ? tctx->cls.tier : LINGER_TIER_PRIMARY;
	u32 llc = cpu_llc_of(cpu);
	u64 *clock = tier_clock(tier, llc), vtime;

	if (slotted)
		return;
	/*
	 * It starts on another LLC than it queued for (an idle CPU there was
	 * handed it, or that LLC stole it): from now on its vtime is
	 * measured there. It is on no DSQ, so its vtime may change.
	 */
	if (tctx && tctx->vt.vtier == tier && tctx->vt.llc != llc) {
		p->scx.dsq_vtime = rebased(p->scx.dsq_vtime, tier, tctx->vt.llc, llc);
		tctx->vt.llc = llc;
	}
	vtime = p->scx.dsq_vtime - (tctx ? tctx->vt.req : 0);
	if (time_before(*clock, vtime))
		*clock = vtime;
}

__hidden void vtime_detach(struct task_ctx *tctx)
{
	tctx->vt.vtier = LINGER_NR_TIERS;
}

__hidden void vtime_enable(struct task_struct *p, struct task_ctx *tctx)
{
	u32 llc = cpu_llc_of(scx_bpf_task_cpu(p));

	/*
	 * A new task starts on the clock with the shortest request, and no
	 * credit: it has slept through nothing. With a slice of credit, as a
	 * sleeper gets, every process of a fork burst (a shell pipeline, a
	 * job's launch) came before a short sleeper that had kept the clock
	 * itself, each for up to a slice: cyclictest on a quiet node waited
	 * 29-69 ms behind a `ps | sort | uniq` pipeline. EEVDF places a new
	 * task at zero lag likewise. Its key is still never behind the
	 * queue's head, so where wakers queue far behind the clock (gang
	 * slots held the CPUs, a burst of jobs) it is next in line, not
	 * behind all of them.
	 */
	p->scx.dsq_vtime = tier_floor(LINGER_TIER_PRIMARY, llc, MIN_REQUEST_NS, 0);
	if (tctx) {
		tctx->vt.vtier = LINGER_TIER_PRIMARY;
		tctx->vt.llc = llc;
		tctx->vt.req = MIN_REQUEST_NS;
	}
}
