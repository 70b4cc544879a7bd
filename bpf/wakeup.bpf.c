/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wakeup.bpf.c - wake-up preemption within the primary tier.
 *
 * Primaries run 20 ms slices (throughput for compute jobs, main.bpf.c),
 * and within the tier only the slice end was a switch point. So a primary
 * that wakes for microseconds (a shell, sshd, a node daemon, an MPI
 * progress thread, cyclictest) waited up to a whole slice behind a
 * CPU-bound primary, where EEVDF lets it in within about a millisecond.
 *
 * The rule: a waking primary preempts the primary on the CPU it last ran
 * on when all of these hold:
 *  - the waker is a short sleeper: on average it ran at most
 *    WAKE_SHORT_BURST_NS per wake-up;
 *  - the running task is not: an ordinary primary (no gang member: those
 *    run by slot, and gang_run.bpf.c has its own relief for ordinary
 *    work) that had run longer than that since it last woke when its
 *    current run began (running() takes the snapshot), or does so on
 *    average. A task that starts short and then runs on is not
 *    preemptible until its next running(); judging the run so far at the
 *    waker's enqueue would be exact and is left to do. So short sleepers
 *    never preempt each other: measured
 *    before this condition, hackbench (40 tasks that each run briefly
 *    and wait on pipes) took 3.5 times as long, as every wake-up switched;
 *    and a compute job never preempts another, keeping its long slices;
 *  - the waker is owed CPU: its vtime is behind the running task's vtime
 *    when that one started (EEVDF's eligibility, in this scheduler's
 *    terms; a waker banks at most one slice, vtime_wake()).
 * The waker goes straight to its CPU's local DSQ with SCX_ENQ_PREEMPT,
 * which ends the running task's slice there and then: no trip through the
 * shared queue and the next dispatch(), and no kick (an irq_work and a
 * self-IPI when the waker's CPU is the one it wakes on). A profile of
 * cyclictest beside a duty primary on 1 CPU counted the queue-and-kick way
 * at about 800 more guest instructions a wake-up (bench --profile). It
 * runs ahead of primaries queued with smaller vtimes; it is a short
 * sleeper, and they were waiting for the running task anyway. The
 * preempted task queues with its vtime charged for what it ran, so shares
 * within the tier still follow the weights, and a waker can preempt only
 * while it is behind: what it runs, it is charged. What the compute job
 * pays is one switch there and back per such wake-up, as under EEVDF.
 *
 * No minimum run is left to the preempted task, as EEVDF's run-to-parity
 * leaves one: sched_ext ends slices at the scheduler tick only (4 ms at
 * HZ=250), so a shortened slice would make the waker wait for the tick,
 * which is what a trace of cyclictest beside a CPU-bound primary showed
 * (waits of 4 and 20 ms where the waker arrived just after a switch).
 *
 * Only the waker's previous CPU is looked at: it is where its cache is,
 * it is one lookup however many CPUs the node has, and the waker's
 * select_cpu() has already found no idle CPU nearer.
 */
#include "ctx.bpf.h"
#include "stats.bpf.h"

/* Longest average burst per wake-up of a task that may preempt. */
#define WAKE_SHORT_BURST_NS	(1000 * 1000ULL)

/* What runs on each CPU: written by that CPU, read by wakers elsewhere. */
struct wakeup_cpu {
	u64	vtime;		/* the running task's vtime when it started */
	bool	preemptible;	/* an ordinary primary that runs long */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct wakeup_cpu);
	__uint(max_entries, 1);
} wakeup_cpus SEC(".maps");

__hidden void wakeup_note_wake(struct task_ctx *tctx)
{
	if (!tctx)
		return;
	/* A running average over about four wake-ups. */
	tctx->wk.avg_burst = (tctx->wk.avg_burst * 3 + tctx->wk.burst) / 4;
	tctx->wk.burst = 0;
}

static bool short_sleeper(struct task_ctx *tctx)
{
	return tctx->wk.avg_burst <= WAKE_SHORT_BURST_NS &&
	       tctx->wk.burst <= WAKE_SHORT_BURST_NS;
}

__hidden void wakeup_note_running(struct task_struct *p, struct task_ctx *tctx)
{
	u32 zero = 0;
	struct wakeup_cpu *wc = bpf_map_lookup_elem(&wakeup_cpus, &zero);

	if (!wc)
		return;
	wc->vtime = p->scx.dsq_vtime;
	/*
	 * Decided here, not by the caller: a branch in running() itself
	 * doubles what the verifier walks through there.
	 */
	wc->preemptible = tctx && tctx->cls.tier == LINGER_TIER_PRIMARY &&
			  sched_gang(tctx) == LINGER_GANG_NONE &&
			  !short_sleeper(tctx);
}

__hidden void wakeup_note_stopping(struct task_ctx *tctx, u64 ran)
{
	u32 zero = 0;
	struct wakeup_cpu *wc = bpf_map_lookup_elem(&wakeup_cpus, &zero);

	if (wc)
		wc->preemptible = false;
	if (tctx)
		tctx->wk.burst += ran;
}

__hidden bool wakeup_preempts(struct task_struct *p, struct task_ctx *tctx)
{
	struct wakeup_cpu *wc;
	u32 zero = 0;
	s32 cpu;

	if (!wake_preempt || !tctx || !short_sleeper(tctx))
		return false;
	cpu = scx_bpf_task_cpu(p);
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	wc = bpf_map_lookup_percpu_elem(&wakeup_cpus, &zero, cpu);
	if (!wc || !wc->preemptible)
		return false;
	if (!time_before(p->scx.dsq_vtime, wc->vtime))
		return false;
	stat_inc(LINGER_STAT_WAKE_PREEMPT);
	return true;
}
