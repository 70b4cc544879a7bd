/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang.bpf.h - gang co-scheduling: the threads of a parallel job run at
 * the same time, on distinct CPUs, in coordinated time slots.
 *
 * Why: a parallel job whose threads wait for each other at barriers by
 * spinning (MPI and OpenMP runtimes do) wastes its whole slice whenever a
 * partner is not running. Time-shared thread by thread, such jobs burn
 * several times their CPU time (NCSA measured 5x); run together, they
 * waste none (Hori et al., SCore-D; McWilliams).
 *
 * The slot table. The agent packs the gangs into slots (gangs whose
 * members fit on the CPUs together share one) and writes a rotation per
 * tier: primary gangs, and guest gangs, which are co-scheduled too but
 * only in the capacity primaries leave idle. The table is double-buffered
 * (gang_tables[gang_table_idx]) so that the timer never reads a half
 * written one.
 *
 * The clock. Slot boundaries are computed, not counted: at CLOCK_TAI time
 * t, the position in the cycle is t mod cycle_ns, and the slot is the one
 * covering that position. Nodes with the same table and synchronised
 * clocks (PTP, NTP) therefore switch together with no messages between
 * them, which is what SCore-D's server achieved by broadcasting. A BPF
 * timer fires at each boundary.
 *
 * The switch. At a boundary that changes what runs, every CPU is kicked
 * with SCX_KICK_PREEMPT (as the kernel's scx_central example does): the
 * outgoing members lose their CPUs at once instead of at the end of their
 * slices, and every CPU re-chooses in dispatch(), where the active gangs'
 * DSQs come first. Members wait in their gang's own DSQ, and a CPU takes
 * one task at a time from it, so two members of one gang never share a
 * CPU while others are free.
 *
 * The gaps (Strazdins & Uhlmann: strict gangs lose to local scheduling
 * when they leave CPUs idle). A CPU the active gangs do not use runs
 * ordinary primaries, then guests. A member that wakes up takes a CPU
 * back at once: its previous one if no member runs there, else an idle
 * one, else one running a guest, else one running ordinary work, which is
 * kicked (gang_make_room()).
 *
 * Ordinary primaries are not starved: each primary cycle ends with an
 * open phase (open_ns, a share of the cycle set by the agent) in which
 * ordinary primaries come first and the gang whose slot is next fills
 * what they leave. With nothing ordinary to run, that gang simply starts
 * early.
 *
 * A gang with more runnable members than CPUs cannot run all at once. It
 * still gets its slot, alone; its members take turns on the CPUs in
 * primary slices, and each such slot counts as a partial start.
 */
#ifndef __SCX_LINGER_GANG_BPF_H
#define __SCX_LINGER_GANG_BPF_H

#define GANG_BIT(g)	(1ULL << ((g) & (LINGER_MAX_GANGS - 1)))
#define GANG_DSQ(g)	((u64)LINGER_GANG_DSQ_BASE + (g))

/* Double-buffered slot table; the agent flips gang_table_idx. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct linger_gang_table);
	__uint(max_entries, 2);
} gang_tables SEC(".maps");

volatile u32 gang_table_idx;

/* Bumped by the agent when it starts a new runnable high-water period. */
volatile u64 gang_hw_epoch;

/* Per-gang counters, read by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct linger_gang_stats);
	__uint(max_entries, LINGER_MAX_GANGS);
} gang_stats SEC(".maps");

/*
 * What the slot clock says runs now, per tier; written by the timer only.
 * scheduled_gangs: gangs that have a slot at all. A gang without one (new,
 * or idle when the agent last packed) runs as ordinary work of its tier.
 */
static u64 active_primary, active_guest;
static u64 scheduled_primary, scheduled_guest;
static bool gang_open;
/* Bumped when scheduled_gangs changes: queued tasks must be re-sorted. */
static u64 gang_sched_gen;

/* For the alignment check: CLOCK_TAI of the last boundary that switched. */
volatile u64 last_switch_tai;

/* One gang's current slot, for skew and partial-start accounting. */
struct gang_slot {
	u64	seq;		/* bumped when the gang becomes active */
	u64	start;		/* when (monotonic) */
	u64	first_run;	/* first member started running in it */
	u64	last_run;	/* last member started running in it */
	u32	started;	/* distinct members that ran in it */
	u32	runnable;	/* members runnable when it began */
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct gang_slot);
	__uint(max_entries, LINGER_MAX_GANGS);
} gang_slots SEC(".maps");

