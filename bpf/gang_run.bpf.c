/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang_run.bpf.c - members on CPUs: where a member waits, which CPU a
 * waking member may take (and whom it pushes off), dispatching a gang's
 * queue, and counting members runnable and running. Design: gang.bpf.c.
 */
#include "account.bpf.h"
#include "gang.bpf.h"
#include "gang_run.bpf.h"
#include "llc.bpf.h"
#include "preempt.bpf.h"
#include "stats.bpf.h"
#include "vtime.bpf.h"

/*
 * A reservation normally ends when the kicked CPU next dispatches or
 * starts a task. One whose kick found nothing to do (the CPU was no
 * longer idle) would otherwise block the CPU for a whole slice.
 */
#define GANG_RESERVATION_NS	(1000 * 1000ULL)

static bool reservation_held(const struct cpu_gang *cg, u64 now)
{
	return cg->reserved && now - cg->reserved_at < GANG_RESERVATION_NS;
}
/*
 * The DSQ @p waits in: its gang's while the gang has slots, else its
 * tier's on LLC @llc. A global function: the DSQ walks call it per task.
 */
__noinline u64 task_dsq(const struct task_ctx *tctx, u32 tier, u32 llc)
{
	u32 gang = sched_gang(tctx);

	return gang != LINGER_GANG_NONE ? GANG_DSQ(gang_of_ref(gang)) :
					  tier_dsq(tier, llc);
}

/*
 * Does a member of a gang admitted beside @tier's lead (a filler) run as
 * gang @rg, where a member of a lead gang (@lead) wants the CPU? Admission
 * counts CPUs, not which CPU each member may use: a filler can hold the
 * one CPU a lead's member is bound to, and the slot is the lead's.
 */
static bool filler_yields(u32 tier, u32 rtier, u32 rg, bool lead)
{
	return lead && tier == rtier && !(tier_active(rtier) & gang_bit(rg));
}

/*
 * May a waking member of a gang of @tier take @cpu? Not from a member of
 * an admitted gang of the same or a higher tier, unless that one is a
 * filler and the waker's gang leads the slot (@lead); never while a higher
 * sched class holds it. @evict_primary: ordinary primaries may be pushed
 * off (a primary gang in its own slot). Global, verified once on its own:
 * a member's look for room asks it for every CPU (room_cost()).
 */
__noinline bool cpu_free_for(s32 cpu, u32 tier, bool evict_primary, bool lead)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);
	struct cpu_gang *cg = cctx ? &cctx->gang : NULL;
	u32 running, rg;

	if (!cg || cg->released || reservation_held(cg, scx_bpf_now()))
		return false;
	running = cg->running;
	if (running != LINGER_GANG_NONE) {
		rg = gang_of_ref(running);
		/*
		 * A guest gang's member yields to a primary gang's, and a gang
		 * left out of a crowded slot yields to the admitted ones.
		 */
		if (gang_may_run(LINGER_TIER_PRIMARY, rg))
			return filler_yields(tier, LINGER_TIER_PRIMARY, rg, lead);
		if (tier == LINGER_TIER_PRIMARY ||
		    !gang_may_run(LINGER_TIER_GUEST, rg))
			return true;
		return filler_yields(tier, LINGER_TIER_GUEST, rg, lead);
	}
	return cpu_runs_guest(cpu) || evict_primary;
}

/*
 * Reserve @cpu for gang @g; false if another member got it first. The
 * caller kicks it, or sends the member there itself. A function of its
 * own, verified once rather than at each caller.
 */
__noinline bool gang_claim(s32 cpu, u32 g)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	u64 now = scx_bpf_now();
	u32 old;

	if (!cg)
		return false;
	old = cg->reserved;
	if ((old && reservation_held(cg, now)) ||
	    __sync_val_compare_and_swap(&cg->reserved, old, gang_ref(g)) != old)
		return false;
	cg->reserved_at = now;
	return true;
}

