/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * classify.bpf.c - which class a task belongs to.
 *
 * Operators label cgroups; the agent reads the labels (xattrs, config
 * rules, cpu.idle), decides each labelled cgroup's class
 * (src/labels/class.rs) and writes one entry per labelled cgroup into
 * cgrp_class, keyed by the cgroup's id on the default hierarchy (the
 * kernfs node id, which is the inode number userspace sees).
 *
 * A task's class is that of the nearest labelled cgroup at or above its
 * own, found by walking up the cgroup's ancestors. This makes inheritance
 * and brand-new cgroups work with no help from the agent: a cgroup created
 * under a guest job is guest from its first task on. The agent's `ls`
 * and stats show the same inheritance (src/labels/cgroups.rs,
 * resolve_all()); the guest tests check that both agree.
 *
 * The walk is not free, so each task caches its class together with the
 * cgroup id and the label generation it was computed for. The agent bumps
 * label_gen after every change to the map; a task that moved cgroups sees
 * a different id. Either way the next scheduling event recomputes, so a
 * relabel or a move takes effect at the task's next event.
 */
#include "ctx.bpf.h"
#include "stats.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u64);	/* cgroup id */
	__type(value, struct linger_label);
	__uint(max_entries, LINGER_MAX_LABELS);
} cgrp_class SEC(".maps");

volatile u64 label_gen;

/*
 * Label of the nearest labelled cgroup at or above @cgrp: its class, and
 * its gang if it is one (a gang is the whole subtree of its cgroup). The
 * job the task's CPU time is accounted to goes to *@job: that labelled
 * cgroup, or without one the top-level cgroup (a slice, a job manager's
 * root), or the root.
 */
static struct linger_label cgroup_label(struct cgroup *cgrp, u64 *job)
{
	struct linger_label none = {
		.class = default_class, .gang = LINGER_GANG_NONE,
	};
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

/* A task outside every job: primary, never in a gang, the root's job. */
static u32 system_task(struct class_task *c)
{
	c->class = LINGER_CLASS_PRIMARY;
	c->gang = LINGER_GANG_NONE;
	c->job = ROOT_CGROUP_ID;
	return c->tier = LINGER_TIER_PRIMARY;
}

/*
 * Kernel threads are always primary and never in a gang: the node's own
 * work comes first.
 */
__hidden u32 task_tier(const struct task_struct *p, struct task_ctx *tctx)
{
	struct linger_label label;
	struct class_task *c;
	struct cgroup *cgrp;
	u64 cgid, gen;

	if (!tctx)
		return LINGER_TIER_PRIMARY;
	c = &tctx->cls;
	if (p->flags & PF_KTHREAD)
		return system_task(c);

	cgrp = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	if (!cgrp)
		return system_task(c);
	cgid = BPF_CORE_READ(cgrp, kn, id);
	gen = label_gen;
	if (c->cgid == cgid && c->gen == gen)
		return c->tier;

	label = cgroup_label(cgrp, &c->job);
	c->class = label.class;
	c->tier = class_tier(label.class);
	c->gang = label.gang <= LINGER_MAX_GANGS ? label.gang : LINGER_GANG_NONE;
	c->cgid = cgid;
	c->gen = gen;
	stat_inc(LINGER_STAT_CLASSIFY);
	return c->tier;
}