/* The per-tier masks, by tier (a variable index would need bounds). */
static u64 tier_active(u32 tier)
{
	return tier == LINGER_CLASS_GUEST ? active_guest : active_primary;
}

static u64 tier_scheduled(u32 tier)
{
	return tier == LINGER_CLASS_GUEST ? scheduled_guest : scheduled_primary;
}

/*
 * What each CPU runs, as gangs see it. running: gang number + 1 of the
 * member on it (0: none), set by the CPU itself. reserved: a waking member
 * of that gang (+1) kicked this CPU and will take it. released: a higher
 * sched class (RT, deadline, stop) holds the CPU.
 */
struct cpu_gang {
	u32	running;
	u32	reserved;
	u64	reserved_at;
	bool	released;
};

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
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cpu_gang);
	__uint(max_entries, LINGER_MAX_CPUS);
} cpu_gangs SEC(".maps");

struct gang_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct gang_timer);
	__uint(max_entries, 1);
} gang_timers SEC(".maps");

/*
 * The timer also wakes at least this often between boundaries, to pick up
 * a new table soon (a gang that just started runs unco-ordinated until it
 * has a slot). A tick that changes nothing kicks nothing.
 */
#define GANG_IDLE_POLL_NS	(20 * 1000 * 1000ULL)
/* Shortest re-arm: never spin on a boundary that is due now. */
#define GANG_MIN_TICK_NS	(10 * 1000ULL)

static struct cpu_gang *lookup_cpu_gang(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&cpu_gangs, &key);
}

static struct linger_gang_stats *lookup_gang_stats(u32 g)
{
	return bpf_map_lookup_elem(&gang_stats, &g);
}

/*
 * The gang (+1) @tctx's task must be scheduled as: its gang if that gang
 * has a slot, else 0 (not in a gang, or its gang runs as ordinary work).
 */
static u32 sched_gang(const struct task_ctx *tctx)
{
	u32 g;

	if (!tctx || !tctx->gang)
		return 0;
	g = tctx->gang - 1;
	if (g >= LINGER_MAX_GANGS)
		return 0;
	return tier_scheduled(tctx->class) & GANG_BIT(g) ? g + 1 : 0;
}

static struct linger_gang_stats *lookup_gang_stats(u32 g);

/*
 * Admission. The agent lets gangs share a slot when their members fit on
 * the CPUs together, but a gang can grow between two packings (a job that
 * is spawning its threads, or one whose members woke up). If a slot's
 * gangs then have more runnable members than there are CPUs, time-sharing
 * them would give each gang some of its members and leave those spinning
 * for partners that are off the CPU: the collapse gangs exist to prevent.
 * So the slot admits whole gangs while they fit, in an order that rotates
 * with the cycle number (every gang is first in some cycles, and nodes
 * with the same table and clock agree); the others wait for their next
 * slot, which counts as a partial start, and the agent repacks at once
 * when it sees a gang outgrow its slot. The first gang is admitted even
 * if it alone is too big: it has the slot to itself anyway.
 */
static u32 gang_nr_cpus = 1;
/*
 * Per tier, the gang number admission starts from (then upwards, wrapping
 * round): the k-th active gang in cycle number c, with k = c mod the
 * number of active gangs. Set by the timer.
 */
static u32 admit_first_primary, admit_first_guest;

/*
 * The answer is cached per tier: it is asked several times per dispatch
 * (and per CPU when a member looks for room), and its loops are not free.
 * Anything it depends on bumps admit_gen: a gang's runnable count, the
 * active gangs, the rotation of the order, the table. Two CPUs filling
 * the cache at once may leave an answer one change old under the newer
 * generation; it lasts until the next bump, at the latest the next slot
 * boundary, and costs at most a gang admitted or kept out for that long.
 */
