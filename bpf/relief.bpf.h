/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * relief.bpf.h - ordinary primary work inside primary gang slots: a CPU
 * budget the gangs give up, spent at once when ordinary work wakes.
 * Design: relief.bpf.c.
 */
#ifndef __SCX_LINGER_RELIEF_BPF_H
#define __SCX_LINGER_RELIEF_BPF_H

#include "linger.bpf.h"

struct task_ctx;

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
/*
 * running(): a task of @tier starts on this CPU: the slice of the relief
 * turn it begins, or 0 if it begins none.
 */
u64 relief_running(u32 tier, u64 now);
/* A slice on this CPU ended after @ran ns: settle its turn, if one. */
int relief_charge(u64 ran);

#endif /* __SCX_LINGER_RELIEF_BPF_H */
