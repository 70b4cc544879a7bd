/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * reclassify.bpf.c - applying a label change to tasks that are already
 * waiting.
 *
 * A task's class is re-derived at its next scheduling event (see
 * classify.bpf.c), but a guest that is waiting in the guest DSQ under full
 * primary load has no next event until the starvation guard reaches it,
 * which may be seconds. So after the agent bumps label_gen, or a task
 * moves between cgroups, the first CPU to dispatch walks the DSQs once and
 * moves every task whose class changed into its new tier's DSQ, level
 * with the new tier's clock. The same holds when the gang table gives a
 * gang a slot or takes it away, and for tasks held for cpu.max
 * (bandwidth.bpf.c) once their cgroups' next period begins: they go to
 * the queue they would have been enqueued on, and CPUs are woken for
 * them (wake_cpus()). A task sent SIGKILL is re-sorted too: dying, it
 * is an ordinary primary (classify.bpf.h: task_dying()).
 *
 * A running task picks up a relabel when its slice ends: dispatch()
 * re-derives its class before deciding whether it may keep its CPU. A
 * task that another task moves to another cgroup while it runs has its
 * CPU kicked at once: a job started in a primary cgroup and then moved
 * into a guest one (how batch systems place work) must not hold a CPU as
 * a primary for the rest of its slice while primaries wait. A task that
 * moves itself is not kicked: see linger_cgroup_attach().
 */
#include "ctx.bpf.h"
#include "bandwidth.bpf.h"
#include "classify.bpf.h"
#include "gang.bpf.h"
#include "gang_run.bpf.h"
#include "llc.bpf.h"
#include "preempt.bpf.h"
#include "reclassify.bpf.h"
#include "stats.bpf.h"
#include "vtime.bpf.h"

/*
 * Bumped whenever a task moves between cgroups: a queued task that moved
 * into a cgroup of another class must be re-sorted too, and cgroup moves
 * need no help from the agent.
 */
static u64 move_gen;

/*
 * Why a tracepoint beside ops.cgroup_move: the kernel calls the sched_ext
 * cgroup ops from the cpu controller's attach path only
 * (CONFIG_EXT_GROUP_SCHED), so a move between cgroups where the cpu
 * controller is not enabled (a job manager's cgroups often enable only
 * memory and pids) never reaches ops.cgroup_move. Labels follow the
 * default hierarchy, whatever the controllers; cgroup_attach_task fires
 * for every move in it, after the task is in @dst.
 *
 * It fires inside the writer's cgroup write, with cgroup_mutex and
 * cgroup_threadgroup_rwsem held. A task writing its own pid into
 * cgroup.procs (a job script's `echo $$`, a launcher placing itself) is
 * that writer: kicked here, it would be preempted before it lets the
 * locks go, in its new class, and as a guest under primary load it would
 * then hold them until the starvation guard's trickle reached it, with
 * every fork and cgroup write on the node waiting behind it. So it keeps
 * its CPU; its new class applies when its slice ends, as for a relabel.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(linger_cgroup_attach, struct cgroup *dst, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	__sync_fetch_and_add(&move_gen, 1);
	if (task != bpf_get_current_task_btf() && scx_bpf_task_running(task))
		scx_bpf_kick_cpu(scx_bpf_task_cpu(task), SCX_KICK_PREEMPT);
	return 0;
}

/*
 * Bumped whenever a task is sent SIGKILL: from then on it is dying
 * (task_dying()) and an ordinary primary, but a guest already waiting in
 * the guest DSQ under full primary load would wait there for the
 * starvation guard's trickle, one task at a time. A kill of a whole job
 * (scancel, cgroup.kill) fires this once per task; one sweep moves them.
 */
static u64 kill_gen;

SEC("tp_btf/signal_generate")
int BPF_PROG(linger_signal_generate, int sig, struct kernel_siginfo *info,
	     struct task_struct *task, int group, int result)
{
	/* SIGKILL is 9. */
	if (sig == 9)
		__sync_fetch_and_add(&kill_gen, 1);
	return 0;
}

/* The sum of the generations above when the queued tasks were last sorted. */
static u64 swept_gen;

/*
 * Move @p, queued on the DSQ @it walks, to DSQ @to with @tier's slice:
 * FIFO onto a gang's DSQ, else onto a tier DSQ of LLC @llc by vtime,
 * level with that tier's clock there. True if it moved.
 */
