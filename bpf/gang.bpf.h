/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang.bpf.h - gang co-scheduling's interface: the state its three units
 * share and what the rest of the scheduler calls. The design is in
 * gang.bpf.c (state and admission); gang_clock.bpf.c switches slots on
 * the clock; gang_run.bpf.c places members on CPUs.
 */
#ifndef __SCX_LINGER_GANG_BPF_H
#define __SCX_LINGER_GANG_BPF_H

#include "ctx.bpf.h"

/* The only encoder and decoder of enum linger_gang_ref on this side. */
static __always_inline u32 gang_ref(u32 g)
{
	return g + LINGER_GANG_REF_BASE;
}

static __always_inline u32 gang_of_ref(u32 ref)
{
	return ref - LINGER_GANG_REF_BASE;
}

/* The DSQ members of gang g wait in. */
#define GANG_DSQ(g)	((u64)LINGER_GANG_DSQ_BASE + (g))

/* One gang's current slot, for skew and partial-start accounting. */
struct gang_slot {
	u64	seq;		/* bumped when the gang becomes active */
	u64	start;		/* when (monotonic) */
	u64	first_run;	/* first member started running in it */
	u64	last_run;	/* last member started running in it */
	u32	started;	/* distinct members that ran in it */
	u32	runnable;	/* members runnable when it began */
};

/*
 * What the slot clock says runs now, per tier; written by the timer
 * (gang_clock.bpf.c) only. active_*: the gangs leading the current slot.
 * scheduled_*: gangs that have a slot at all. A gang without one (new,
 * until the agent lays the rotation out again) runs as ordinary work of
 * its tier.
 */
extern u64 active_primary, active_guest;
extern u64 scheduled_primary, scheduled_guest;
extern bool gang_open;
/* Bumped when scheduled_* change: queued tasks must be re-sorted. */
extern u64 gang_sched_gen;
/* The agent flips it to the half of gang_tables it just wrote. */
extern volatile u32 gang_table_idx;
/* Per tier, where filling a slot with other gangs starts (the timer's). */
extern u32 admit_fill_primary, admit_fill_guest;

/*
 * The per-gang maps, defined here (weak: each unit has the same
 * definition and the linker keeps one) so that the look-ups below are
 * inlined where the hot path makes them, as ctx.bpf.h does.
 */

/* Per-gang counters, read by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct linger_gang_stats);
	__uint(max_entries, LINGER_MAX_GANGS);
} gang_stats __weak SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct gang_slot);
	__uint(max_entries, LINGER_MAX_GANGS);
} gang_slots __weak SEC(".maps");


/* The per-tier masks, by tier (a variable index would need bounds). */
static __always_inline u64 tier_active(u32 tier)
{
	return tier == LINGER_TIER_GUEST ? active_guest : active_primary;
}

static __always_inline u64 tier_scheduled(u32 tier)
{
	return tier == LINGER_TIER_GUEST ? scheduled_guest : scheduled_primary;
}

/* What @cpu runs, as gangs see it (ctx.bpf.h: struct cpu_gang). */
static __always_inline struct cpu_gang *lookup_cpu_gang(s32 cpu)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);

	return cctx ? &cctx->gang : NULL;
}

static __always_inline struct linger_gang_stats *lookup_gang_stats(u32 g)
{
	return bpf_map_lookup_elem(&gang_stats, &g);
}

static __always_inline struct gang_slot *lookup_gang_slot(u32 g)
{
	return bpf_map_lookup_elem(&gang_slots, &g);
}

/* gang.bpf.c: state and admission. */
/*
 * The gang @tctx's task must be scheduled as: its gang (a gang ref) if
 * that gang has a slot, else LINGER_GANG_NONE (not in a gang, or its gang
 * runs as ordinary work). Inlined, as the cached admission below: every
 * op asks, several times per wake-up, and the answer is a few loads where
 * a BPF-to-BPF call costs more than that (the profile, bench/README.md).
 */
static __always_inline u32 sched_gang(const struct task_ctx *tctx)
{
	u32 g;

	if (!tctx || tctx->cls.gang == LINGER_GANG_NONE)
		return LINGER_GANG_NONE;
	g = gang_of_ref(tctx->cls.gang);
	if (g >= LINGER_MAX_GANGS)
		return LINGER_GANG_NONE;
	return tier_scheduled(tctx->cls.tier) & gang_bit(g) ? gang_ref(g) : LINGER_GANG_NONE;
}
struct linger_gang_table *lookup_gang_table(void);
void admission_changed(void);
/*
 * Admission's answer for @tier, a mask of gangs, cached per tier (gang.bpf.c
 * says when it is stale): asked several times per dispatch.
 */
extern u64 admit_gen;
extern u64 admit_cache_gen[LINGER_NR_TIERS];
extern u64 admit_cache[LINGER_NR_TIERS];
u64 gang_admit_afresh(u32 tier);

static __always_inline u64 gang_admitted(u32 tier)
{
	u32 t = tier & 1;

	if (admit_cache_gen[t] == admit_gen)
		return admit_cache[t];
	return gang_admit_afresh(t);
}
/*
 * Active, and admitted into its slot: its members may run now. Inlined:
 * a call would be a frame more in chains that reach the verifier's
 * limit of eight (a member's look for room, from dispatch()).
 */
static __always_inline bool gang_may_run(u32 tier, u32 g)
{
	return gang_admitted(tier) & gang_bit(g);
}
/*
 * A member of an admitted primary gang holds the CPU @cg is of: the CPU
 * is its slot's, not ordinary work's. The one test behind the machinery's
 * turn and relief's kick.
 */
static __always_inline bool primary_member_holds(const struct cpu_gang *cg)
{
	return cg && cg->running &&
	       gang_may_run(LINGER_TIER_PRIMARY, gang_of_ref(cg->running));
}
/* Gang @g's home LLC (see gang.bpf.c), or LINGER_NO_HOME. */
u32 gang_home_of(u32 g);
bool waits_for_slot(const struct task_ctx *tctx);

/* gang_clock.bpf.c: the slot clock. */
s32 gang_timer_init(void);
void gang_note_start(struct task_ctx *tctx, u32 g, u64 now);

#endif /* __SCX_LINGER_GANG_BPF_H */
