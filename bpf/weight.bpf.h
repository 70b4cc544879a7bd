/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * weight.bpf.h - the weight a task's vtime is charged at: nice, times its
 * cgroup's cpu.weight. Design: weight.bpf.c.
 */
#ifndef __SCX_LINGER_WEIGHT_BPF_H
#define __SCX_LINGER_WEIGHT_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/* cgroup_init() and cgroup_set_weight(): @cgrp's cpu.weight is @weight. */
void set_cgroup_weight(struct cgroup *cgrp, u32 weight);
/* cgroup_move(): @tctx's task is now in @cgrp. */
void weight_note_move(struct task_ctx *tctx, struct cgroup *cgrp);
/*
 * The weight vtime is charged at. @refresh: the cached cgroup weight may
 * be refreshed, which needs scx_bpf_task_cgroup(), allowed only in ops
 * that operate on @p (not in dispatch(), where prev is merely passed
 * along).
 */
u64 task_weight(struct task_struct *p, struct task_ctx *tctx, bool refresh);

#endif /* __SCX_LINGER_WEIGHT_BPF_H */
