/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ctx.bpf.h - per-task and per-CPU state.
 *
 * A task's state is one task-local-storage entry, and a CPU's one entry
 * of an array, each made of per-feature parts. The parts are declared
 * here, where the whole of what the scheduler holds can be read at once,
 * and not in the features' headers: this header depends on no feature,
 * and every feature may depend on it. Each part is written by its own
 * unit only. Storage: ctx.bpf.c; look-ups: below.
 */
#ifndef __SCX_LINGER_CTX_BPF_H
#define __SCX_LINGER_CTX_BPF_H

#include "linger.bpf.h"

/*
 * A task's parts. Each is written by the unit named, and read by others
 * only through that unit's header, except where a comment says so.
 */

/* Its cached classification; written by task_tier() only (classify.bpf.c). */
struct class_task {
	u64	cgid;		/* cgroup the cache is for */
	u64	gen;		/* label_gen the cache is for */
	u64	job;		/* cgroup id its accounting goes to */
	u32	class;		/* enum linger_class */
	u32	tier;		/* enum linger_tier: class_tier(class) */
	u32	gang;		/* enum linger_gang_ref: its gang, if numbered */
	u32	machinery;	/* the node's own work (machinery.bpf.c) */
	u64	moved_at;	/* its run time + 1 when it began moving itself */
};

/* Its vtime bookkeeping (vtime.bpf.c). */
struct vtime_task {
	/*
	 * The tier whose clock its vtime follows; LINGER_NR_TIERS for a
	 * slotted gang member, whose vtime follows none (see gang_enqueue()).
	 */
	u32	vtier;
	/* The LLC whose clock it is measured against (llc.bpf.c). */
	u32	llc;
	/* ns run since it last woke, and the running average per wake-up. */
	u64	burst;
	u64	avg_burst;
	/* Its request in vtime: what its key (dsq_vtime) is ahead of its vtime. */
	u64	req;
};

/* Its cgroup's weight, cached (weight.bpf.c). */
struct weight_task {
	u32	cgw;		/* its cgroup's cpu.weight (0: not known yet) */
	u32	pad;
	u64	gen;		/* weight_gen it is cached for */
};

/* Its accounting (account.bpf.c). */
struct acct_task {
	u64	run_start;	/* when it last started running or was charged (estimates within a run) */
	u64	exec_seen;	/* its se.sum_exec_runtime when it was last charged */
	u64	runnable_job;	/* job whose nr_runnable counts this task */
	u64	running_job;	/* job its run is charged to (0: not running) */
	u64	delay;		/* the run delay that ended as this run began */
};

/* Its gang bookkeeping (the gang units). */
struct gang_task {
	u32	counted;	/* gang (enum linger_gang_ref) whose nr_runnable counts it */
	u32	pad;
	u64	slot_seq;	/* gang slot in which it last started running */
};

/* Its guard state (the ops and guard.bpf.c). */
struct guard_task {
	/*
	 * Ready to run, and not run, since then (0: running or asleep): the
	 * one clock every wait is measured by, the run delay's figures
	 * (account.bpf.c), the age guard's look and gang relief's
	 * (gang_run.bpf.c). Written only through guard_note_waiting().
	 */
	u64	ready_at;
	bool	granted;	/* running on a starvation-guard grant */
};

/* How it was woken (the ops and wakeup.bpf.c). */
struct wakeup_task {
	bool	sync_wake;	/* its waker said it will sleep (SCX_WAKE_SYNC) */
	bool	jumped;		/* handed a guest's CPU past the queue */
};

/* Its cpu.max-limited cgroups, cached (bandwidth.bpf.c). */
struct bw_task {
	u64	cgid;		/* cgroup the cache is for (0: none) */
	u64	gen;		/* bw_gen the cache is for */
	u64	ids[LINGER_BW_DEPTH];	/* its limited cgroups, nearest first */
	u32	nr;		/* entries of ids[] in use */
	u32	pad;
};

