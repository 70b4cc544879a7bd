/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang_clock.bpf.c - the slot clock: a BPF timer at each boundary of the
 * agent's rotation on CLOCK_TAI, the switch between slots, and each
 * slot's start and end as the stats see them. Design: gang.bpf.c.
 */
#include "gang.bpf.h"
#include "stats.bpf.h"

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

/* For the alignment check: CLOCK_TAI of the last boundary that switched. */
volatile u64 last_switch_tai;

/*
 * Testing only (the agent's hidden --debug-fail-after-ms): this long after
 * the scheduler started, fail with scx_bpf_error(), so that the agent's
 * handling of a scheduler error (report, back-off, restart, give up) can
 * be staged on a real kernel. 0: never. Checked here because this timer
 * always ticks.
 */
const volatile u64 debug_fail_after_ns = 0;
static u64 started_at;

static void debug_staged_failure(u64 now)
{
	if (debug_fail_after_ns && now - started_at >= debug_fail_after_ns)
		scx_bpf_error("staged failure (--debug-fail-after-ms), as a test asked");
}

/* A member starts running (or keeps its CPU) while its gang is active. */
__hidden void gang_note_start(struct task_ctx *tctx, u32 g, u64 now)
{
	struct gang_slot *slot;

	slot = lookup_gang_slot(g);
	if (!slot || tctx->gang.slot_seq == slot->seq)
		return;
	tctx->gang.slot_seq = slot->seq;
	if (__sync_fetch_and_add(&slot->started, 1) == 0)
		slot->first_run = now;
	slot->last_run = now;
}

/*
 * A gang's slot ends: record its skew and whether it started whole.
 * gang_end_slot() and gang_begin_slot() are global functions, verified
 * once on their own: inlined into gang_turn_over()'s loop over every gang,
 * 6.12's verifier never finds that loop's states equal and gives up at a
 * million instructions (7.3's accepts either form).
 */
__noinline int gang_end_slot(u32 g)
{
	struct linger_gang_stats *st = lookup_gang_stats(g);
	struct gang_slot *slot;

	slot = lookup_gang_slot(g);
	if (!st || !slot)
		return 0;
	if (slot->started >= 1 && !time_before(slot->first_run, slot->start))
		hist_add(st->switch_hist, slot->first_run - slot->start);
	if (slot->started >= 2 && !time_before(slot->last_run, slot->first_run))
		hist_add(st->skew_hist, slot->last_run - slot->first_run);
	if (slot->started < slot->runnable)
		st->partial++;
	return 0;
}

__noinline int gang_begin_slot(u32 g, u64 now)
{
	struct linger_gang_stats *st = lookup_gang_stats(g);
	struct gang_slot *slot;

	slot = lookup_gang_slot(g);
	if (!st || !slot)
		return 0;
	slot->seq++;
	slot->start = now;
	slot->started = 0;
	slot->runnable = st->nr_runnable > 0 ? st->nr_runnable : 0;
	st->slots++;
	return 0;
}

/* End and begin the slots of the gangs whose activity changes. */
static void gang_turn_over(u64 old, u64 new, u64 now)
{
	u32 g;

	if (old == new)
		return;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if ((old & ~new) & gang_bit(g))
			gang_end_slot(g);
		if ((new & ~old) & gang_bit(g))
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

/* The half of gang_tables the last tick read. */
static u32 seen_table_idx;

static int gang_tick(void *map, int *key, struct bpf_timer *timer)
{
	struct linger_gang_table *t = lookup_gang_table();
	u64 tai = bpf_ktime_get_tai_ns(), now = scx_bpf_now();
	u64 next = GANG_IDLE_POLL_NS, primary = 0, guest = 0;
	bool open = false, guest_open;

	debug_staged_failure(now);
	if (t) {
		u64 cycle = t->tiers[LINGER_TIER_PRIMARY].cycle_ns ?:
			    t->tiers[LINGER_TIER_GUEST].cycle_ns;

		primary = tier_tick(&t->tiers[LINGER_TIER_PRIMARY],
				    &scheduled_primary, tai, &next, &open);
		guest = tier_tick(&t->tiers[LINGER_TIER_GUEST],
				  &scheduled_guest, tai, &next, &guest_open);
		u64 cycle_no = cycle ? tai / cycle : 0;
		u32 fp = admit_first(t, t->tiers[LINGER_TIER_PRIMARY].turns,
				     scheduled_primary & ~primary, cycle_no);
		u32 fg = admit_first(t, t->tiers[LINGER_TIER_GUEST].turns,
				     scheduled_guest & ~guest, cycle_no);

		/* A new table may bring new conflicts: admit afresh. */
		if (fp != admit_fill_primary || fg != admit_fill_guest ||
		    gang_table_idx != seen_table_idx) {
			seen_table_idx = gang_table_idx;
			admit_fill_primary = fp;
			admit_fill_guest = fg;
			admission_changed();
		}
	}
	if (primary != active_primary || guest != active_guest ||
	    open != gang_open)
		gang_switch(primary, guest, open, now, tai);

	bpf_timer_start(timer, next > GANG_MIN_TICK_NS ? next : GANG_MIN_TICK_NS, 0);
	return 0;
}

__hidden s32 gang_timer_init(void)
{
	u32 zero = 0;
	struct gang_timer *gt = bpf_map_lookup_elem(&gang_timers, &zero);
	s32 ret;

	if (!gt)
		return -ENOENT;
	started_at = scx_bpf_now();
	ret = bpf_timer_init(&gt->timer, &gang_timers, CLOCK_MONOTONIC);
	if (!ret)
		ret = bpf_timer_set_callback(&gt->timer, gang_tick);
	if (!ret)
		ret = bpf_timer_start(&gt->timer, GANG_MIN_TICK_NS, 0);
	return ret;
}
