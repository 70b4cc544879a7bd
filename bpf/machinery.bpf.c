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
 * agent names so: src/labels/cgroups.rs) that wakes while a member of a
 * primary gang holds a CPU it may use goes to that CPU's local DSQ.
 *  - A service (select_cpu(): it may run on several CPUs) preempts the
 *    member there: it wakes for a request, and seldom.
 *  - A kernel thread (enqueue(): per-CPU ones skip select_cpu()) waits
 *    for the member's next tick (machinery_tick()), one tick at most
 *    (4 ms at HZ=250), so that everything that woke for that CPU within
 *    the tick runs in one break of the member's run, not in one break
 *    each. Preempting at every kernel thread's wake-up made two barrier
 *    gangs run 1.35-1.43x their ideal, against 1.06-1.30x without
 *    machinery and 1.13-1.17x with the tick (two or three boots each).
 *
 * What bounds it is a budget per CPU: machinery_slice_ns in every
 * machinery_period_ns (20 ms in 200 ms by default, 10% of each CPU), kept
 * as a clock (pure.h: relief_budget(), the same arithmetic as relief's),
 * charged what each task placed there runs in its first slice. A quiet daemon
 * banks up to one slice, so a burst (a job's start, a Prolog) runs at
 * once; a busy one is held to its share, so the gangs keep at least 90%
 * of every CPU whatever the node's services do. A task placed on a CPU
 * gets a slice of what the budget then holds.
 *
 * From the placement until the CPU next chooses a task (its local DSQ is
 * empty then), the CPU is marked, so that the member's next tick ends its
 * run for the kernel threads queued there (machinery_tick()). A member
 * that claims the CPU meanwhile does not get ahead of them: a CPU runs
 * its local DSQ before it dispatches, and the member the break displaced
 * no longer claims it (gang_note_stopping(); while it did, a service
 * starting up waited for the open phase at a quarter of its wake-ups).
 * Keeping every member off a marked CPU as well measured no different
 * (the machinery test: p99 0.28-1.16 ms and 213-232 rounds in three
 * boots, against 0.32-0.66 ms and 224-232 in four; barrier gangs
 * 1.11-1.20x their ideal against 1.02-1.46x, two boots each).
 *
 * With the budget spent, or no member on a CPU it may use, the machinery
 * is ordinary primary work: relief, the open phase, the age guard's bound.
 * Without primary gangs none of this applies: the deadline order already
 * lets a short sleeper take a compute job's CPU at once (wakeup.bpf.c).
 */
#include "ctx.bpf.h"
#include "gang.bpf.h"
#include "machinery.bpf.h"
#include "stats.bpf.h"

/*
 * The least budget worth a member's break. A task's slice is what the
 * budget holds, not its usual run: a service whose runs had been long (a
 * job's start-up, a daemon's first seconds) would otherwise wait a whole
 * period for a full budget at every wake-up. What it does not finish in
 * that slice it finishes as ordinary work.
 */
#define MACHINERY_MIN_TURN_NS	(200 * 1000ULL)

/*
 * Place @tctx's task on @cpu if a member holds it and its budget holds a
 * turn: mark the CPU and the task (its next run there is charged), and
 * return the task's slice (0: not placed).
 */
static u64 place_on(struct task_ctx *tctx, s32 cpu, u64 now)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);
	u64 budget;

	if (!cctx || !primary_member_holds(&cctx->gang))
		return 0;
	budget = relief_budget(cctx->mach.clock, now, machinery_period_ns,
			       machinery_slice_ns);
	if (budget < MACHINERY_MIN_TURN_NS)
		return 0;
	cctx->mach.waiting = true;
	tctx->mach.placed = true;
	tctx->mach.slice = budget;
	stat_inc(LINGER_STAT_MACHINERY);
	return budget;
}

/*
 * Is @tctx's task machinery while primary gangs have slots? In the open
 * phase too: a slot's gang runs there on the CPUs ordinary work leaves,
 * and a task that woke after it started would wait in the queue for the
 * slot itself.
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
	return place_on(tctx, cpu, scx_bpf_now());
}

/*
 * Its last CPU first, then each CPU it may use in turn: the CPU it last
 * ran on may be running ordinary work, while a member holds the next. A
 * global function, verified once (its loop would be walked in every path
 * of select_cpu()), and called only for machinery beside gangs.
 */
__noinline s32 machinery_scan(struct task_struct *p __arg_trusted,
			      struct task_ctx *tctx, s32 prev_cpu)
{
	u32 nr_cpus = scx_bpf_nr_cpu_ids(), i;
	u64 now;

	if (!tctx)
		return -1;
	now = scx_bpf_now();
	if (place_on(tctx, prev_cpu, now))
		return prev_cpu;
	bpf_for(i, 0, nr_cpus < LINGER_MAX_CPUS ? nr_cpus : LINGER_MAX_CPUS) {
		s32 cpu = (prev_cpu + 1 + i) % nr_cpus;

		if (cpu == prev_cpu || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		if (place_on(tctx, cpu, now))
			return cpu;
	}
	return -1;
}

/* Every primary wake-up without an idle CPU asks: a call only for machinery. */
__hidden s32 machinery_pick(struct task_struct *p, struct task_ctx *tctx, s32 prev_cpu)
{
	return wants_turn(tctx) ? machinery_scan(p, tctx, prev_cpu) : -1;
}

__hidden bool machinery_tick(s32 cpu)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);

	return cctx && cctx->mach.waiting && primary_member_holds(&cctx->gang) &&
	       relief_budget(cctx->mach.clock, scx_bpf_now(), machinery_period_ns,
			     machinery_slice_ns) >= MACHINERY_MIN_TURN_NS;
}

__hidden void machinery_charge_turn(struct task_ctx *tctx, s32 cpu, u64 ran)
{
	struct cpu_ctx *cctx;
	u64 now, clock;

	tctx->mach.placed = false;
	cctx = lookup_cpu_ctx(cpu);
	if (!cctx)
		return;
	/*
	 * Budget unused for a whole period is not banked past one slice
	 * (relief_claim() raises an old clock to a period ago first). One
	 * compare-and-swap: another CPU's placement only reads the clock,
	 * and a lost race with another charge here costs that charge.
	 */
	now = scx_bpf_now();
	clock = cctx->mach.clock;
	__sync_val_compare_and_swap(&cctx->mach.clock, clock,
				    relief_claim(clock, now, ran, machinery_period_ns,
						 machinery_slice_ns));
}
