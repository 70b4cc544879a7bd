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
 * Outside a gang's slot none of this applies: there the machinery is
 * ordinary primary work, in the deadline order, which already lets a
 * short sleeper take a compute job's CPU at once (wakeup.bpf.c). With the
 * budget spent it is ordinary primary work beside gangs too: relief, the
 * open phase, and the age guard's bound.
 */
#include "ctx.bpf.h"
#include "machinery.bpf.h"
#include "stats.bpf.h"

/* The shortest turn: less is not worth a member's displacement. */
#define MACHINERY_MIN_TURN_NS	(50 * 1000ULL)

__hidden u64 machinery_turn(struct task_ctx *tctx, s32 cpu, u64 enq_flags)
{
	struct cpu_gang *cg;
	u64 now, clock, budget, need;

	if (!machinery_period_ns || !tctx || !tctx->cls.machinery ||
	    !(enq_flags & SCX_ENQ_WAKEUP) || !scheduled_primary || gang_open)
		return 0;
	cg = lookup_cpu_gang(cpu);
	if (!cg || !cg->running ||
	    !(gang_admitted(LINGER_TIER_PRIMARY) & gang_bit(gang_of_ref(cg->running))))
		return 0;
	now = scx_bpf_now();
	clock = cg->machinery_clock;
	budget = relief_budget(clock, now, machinery_period_ns, machinery_slice_ns);
	need = task_usual_run(tctx);
	if (need < MACHINERY_MIN_TURN_NS)
		need = MACHINERY_MIN_TURN_NS;
	if (need > machinery_slice_ns)
		need = machinery_slice_ns;
	if (budget < need)
		return 0;
	if (__sync_val_compare_and_swap(&cg->machinery_clock, clock,
					relief_claim(clock, now, budget, machinery_period_ns,
						     machinery_slice_ns)) != clock)
		return 0;
	tctx->mach.grant = budget;
	tctx->mach.grant_cpu = cpu;
	stat_inc(LINGER_STAT_MACHINERY);
	return budget;
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
	/* The slice bounded the run; a tick-late stop costs no more. */
	if (ran > grant)
		ran = grant;
	/* A wrapping add: the refund moves the clock back. */
	__sync_fetch_and_add(&cg->machinery_clock,
			     relief_cost(ran, machinery_period_ns, machinery_slice_ns) -
			     relief_cost(grant, machinery_period_ns, machinery_slice_ns));
}
