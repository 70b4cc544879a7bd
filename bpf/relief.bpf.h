/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * relief.bpf.h - ordinary primary work inside primary gang slots: a CPU
 * budget the gangs give up, spent at once when ordinary work wakes.
 * Design: relief.bpf.c.
 */
#ifndef __SCX_LINGER_RELIEF_BPF_H
#define __SCX_LINGER_RELIEF_BPF_H

#include "ctx.bpf.h"

/*
 * dispatch(), outside the open phase: ordinary primary work waits and
 * the budget covers its head's usual run: a turn of it moves here (true).
 */
bool relief_dispatch(u64 now);
/*
 * enqueue(): ordinary primary @p woke and was queued with no idle CPU and
 * no guest to take over: preempt the gang member on its CPU for a turn,
 * if the budget covers one.
 */
void relief_kick(const struct task_struct *p, const struct task_ctx *tctx,
		 u64 enq_flags);
u64 relief_turn_running(u32 tier, u64 now);
int relief_turn_charge(u64 ran);

/*
 * running(): a task of @tier starts on this CPU: the slice of the relief
 * turn it begins, or 0 if it begins none. This and relief_charge() run at
 * every switch and mostly find no turn: the test is inlined, a call cost
 * more (the profile, bench/README.md).
 */
static __always_inline u64 relief_running(u32 tier, u64 now)
{
	struct cpu_ctx *cctx = lookup_this_cpu_ctx();

	return cctx && cctx->relief.pending ? relief_turn_running(tier, now) : 0;
}

/* A slice on this CPU ended after @ran ns: settle its turn, if one. */
static __always_inline void relief_charge(u64 ran)
{
	struct cpu_ctx *cctx = lookup_this_cpu_ctx();

	if (cctx && cctx->relief.grant && !cctx->relief.pending)
		relief_turn_charge(ran);
}

#endif /* __SCX_LINGER_RELIEF_BPF_H */