static __always_inline bool move_queued(struct bpf_iter_scx_dsq *it,
					struct task_struct *p,
					struct task_ctx *tctx, u32 tier,
					u64 to, u32 llc)
{
	scx_bpf_dsq_move_set_slice(it, tier_slice(tier));
	if (to >= LINGER_GANG_DSQ_BASE) {
		if (!scx_bpf_dsq_move(it, p, to, 0))
			return false;
	} else {
		scx_bpf_dsq_move_set_vtime(it, task_queue_vtime(p, tctx, tier, llc));
		if (!scx_bpf_dsq_move_vtime(it, p, to, 0))
			return false;
	}
	stat_inc(LINGER_STAT_RECLASSIFY);
	return true;
}

/*
 * Move every task queued on @from that belongs elsewhere now: another
 * tier's DSQ on the same LLC @llc (level with that tier's clock), its
 * gang's DSQ (the gang got a slot), or back to its tier's on @llc (its
 * gang lost its slot or label; gang DSQs are the node's, so @llc is
 * then the CPU's doing the sweep). Tier DSQs are ordered by vtime, gang
 * DSQs are FIFO. A global function, verified once rather than at each of
 * reclassify_queued()'s passes over the queues.
 */
__noinline int reclassify_dsq(u64 from, u32 llc)
{
	struct task_struct *p;

	if (!scx_bpf_dsq_nr_queued(from))
		return 0;
	bpf_for_each(scx_dsq, p, from, 0) {
		struct task_ctx *tctx = lookup_task_ctx(p);
		u32 tier = task_tier(p, tctx);
		u64 to = task_dsq(tctx, tier, llc);

		if (to == from || tier >= LINGER_NR_TIERS)
			continue;
		move_queued(BPF_FOR_EACH_ITER, p, tctx, tier, to, llc);
	}
	return 0;
}

/*
 * Let go of every task held for cpu.max (bandwidth.bpf.c) whose cgroups
 * have quota again: onto the queue it would have been enqueued on, near
 * the CPU it was held on, with a CPU woken for it; the release timer is
 * armed again for the first still held. A global function, verified
 * once on its own, and one that keeps no count across the walk: another
 * DSQ walk inlined into dispatch(), or a tally carried through it, puts
 * 6.12's verifier past its million instructions.
 */
__noinline int release_held(u64 now)
{
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, LINGER_BW_DSQ, 0) {
		struct task_ctx *tctx = lookup_task_ctx(p);
		u64 until = 0, to;
		u32 tier, llc;

		if (!bw_left(p, tctx, now, &until)) {
			bw_release_done(until, now);
			continue;
		}
		/*
		 * Its class as enqueue() found it, not looked up again: the
		 * label walk nested in this one costs 6.12's verifier a
		 * quarter of a million instructions, and a label change while
		 * it was held applies at its next stop.
		 */
		tier = tctx ? tctx->cls.tier : LINGER_TIER_PRIMARY;
		llc = cpu_llc_of(scx_bpf_task_cpu(p));
		to = task_dsq(tctx, tier, llc);
		if (tier < LINGER_NR_TIERS &&
		    move_queued(BPF_FOR_EACH_ITER, p, tctx, tier, to, llc) &&
		    to < LINGER_GANG_DSQ_BASE)
			wake_cpus(1, tier == LINGER_TIER_PRIMARY);
	}
	return 0;
}

__hidden void reclassify_queued(u64 now)
{
	/* All only grow, so their sum changes whenever any does. */
	u64 gen = label_gen + move_gen + kill_gen + gang_sched_gen, seen = swept_gen;
	u32 g, llc;

	/*
	 * Tasks held for cpu.max whose cgroups' next period has begun, or
	 * whose limit was lifted (so not behind bw_none(): the last limit
	 * lifted must let its tasks go).
	 */
	if (bw_release_due(now))
		release_held(now);

	/* Cheap when nothing changed; one CPU claims each generation. */
	if (gen == seen || __sync_val_compare_and_swap(&swept_gen, seen, gen) != seen)
		return;
	bpf_for(llc, 0, nr_llcs) {
		reclassify_dsq(tier_dsq(LINGER_TIER_GUEST, llc), llc);
		reclassify_dsq(tier_dsq(LINGER_TIER_PRIMARY, llc), llc);
	}
	llc = cpu_llc_of(bpf_get_smp_processor_id());
	bpf_for(g, 0, LINGER_MAX_GANGS)
		reclassify_dsq(GANG_DSQ(g), llc);
}