/* Is @cpu in LLC @home (any CPU is, for a gang without one)? */
static bool in_home(s32 cpu, u32 home)
{
	return home == LINGER_NO_HOME || cpu_llc_of(cpu) == home;
}

/*
 * Ordinary work pinned where members run. A task that may run on one CPU
 * only (rt-tests' cyclictest pins a thread per CPU from CPU 0; a site's
 * per-CPU pollers; a job in a one-CPU cpuset) has nowhere else to go when
 * a member holds that CPU: relief and the open phase are all it gets, and
 * relief cannot carry a task that wakes every few milliseconds
 * (bench/results/soak-runs.md). A member whose gang may run elsewhere
 * has the choice, so it makes it: a CPU where such work waited or began
 * a slice within GANG_PINNED_NS is the last a member takes
 * (gang_take_room()), and a member on one leaves it for a CPU that is not,
 * when one is free for it, at its slice's end (gang_leave_pinned()). The
 * gang loses a migration, not CPU time; with nowhere better the member
 * stays, and relief is what the pinned task gets, as before. Not at once
 * when the pinned task queues: a kick for that gave it no shorter waits
 * in two boots of bench/pinned-beside-gangs-ab.sh: a member's slice is
 * the primary slice (20 ms by default), and relief's own kick covers the
 * wait till it ends. A member preempted on such a CPU (a per-CPU kernel
 * thread's turn, every few milliseconds) and queued again is asked the
 * same at its enqueue() (gang_requeue_off_pinned()): else the CPU took it
 * back after each break, with a new slice, and it held the CPU for its
 * gang's whole slot (bench/pinned-requeue-ab.sh).
 */
static bool pinned_recently(const struct cpu_gang *cg, u64 now)
{
	return cg->pinned_at && now - cg->pinned_at < GANG_PINNED_NS;
}

/*
 * What taking a CPU costs a member, lowest first: an idle CPU, one
 * running a guest, one whose task is pushed off (an ordinary primary in
 * the gang's own slot, a filler, a guest gang's member); each outside
 * the gang's home after the same inside it; and any CPU ordinary work is
 * pinned to after every other.
 */
#define ROOM_FAR	1
#define ROOM_GUEST	2
#define ROOM_EVICT	4
#define ROOM_PINNED	8
#define ROOM_ANY	16

/*
 * What taking @cpu costs a member of gang @g (of @tier), or ROOM_ANY if
 * it may not. Global, with scalars only: verified once, and its result
 * is a number the walk below does not follow value by value.
 */
__noinline u32 room_cost(s32 cpu, u32 tier, u32 g)
{
	bool evict = tier == LINGER_TIER_PRIMARY && !gang_open;
	bool lead = tier_active(tier) & gang_bit(g), idle;
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	const struct cpumask *idle_cpus;
	u32 cost;

	if (!cg)
		return ROOM_ANY;
	idle_cpus = scx_bpf_get_idle_cpumask();
	idle = bpf_cpumask_test_cpu(cpu, idle_cpus);
	scx_bpf_put_idle_cpumask(idle_cpus);
	if (idle)
		cost = 0;
	else if (cpu_free_for(cpu, tier, evict, lead))
		cost = cpu_runs_guest(cpu) ? ROOM_GUEST : ROOM_EVICT;
	else
		return ROOM_ANY;
	if (!in_home(cpu, gang_home_of(g)))
		cost += ROOM_FAR;
	if (pinned_recently(cg, scx_bpf_now()))
		cost += ROOM_PINNED;
	return cost;
}

/*
 * Find gang @g's member @p (of @tier) the cheapest CPU it may take, below
 * @below, and reserve it: kicked (@kick), or left for the caller to send
 * @p there. The walk starts after @p's CPU and ends with it, so that
 * members spread where costs tie (its own CPU is free for it only while
 * it waits). Returns the CPU, or -1. Global: verified once, with the walk.
 */
