/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang_clock.bpf.h - the slot clock: a BPF timer at each boundary of the
 * agent's rotation on CLOCK_TAI, the switch between slots, and each
 * slot's start and end as the stats see them. Design: gang.bpf.h.
 */
#ifndef __SCX_LINGER_GANG_CLOCK_BPF_H
#define __SCX_LINGER_GANG_CLOCK_BPF_H

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

#endif /* __SCX_LINGER_GANG_CLOCK_BPF_H */
