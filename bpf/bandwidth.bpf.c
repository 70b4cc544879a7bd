/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bandwidth.bpf.c - cgroups' cpu.max: a cgroup runs at most quota ns of
 * CPU in each period, whatever its class.
 *
 * Under sched_ext the kernel's own CFS bandwidth control does not apply:
 * a cgroup's limit holds only if the scheduler enforces it. Container
 * runtimes, systemd's CPUQuota= and many batch systems' job limits are
 * cpu.max, so a node that ignored it would let a job use every CPU it
 * was told it may not.
 *
 * Where the limits come from: the kernel's ops.cgroup_init() and
 * ops.cgroup_set_bandwidth() where it has them (6.17 and later), else
 * the agent, which reads cpu.max from cgroupfs when it reads the tree
 * and writes the same entries. Either way one map, cgrp_bws, holds one
 * entry per limited cgroup; "max" removes it.
 *
 * How it is enforced, as the kernel means it:
 *  - Every run of a task is charged, when it stops or its slice is
 *    refilled, to each limited cgroup on its path (the nearest
 *    LINGER_BW_DEPTH of them): nested limits all hold, the tightest one
 *    first.
 *  - A period starts when the last one ends (its first is the cgroup's
 *    first charge). Time used past the quota in one period is carried
 *    into the next as debt, as CFS carries a runqueue's overrun: runs
 *    end only at slice ends and stops, so a period's overrun is paid for
 *    in the next, and over several periods the use is the quota's share.
 *  - A task starts with a slice no longer than what its cgroups have
 *    left. One whose cgroup has nothing left is held in LINGER_BW_DSQ
 *    when it is enqueued, and never reaches a class or gang queue; one
 *    that was queued before its cgroup ran out is stopped as it starts
 *    (running()) and held then.
 *  - When the earliest held cgroup's period ends, a BPF timer wakes a
 *    CPU, whose dispatch() moves the tasks whose cgroups have quota again
 *    back to their queues (reclassify.bpf.c) and wakes CPUs for them.
 *
 * What throttling means for the classes: a held task is out of every
 * queue, so strict priority and the starvation guard never see it: a
 * held primary lets guests have the CPUs it may not use, and the guard
 * only ever trickles CPU to guests that are allowed it. A held gang
 * member misses its gang's slot for the rest of the period, as a member
 * that sleeps does: the gang's slot is not kept empty for it (its CPUs
 * go to the rest of the gang and to backfill), since a job that is over
 * its limit must not hold CPUs it may not use.
 *
 * Not held back: kernel threads (never in a limited cgroup), dying tasks
 * (task_dying(): they must run to release what they hold) and tasks with
 * migration disabled (inside a kernel section; held, they could stall
 * others): each is charged, and its cgroup's debt paid the next period.
 * cpu.max.burst is not applied: a cgroup's unused quota is not banked.
 */
#include "ctx.bpf.h"
#include "bandwidth.bpf.h"
#include "classify.bpf.h"
#include "preempt.bpf.h"
#include "stats.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u64);
	__type(value, struct linger_bw);
	__uint(max_entries, LINGER_MAX_BW_CGROUPS);
} cgrp_bws SEC(".maps");

volatile u32 bw_nr_limits;
volatile u64 bw_gen;

/* When the earliest held task may go (U64_MAX: none is held). */
static volatile u64 release_at = (u64)-1;

struct bw_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct bw_timer);
	__uint(max_entries, 1);
} bw_timers SEC(".maps");

static void release_no_later_than(u64 at, u64 now);

/* A quota the kernel passes for "max" (RUNTIME_INF), or too large to be one. */
static bool unlimited(u64 period_us, u64 quota_us)
{
	return !period_us || quota_us >= (u64)-1 / 1000;
}

/*
 * Called for every cgroup the kernel initialises (at load, and for each
 * new one) and at every cpu.max write: only a real change bumps the
 * generation (every task then looks its limits up again) and looks at
 * the held tasks again (a lifted or looser limit lets them go).
 */
