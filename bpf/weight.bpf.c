/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * weight.bpf.c - the cgroup's cpu.weight on top of the task's nice weight.
 *
 * The kernel tells us each cgroup's cpu.weight (cgroup_init and
 * cgroup_set_weight, for cgroups with the cpu controller enabled). A task
 * is charged vtime at its nice weight times its cgroup's weight / 100, so
 * a job in a cgroup with cpu.weight 200 runs twice as much per thread as
 * its neighbours in the same class. This is flat, per-thread weighting: a
 * cgroup with more runnable threads still gets more CPU in total, which is
 * what batch nodes expect from per-core job slots (scx_flatcg shows the
 * fully hierarchical alternative).
 *
 * Tasks cache their cgroup's weight: cgroup_move sets it, and a weight
 * change bumps weight_gen so that tasks refresh it at their next stop.
 *
 * Kernel threads are charged at no less than the default weight, whatever
 * their nice. khugepaged runs at nice 19 (weight 1 here, 100 times the
 * vtime per nanosecond): charged at that weight it falls far behind the
 * clock, and preempted inside an RCU read-side section it can hold up
 * RCU until the kernel reports a stall and ends the scheduler. A kernel
 * thread is the node's own housekeeping, not a job to rank.
 */
#include "ctx.bpf.h"
#include "weight.bpf.h"

struct cgrp_ctx {
	u32	weight;		/* cpu.weight, 1..10000, 100 by default */
};

struct {
	__uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cgrp_ctx);
} cgrp_ctxs SEC(".maps");

/* Bumped whenever some cgroup's weight changes. */
u64 weight_gen = 1;

static u32 cgroup_weight(struct cgroup *cgrp)
{
	struct cgrp_ctx *cctx = bpf_cgrp_storage_get(&cgrp_ctxs, cgrp, 0, 0);

	return cctx && cctx->weight ? cctx->weight : 100;
}

__hidden void set_cgroup_weight(struct cgroup *cgrp, u32 weight)
{
	struct cgrp_ctx *cctx = bpf_cgrp_storage_get(&cgrp_ctxs, cgrp, 0,
						     BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (cctx)
		cctx->weight = weight ? weight : 100;
	__sync_fetch_and_add(&weight_gen, 1);
}

/* The slow part of task_weight() (weight.bpf.h): its cgroup's weight changed. */
__hidden void weight_refresh(struct task_struct *p, struct task_ctx *tctx)
{
	struct cgroup *cgrp = scx_bpf_task_cgroup(p);

	if (cgrp) {
		tctx->wt.cgw = cgroup_weight(cgrp);
		bpf_cgroup_release(cgrp);
	}
	tctx->wt.gen = weight_gen;
}

__hidden void weight_note_move(struct task_ctx *tctx, struct cgroup *cgrp)
{
	if (!tctx)
		return;
	tctx->wt.cgw = cgroup_weight(cgrp);
	tctx->wt.gen = weight_gen;
}