__noinline s32 gang_take_room(struct task_struct *p __arg_trusted, u32 g,
			      u32 tier, u32 below, bool kick)
{
	u32 nr_cpus = scx_bpf_nr_cpu_ids(), i, on = scx_bpf_task_cpu(p);
	s32 best = -1;
	bool idle;

	if (nr_cpus > LINGER_MAX_CPUS)
		nr_cpus = LINGER_MAX_CPUS;
	bpf_for(i, 1, nr_cpus + 1) {
		s32 cpu = (on + i) % nr_cpus;
		u32 cost;

		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		cost = room_cost(cpu, tier, g);
		if (cost >= below)
			continue;
		below = cost;
		best = cpu;
		if (!cost)
			break;
	}
	if (best < 0)
		return -1;
	idle = !(below & (ROOM_GUEST | ROOM_EVICT));
	if (idle && !scx_bpf_test_and_clear_cpu_idle(best))
		return -1;
	if (!gang_claim(best, g)) {
		/* An idle CPU whose claim is lost: give it back. */
		if (idle)
			scx_bpf_kick_cpu(best, SCX_KICK_IDLE);
		return -1;
	}
	if (kick) {
		scx_bpf_kick_cpu(best, idle ? SCX_KICK_IDLE : SCX_KICK_PREEMPT);
		stat_inc(LINGER_STAT_GANG_KICK);
	}
	return best;
}

/*
 * @p, a member of active gang @g, was queued on its gang's DSQ: find it a
 * CPU at once, so that a member back from a wait takes its place again.
 * Its last CPU first, else the cheapest (gang_take_room()), a second look
 * if another member took that one meanwhile.
 */
static void gang_make_room(struct task_struct *p, u32 g, u32 tier)
{
	bool evict_primary = tier == LINGER_TIER_PRIMARY && !gang_open;
	bool lead = tier_active(tier) & gang_bit(g);
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	u32 try;

	/*
	 * Its last CPU: warm cache, and usually a back-filler holds it. Not
	 * one ordinary work is pinned to: that has nowhere else to go.
	 */
	if (cg && in_home(cpu, gang_home_of(g)) &&
	    bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
	    !pinned_recently(cg, scx_bpf_now()) &&
	    cpu_free_for(cpu, tier, evict_primary, lead) && gang_claim(cpu, g)) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		stat_inc(LINGER_STAT_GANG_KICK);
		return;
	}
	bpf_for(try, 0, 2) {
		if (gang_take_room(p, g, tier, ROOM_ANY, true) >= 0)
			return;
	}
	stat_inc(LINGER_STAT_GANG_NO_ROOM);
}

/*
 * Home swaps. A member that started before its gang had a home, or before
 * the home moved, may run outside it, and a spinning member never leaves
 * its CPU by itself: sched_ext moves a task only as it passes enqueue(),
 * and it offers no way to move a running one. So when such a member's
 * slice ends, dispatch() finds it a CPU at home (an idle one, or one
 * running a member of a gang whose home is this CPU's LLC: the mirror
 * image) and marks the swap on both CPUs; dispatch() then keeps nothing,
 * the kernel hands the member to enqueue() (SCX_OPS_ENQ_LAST), and
 * gang_swap_enqueue() inserts it on the home CPU's local DSQ, preempting
 * the mirror member there, whose own enqueue() sends it back the same
 * way. Marks expire like reservations: a swap whose other half never
 * comes (the mirror member slept) leaves nothing behind.
 */
#define GANG_SWAP_NS	GANG_RESERVATION_NS

static bool swap_live(const struct cpu_gang *cg, u64 now)
{
	return cg->swap_to && now - cg->swap_at < GANG_SWAP_NS;
}