static u64 admit_gen = 1;
static u64 admit_cache_gen[LINGER_NR_CLASSES];
static u64 admit_cache[LINGER_NR_CLASSES];

static void admission_changed(void)
{
	__sync_fetch_and_add(&admit_gen, 1);
}

static u64 gang_admit(u32 tier);

/*
 * A global function, verified once on its own: its loops would otherwise
 * be re-verified inside every caller's (gang_make_room() walks the CPUs).
 */
__noinline u64 gang_admitted(u32 tier)
{
	u32 t = tier & 1;
	u64 gen = admit_gen, mask;

	if (admit_cache_gen[t] == gen)
		return admit_cache[t];
	mask = gang_admit(t);
	admit_cache[t] = mask;
	admit_cache_gen[t] = gen;
	return mask;
}

/* Members of gang @g that want a CPU now (never negative). */
static s64 gang_runnable(u32 g)
{
	struct linger_gang_stats *st = lookup_gang_stats(g);
	s64 nr = st ? st->nr_runnable : 0;

	return nr > 0 ? nr : 0;
}

static u64 gang_admit(u32 tier)
{
	u64 mask = tier_active(tier), admitted = 0, lend;
	u32 room = gang_nr_cpus, i;
	u32 first = tier == LINGER_CLASS_GUEST ? admit_first_guest : admit_first_primary;
	bool placed = false;

	lend = tier_scheduled(tier) & ~mask;
	if (!(mask & (mask - 1)) && !lend)
		return mask;
	bpf_for(i, 0, LINGER_MAX_GANGS) {
		u32 g = (first + i) & (LINGER_MAX_GANGS - 1);
		s64 want;

		if (!(mask & GANG_BIT(g)))
			continue;
		want = gang_runnable(g);
		if (!want) {
			/* Nothing runnable: it takes no room until it wakes. */
			admitted |= GANG_BIT(g);
			continue;
		}
		if (placed && want > room)
			continue;
		admitted |= GANG_BIT(g);
		room = want >= room ? 0 : room - want;
		placed = true;
	}

	/*
	 * Lending (Strazdins & Uhlmann: don't waste the gaps). CPUs the slot's
	 * own gangs leave unused (a gang that finished, or whose members all
	 * wait for I/O) go to other gangs of the tier that fit on them whole,
	 * until the slot's gangs want them back: then the borrowers are no
	 * longer admitted, and a waking member may push them off.
	 */
	if (!room || !lend)
		return admitted;
	bpf_for(i, 0, LINGER_MAX_GANGS) {
		u32 g = (first + i) & (LINGER_MAX_GANGS - 1);
		s64 want;

		if (!(lend & GANG_BIT(g)))
			continue;
		want = gang_runnable(g);
		if (!want || want > room)
			continue;
		admitted |= GANG_BIT(g);
		room -= want;
		if (!room)
			break;
	}
	return admitted;
}

/* Active, and admitted into its slot: its members may run now. */
static bool gang_may_run(u32 tier, u32 g)
{
	return gang_admitted(tier) & GANG_BIT(g);
}

/* A member of a gang with a slot, waiting for that slot: it must not run. */
static bool waits_for_slot(const struct task_ctx *tctx)
{
	u32 gang = sched_gang(tctx);

	return gang && !gang_may_run(tctx->class, gang - 1);
}

/* The DSQ @p waits in: its gang's while the gang has slots, else its class's. */
static u64 task_dsq(const struct task_ctx *tctx, u32 class)
{
	u32 gang = sched_gang(tctx);

	return gang ? GANG_DSQ(gang - 1) : class;
}

/* A member starts running (or keeps its CPU) while its gang is active. */
static void gang_note_start(struct task_ctx *tctx, u32 g, u64 now)
{
	struct gang_slot *slot;

	slot = bpf_map_lookup_elem(&gang_slots, &g);
	if (!slot || tctx->slot_seq == slot->seq)
		return;
	tctx->slot_seq = slot->seq;
	if (__sync_fetch_and_add(&slot->started, 1) == 0)
		slot->first_run = now;
	slot->last_run = now;
}