__hidden void bw_set(struct cgroup *cgrp, u64 period_us, u64 quota_us)
{
	u64 id = cgrp->kn->id;
	struct linger_bw *bw, fresh = {};

	if (unlimited(period_us, quota_us)) {
		if (bpf_map_delete_elem(&cgrp_bws, &id))
			return;
		__sync_fetch_and_sub(&bw_nr_limits, 1);
	} else if ((bw = bpf_map_lookup_elem(&cgrp_bws, &id))) {
		if (bw->period_ns == period_us * 1000 &&
		    bw->quota_ns == quota_us * 1000)
			return;
		bw->period_ns = period_us * 1000;
		bw->quota_ns = quota_us * 1000;
	} else {
		fresh.period_ns = period_us * 1000;
		fresh.quota_ns = quota_us * 1000;
		if (bpf_map_update_elem(&cgrp_bws, &id, &fresh, BPF_NOEXIST))
			return;
		__sync_fetch_and_add(&bw_nr_limits, 1);
	}
	__sync_fetch_and_add(&bw_gen, 1);
	/* Held tasks are looked at again now: the limit may be gone. */
	release_no_later_than(0, 0);
}

__hidden void bw_forget(struct cgroup *cgrp)
{
	u64 id = cgrp->kn->id;

	if (bpf_map_delete_elem(&cgrp_bws, &id))
		return;
	__sync_fetch_and_sub(&bw_nr_limits, 1);
	__sync_fetch_and_add(&bw_gen, 1);
	release_no_later_than(0, 0);
}

__hidden void bw_note_move(struct task_ctx *tctx)
{
	if (tctx)
		tctx->bw.cgid = 0;
}

/*
 * Look up again which cgroups on the path of cgroup @cgrp_addr (its
 * address, read through bpf_probe_read_kernel() only) are limited, into
 * @b, nearest first; the root is never limited. A global function,
 * verified once: inlined, its walk would be verified again at every
 * charge and check in dispatch().
 */
__noinline u32 bw_find_limited(struct bw_task *b, u64 cgid, u64 cgrp_addr)
{
	struct cgroup *cgrp = (struct cgroup *)cgrp_addr;
	u32 i, nr = 0;
	int level;

	if (!b)
		return 0;
	b->gen = bw_gen;
	b->cgid = cgid;
	level = BPF_CORE_READ(cgrp, level);
	bpf_for(i, 0, LINGER_MAX_CGRP_LEVEL) {
		struct cgroup *anc = NULL;
		u64 id;

		if (level - (int)i < 1 || nr >= LINGER_BW_DEPTH)
			break;
		bpf_probe_read_kernel(&anc, sizeof(anc), &cgrp->ancestors[level - i]);
		if (!anc)
			break;
		id = BPF_CORE_READ(anc, kn, id);
		if (bpf_map_lookup_elem(&cgrp_bws, &id))
			b->ids[nr++] = id;
	}
	b->nr = nr;
	return nr;
}

/* @p's limited cgroups (bw_find_limited()), cached until it moves or a limit changes. */
static __always_inline u32 limited_cgroups(const struct task_struct *p,
					   struct bw_task *b)
{
	struct cgroup *cgrp = p->cgroups->dfl_cgrp;
	u64 cgid, addr = 0;

	if (!cgrp)
		return 0;
	cgid = cgrp->kn->id;
	if (b->gen == bw_gen && b->cgid == cgid)
		return b->nr;
	/* Its address as a plain number: what a global function may take. */
	bpf_probe_read_kernel(&addr, sizeof(addr), &p->cgroups->dfl_cgrp);
	return bw_find_limited(b, cgid, addr);
}

/*
 * Start @bw's next period if its current one is over: the overrun of the
 * one just ended is carried as debt; after a longer gap nothing is. One
 * CPU claims each turn-over.
 */
static __always_inline void roll_period(struct linger_bw *bw, u64 now)
{
	u64 end = bw->period_end, period = bw->period_ns, used, next, debt = 0;

	if (now < end)
		return;
	used = bw->used_ns;
	if (end && now < end + period) {
		next = end + period;
		debt = used > bw->quota_ns ? used - bw->quota_ns : 0;
	} else {
		next = now + period;
	}
	if (__sync_val_compare_and_swap(&bw->period_end, end, next) == end)
		bw->used_ns = debt;
}

/*
 * bw_left()'s and bw_charge()'s walks over a task's limited cgroups are
 * global functions, verified once on their own: inlined into dispatch()'s
 * walk over a DSQ (reclassify.bpf.c), 6.12's verifier never finds the two
 * loops' states equal and gives up at a million instructions.
 */
