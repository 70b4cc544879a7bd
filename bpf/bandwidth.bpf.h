/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bandwidth.bpf.h - cgroups' cpu.max limits. Design: bandwidth.bpf.c.
 */
#ifndef __SCX_LINGER_BANDWIDTH_BPF_H
#define __SCX_LINGER_BANDWIDTH_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/*
 * Limits in force, and a generation bumped whenever one is set, changed
 * or removed. Written by whoever sets the limits, the kernel's bandwidth
 * op where the kernel has it, else the agent (src/bpf/program.rs), and
 * by ops.cgroup_exit() when a limited cgroup goes.
 */
extern volatile u32 bw_nr_limits;
extern volatile u64 bw_gen;

/* ops.cgroup_init() and ops.cgroup_set_bandwidth(): cpu.max of @cgrp. */
void bw_set(struct cgroup *cgrp, u64 period_us, u64 quota_us);
/* ops.cgroup_exit(): @cgrp is gone. */
void bw_forget(struct cgroup *cgrp);
/* ops.cgroup_move(): @p's limited cgroups are looked up again. */
void bw_note_move(struct task_ctx *tctx);
/*
 * How much longer @p may run in its cgroups' current periods (U64_MAX:
 * no limit; 0: a cgroup of it used its quota). *@until, if not NULL,
 * gets when it may run again (0 unless it returns 0).
 */
u64 bw_left(const struct task_struct *p __arg_trusted, struct task_ctx *tctx, u64 now,
	    u64 *until);
/*
 * dispatch() (reclassify.bpf.c): true if held tasks may be due now; the
 * caller then looks at each, and reports each one still held, which may
 * go at @next, with bw_release_done().
 */
bool bw_release_due(u64 now);
int bw_release_done(u64 next, u64 now);
/* init(): the release timer. */
s32 bw_timer_init(void);

/*
 * No cgroup on the node has a limit: every check here is this one load,
 * inlined where the ops call in at every wake-up and switch (a call cost
 * more than the load: the profile, bench/README.md).
 */
static __always_inline bool bw_none(void)
{
	return !bw_nr_limits;
}

bool bw_hold_spent(struct task_struct *p, struct task_ctx *tctx, u64 enq_flags,
		   u64 now);
void bw_charge_limits(const struct task_struct *p, struct task_ctx *tctx, u64 ran,
		      u64 now);

/* enqueue(): hold @p back until its next period if it used its quota. */
static __always_inline bool bw_hold(struct task_struct *p, struct task_ctx *tctx,
				    u64 enq_flags, u64 now)
{
	return !bw_none() && bw_hold_spent(p, tctx, enq_flags, now);
}

/* stopping() and keep_running(): charge @ran ns to @p's limited cgroups. */
static __always_inline void bw_charge(const struct task_struct *p,
				      struct task_ctx *tctx, u64 ran, u64 now)
{
	if (!bw_none() && ran)
		bw_charge_limits(p, tctx, ran, now);
}

#endif /* __SCX_LINGER_BANDWIDTH_BPF_H */