/* Mark that @cg's member of gang @gang (+1) goes to @to; false if taken. */
static bool swap_mark(struct cpu_gang *cg, u32 gang, s32 to, u64 now)
{
	u32 old = cg->swap_to;

	if (swap_live(cg, now) ||
	    __sync_val_compare_and_swap(&cg->swap_to, old, to + 1) != old)
		return false;
	cg->swap_gang = gang;
	cg->swap_at = now;
	return true;
}

/*
 * The gang (a gang ref) whose member on CPU @to, in gang @g's home @home,
 * could swap with gang @g's member on this CPU (the one dispatch() runs
 * on and dispatches for): at home here, admitted in @tier, and @to free
 * of reservations and swaps; else LINGER_GANG_NONE.
 * A function of its own, verified once: inlined in gang_send_home()'s
 * walk of the CPUs, 6.12's verifier walked it again for each CPU.
 */
__noinline u32 mirror_on(s32 to, u32 g, u32 tier, u32 home, u64 now)
{
	u32 llc = cpu_llc_of(bpf_get_smp_processor_id()), mirror;
	struct cpu_gang *cg;

	if (cpu_llc_of(to) != home)
		return LINGER_GANG_NONE;
	cg = lookup_cpu_gang(to);
	if (!cg || cg->released || reservation_held(cg, now) || swap_live(cg, now))
		return LINGER_GANG_NONE;
	mirror = cg->running;
	if (mirror == LINGER_GANG_NONE || mirror == gang_ref(g) ||
	    !gang_may_run(tier, gang_of_ref(mirror)) ||
	    gang_home_of(gang_of_ref(mirror)) != llc)
		return LINGER_GANG_NONE;
	return mirror;
}

/*
 * @p, a member that gang_dispatch() would keep on @cpu: if that is outside
 * its gang's home, mark a swap to a CPU at home. True: @p goes, and
 * dispatch() keeps nothing. Called by dispatch() itself, not from inside
 * gang_dispatch(): one call level less keeps 6.12's verifier within the
 * 512 bytes of stack it allows a whole call chain.
 */
__noinline bool gang_send_home(struct task_struct *p __arg_trusted,
			       const struct task_ctx *tctx, s32 cpu, u64 now)
{
	u32 g, tier, home, llc = cpu_llc_of(cpu), mirror;
	u32 nr_cpus = scx_bpf_nr_cpu_ids();
	struct cpu_gang *mine, *cg;
	s32 to;

	if (!tctx)
		return false;
	g = gang_of_ref(sched_gang(tctx));
	tier = tctx->cls.tier;
	home = gang_home_of(g);
	if (nr_llcs <= 1 || home == LINGER_NO_HOME || home == llc)
		return false;
	mine = lookup_cpu_gang(cpu);
	if (!mine || swap_live(mine, now))
		return false;
	/* An idle CPU at home: the pick claims it. */
	to = pick_idle_in_llc(p, home, 0);
	if (to >= 0) {
		if (swap_mark(mine, gang_ref(g), to, now))
			return true;
		scx_bpf_kick_cpu(to, SCX_KICK_IDLE);	/* give the claim back */
		return false;
	}
	/* A mirror member: its gang is at home here, it runs in ours. */
	bpf_for(to, 0, nr_cpus) {
		if (to >= LINGER_MAX_CPUS)
			break;
		if (!bpf_cpumask_test_cpu(to, p->cpus_ptr))
			continue;
		mirror = mirror_on(to, g, tier, home, now);
		if (mirror == LINGER_GANG_NONE)
			continue;
		cg = lookup_cpu_gang(to);
		if (!cg)
			continue;
		if (!swap_mark(mine, gang_ref(g), to, now))
			return false;
		if (!swap_mark(cg, mirror, cpu, now)) {
			mine->swap_to = 0;
			return false;
		}
		/* This CPU waits for the mirror member, as for a waking one. */
		mine->reserved = mirror;
		mine->reserved_at = now;
		return true;
	}
	return false;
}

