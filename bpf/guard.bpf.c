/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * guard.bpf.c - the starvation guard.
 *
 * Under strict priority a node full of primary work never runs a guest.
 * That is the point, but it must stay bounded: the kernel ejects a
 * sched_ext scheduler that leaves any runnable task waiting longer than
 * its watchdog timeout, and a guest that holds a lock or a pipe a primary
 * needs would block that primary forever.
 *
 * So when guests wait (in the guest DSQ, or in a guest gang's) and none
 * has left the guest DSQ for guard_interval,
 * a CPU that is choosing its next task gives the head of the guest DSQ one
 * short slice (guard_slice) instead, at most once per interval per CPU.
 * The granted guest is not preemptible by primaries (it would otherwise be
 * kicked off at once and a lock holder would never get through) and goes
 * to the back of the guest queue afterwards, so grants rotate through all
 * starved guests instead of feeding the same one.
 *
 * With many starved guests one grant per interval is not enough to reach
 * each of them before the watchdog fires, so the interval shrinks with the
 * queue length: every queued guest is reached within a quarter of the
 * watchdog timeout. The defaults ask for 1 ms every 2 s per CPU; slices
 * end at the next scheduler tick, so a grant really lasts up to one tick
 * (4 ms at HZ=250): at most 0.2% of a busy node's CPU time.
 */
#include "ctx.bpf.h"

/* When a task last left the guest DSQ (any CPU, any reason). */
static u64 guest_dsq_last_move;

/* Largest vtime a guest was queued with: the back of the guest queue. */
static u64 guest_vtime_tail;

__hidden void guard_note_guest_dispatch(u64 now)
{
	/* Shared cache line: write it only when it changed meaningfully. */
	if (now - guest_dsq_last_move > 1000000)
		guest_dsq_last_move = now;
}

__hidden void guard_note_guest_queued(u64 vtime)
{
	if (time_after(vtime, guest_vtime_tail))
		guest_vtime_tail = vtime;
}

__hidden void guard_send_to_back(struct task_struct *p)
{
	if (time_before(p->scx.dsq_vtime, guest_vtime_tail))
		p->scx.dsq_vtime = guest_vtime_tail + 1;
}

/* Interval after which starved guests get a grant, shortened by backlog. */
static u64 guard_interval(u64 nr_queued)
{
	u64 interval = guard_interval_ns;
	u64 reach_all = watchdog_ns / 4 / (nr_queued ? nr_queued : 1);

	if (reach_all < interval)
		interval = reach_all;
	return interval < guard_slice_ns ? guard_slice_ns : interval;
}

/* Should this CPU hand the guest DSQ's head a grant now? */
__hidden bool guard_due(struct cpu_ctx *cctx, u64 now)
{
	u64 nr = scx_bpf_dsq_nr_queued(LINGER_TIER_GUEST) + guest_gangs_queued();
	u64 interval;

	if (!nr)
		return false;
	interval = guard_interval(nr);
	return now - guest_dsq_last_move >= interval &&
	       now - cctx->last_grant >= interval;
}