/* A gang's slot ends: record its skew and whether it started whole. */
static void gang_end_slot(u32 g)
{
	struct linger_gang_stats *st = lookup_gang_stats(g);
	struct gang_slot *slot;

	slot = bpf_map_lookup_elem(&gang_slots, &g);
	if (!st || !slot)
		return;
	if (slot->started >= 1 && !time_before(slot->first_run, slot->start))
		hist_add(st->switch_hist, slot->first_run - slot->start);
	if (slot->started >= 2 && !time_before(slot->last_run, slot->first_run))
		hist_add(st->skew_hist, slot->last_run - slot->first_run);
	if (slot->started < slot->runnable)
		st->partial++;
}

static void gang_begin_slot(u32 g, u64 now)
{
	struct linger_gang_stats *st = lookup_gang_stats(g);
	struct gang_slot *slot;

	slot = bpf_map_lookup_elem(&gang_slots, &g);
	if (!st || !slot)
		return;
	slot->seq++;
	slot->start = now;
	slot->started = 0;
	slot->runnable = st->nr_runnable > 0 ? st->nr_runnable : 0;
	st->slots++;
}

/*
 * Where rotation @r stands at CLOCK_TAI @tai: the gangs that run (into
 * *@mask), whether it is the open phase, and how long until the next
 * boundary.
 */
static u64 rotation_at(const struct linger_rotation *r, u64 tai, u64 *mask,
		       bool *open)
{
	u64 pos = tai % r->cycle_ns;
	u32 i;

	bpf_for(i, 0, LINGER_MAX_GANGS) {
		const struct linger_slot *s = &r->slots[i];

		if (i >= r->nr_slots)
			break;
		if (pos >= s->start_ns && pos < s->start_ns + s->len_ns) {
			*mask = s->gangs;
			*open = false;
			return s->start_ns + s->len_ns - pos;
		}
	}
	/* Past the last slot: the open phase, before slot 0 comes round. */
	*mask = r->nr_slots ? r->slots[0].gangs : 0;
	*open = true;
	return r->cycle_ns - pos;
}

/* Where admission starts among @mask's gangs in cycle @cycle_no. */
static u32 admit_first(u64 mask, u64 cycle_no)
{
	u32 nr = 0, i;
	u64 k;

	bpf_for(i, 0, LINGER_MAX_GANGS) {
		if (mask & GANG_BIT(i))
			nr++;
	}
	if (!nr)
		return 0;
	k = cycle_no % nr;
	bpf_for(i, 0, LINGER_MAX_GANGS) {
		if (!(mask & GANG_BIT(i)))
			continue;
		if (!k)
			return i;
		k--;
	}
	return 0;
}

/* End and begin the slots of the gangs whose activity changes. */
static void gang_turn_over(u64 old, u64 new, u64 now)
{
	u32 g;

	if (old == new)
		return;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if ((old & ~new) & GANG_BIT(g))
			gang_end_slot(g);
		if ((new & ~old) & GANG_BIT(g))
			gang_begin_slot(g, now);
	}
}

