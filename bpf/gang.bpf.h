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

#endif /* __SCX_LINGER_GANG_BPF_H */
