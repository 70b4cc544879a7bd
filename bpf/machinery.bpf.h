/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * machinery.bpf.h - the node's own machinery beside gangs: kernel
 * threads, system services and Slurm's step daemons take a gang member's
 * CPU as they wake, within a budget per CPU. Design: machinery.bpf.c.
 */
#ifndef __SCX_LINGER_MACHINERY_BPF_H
#define __SCX_LINGER_MACHINERY_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/* Per-task part (ctx.bpf.h): the turn it was given, until it is settled. */
struct machinery_task {
	u64	grant;		/* ns claimed from grant_cpu's budget; 0: none */
	s32	grant_cpu;
	u32	pad;
};

/*
 * enqueue(): machinery task @tctx woke (@enq_flags) to run on @cpu, which
 * a member of an admitted primary gang holds: the slice of the turn it
 * takes there at once, preempting the member, or 0 if it takes none.
 */
u64 machinery_turn(struct task_ctx *tctx, s32 cpu, u64 enq_flags);
/*
 * select_cpu(): machinery @p woke: a CPU a member of an admitted primary
 * gang holds, its last one first, where it claimed a turn (of
 * tctx->mach.grant ns), or -1.
 */
s32 machinery_pick(struct task_struct *p, struct task_ctx *tctx, s32 prev_cpu);
/* A slice of @tctx's task ended after @ran ns: settle its turn, if one. */
void machinery_charge(struct task_ctx *tctx, u64 ran);

#endif /* __SCX_LINGER_MACHINERY_BPF_H */
