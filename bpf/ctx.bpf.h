/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ctx.bpf.h - per-task and per-CPU state.
 *
 * A task's state is one task-local-storage entry made of per-feature
 * parts, each declared and written by its own unit only (the others may
 * read it): which class it is in (classify), its vtime tier (vtime), its
 * cgroup's weight (weight), its accounting (account), its gang
 * bookkeeping (gang), its guard grant (guard), how it was
 * woken (wakeup), its cpu.max-limited cgroups (bandwidth), its turn as
 * the node's machinery (machinery). Storage:
 * ctx.bpf.c; look-ups: below.
 */
#ifndef __SCX_LINGER_CTX_BPF_H
#define __SCX_LINGER_CTX_BPF_H

#include "linger.bpf.h"
#include "account.bpf.h"
#include "bandwidth.bpf.h"
#include "classify.bpf.h"
#include "gang.bpf.h"
#include "guard.bpf.h"
#include "machinery.bpf.h"
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
	struct machinery_task	mach;
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

/*
 * The maps behind them, defined here so that the look-ups below are
 * inlined in every unit: every op looks up both, and a BPF-to-BPF call
 * costs more than the look-up it wraps (the verifier turns a per-CPU
 * array look-up into a few instructions). Each unit that includes this
 * has the same weak definition, and libbpf's linker keeps one. (An
 * extern declaration would do, but libbpf-cargo's pass over a single
 * unit binds an extern map to that unit's own .maps section.)
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs __weak SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct cpu_ctx);
	__uint(max_entries, 1);
} cpu_ctxs __weak SEC(".maps");

/* @p's state; NULL only if init_task() could not create it. */
static __always_inline struct task_ctx *
lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, (struct task_struct *)p, 0, 0);
}

/* This CPU's state. */
static __always_inline struct cpu_ctx *lookup_cpu_ctx(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_ctxs, &zero);
}

/* Create @p's state (init_task()); NULL on allocation failure. */
struct task_ctx *create_task_ctx(struct task_struct *p);

#endif /* __SCX_LINGER_CTX_BPF_H */
