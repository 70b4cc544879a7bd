/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gang_admit.bpf.h - which of the active gangs may run now, whole, on the
 * CPUs there are: admission into a slot, and lending its unused CPUs.
 * State and the design as a whole: gang.bpf.h.
 */
#ifndef __SCX_LINGER_GANG_ADMIT_BPF_H
#define __SCX_LINGER_GANG_ADMIT_BPF_H

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

#endif /* __SCX_LINGER_GANG_ADMIT_BPF_H */
