/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * weight.bpf.h - the weight a task's vtime is charged at: nice, times its
 * cgroup's cpu.weight. Design: weight.bpf.c.
 */
#ifndef __SCX_LINGER_WEIGHT_BPF_H
#define __SCX_LINGER_WEIGHT_BPF_H

#include "ctx.bpf.h"

/* cgroup_init() and cgroup_set_weight(): @cgrp's cpu.weight is @weight. */
void set_cgroup_weight(struct cgroup *cgrp, u32 weight);
/* cgroup_move(): @tctx's task is now in @cgrp. */
void weight_note_move(struct task_ctx *tctx, struct cgroup *cgrp);
/* Bumped whenever some cgroup's weight changes (weight.bpf.c). */
extern u64 weight_gen;
/* Read @p's cgroup's weight into @tctx's cache afresh. */
void weight_refresh(struct task_struct *p, struct task_ctx *tctx);

/*
 * The weight vtime is charged at: nice weight x cgroup weight / 100.
 * @refresh: the cached cgroup weight may be refreshed, which needs
 * scx_bpf_task_cgroup(), allowed only in ops that operate on @p (not in
 * dispatch(), where prev is merely passed along). Inlined: a wake-up
 * asks six or seven times, and the call cost more than the arithmetic
 * (the profile, bench/README.md).
 */
static __always_inline u64 task_weight(struct task_struct *p,
				       struct task_ctx *tctx, bool refresh)
{
	u64 w = p->scx.weight;

	if ((p->flags & PF_KTHREAD) && w < 100)
		w = 100;
	if (!tctx)
		return w ? w : 1;
	if (refresh && tctx->wt.gen != weight_gen)
		weight_refresh(p, tctx);
	w = w * (tctx->wt.cgw ? tctx->wt.cgw : 100) / 100;
	return w ? w : 1;
}

#endif /* __SCX_LINGER_WEIGHT_BPF_H */
