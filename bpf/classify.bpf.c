/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * classify.bpf.c - which class a task belongs to.
 *
 * Operators label cgroups; the agent reads the labels (xattrs, config
 * rules, cpu.idle), decides every cgroup's class, gang and job
 * (src/labels/cgroups.rs: the one place those rules live) and writes one
 * entry per cgroup into cgrp_class, keyed by the cgroup's id on the
 * default hierarchy (the kernfs node id, which is the inode number
 * userspace sees).
 *
 * A task's class is its cgroup's entry. A cgroup the agent has not seen
 * yet (created since its last scan) takes what its nearest described
 * ancestor says its heirs get: a cgroup created under a guest job is
 * guest from its first task on, with no help from the agent.
 *
 * The lookup walks up the ancestors only for such new cgroups, but it is
 * not free either, so each task caches its class together with the
 * cgroup id and the label generation it was computed for. The agent bumps
 * label_gen after every change to the map; a task that moved cgroups sees
 * a different id. Either way the next scheduling event recomputes, so a
 * relabel or a move takes effect at the task's next event.
 */
#include "ctx.bpf.h"
#include "classify.bpf.h"
#include "gang.bpf.h"
#include "stats.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u64);	/* cgroup id */
	__type(value, struct linger_label);
	__uint(max_entries, LINGER_MAX_LABELS);
} cgrp_class SEC(".maps");

volatile u64 label_gen;

/*
 * What the agent says @cgrp is (into *@c): its own entry, else the heir
 * view of its nearest described ancestor. False if nothing on the path is
 * described (the agent has not run its first scan).
 */
static bool describe_cgroup(struct cgroup *cgrp, struct class_task *c)
{
	int level = BPF_CORE_READ(cgrp, level);
	struct cgroup *top = NULL;
	u32 i;

	/* The top-level cgroup on the path: an heir's job if the entry says 0. */
	if (level >= 1)
		bpf_probe_read_kernel(&top, sizeof(top), &cgrp->ancestors[1]);

	bpf_for(i, 0, LINGER_MAX_CGRP_LEVEL) {
		struct cgroup *anc = NULL;
		struct linger_label *label;
		u64 id;

		if (level - (int)i < 0)
			break;
		bpf_probe_read_kernel(&anc, sizeof(anc),
				      &cgrp->ancestors[level - i]);
		if (!anc)
			break;
		id = BPF_CORE_READ(anc, kn, id);
		label = bpf_map_lookup_elem(&cgrp_class, &id);
		if (!label)
			continue;
		if (i == 0) {
			c->class = label->class;
			c->gang = label->gang;
			c->job = label->job;
			c->machinery = label->machinery;
		} else {
			c->class = label->heir_class;
			c->gang = label->heir_gang;
			c->job = label->heir_job;
			c->machinery = label->heir_machinery;
			if (!c->job)
				c->job = top ? BPF_CORE_READ(top, kn, id) : ROOT_CGROUP_ID;
		}
		return true;
	}
	return false;
}

/*
 * A task outside every job: primary, never in a gang, the root's job.
 * Kernel threads always are, and are the node's machinery; so is a task
 * no entry describes (only before the agent's first scan), which is not.
 */
static u32 system_task(struct class_task *c, bool kthread)
{
	c->class = LINGER_CLASS_PRIMARY;
	c->gang = LINGER_GANG_NONE;
	c->job = ROOT_CGROUP_ID;
	c->machinery = kthread;
	return c->tier = LINGER_TIER_PRIMARY;
}

/*
 * A dying task (task_dying()) runs as an ordinary primary, out of its
 * gang, whatever its class: under full primary load a guest would exit
 * only on the starvation guard's trickle (a job of eight processes took
 * 35 s to go), and a gang member that will never reach its barrier again
 * has no slot to wait for. Its time still counts for its job.
 */
static u32 dying_or(const struct task_struct *p, struct class_task *c)
{
	if (task_dying(p)) {
		c->gang = LINGER_GANG_NONE;
		c->tier = LINGER_TIER_PRIMARY;
	}
	return c->tier;
}