/*
 * Its turn as the node's machinery (machinery.bpf.c): the slice it was
 * placed with, and whether its next slice is charged to that CPU's budget.
 */
struct machinery_task {
	u64	slice;
	bool	placed;
};

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

/*
 * A CPU's parts. Each is written by the unit named; those read by other
 * CPUs say so.
 */

/* Its guard grants (guard.bpf.c), this CPU's own. */
struct guard_cpu {
	u64	last_grant;	/* when this CPU last made a guard grant */
	u64	last_reader_grant; /* and a reader grant */
	bool	grant_pending;	/* the guest being moved here is a grant */
};

/* Its relief turn (relief.bpf.c), this CPU's own. */
struct relief_cpu {
	u64	grant;		/* the relief turn claimed for this CPU */
	u64	started;	/* when that turn began running */
	bool	pending;	/* the primary being moved here is a relief turn */
};

/*
 * What it runs, as gangs see it (the gang units); read by every CPU.
 * running: the gang (enum linger_gang_ref) of the member on it, set by
 * the CPU itself. reserved: a waking member of that gang kicked this CPU
 * and will take it. released: a higher sched class (RT, deadline, stop)
 * holds the CPU. swap_to: a swap (gang_run.bpf.c): the member of gang
 * swap_gang on this CPU goes to CPU swap_to - 1 at its next enqueue().
 * pinned_at: when ordinary primary work that may run only here last
 * waited or began a slice here (gang_run.bpf.c: pinned work).
 */
struct cpu_gang {
	u32	running;
	u32	reserved;
	u64	reserved_at;
	u32	swap_to;
	u32	swap_gang;
	u64	swap_at;
	u64	pinned_at;
	bool	released;
};

/*
 * The node's machinery's budget on it (machinery.bpf.c), and whether
 * machinery waits in its local DSQ, which the member's tick reads
 * (machinery_tick()).
 */
struct machinery_cpu {
	u64	clock;
	bool	waiting;
};

/*
 * The ordinary primary it runs (wakeup.bpf.c), read by wakers on other
 * CPUs.
 */
struct wakeup_cpu {
	u64	key;		/* the running task's key when its slice began */
	u64	req;		/* and its request, ns */
	u64	weight;		/* and its weight (task_weight()) */
	u64	started;	/* when the slice began (0: no ordinary primary) */
};

/*
 * One entry per CPU, a cache line or more of its own: other CPUs read
 * parts of it, and no two CPUs' entries share a line.
 */
struct cpu_ctx {
	struct guard_cpu	guard;
	struct relief_cpu	relief;
	struct cpu_gang		gang;
	struct machinery_cpu	mach;
	struct wakeup_cpu	wk;
} __attribute__((aligned(64)));

/*
 * The maps behind them, defined here so that the look-ups below are
 * inlined in every unit: every op looks up both, and a BPF-to-BPF call
 * costs more than the look-up it wraps (the verifier turns an array
 * look-up into a few instructions). Each unit that includes this
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
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cpu_ctx);
	__uint(max_entries, LINGER_MAX_CPUS);
} cpu_ctxs __weak SEC(".maps");

/* @p's state; NULL only if init_task() could not create it. */
static __always_inline struct task_ctx *
lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, (struct task_struct *)p, 0, 0);
}

/* @cpu's state; NULL only for a CPU number out of range. */
static __always_inline struct cpu_ctx *lookup_cpu_ctx(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&cpu_ctxs, &key);
}

/* The state of the CPU this runs on. */
static __always_inline struct cpu_ctx *lookup_this_cpu_ctx(void)
{
	return lookup_cpu_ctx(bpf_get_smp_processor_id());
}

/* Create @p's state (init_task()); NULL on allocation failure. */
struct task_ctx *create_task_ctx(struct task_struct *p);

#endif /* __SCX_LINGER_CTX_BPF_H */
