/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wakeup.bpf.h - preemption within the primary tier by deadline: a
 * primary whose deadline comes first takes the CPU of one whose deadline
 * comes later, as it wakes or at the next tick. Design: wakeup.bpf.c.
 */
#ifndef __SCX_LINGER_WAKEUP_BPF_H
#define __SCX_LINGER_WAKEUP_BPF_H

#include "ctx.bpf.h"

/*
 * What runs on @cpu (ctx.bpf.h: struct wakeup_cpu): written by that CPU,
 * read by wakers elsewhere.
 */
static __always_inline struct wakeup_cpu *lookup_wakeup_cpu(s32 cpu)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);

	return cctx ? &cctx->wk : NULL;
}

/* select_cpu(): @tctx's task wakes with @wake_flags and found no CPU. */
void wakeup_note_select(struct task_ctx *tctx, u64 wake_flags);
/* select_cpu(): @tctx's task goes to a guest's CPU, past the queue. */
void wakeup_note_jump(struct task_ctx *tctx);
/* A slice of @p begins on @cpu at @now (running(), or dispatch() keeps it). */
void wakeup_note_start(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
		       u64 now);
/* stopping(): the task on @cpu leaves it. Inlined: one store, every switch. */
static __always_inline void wakeup_note_stopping(s32 cpu)
{
	struct wakeup_cpu *wc = lookup_wakeup_cpu(cpu);

	if (wc)
		wc->started = 0;
}
/*
 * enqueue(): primary @p woke (select_cpu() found no idle CPU and no guest
 * to take over, or was not asked): true if its deadline comes before that
 * of the primary on its CPU. The caller then inserts it into that CPU's
 * local DSQ with SCX_ENQ_PREEMPT (counted here).
 */
bool wakeup_preempts(struct task_struct *p, struct task_ctx *tctx);
/* tick(): @p runs on @cpu; ends its slice if a primary queued comes first. */
void wakeup_tick(struct task_struct *p, s32 cpu);

#endif /* __SCX_LINGER_WAKEUP_BPF_H */
