/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * llc.bpf.c - one queue per tier per last-level cache (LLC).
 *
 * With one queue per tier, every CPU of the node inserts into and pulls
 * from the same DSQ, under one spinlock: scx_simple's shared queue scored
 * 596 against EEVDF's 32,508 on a 128-CPU pipe test (sched-ext/scx issue
 * 998), and the kernel's own fallback queue went from global to per node
 * to per CPU after livelocks on 224-CPU machines. Per LLC is where the
 * locks stay local and the choice stays good: the CPUs of one LLC share
 * its cache, so any of them is as good a home for a waking task as
 * another, and a queue per CPU would need stealing at every turn.
 *
 * A task waits in the queue of the LLC of the CPU it is placed on
 * (select_cpu() chose it, near its cache); each LLC's queue keeps its own
 * vtime clock (vtime.bpf.c rebases a task's vtime when it changes LLC).
 * A CPU takes from its own LLC first, then from the other LLCs of its
 * NUMA node, then from the rest: stealing, so no CPU idles while a task
 * that may run there waits anywhere.
 *
 * Strict priority holds across LLCs: dispatch() looks through every
 * LLC's primary queue before any guest queue, and a waking primary that
 * finds no idle CPU kicks a guest's CPU anywhere it may run
 * (preempt.bpf.c), which then steals it. A CPU about to run a guest
 * re-checks every LLC's primary queue after marking itself, so the
 * ordering argument of preempt.bpf.c covers all of them.
 *
 * A node with one LLC (nr_llcs == 1, what the agent writes when it
 * cannot read the topology) has one queue per tier; the verifier sees
 * nr_llcs as a constant and the loops below run once.
 *
 * Placement keeps a task near its cache: select_cpu()'s default search
 * already prefers its previous CPU, then its LLC, then its node; the
 * idle CPU a queued task kicks (enqueue()) and the CPU a gang member
 * takes (gang_run.bpf.c) are looked for in its LLC first, through each
 * LLC's cpumask.
 */
#include "llc.bpf.h"

/* Written by the agent before load (src/bpf/program.rs). */
const volatile u32 nr_llcs = 1;
/* Each CPU's LLC, 0 .. nr_llcs - 1. */
const volatile u32 cpu_llc[LINGER_MAX_CPUS];
/* Each LLC's NUMA node (the kernel's ids), or -1 if unknown. */
const volatile s32 llc_node[LINGER_MAX_LLCS];

static s32 node_of(u32 llc)
{
	/* A 64-bit index: 6.12's verifier bounds only the 32-bit half of
	 * a 32-bit comparison's register here. */
	u64 i = llc;

	return i < LINGER_MAX_LLCS ? llc_node[i] : -1;
}

u32 llc_nr_cpus[LINGER_MAX_LLCS];

/* Each LLC's CPUs, for scx_bpf_pick_idle_cpu() (kptrs live in maps). */
struct llc_cpus {
	struct bpf_cpumask __kptr *mask;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct llc_cpus);
	__uint(max_entries, LINGER_MAX_LLCS);
} llc_cpumasks SEC(".maps");

static s32 init_llc_cpus(void)
{
	struct bpf_cpumask *mask;
	struct llc_cpus *lc;
	u32 llc, cpu;

	bpf_for(llc, 0, nr_llcs) {
		lc = bpf_map_lookup_elem(&llc_cpumasks, &llc);
		mask = bpf_cpumask_create();
		if (!lc || !mask) {
			if (mask)
				bpf_cpumask_release(mask);
			return -ENOMEM;
		}
		mask = bpf_kptr_xchg(&lc->mask, mask);
		if (mask)
			bpf_cpumask_release(mask);
	}
	bpf_for(cpu, 0, scx_bpf_nr_cpu_ids()) {
		llc = cpu_llc_of(cpu);
		if (llc >= LINGER_MAX_LLCS)
			break;
		llc_nr_cpus[llc]++;
		lc = bpf_map_lookup_elem(&llc_cpumasks, &llc);
		if (!lc)
			continue;
		bpf_rcu_read_lock();
		mask = lc->mask;
		if (mask)
			bpf_cpumask_set_cpu(cpu, mask);
		bpf_rcu_read_unlock();
	}
	return 0;
}

__hidden s32 pick_idle_in_llc(const struct task_struct *p, u32 llc, u64 flags)
{
	struct bpf_cpumask *mask;
	struct llc_cpus *lc;
	s32 cpu = -1;

	/* One LLC: the caller's pick anywhere is the same pick. */
	if (nr_llcs <= 1 || llc >= nr_llcs)
		return -1;
	lc = bpf_map_lookup_elem(&llc_cpumasks, &llc);
	if (!lc)
		return -1;
	bpf_rcu_read_lock();
	mask = lc->mask;
	/*
	 * A task that may use only part of the LLC (a cpuset, an affinity)
	 * picks anywhere it may run: the pick claims the CPU it returns,
	 * and one the task may not use would stay claimed and unused.
	 */
	if (mask && bpf_cpumask_subset(cast_mask(mask), p->cpus_ptr))
		cpu = scx_bpf_pick_idle_cpu(cast_mask(mask), flags);
	bpf_rcu_read_unlock();
	return cpu;
}

__hidden s32 pick_idle_near(const struct task_struct *p, u32 llc, u64 flags)
{
	s32 cpu = pick_idle_in_llc(p, llc, flags);

	return cpu >= 0 ? cpu : scx_bpf_pick_idle_cpu(p->cpus_ptr, flags);
}

__hidden s32 init_llcs(void)
{
	u32 llc, tier;
	s32 ret;

	bpf_for(llc, 0, nr_llcs) {
		bpf_for(tier, 0, LINGER_NR_TIERS) {
			/* The queue's memory on its LLC's node; anywhere if refused. */
			ret = scx_bpf_create_dsq(tier_dsq(tier, llc), node_of(llc));
			if (ret)
				ret = scx_bpf_create_dsq(tier_dsq(tier, llc), -1);
			if (ret) {
				scx_bpf_error("failed to create DSQ %u of LLC %u: %d",
					      tier, llc, ret);
				return ret;
			}
		}
	}
	return init_llc_cpus();
}

/*
 * The other LLCs' queues, each CPU starting after its own LLC: when an
 * LLC runs dry, its CPUs do not all pull from the same other LLC first.
 * @near: those of @cpu's NUMA node (else the others).
 */
static bool steal(u32 tier, u32 own, bool near)
{
	s32 node = node_of(own);
	u32 i;

	bpf_for(i, 1, nr_llcs) {
		/* (own + i) mod nr_llcs, without a modulo 6.12 cannot bound. */
		u32 llc = own + i >= nr_llcs ? own + i - nr_llcs : own + i;

		if ((node_of(llc) == node) == near &&
		    scx_bpf_dsq_move_to_local(tier_dsq(tier, llc), 0))
			return true;
	}
	return false;
}

/* A global function: dispatch() calls it three times, each with two walks. */
__noinline bool tier_move_to_local(u32 tier, s32 cpu)
{
	u32 own = cpu_llc_of(cpu);

	if (scx_bpf_dsq_move_to_local(tier_dsq(tier, own), 0))
		return true;
	return nr_llcs > 1 && (steal(tier, own, true) || steal(tier, own, false));
}

__hidden u64 tier_nr_queued(u32 tier)
{
	u64 nr = 0;
	u32 llc;

	bpf_for(llc, 0, nr_llcs)
		nr += scx_bpf_dsq_nr_queued(tier_dsq(tier, llc));
	return nr;
}