/*
 * A task that writes its own pid into cgroup.procs (a job script's
 * `echo $$`, a launcher placing itself) holds cgroup_mutex and the cgroup
 * threadgroup lock until the write is over, and every fork and cgroup
 * write on the node waits for them. Where the cpu controller moves it,
 * the kernel takes it off its CPU and puts it back around the group
 * change and then reschedules it (sched_move_task()), all inside that
 * write. Classed by its new cgroup there, a task moving into a guest
 * cgroup under primary load would wait in the guest queue for the
 * starvation guard with the locks held: seconds, with every fork on the
 * node behind it. So the cpu controller's prep_move (before the task's
 * cgroup changes) notes it, and it keeps the class it had until it has
 * run MOVE_HOLD_NS more, far longer than the rest of a cgroup write. It
 * keeps no more than it had: a guest moving itself stays a guest, so the
 * hold can be generous. Run time counts what the hypervisor took from
 * the vCPU too: 2 ms ran out inside the write once under a busy host,
 * and a fork on the node waited 4.2 s behind the write.
 */
#define MOVE_HOLD_NS	(20 * 1000 * 1000ULL)

static bool held_through_own_move(const struct task_struct *p, struct class_task *c)
{
	if (!c->moved_at)
		return false;
	if (p->se.sum_exec_runtime + 1 - c->moved_at < MOVE_HOLD_NS)
		return true;
	c->moved_at = 0;
	return false;
}

/*
 * A global function, verified once: its cgroup walk, inlined, was walked
 * again at every call, and inside every DSQ walk that classes a task.
 */
__noinline u32 task_tier(const struct task_struct *p __arg_trusted,
			 struct task_ctx *tctx)
{
	struct class_task *c, kept;
	struct cgroup *cgrp;
	bool described;
	u64 cgid, gen;

	if (!tctx)
		return LINGER_TIER_PRIMARY;
	c = &tctx->cls;
	if (p->flags & PF_KTHREAD)
		return system_task(c, true);

	/*
	 * Plain loads, not BPF_CORE_READ(): every event passes here, and each
	 * hop of BPF_CORE_READ() is a bpf_probe_read_kernel() call, about a
	 * hundred instructions, where the verifier turns these loads into
	 * single fault-safe ones.
	 */
	cgrp = p->cgroups->dfl_cgrp;
	if (!cgrp)
		return system_task(c, false);
	cgid = cgrp->kn->id;
	gen = label_gen;
	if (c->cgid == cgid && c->gen == gen)
		return dying_or(p, c);

	/*
	 * A task held through its own move keeps its class, but its CPU time
	 * goes to the job of the cgroup it is in, as that cgroup's cpu.stat
	 * counts it; the cache stays keyed to the old cgroup, so that the
	 * class is computed afresh once the hold ends. The hold is looked at
	 * after the one description both cases share: task_tier() is verified
	 * in every program calling it, and a branch before it would double
	 * the paths through the walk.
	 */
	kept = *c;
	c->cgid = cgid;
	c->gen = gen;
	stat_inc(LINGER_STAT_CLASSIFY);
	described = describe_cgroup(cgrp, c);
	if (held_through_own_move(p, c)) {
		if (described)
			kept.job = c->job;
		*c = kept;
		return dying_or(p, c);
	}
	if (!described || c->class >= LINGER_NR_CLASSES)
		return system_task(c, false);
	if (gang_of_ref(c->gang) >= LINGER_MAX_GANGS)
		c->gang = LINGER_GANG_NONE;
	c->tier = class_tier(c->class);
	return dying_or(p, c);
}

__hidden void note_own_move(struct task_struct *p, struct task_ctx *tctx)
{
	/* Its class by the cgroup it is still in, then held. */
	tctx->cls.moved_at = 0;
	task_tier(p, tctx);
	tctx->cls.moved_at = p->se.sum_exec_runtime + 1;
}
