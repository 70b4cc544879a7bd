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
	__type(value, u32);	/* enum linger_class */
	__uint(max_entries, LINGER_MAX_LABELS);
} cgrp_class SEC(".maps");

/* Bumped by the agent after it changes cgrp_class. */
volatile u64 label_gen;

/* Per-task state, in task local storage. */
struct task_ctx {
	u64	cgid;		/* cgroup the cached class is for */
	u64	gen;		/* label_gen the cached class is for */
	u32	class;		/* cached enum linger_class */
	u32	vclass;		/* class whose clock its vtime follows */
	u32	cgw;		/* cached cpu.weight of its cgroup */
	u64	wgen;		/* weight_gen the cached cgw is for */
	bool	granted;	/* running on a starvation-guard grant */
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

/* Class of the nearest labelled cgroup at or above @cgrp. */
static u32 cgroup_class(struct cgroup *cgrp)
{
	int level = BPF_CORE_READ(cgrp, level);
	u32 i;

	/*
	 * The root cgroup holds kernel threads and the system itself: always
	 * primary, whatever the default for unlabelled jobs is.
	 */
	if (level <= 0)
		return LINGER_CLASS_PRIMARY;

	bpf_for(i, 0, LINGER_MAX_CGRP_LEVEL) {
		struct cgroup *anc = NULL;
		u32 *class;
		u64 id;

		if (level - (int)i <= 0)
			break;
		bpf_probe_read_kernel(&anc, sizeof(anc),
				      &cgrp->ancestors[level - i]);
		if (!anc)
			break;
		id = BPF_CORE_READ(anc, kn, id);
		class = bpf_map_lookup_elem(&cgrp_class, &id);
		if (class && *class < LINGER_NR_CLASSES)
			return *class;
	}
	return default_class;
}

/*
 * The class of @p, from its cache when still valid. Kernel threads are
 * always primary: the node's own work comes first.
 */
static u32 task_class(const struct task_struct *p, struct task_ctx *tctx)
{
	struct cgroup *cgrp;
	u64 cgid, gen;

	if (!tctx || (p->flags & PF_KTHREAD))
		return LINGER_CLASS_PRIMARY;

	cgrp = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	if (!cgrp)
		return LINGER_CLASS_PRIMARY;
	cgid = BPF_CORE_READ(cgrp, kn, id);
	gen = label_gen;
	if (tctx->cgid == cgid && tctx->gen == gen)
		return tctx->class;

	tctx->class = cgroup_class(cgrp);
	tctx->cgid = cgid;
	tctx->gen = gen;
	stat_inc(LINGER_STAT_CLASSIFY);
	return tctx->class;
}

#endif /* __SCX_LINGER_CLASSIFY_BPF_H */
