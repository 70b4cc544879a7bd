/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * llc.bpf.h - a queue per tier per last-level cache, and the order in
 * which a CPU looks through them. Design: llc.bpf.c.
 */
#ifndef __SCX_LINGER_LLC_BPF_H
#define __SCX_LINGER_LLC_BPF_H

#include "linger.bpf.h"

/* LLCs with queues of their own (1 .. LINGER_MAX_LLCS), from the agent. */
extern const volatile u32 nr_llcs;

_Static_assert(LINGER_MAX_LLCS * LINGER_NR_TIERS <= LINGER_GANG_DSQ_BASE,
	       "tier DSQs would run into the gang DSQs");

/* The DSQ @tier's tasks wait in on LLC @llc: the one encoding of it. */
static __always_inline u64 tier_dsq(u32 tier, u32 llc)
{
	return (u64)llc * LINGER_NR_TIERS + tier;
}

/* Each CPU's LLC, 0 .. nr_llcs - 1 (llc.bpf.c, from the agent). */
extern const volatile u32 cpu_llc[LINGER_MAX_CPUS];

/* The LLC (0 .. nr_llcs - 1) whose queues @cpu looks at first. */
static __always_inline u32 cpu_llc_of(s32 cpu)
{
	u32 llc;

	if (cpu < 0 || cpu >= LINGER_MAX_CPUS)
		return 0;
	/*
	 * A no-op mask (LINGER_MAX_CPUS is a power of two) that keeps the
	 * bound where the compiler indexes with a sign-extended copy of
	 * @cpu, whose bound the verifier does not carry over.
	 */
	llc = cpu_llc[cpu & (LINGER_MAX_CPUS - 1)];
	return llc < nr_llcs && llc < LINGER_MAX_LLCS ? llc : 0;
}
/*
 * init(): every LLC's tier DSQs, each on its LLC's NUMA node, and each
 * LLC's CPUs (llc_nr_cpus, and a cpumask for the idle picks).
 */
s32 init_llcs(void);
/*
 * Move the first task of @tier that may run on @cpu to its local DSQ:
 * from @cpu's own LLC, else its NUMA node's other LLCs, else any.
 */
bool tier_move_to_local(u32 tier, s32 cpu);
/* Tasks of @tier waiting, on every LLC. */
u64 tier_nr_queued(u32 tier);
/* The CPUs of each LLC, counted at init (gang homes' room). */
extern u32 llc_nr_cpus[LINGER_MAX_LLCS];
/*
 * An idle CPU @p may use, claimed as scx_bpf_pick_idle_cpu() does: one of
 * LLC @llc's if there is one, else any (-1: none). @llc may be
 * LINGER_NO_HOME (no preference).
 */
s32 pick_idle_near(const struct task_struct *p, u32 llc, u64 flags);
/* Only one of LLC @llc's (-1: none, or @p may not use all of that LLC). */
s32 pick_idle_in_llc(const struct task_struct *p, u32 llc, u64 flags);

#endif /* __SCX_LINGER_LLC_BPF_H */
