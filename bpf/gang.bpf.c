/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang.bpf.c - gang co-scheduling: the threads of a parallel job run at
 * the same time, on distinct CPUs, in coordinated time slots.
 *
 * Why: a parallel job whose threads wait for each other at barriers by
 * spinning (MPI and OpenMP runtimes do) wastes its whole slice whenever a
 * partner is not running. Time-shared thread by thread, such jobs burn
 * several times their CPU time (NCSA measured 5x); run together, they
 * waste none (Hori et al., SCore-D; McWilliams).
 *
 * One owner per decision. The agent lays out the rotation and nothing
 * else: every gang leads one slot of its own, in path order, for the slot
 * length its label asks, so the table depends only on the labels and the
 * cpusets, never on what runs, and nodes with the same jobs build the
 * same one. Everything that depends on what runs (how many members a
 * gang has runnable, which other gangs fit beside the slot's lead) is
 * decided here, from live counts, at every change: admission, below.
 * There is no second packer and no second meaning of a gang's size (it
 * is the members runnable now). The rotation is per tier: primary gangs,
 * and guest gangs, which are co-scheduled too but only in the capacity
 * primaries leave idle. The table is double-buffered
 * (gang_tables[gang_table_idx]) so that the timer never reads a half
 * written one. This unit holds the gang state and decides admission;
 * gang_clock.bpf.c switches slots, gang_run.bpf.c places members.
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
 * kicked (gang_make_room()); a CPU that ordinary work is pinned to comes
 * last, and a member on one leaves it when it can (gang_run.bpf.c).
 *
 * Ordinary primaries are not starved: each primary cycle ends with an
 * open phase (open_ns, a share of the cycle set by the agent) in which
 * ordinary primaries come first and one slot's gangs fill what they
 * leave, each slot's in turn from cycle to cycle (rotation_at() in
 * lib/pure.h), so that no gang has the phase more often than another.
 * In the cycles where it is the next slot's, that gang simply starts
 * early.
 *
 * A gang with more runnable members than CPUs cannot run all at once. It
 * still gets its slot, alone; its members take turns on the CPUs in
 * primary slices, and each such slot counts as a partial start. A member
 * whose turn ends stays runnable and queues; it takes any CPU it finds
 * free but never the one it just left to the next (gang_run.bpf.h:
 * gang_note_stopping()).
 *
 * Homes. On a node of several LLCs, each admitted gang that fits in one
 * gets one as its home (gang_homes() in lib/pure.h, decided with
 * admission): its members take that LLC's CPUs first, and that LLC's
 * CPUs take its members first (gang_run.bpf.c). A gang's threads share
 * data, and barrier-bound ones share cache lines at every step.
 */
#include "ctx.bpf.h"
#include "gang.bpf.h"
#include "llc.bpf.h"

/* Double-buffered slot table; the agent flips gang_table_idx. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct linger_gang_table);
	__uint(max_entries, 2);
} gang_tables SEC(".maps");

volatile u32 gang_table_idx;

u64 active_primary, active_guest;
u64 scheduled_primary, scheduled_guest;
bool gang_open;
u64 gang_sched_gen;

/* The half of the double-buffered table the agent wrote last. */
__hidden struct linger_gang_table *lookup_gang_table(void)
{
	u32 idx = gang_table_idx & 1;

	return bpf_map_lookup_elem(&gang_tables, &idx);
}

/*
 * Admission: which gangs of a tier may run now. The slot's lead gang
 * always may, even alone too big for its CPUs (its members then take
 * turns, and the slot counts as a partial start). Then the gangs without
 * the slot fill the CPUs the lead leaves (Strazdins & Uhlmann: don't
 * waste the gaps), whole gangs only: each is admitted while its runnable
 * members fit on the CPUs still free, never beside a gang bound to cores
 * that overlap its own. A gang that outgrows what is left (a job that is
 * spawning its threads, or whose members woke) is let go at once, before
 * its members can time-share with the slot's and spin for partners that
 * are off the CPU: the collapse gangs exist to prevent. The filling order
 * is the table's (the agent's: cluster rows, then paths) and its start
 * is drawn from the cycle number, so each gang that may fill a slot is
 * first in an equal share of its cycles and nodes that run the same jobs
 * fill with the same one.
 *
 * Room is counted in CPUs, each gang taking what it may use at most (its
 * cpuset's size): exact where gangs may use any CPU, and with the
 * conflicts rule also where they are bound to disjoint or identical core
 * sets (Slurm's and Kubernetes' usual cases).
 *
 * Per tier, the position in the table's order that filling starts from
 * (admit_first()). Set by the timer.
 */
