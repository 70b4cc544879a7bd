/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * classify.bpf.h - which class a task belongs to.
 *
 * Operators label cgroups; the agent reads the labels (xattrs, config
 * rules, cpu.idle) and writes one entry per labelled cgroup into
 * cgrp_class, keyed by the cgroup's id on the default hierarchy (the
 * kernfs node id, which is the inode number userspace sees).
 *
 * A task's class is that of the nearest labelled cgroup at or above its
 * own, found by walking up the cgroup's ancestors. This makes inheritance
 * and brand-new cgroups work with no help from the agent: a cgroup created
 * under a guest job is guest from its first task on.
 *
 * The walk is not free, so each task caches its class together with the
 * cgroup id and the label generation it was computed for. The agent bumps
 * label_gen after every change to the map; a task that moved cgroups sees
 * a different id. Either way the next enqueue recomputes, so a relabel or
 * a move takes effect at the task's next scheduling event.
 */
#ifndef __SCX_LINGER_CLASSIFY_BPF_H
#define __SCX_LINGER_CLASSIFY_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u64);	/* cgroup id */
	__type(value, struct linger_label);
	__uint(max_entries, LINGER_MAX_LABELS);
} cgrp_class SEC(".maps");

/* Bumped by the agent after it changes cgrp_class. */
volatile u64 label_gen;

/* Per-task state, in task local storage. */
struct task_ctx {
	u64	cgid;		/* cgroup the cached class is for */
	u64	gen;		/* label_gen the cached class is for */
	u32	class;		/* cached enum linger_class (a gang's tier) */
	u32	gang;		/* cached gang number + 1, 0 if not in a gang */
	u32	vclass;		/* class whose clock its vtime follows */
	u32	counted;	/* gang (+1) whose nr_runnable counts this task */
	u64	slot_seq;	/* gang slot in which it last started running */
	u64	run_start;	/* when it last started running */
	u64	job;		/* cached job: cgroup id its accounting goes to */
	u64	ready_at;	/* when it last became ready to run (run delay) */
	u64	runnable_job;	/* job whose nr_runnable counts this task */
	u64	running_job;	/* job whose nr_running counts this task */
	u32	cgw;		/* cached cpu.weight of its cgroup */
	u64	wgen;		/* weight_gen the cached cgw is for */
	bool	granted;	/* running on a starvation-guard grant */
	u64	relief_slice;	/* slice of the gang relief it runs on, or 0 */
	u64	queued_at;	/* when it was last queued on the primary DSQ */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

static struct task_ctx *lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, (struct task_struct *)p, 0, 0);
}

/* The root cgroup's id: kernel threads and the system itself. */
#define ROOT_CGROUP_ID	1ULL

/*
 * Label of the nearest labelled cgroup at or above @cgrp: its class, and
 * its gang if it is one (a gang is the whole subtree of its cgroup). The
 * job the task's CPU time is accounted to goes to *@job: that labelled
 * cgroup, or without one the top-level cgroup (a slice, a job manager's
 * root), or the root.
 */
static struct linger_label cgroup_label(struct cgroup *cgrp, u64 *job)
{
	struct linger_label none = { .class = default_class, .gang = 0 };
	int level = BPF_CORE_READ(cgrp, level);
	u32 i;

	/*
	 * The root cgroup holds kernel threads and the system itself: always
	 * primary, whatever the default for unlabelled jobs is.
	 */
	*job = ROOT_CGROUP_ID;
	if (level <= 0) {
		none.class = LINGER_CLASS_PRIMARY;
		return none;
	}

	bpf_for(i, 0, LINGER_MAX_CGRP_LEVEL) {
		struct cgroup *anc = NULL;
		struct linger_label *label;
		u64 id;

		if (level - (int)i <= 0)
			break;
		bpf_probe_read_kernel(&anc, sizeof(anc),
				      &cgrp->ancestors[level - i]);
		if (!anc)
			break;
		id = BPF_CORE_READ(anc, kn, id);
		/* The walk ends at level 1: the job of an unlabelled task. */
		*job = id;
		label = bpf_map_lookup_elem(&cgrp_class, &id);
		if (label && label->class < LINGER_NR_CLASSES)
			return *label;
	}
	return none;
}

/*
 * The class of @p, from its cache when still valid; its gang, if any, is
 * cached beside it in tctx->gang. Kernel threads are always primary and
 * never in a gang: the node's own work comes first.
 */
static u32 task_class(const struct task_struct *p, struct task_ctx *tctx)
{
	struct linger_label label;
	struct cgroup *cgrp;
	u64 cgid, gen;

	if (!tctx)
		return LINGER_CLASS_PRIMARY;
	if (p->flags & PF_KTHREAD) {
		tctx->gang = 0;
		tctx->job = ROOT_CGROUP_ID;
		return tctx->class = LINGER_CLASS_PRIMARY;
	}

	cgrp = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	if (!cgrp) {
		tctx->gang = 0;
		tctx->job = ROOT_CGROUP_ID;
		return tctx->class = LINGER_CLASS_PRIMARY;
	}
	cgid = BPF_CORE_READ(cgrp, kn, id);
	gen = label_gen;
	if (tctx->cgid == cgid && tctx->gen == gen)
		return tctx->class;

	label = cgroup_label(cgrp, &tctx->job);
	tctx->class = label.class;
	tctx->gang = label.gang <= LINGER_MAX_GANGS ? label.gang : 0;
	tctx->cgid = cgid;
	tctx->gen = gen;
	stat_inc(LINGER_STAT_CLASSIFY);
	return tctx->class;
}

#endif /* __SCX_LINGER_CLASSIFY_BPF_H */
