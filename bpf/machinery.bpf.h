/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * machinery.bpf.h - the node's own machinery beside gangs: system
 * services and Slurm's step daemons take a gang member's CPU as they
 * wake, kernel threads at the member's next tick, within a budget per
 * CPU. Design: machinery.bpf.c.
 */
#ifndef __SCX_LINGER_MACHINERY_BPF_H
#define __SCX_LINGER_MACHINERY_BPF_H

#include "ctx.bpf.h"

/*
 * enqueue(): machinery task @tctx woke (@enq_flags) on @cpu: the slice it
 * waits in @cpu's local DSQ with, for the member there to yield at its
 * next tick, or 0 if @cpu is not a member's or its budget is spent.
 */
u64 machinery_turn(struct task_ctx *tctx, s32 cpu, u64 enq_flags);
/*
 * select_cpu(): machinery @p woke: a CPU a member holds, its last one
 * first, where it preempts the member with tctx->mach.slice; or -1.
 */
s32 machinery_pick(struct task_struct *p, struct task_ctx *tctx, s32 prev_cpu);
s32 machinery_scan(struct task_struct *p, struct task_ctx *tctx, s32 prev_cpu);
/* tick(): machinery waits for @cpu and its budget holds: end the run. */
bool machinery_tick(s32 cpu);
/*
 * dispatch(): @cpu's local DSQ is empty: no machinery waits there. Inlined,
 * as the test below: every dispatch() and every slice's end passes, and a
 * BPF-to-BPF call cost more than the test (the profile, bench/README.md).
 */
static __always_inline void machinery_dispatching(s32 cpu)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);

	if (cctx && cctx->mach.waiting)
		cctx->mach.waiting = false;
}

void machinery_charge_turn(struct task_ctx *tctx, s32 cpu, u64 ran);

/*
 * A slice of @tctx's task ended on @cpu after @ran ns: charge it to the
 * CPU's budget if it was placed there as machinery; the rest took no
 * member's CPU.
 */
static __always_inline void machinery_charge(struct task_ctx *tctx, s32 cpu, u64 ran)
{
	if (tctx && tctx->mach.placed)
		machinery_charge_turn(tctx, cpu, ran);
}

#endif /* __SCX_LINGER_MACHINERY_BPF_H */