/*
 * @p, a member that gang_dispatch() would keep on @cpu: if ordinary work
 * is pinned to @cpu and a CPU that is not is free for @p, reserve that
 * one and mark the swap, as a home swap does (@p goes at its enqueue()).
 * True: @p goes, and dispatch() goes on without it, so that the work
 * pinned here runs now. Called by dispatch() itself, as gang_send_home().
 */
__noinline bool gang_leave_pinned(struct task_struct *p __arg_trusted,
				  const struct task_ctx *tctx, s32 cpu, u64 now)
{
	struct cpu_gang *mine = lookup_cpu_gang(cpu);
	u32 g;
	s32 to;

	if (!tctx || !mine || tctx->cls.tier != LINGER_TIER_PRIMARY ||
	    p->nr_cpus_allowed <= 1 ||
	    !pinned_recently(mine, now) || swap_live(mine, now))
		return false;
	g = gang_of_ref(sched_gang(tctx));
	to = gang_take_room(p, g, tctx->cls.tier, ROOM_PINNED, false);
	if (to < 0)
		return false;
	if (!swap_mark(mine, gang_ref(g), to, now)) {
		/* The reservation lapses; an idle CPU's claim goes back. */
		scx_bpf_kick_cpu(to, SCX_KICK_IDLE);
		return false;
	}
	stat_inc(LINGER_STAT_GANG_PIN_SWAP);
	return true;
}

/*
 * enqueue() of gang member @p: if a home swap is marked for it on its
 * CPU, it goes straight to the CPU it swaps to, taking it from whatever
 * runs there (the mirror member, which then comes here). True if done.
 */
__hidden bool gang_swap_enqueue(struct task_struct *p,
				const struct task_ctx *tctx, u64 enq_flags)
{
	struct cpu_gang *cg = lookup_cpu_gang(scx_bpf_task_cpu(p));
	u64 now = scx_bpf_now();
	s32 to;

	if (!cg || !swap_live(cg, now) || cg->swap_gang != tctx->cls.gang)
		return false;
	to = cg->swap_to - 1;
	cg->swap_to = 0;
	if (to < 0 || to >= LINGER_MAX_CPUS ||
	    !bpf_cpumask_test_cpu(to, p->cpus_ptr))
		return false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | to, tier_slice(tctx->cls.tier),
			   (enq_flags & ~SCX_ENQ_LAST) | SCX_ENQ_PREEMPT);
	stat_inc(LINGER_STAT_GANG_HOME_SWAP);
	return true;
}

/*
 * A waiting member of one of the @lead gangs that may run here moves to
 * this CPU: the filler it ran yields (filler_yields()). True if one did.
 */
static bool lead_takes_cpu(u64 lead)
{
	u32 g;

	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if ((lead & gang_bit(g)) &&
		    scx_bpf_dsq_move_to_local(GANG_DSQ(g), 0)) {
			stat_inc(LINGER_STAT_GANG_DISPATCH);
			return true;
		}
	}
	return false;
}

/*
 * dispatch() for the active gangs of @tier. A member already on this CPU
 * keeps it unless a fellow member waits (only when the gang has more
 * runnable members than CPUs: then they take turns), or it is a filler
 * and a lead's member waits that may run here; keeping it is the
 * caller's (unless it goes home: gang_send_home()). Otherwise the CPU
 * takes a waiting member of an active gang, of the gangs at home in its
 * LLC first.
 */
__hidden enum gang_dispatch gang_dispatch(u32 tier, s32 cpu,
					  struct task_struct *prev,
					  struct task_ctx *ptctx, u64 now)
{
	u64 mask = gang_admitted(tier), lead;
	u32 gang, g, pass, llc = cpu_llc_of(cpu);

