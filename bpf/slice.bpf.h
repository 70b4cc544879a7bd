/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * slice.bpf.h - a slice's start and end, and the ways dispatch() keeps a
 * CPU's task on it. Design: slice.bpf.c.
 */
#ifndef __SCX_LINGER_SLICE_BPF_H
#define __SCX_LINGER_SLICE_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/* A slice of @p ended after @ran ns: charge every budget it counts in. */
void charge_slice(struct task_struct *p, struct task_ctx *tctx, u64 ran,
		  u64 now, bool refresh);
/* A slice of @slice ns (before weighting) begins for @p on @cpu at @now. */
void start_slice(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
		 u64 slice, u64 now);
/* dispatch(): @prev, still runnable, runs another slice on @cpu. */
int keep_running(struct task_struct *prev __arg_trusted, struct task_ctx *tctx,
		 s32 cpu);
/* dispatch(): may @prev, still runnable, run on within its cpu.max? */
bool may_run_on(struct task_struct *prev, struct task_ctx *tctx, u64 now);
/* dispatch(): @tier's active gangs take @cpu; true if dispatch() is done. */
bool dispatch_gang(u32 tier, s32 cpu,
		   struct task_struct *prev __arg_trusted __arg_nullable,
		   struct task_ctx *tctx, u64 now);

#endif /* __SCX_LINGER_SLICE_BPF_H */
