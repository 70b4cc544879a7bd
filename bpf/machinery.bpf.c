/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * machinery.bpf.c - the node's own machinery beside gangs.
 *
 * A gang's slot holds every CPU it needs, and everything else on the node
 * waits for the CPUs the gangs leave: back-fill, the open phase that ends
 * each cycle, and relief's small budget (relief.bpf.c). That is right for
 * other jobs, and wrong for what keeps the node itself working: its kernel
 * threads, its system services (slurmd, munged, chronyd, sshd, this
 * agent) and each job's step daemons (slurmstepd). Everything that starts
 * a job, answers the controller's pings, keeps the clock or moves a
 * multi-node job's messages runs on them. Left to the open phase, a
 * two-node job's own start-up crawled beside a spinning gang (its wall
 * time 3.5x EEVDF's), and slurmd on a node whose CPU a gang filled could
 * not answer slurmctld within MessageTimeout.
 *
 * So the node's machinery (a kernel thread, or a task whose cgroup the
 * agent names so: src/labels/cgroups.rs) that wakes while a member of an
 * admitted primary gang holds its CPU takes that CPU at once: it goes to
 * the CPU's local DSQ with SCX_ENQ_PREEMPT, as a guest's CPU is taken,
 * for a turn of at most what the CPU's budget holds. What bounds it is
 * that budget, one per CPU: machinery_slice_ns in every
 * machinery_period_ns (20 ms in 200 ms by default, 10% of each CPU), kept
 * as a clock (pure.h: relief_budget(), the same arithmetic as relief's).
 * A quiet daemon banks up to one slice, so a burst (a job's start, a
 * Prolog) runs at once; a busy one is held to its share, so the gangs
 * keep at least 90% of their rows whatever the node's services do. A
 * turn is claimed whole with one compare-and-swap on the CPU's clock
 * (another CPU may be waking a task for it) and what it did not run is
 * given back when its slice ends (machinery_charge()).
 *
 * Until then the CPU is marked as in a turn, and a member does not take
 * it back (gang_run.bpf.c: cpu_free_for()). The member the turn displaced
 * is queued again at once, and would otherwise claim its CPU back before
 * the turn even began: measured, a service then woke every 20 ms beside
 * two gangs and still waited for the open phase in a quarter of its
 * wake-ups (p99 215 ms against EEVDF's 7 ms).
 *
 * Outside a gang's slot none of this applies: there the machinery is
 * ordinary primary work, in the deadline order, which already lets a
 * short sleeper take a compute job's CPU at once (wakeup.bpf.c). With the
 * budget spent it is ordinary primary work beside gangs too: relief, the
 * open phase, and the age guard's bound.
 */
#include "ctx.bpf.h"
#include "machinery.bpf.h"
#include "stats.bpf.h"

/*
 * The shortest turn: less is not worth a member's displacement. A turn is
 * whatever the budget holds, not the task's usual run: a service whose
 * runs are long (a job's start-up, a daemon's first seconds) would
 * otherwise wait for a full budget, a whole period, at every wake-up.
 * What it does not finish in its turn it finishes as ordinary work.
 */
#define MACHINERY_MIN_TURN_NS	(200 * 1000ULL)

/*
 * Claim a turn on @cpu for machinery task @tctx if a member of an
 * admitted primary gang holds that CPU and its budget holds a turn: the
 * turn's slice (what the budget held), or 0.
 */
static u64 claim_turn(struct task_ctx *tctx, s32 cpu, u64 now)
{
	struct cpu_gang *cg = lookup_cpu_gang(cpu);
	u64 clock, budget;

	if (!cg || !cg->running ||
	    !(gang_admitted(LINGER_TIER_PRIMARY) & gang_bit(gang_of_ref(cg->running))))
		return 0;
	clock = cg->machinery_clock;
	budget = relief_budget(clock, now, machinery_period_ns, machinery_slice_ns);
	if (budget < MACHINERY_MIN_TURN_NS)
		return 0;
	if (__sync_val_compare_and_swap(&cg->machinery_clock, clock,
					relief_claim(clock, now, budget, machinery_period_ns,
						     machinery_slice_ns)) != clock)
		return 0;
	tctx->mach.grant = budget;
	tctx->mach.grant_cpu = cpu;
	cg->machinery_turn = true;
	stat_inc(LINGER_STAT_MACHINERY);
	return budget;
}

/*
 * Is @tctx's task machinery waking while primary gangs have slots? In the
 * open phase too: the gang whose slot is next starts early on the CPUs
 * ordinary work leaves, and a task that wakes after it started would
 * wait in the queue until a CPU next chooses, which is the slot's start.
 */
static bool wants_turn(const struct task_ctx *tctx)
{
	return machinery_period_ns && tctx && tctx->cls.machinery &&
	       scheduled_primary;
}

__hidden u64 machinery_turn(struct task_ctx *tctx, s32 cpu, u64 enq_flags)
{
	if (!(enq_flags & SCX_ENQ_WAKEUP) || !wants_turn(tctx))
		return 0;
	return claim_turn(tctx, cpu, scx_bpf_now());
}

/*
 * Its last CPU first, then each CPU it may use in turn: the CPU it last
 * ran on may be running ordinary work or be in the middle of another
 * turn, while a member holds the next. A global function, verified once
 * (its loop would be walked in every path of select_cpu()).
 */
__noinline s32 machinery_pick(struct task_struct *p __arg_trusted,
			      struct task_ctx *tctx, s32 prev_cpu)
{
	u32 nr_cpus = scx_bpf_nr_cpu_ids(), i;
	u64 now;

	if (!wants_turn(tctx))
		return -1;
	now = scx_bpf_now();
	if (claim_turn(tctx, prev_cpu, now))
		return prev_cpu;
	bpf_for(i, 0, nr_cpus < LINGER_MAX_CPUS ? nr_cpus : LINGER_MAX_CPUS) {
		s32 cpu = (prev_cpu + 1 + i) % nr_cpus;

		if (cpu == prev_cpu || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		if (claim_turn(tctx, cpu, now))
			return cpu;
	}
	return -1;
}

__hidden void machinery_charge(struct task_ctx *tctx, u64 ran)
{
	struct cpu_gang *cg;
	u64 grant;

	if (!tctx || !tctx->mach.grant)
		return;
	grant = tctx->mach.grant;
	tctx->mach.grant = 0;
	cg = lookup_cpu_gang(tctx->mach.grant_cpu);
	if (!cg)
		return;
	cg->machinery_turn = false;
	/* The slice bounded the run; a tick-late stop costs no more. */
	if (ran > grant)
		ran = grant;
	/* A wrapping add: the refund moves the clock back. */
	__sync_fetch_and_add(&cg->machinery_clock,
			     relief_cost(ran, machinery_period_ns, machinery_slice_ns) -
			     relief_cost(grant, machinery_period_ns, machinery_slice_ns));
}