	/* Every dispatch asks, gangs or none: the cached mask first. */
	if (!mask)
		return GANG_NOTHING;
	gang = sched_gang(ptctx);
	if (prev && gang != LINGER_GANG_NONE && ptctx->cls.tier == tier &&
	    (mask & gang_bit(gang_of_ref(gang))) &&
	    !scx_bpf_dsq_nr_queued(GANG_DSQ(gang_of_ref(gang)))) {
		g = gang_of_ref(gang);
		lead = tier_active(tier) & mask & ~gang_bit(g);
		if (lead && !(tier_active(tier) & gang_bit(g)) &&
		    lead_takes_cpu(lead))
			return GANG_DISPATCHED;
		gang_note_start(ptctx, g, now);
		return GANG_KEEP_PREV;
	}
	/* The gangs at home in this CPU's LLC first, then any. */
	bpf_for(pass, 0, 2) {
		if (pass == 0 && nr_llcs <= 1)
			continue;
		bpf_for(g, 0, LINGER_MAX_GANGS) {
			if (!(mask & gang_bit(g)) ||
			    (pass == 0 && gang_home_of(g) != llc))
				continue;
			if (scx_bpf_dsq_move_to_local(GANG_DSQ(g), 0)) {
				stat_inc(LINGER_STAT_GANG_DISPATCH);
				return GANG_DISPATCHED;
			}
		}
	}
	return GANG_NOTHING;
}

__hidden void gang_note_displaced(const struct task_ctx *tctx)
{
	struct linger_gang_stats *st;
	u32 gang = sched_gang(tctx);

	if (gang == LINGER_GANG_NONE)
		return;
	stat_inc(LINGER_STAT_GANG_DISPLACED);
	st = lookup_gang_stats(gang_of_ref(gang));
	if (st)
		__sync_fetch_and_add(&st->displaced, 1);
}

/*
 * @p, a member of primary gang @g whose slot is on, queued on a CPU
 * ordinary work is pinned to (preempted there: a machinery break, a kick,
 * or waking where it last ran): it goes straight to a CPU that is not,
 * when one is free for it, as at its slice's end (gang_leave_pinned()).
 * On its gang's DSQ instead, the CPU it left takes it back as soon as the
 * break ends, before the CPU kicked for it dispatches, and its slice,
 * renewed at each break, never ends there. True if sent.
 */
static bool gang_requeue_off_pinned(struct task_struct *p, u32 g, u32 tier,
				    u64 enq_flags)
{
	struct cpu_gang *cg = lookup_cpu_gang(scx_bpf_task_cpu(p));
	s32 to;

	if (tier != LINGER_TIER_PRIMARY || p->nr_cpus_allowed <= 1 || !cg ||
	    !pinned_recently(cg, scx_bpf_now()))
		return false;
	to = gang_take_room(p, g, tier, ROOM_PINNED, false);
	if (to < 0)
		return false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | to, tier_slice(tier),
			   enq_flags | SCX_ENQ_PREEMPT);
	stat_inc(LINGER_STAT_GANG_PIN_SWAP);
	return true;
}

/* Queue a member of gang @gang (+1) and, if its slot is on, get it a CPU. */
__hidden void gang_enqueue(struct task_struct *p, struct task_ctx *tctx,
			   u32 gang, u64 enq_flags)
{
	u32 g = gang_of_ref(gang), tier = tctx->cls.tier;
	bool on = gang_may_run(tier, g);

	/*
	 * A slotted member is scheduled by its slot, not by vtime: its vtime
	 * follows no tier's clock from now on (see vtime_advance()), and if
	 * its gang loses its slot it starts level with its tier's clock.
	 */
	vtime_detach(tctx);
	/* Waiting on a CPU a higher class took: the gang reacts as a whole. */
	if (enq_flags & SCX_ENQ_REENQ)
		gang_note_displaced(tctx);
	if (on && gang_requeue_off_pinned(p, g, tier, enq_flags))
		return;
	scx_bpf_dsq_insert(p, GANG_DSQ(g), tier_slice(tier), enq_flags);
	if (on)
		gang_make_room(p, g, tier);
}

