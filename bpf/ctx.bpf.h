/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ctx.bpf.h - per-task and per-CPU state.
 *
 * A task's state is one task-local-storage entry made of per-feature
 * parts, each declared and written by its own unit only (the others may
 * read it): which class it is in (classify), its vtime tier (vtime), its
 * cgroup's weight (weight), its accounting (account), its gang
 * bookkeeping (gang), its guard grant (guard), how it was
 * woken (wakeup), its cpu.max-limited cgroups (bandwidth). Storage
 * and lookups: ctx.bpf.c.
 */
#ifndef __SCX_LINGER_CTX_BPF_H
#define __SCX_LINGER_CTX_BPF_H

#include "linger.bpf.h"
#include "account.bpf.h"
#include "bandwidth.bpf.h"
#include "classify.bpf.h"
#include "gang.bpf.h"
#include "guard.bpf.h"
#include "vtime.bpf.h"
#include "wakeup.bpf.h"
#include "weight.bpf.h"

struct task_ctx {
	struct class_task	cls;
	struct vtime_task	vt;
	struct weight_task	wt;
	struct acct_task	acct;
	struct gang_task	gang;
	struct guard_task	guard;
	struct wakeup_task	wk;
	struct bw_task		bw;
};

/* Per-CPU state, touched only by its own CPU. */
struct cpu_ctx {
	u64	last_grant;	/* when this CPU last made a guard grant */
	u64	last_reader_grant; /* and a reader grant */
	u64	relief_grant;	/* the relief turn claimed for this CPU (relief) */
	u64	relief_started;	/* when that turn began running */
	bool	grant_pending;	/* the guest being moved here is a grant */
	bool	relief_pending;	/* the primary being moved here is a relief turn */
};

/* @p's state; NULL only if init_task() could not create it. */
struct task_ctx *lookup_task_ctx(const struct task_struct *p);
/* Create @p's state (init_task()); NULL on allocation failure. */
struct task_ctx *create_task_ctx(struct task_struct *p);
/* This CPU's state. */
struct cpu_ctx *lookup_cpu_ctx(void);

#endif /* __SCX_LINGER_CTX_BPF_H */