/* Switch every CPU to the new set of gangs. */
static void gang_switch(u64 primary, u64 guest, bool open, u64 now, u64 tai)
{
	u32 cpu, nr_cpus = scx_bpf_nr_cpu_ids();

	gang_turn_over(active_primary, primary, now);
	gang_turn_over(active_guest, guest, now);
	active_primary = primary;
	active_guest = guest;
	admission_changed();
	gang_open = open;
	last_switch_tai = tai;
	stat_inc(LINGER_STAT_GANG_SWITCH);

	/*
	 * Kick every CPU, not only those running outgoing members: incoming
	 * members need CPUs that run ordinary work or guests now, and a CPU
	 * whose task is unaffected just keeps it (dispatch() re-chooses it).
	 */
	bpf_for(cpu, 0, nr_cpus) {
		if (cpu >= LINGER_MAX_CPUS)
			break;
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
}

/*
 * Read one tier's rotation: note the gangs it schedules at all, and
 * return the gangs running at @tai (lowering *@next to its next boundary).
 */
static u64 tier_tick(struct linger_rotation *r, u64 *sched, u64 tai, u64 *next,
		     bool *open)
{
	u64 mask = 0, left;

	if (*sched != r->gangs) {
		*sched = r->gangs;
		gang_sched_gen++;
		admission_changed();
	}
	*open = false;
	if (!r->cycle_ns)
		return 0;
	left = rotation_at(r, tai, &mask, open);
	if (left < *next)
		*next = left;
	return mask;
}

static int gang_tick(void *map, int *key, struct bpf_timer *timer)
{
	u32 idx = gang_table_idx & 1;
	struct linger_gang_table *t = bpf_map_lookup_elem(&gang_tables, &idx);
	u64 tai = bpf_ktime_get_tai_ns(), now = scx_bpf_now();
	u64 next = GANG_IDLE_POLL_NS, primary = 0, guest = 0;
	bool open = false, guest_open;

	debug_staged_failure(now);
	if (t) {
		u64 cycle = t->tiers[LINGER_CLASS_PRIMARY].cycle_ns ?:
			    t->tiers[LINGER_CLASS_GUEST].cycle_ns;

		primary = tier_tick(&t->tiers[LINGER_CLASS_PRIMARY],
				    &scheduled_primary, tai, &next, &open);
		guest = tier_tick(&t->tiers[LINGER_CLASS_GUEST],
				  &scheduled_guest, tai, &next, &guest_open);
		u32 nr_cpus = t->nr_cpus ?: scx_bpf_nr_cpu_ids();
		u32 fp = admit_first(primary, cycle ? tai / cycle : 0);
		u32 fg = admit_first(guest, cycle ? tai / cycle : 0);

		if (nr_cpus != gang_nr_cpus || fp != admit_first_primary ||
		    fg != admit_first_guest) {
			gang_nr_cpus = nr_cpus;
			admit_first_primary = fp;
			admit_first_guest = fg;
			admission_changed();
		}
	}
	if (primary != active_primary || guest != active_guest ||
	    open != gang_open)
		gang_switch(primary, guest, open, now, tai);

	bpf_timer_start(timer, next > GANG_MIN_TICK_NS ? next : GANG_MIN_TICK_NS, 0);
	return 0;
}

static s32 gang_timer_init(void)
{
	u32 zero = 0;
	struct gang_timer *gt = bpf_map_lookup_elem(&gang_timers, &zero);
	s32 ret;

	if (!gt)
		return -ENOENT;
	ret = bpf_timer_init(&gt->timer, &gang_timers, CLOCK_MONOTONIC);
	if (!ret)
		ret = bpf_timer_set_callback(&gt->timer, gang_tick);
	if (!ret)
		ret = bpf_timer_start(&gt->timer, GANG_MIN_TICK_NS, 0);
	return ret;
}

/*
 * May a waking member of a gang of @tier take @cpu? Never from a member of
 * an active gang of the same or a higher tier, nor while a higher sched
 * class holds it. @evict_primary: ordinary primaries may be pushed off
 * (a primary gang in its own slot).
 */
static bool cpu_free_for(s32 cpu, u32 tier, bool evict_primary)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	u32 running;

	if (!cg || cg->released || reservation_held(cg, scx_bpf_now()))
		return false;
	running = cg->running;
	if (running) {
		/*
		 * A guest gang's member yields to a primary gang's, and a gang
		 * left out of a crowded slot yields to the admitted ones.
		 */
		if (gang_may_run(LINGER_CLASS_PRIMARY, running - 1))
			return false;
		return tier == LINGER_CLASS_PRIMARY ||
		       !gang_may_run(LINGER_CLASS_GUEST, running - 1);
	}
	return cpu_runs_guest(cpu) || evict_primary;
}