/* Guest-tier gangs queue guests too: the starvation guard must see them. */
__hidden u64 guest_gangs_queued(void)
{
	u64 mask = tier_scheduled(LINGER_TIER_GUEST), nr = 0;
	u32 g;

	if (!mask)
		return 0;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if (mask & gang_bit(g))
			nr += scx_bpf_dsq_nr_queued(GANG_DSQ(g));
	}
	return nr;
}

__hidden bool guard_grant_guest_gang(void)
{
	u64 mask = tier_scheduled(LINGER_TIER_GUEST);
	u32 g;

	if (!mask)
		return false;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if ((mask & gang_bit(g)) &&
		    scx_bpf_dsq_move_to_local(GANG_DSQ(g), 0))
			return true;
	}
	return false;
}

/*
 * The count moves to the task's gang now (gang.bpf.h). A task's gang can
 * change while it stays runnable (its cgroup was labelled, or it moved),
 * so enqueue() and running() re-sync the count too: a spinning thread
 * may never pass runnable() again.
 */
__hidden void gang_recount_runnable(struct task_ctx *tctx)
{
	struct linger_gang_stats *st;

	gang_uncount_runnable(tctx);
	if (tctx->cls.gang == LINGER_GANG_NONE)
		return;
	st = lookup_gang_stats(gang_of_ref(tctx->cls.gang));
	if (!st)
		return;
	tctx->gang.counted = tctx->cls.gang;
	__sync_fetch_and_add(&st->nr_runnable, 1);
	admission_changed();
}

__hidden void gang_uncount_counted(struct task_ctx *tctx)
{
	struct linger_gang_stats *st;

	st = lookup_gang_stats(gang_of_ref(tctx->gang.counted));
	tctx->gang.counted = LINGER_GANG_NONE;
	if (st) {
		__sync_fetch_and_sub(&st->nr_runnable, 1);
		admission_changed();
	}
}

/*
 * running(): what this CPU runs now, for members looking for room. Runs
 * at every context switch: it writes the CPU's shared entry only when
 * something changes.
 */
__hidden void gang_note_running(s32 cpu, struct task_ctx *tctx, u64 now)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	u32 gang = sched_gang(tctx), running = LINGER_GANG_NONE;

	if (tctx)
		gang_count_runnable(tctx);
	if (!cg)
		return;
	/* This CPU is ours again, if a higher class held it. */
	if (cg->reserved || cg->released) {
		cg->reserved = 0;
		cg->released = false;
	}
	if (gang != LINGER_GANG_NONE && gang_may_run(tctx->cls.tier, gang_of_ref(gang))) {
		running = gang;
		gang_note_start(tctx, gang_of_ref(gang), now);
	}
	if (cg->running != running)
		cg->running = running;
	if (!running && active_primary && !gang_open)
		stat_inc(LINGER_STAT_BACKFILL);
}

/*
 * Charge a member's @ran ns of CPU to its gang, or a non-member's, run
 * during a primary gang slot, to the slot's gangs as back-fill: the
 * capacity the gap would otherwise have wasted.
 */
__hidden void gang_charge_ran(s32 cpu, struct task_ctx *tctx, u64 ran)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	struct linger_gang_stats *st;
	u64 mask = active_primary;
	u32 g;

	if (tctx && tctx->cls.gang != LINGER_GANG_NONE) {
		st = lookup_gang_stats(gang_of_ref(tctx->cls.gang));
		if (st)
			__sync_fetch_and_add(&st->cpu_ns, ran);
	}
	if ((cg && cg->running) || !mask || gang_open)
		return;
	account_backfill(ran);
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if (!(mask & gang_bit(g)))
			continue;
		st = lookup_gang_stats(g);
		if (st)
			__sync_fetch_and_add(&st->backfill_ns, ran);
	}
}