u32 admit_fill_primary, admit_fill_guest;

/*
 * The answer is cached per tier: it is asked several times per dispatch
 * (and per CPU when a member looks for room), and its loops are not free.
 * Anything it depends on bumps admit_gen: a gang's runnable count, the
 * active gangs, the rotation of the order, the table. Two CPUs filling
 * the cache at once may leave an answer one change old under the newer
 * generation; it lasts until the next bump, at the latest the next slot
 * boundary, and costs at most a gang admitted or kept out for that long.
 */
u64 admit_gen = 1;
u64 admit_cache_gen[LINGER_NR_TIERS];
u64 admit_cache[LINGER_NR_TIERS];

__hidden void admission_changed(void)
{
	__sync_fetch_and_add(&admit_gen, 1);
}

u64 gang_admit(u32 tier);

/* Each gang's home LLC, or LINGER_NO_HOME; written with admission. */
static u32 gang_home[LINGER_MAX_GANGS] = {
	[0 ... LINGER_MAX_GANGS - 1] = LINGER_NO_HOME,
};

__hidden u32 gang_home_of(u32 g)
{
	return nr_llcs > 1 ? gang_home[g & (LINGER_MAX_GANGS - 1)] : LINGER_NO_HOME;
}

/*
 * The homes of @tier's gangs @admitted, as admission changes. A global
 * function, as is gang_admit(): each has its loops, and inlined in
 * gang_admitted() the second was walked again for every way out of the
 * first.
 */
__noinline int gang_place_homes(u64 admitted)
{
	struct linger_gang_table *table;

	if (nr_llcs <= 1 || !admitted)
		return 0;
	table = lookup_gang_table();
	if (table)
		gang_homes(table, admitted, nr_llcs, llc_nr_cpus, gang_home);
	return 0;
}

/*
 * A global function, verified once on its own: its loops would otherwise
 * be re-verified inside every caller's (gang_take_room() walks the CPUs).
 * Called only when the cache is stale (gang.bpf.h: gang_admitted()).
 */
__noinline u64 gang_admit_afresh(u32 tier)
{
	u32 t = tier & 1;
	u64 gen = admit_gen, mask;

	mask = gang_admit(t);
	gang_place_homes(mask);
	admit_cache[t] = mask;
	admit_cache_gen[t] = gen;
	return mask;
}

/* Members of gang @g that want a CPU now (never negative; pure.h). */
__hidden s64 gang_runnable(u32 g)
{
	struct linger_gang_stats *st = lookup_gang_stats(g);
	s64 nr = st ? st->nr_runnable : 0;

	return nr > 0 ? nr : 0;
}

__noinline u64 gang_admit(u32 tier)
{
	u64 lead = tier_active(tier), fill = tier_scheduled(tier) & ~lead;
	struct linger_gang_table *table;

	if (!fill)
		return lead;
	table = lookup_gang_table();
	if (!table)
		return lead;
	return admit_gangs(table, lead, fill,
			   tier == LINGER_TIER_GUEST ? admit_fill_guest : admit_fill_primary);
}

/* A member of a gang with a slot, waiting for that slot: it must not run. */
__hidden bool waits_for_slot(const struct task_ctx *tctx)
{
	u32 gang = sched_gang(tctx);

	return gang != LINGER_GANG_NONE &&
	       !gang_may_run(tctx->cls.tier, gang_of_ref(gang));
}