/* Claim @cpu for gang @g and kick it; false if another member got it first. */
static bool gang_claim(s32 cpu, u32 g, u64 kick)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	u64 now = scx_bpf_now();
	u32 old;

	if (!cg)
		return false;
	old = cg->reserved;
	if ((old && reservation_held(cg, now)) ||
	    __sync_val_compare_and_swap(&cg->reserved, old, g + 1) != old)
		return false;
	cg->reserved_at = now;
	scx_bpf_kick_cpu(cpu, kick);
	stat_inc(LINGER_STAT_GANG_KICK);
	return true;
}

/*
 * @p, a member of active gang @g, was queued on its gang's DSQ: find it a
 * CPU at once, so that a member back from a wait takes its place again.
 */
static void gang_make_room(struct task_struct *p, u32 g, u32 tier)
{
	bool evict_primary = tier == LINGER_CLASS_PRIMARY && !gang_open;
	s32 cpu = scx_bpf_task_cpu(p), pass;
	u32 nr_cpus = scx_bpf_nr_cpu_ids();

	/* Its last CPU: warm cache, and usually a back-filler holds it. */
	if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
	    cpu_free_for(cpu, tier, evict_primary) &&
	    gang_claim(cpu, g, SCX_KICK_PREEMPT))
		return;

	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (cpu >= 0 && gang_claim(cpu, g, SCX_KICK_IDLE))
		return;

	/* Guests first, then (in its own slot) ordinary primaries. */
	bpf_for(pass, 0, 2) {
		bpf_for(cpu, 0, nr_cpus) {
			if (cpu >= LINGER_MAX_CPUS)
				break;
			if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr) ||
			    (pass == 0 && !cpu_runs_guest(cpu)) ||
			    !cpu_free_for(cpu, tier, pass == 1 && evict_primary))
				continue;
			if (gang_claim(cpu, g, SCX_KICK_PREEMPT))
				return;
		}
	}
	stat_inc(LINGER_STAT_GANG_NO_ROOM);
}

/*
 * dispatch() for the active gangs of @tier. A member already on this CPU
 * keeps it unless a fellow member waits (only when the gang has more
 * runnable members than CPUs: then they take turns); otherwise the CPU
 * takes a waiting member of an active gang.
 */
static bool gang_dispatch(u32 tier, s32 cpu, struct task_struct *prev,
			  struct task_ctx *ptctx, u64 now)
{
	u64 mask = gang_admitted(tier);
	u32 gang = sched_gang(ptctx), g;

	if (!mask)
		return false;
	if (prev && gang && ptctx->class == tier && (mask & GANG_BIT(gang - 1)) &&
	    !scx_bpf_dsq_nr_queued(GANG_DSQ(gang - 1))) {
		gang_note_start(ptctx, gang - 1, now);
		keep_running(prev, ptctx, cpu);
		return true;
	}
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if (!(mask & GANG_BIT(g)))
			continue;
		if (scx_bpf_dsq_move_to_local(GANG_DSQ(g), 0)) {
			stat_inc(LINGER_STAT_GANG_DISPATCH);
			return true;
		}
	}
	return false;
}

/* Queue a member of gang @gang (+1) and, if its slot is on, get it a CPU. */
static void gang_enqueue(struct task_struct *p, struct task_ctx *tctx,
			 u32 gang, u64 enq_flags)
{
	u32 g = gang - 1, tier = tctx->class;
	struct linger_gang_stats *st;

	/*
	 * A slotted member is scheduled by its slot, not by vtime: its vtime
	 * follows no class clock from now on (see linger_running()), and if
	 * its gang loses its slot it starts level with its class's clock.
	 */
	tctx->vclass = LINGER_NR_CLASSES;
	if (enq_flags & SCX_ENQ_REENQ) {
		/* Pushed off by a higher class: the gang reacts as a whole. */
		stat_inc(LINGER_STAT_GANG_DISPLACED);
		st = lookup_gang_stats(g);
		if (st)
			__sync_fetch_and_add(&st->displaced, 1);
	}
	scx_bpf_dsq_insert(p, GANG_DSQ(g), class_slice(tier), enq_flags);
	if (gang_may_run(tier, g))
		gang_make_room(p, g, tier);
}