__noinline u64 bw_left_of(const struct bw_task *b, u64 now, u64 *until)
{
	u64 left = (u64)-1, wait = 0;
	u32 i;

	if (!b || !until)
		return left;
	bpf_for(i, 0, LINGER_BW_DEPTH) {
		struct linger_bw *bw;
		u64 used, quota;

		if (i >= b->nr)
			break;
		bw = bpf_map_lookup_elem(&cgrp_bws, &b->ids[i]);
		if (!bw)
			continue;
		roll_period(bw, now);
		used = bw->used_ns;
		quota = bw->quota_ns;
		if (used >= quota) {
			left = 0;
			if (bw->period_end > wait)
				wait = bw->period_end;
		} else if (quota - used < left) {
			left = quota - used;
		}
	}
	*until = left ? 0 : wait;
	return left;
}

__noinline int bw_charge_to(const struct bw_task *b, u64 ran, u64 now)
{
	u32 i;

	if (!b)
		return 0;
	bpf_for(i, 0, LINGER_BW_DEPTH) {
		struct linger_bw *bw;

		if (i >= b->nr)
			break;
		bw = bpf_map_lookup_elem(&cgrp_bws, &b->ids[i]);
		if (!bw)
			continue;
		roll_period(bw, now);
		__sync_fetch_and_add(&bw->used_ns, ran);
	}
	return 0;
}

/* A global function: release_held() calls it inside its DSQ walk. */
__noinline u64 bw_left(const struct task_struct *p __arg_trusted,
		       struct task_ctx *tctx, u64 now, u64 *until)
{
	u64 left, wait = 0;

	if (until)
		*until = 0;
	if (bw_none() || !tctx || !limited_cgroups(p, &tctx->bw))
		return (u64)-1;
	left = bw_left_of(&tctx->bw, now, &wait);
	if (until)
		*until = wait;
	return left;
}

__hidden void bw_charge_limits(const struct task_struct *p, struct task_ctx *tctx,
			       u64 ran, u64 now)
{
	if (!tctx || !ran || !limited_cgroups(p, &tctx->bw))
		return;
	bw_charge_to(&tctx->bw, ran, now);
}

/* Arm the release timer for @at, if that is sooner than it was armed for. */
static void release_no_later_than(u64 at, u64 now)
{
	u64 cur = release_at;
	struct bw_timer *t;
	u32 zero = 0, i;

	bpf_for(i, 0, 4) {
		if (at >= cur)
			return;
		if (__sync_val_compare_and_swap(&release_at, cur, at) == cur)
			break;
		cur = release_at;
	}
	if (at >= cur)
		return;
	t = bpf_map_lookup_elem(&bw_timers, &zero);
	if (t)
		bpf_timer_start(&t->timer, at > now ? at - now : 0, 0);
}

__hidden bool bw_hold_spent(struct task_struct *p, struct task_ctx *tctx,
			    u64 enq_flags, u64 now)
{
	u64 until;

	if ((p->flags & PF_KTHREAD) || task_dying(p) ||
	    is_migration_disabled(p))
		return false;
	if (bw_left(p, tctx, now, &until))
		return false;
	stat_inc(LINGER_STAT_BW_THROTTLE);
	scx_bpf_dsq_insert(p, LINGER_BW_DSQ, primary_slice_ns, enq_flags);
	release_no_later_than(until, now);
	return true;
}

__hidden bool bw_release_due(u64 now)
{
	u64 at = release_at;

	return now >= at &&
	       __sync_val_compare_and_swap(&release_at, at, (u64)-1) == at;
}

__noinline int bw_release_done(u64 next, u64 now)
{
	if (next != (u64)-1)
		release_no_later_than(next, now);
	return 0;
}

/*
 * The earliest held task may go: make a CPU run dispatch(), an idle one,
 * else one running a guest (a held primary must not wait behind one);
 * with every CPU running primaries, the first slice to end does it.
 */
static int release_timer_fired(void *map, int *key, struct bw_timer *t)
{
	u64 now = scx_bpf_now(), at = release_at;

	/*
	 * The timer's clock and scx_bpf_now() may disagree by a little: a
	 * dispatch() that found the release not due yet would leave the held
	 * tasks until some CPU happened to dispatch again.
	 */
	if (at != (u64)-1 && now < at) {
		bpf_timer_start(&t->timer, at - now, 0);
		return 0;
	}
	wake_cpus(1, true);
	return 0;
}

__hidden s32 bw_timer_init(void)
{
	struct bw_timer *t;
	u32 zero = 0;
	s32 ret;

	t = bpf_map_lookup_elem(&bw_timers, &zero);
	if (!t)
		return -ENOENT;
	ret = bpf_timer_init(&t->timer, &bw_timers, CLOCK_MONOTONIC);
	if (!ret)
		ret = bpf_timer_set_callback(&t->timer, release_timer_fired);
	return ret;
}
