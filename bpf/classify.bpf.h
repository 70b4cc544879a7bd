/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * classify.bpf.h - which class a task is in, and which job its time
 * counts for. Design: classify.bpf.c.
 */
#ifndef __SCX_LINGER_CLASSIFY_BPF_H
#define __SCX_LINGER_CLASSIFY_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/* Bumped by the agent after it changes the label map. */
extern volatile u64 label_gen;

/*
 * Is @p dying: exiting, or with SIGKILL pending (a group kill, scancel,
 * cgroup.kill and the OOM killer put it in every thread's own pending
 * set)? It will run none of its job's code again, but it must run to
 * exit: until then it holds its memory and its cgroup, and a batch
 * system that waits for a killed job's tasks drains the node once they
 * outlive its timeout (Slurm's UnkillableStepTimeout, 60 s).
 */
static __always_inline bool task_dying(const struct task_struct *p)
{
	/* SIGKILL is 9: bit 8 of the first word of the pending set. */
	return (p->flags & PF_EXITING) || (p->pending.signal.sig[0] & (1ULL << 8));
}

/*
 * The tier @p is scheduled in, its class, job and gang recomputed into
 * @tctx->cls if its cgroup or the labels changed since last time. A dying
 * task is an ordinary primary whatever its class (no gang), its time
 * still its job's.
 */
u32 task_tier(const struct task_struct *p __arg_trusted, struct task_ctx *tctx);

/*
 * @p, the current task, is about to move itself into another cgroup: it
 * keeps the class it has now through the rest of that cgroup write
 * (classify.bpf.c: held_through_own_move()).
 */
void note_own_move(struct task_struct *p, struct task_ctx *tctx);

#endif /* __SCX_LINGER_CLASSIFY_BPF_H */