/* Guest-tier gangs queue guests too: the starvation guard must see them. */
static u64 guest_gangs_queued(void)
{
	u64 mask = tier_scheduled(LINGER_CLASS_GUEST), nr = 0;
	u32 g;

	if (!mask)
		return 0;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if (mask & GANG_BIT(g))
			nr += scx_bpf_dsq_nr_queued(GANG_DSQ(g));
	}
	return nr;
}

static bool guard_grant_guest_gang(void)
{
	u64 mask = tier_scheduled(LINGER_CLASS_GUEST);
	u32 g;

	if (!mask)
		return false;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if ((mask & GANG_BIT(g)) &&
		    scx_bpf_dsq_move_to_local(GANG_DSQ(g), 0))
			return true;
	}
	return false;
}

/*
 * How many members of each gang want a CPU: counted from runnable() to
 * quiescent(). A task's gang can change while it stays runnable (its
 * cgroup was labelled, or it moved), so enqueue() and running() re-sync
 * the count too: a spinning thread may never pass runnable() again.
 */
static void gang_uncount_runnable(struct task_ctx *tctx);

static void gang_count_runnable(struct task_ctx *tctx)
{
	struct linger_gang_stats *st;
	s64 nr;

	if (tctx->counted == tctx->gang)
		return;
	gang_uncount_runnable(tctx);
	if (!tctx->gang)
		return;
	st = lookup_gang_stats(tctx->gang - 1);
	if (!st)
		return;
	tctx->counted = tctx->gang;
	nr = __sync_add_and_fetch(&st->nr_runnable, 1);
	admission_changed();
	if (st->hw_epoch != gang_hw_epoch) {
		st->hw_epoch = gang_hw_epoch;
		st->runnable_hw = nr > 0 ? nr : 0;
	} else if (nr > 0 && (u64)nr > st->runnable_hw) {
		st->runnable_hw = nr;
	}
}

static void gang_uncount_runnable(struct task_ctx *tctx)
{
	struct linger_gang_stats *st;

	if (!tctx->counted)
		return;
	st = lookup_gang_stats(tctx->counted - 1);
	tctx->counted = 0;
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
static void gang_note_running(s32 cpu, struct task_ctx *tctx, u64 now)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	u32 gang = sched_gang(tctx), running = 0;

	if (tctx)
		gang_count_runnable(tctx);
	if (!cg)
		return;
	if (cg->reserved)
		cg->reserved = 0;
	if (gang && gang_may_run(tctx->class, gang - 1)) {
		running = gang;
		gang_note_start(tctx, gang - 1, now);
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
static void gang_charge_run(s32 cpu, struct task_ctx *tctx, u64 ran)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	struct linger_gang_stats *st;
	u64 mask = active_primary;
	u32 g;

	if (!ran)
		return;
	if (tctx && tctx->gang) {
		st = lookup_gang_stats(tctx->gang - 1);
		if (st)
			__sync_fetch_and_add(&st->cpu_ns, ran);
	}
	if ((cg && cg->running) || !mask || gang_open)
		return;
	account_backfill(ran);
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if (!(mask & GANG_BIT(g)))
			continue;
		st = lookup_gang_stats(g);
		if (st)
			__sync_fetch_and_add(&st->backfill_ns, ran);
	}
}

/* stopping(): charge the run, and the CPU no longer runs a member. */
static void gang_note_stopping(s32 cpu, struct task_ctx *tctx, u64 ran)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);

	gang_charge_run(cpu, tctx, ran);
	if (cg && cg->running)
		cg->running = 0;
}

/* dispatch() begins: a reservation on this CPU has served its purpose. */
static void gang_cpu_dispatching(s32 cpu)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);

	if (cg && cg->reserved)
		cg->reserved = 0;
}

static void gang_cpu_released(s32 cpu, bool released)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);

	if (cg)
		cg->released = released;
}

#endif /* __SCX_LINGER_GANG_BPF_H */
