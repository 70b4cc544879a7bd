/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * classify.bpf.h - which class a task is in, and which job its time
 * counts for. Design: classify.bpf.c.
 */
#ifndef __SCX_LINGER_CLASSIFY_BPF_H
#define __SCX_LINGER_CLASSIFY_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/* A task's cached classification, written by task_tier() only. */
struct class_task {
	u64	cgid;		/* cgroup the cache is for */
	u64	gen;		/* label_gen the cache is for */
	u64	job;		/* cgroup id its accounting goes to */
	u32	class;		/* enum linger_class */
	u32	tier;		/* enum linger_tier: class_tier(class) */
	u32	gang;		/* enum linger_gang_ref: its gang, if numbered */
	u32	pad;
};

/* Bumped by the agent after it changes the label map. */
extern volatile u64 label_gen;

/*
 * The tier @p is scheduled in, its class, job and gang recomputed into
 * @tctx->cls if its cgroup or the labels changed since last time.
 */
u32 task_tier(const struct task_struct *p, struct task_ctx *tctx);

#endif /* __SCX_LINGER_CLASSIFY_BPF_H */
