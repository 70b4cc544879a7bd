/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * preempt.bpf.c - finding a CPU a waking primary can take from a guest.
 *
 * Strict priority means a primary never waits while a guest holds a CPU it
 * could use. The DSQ order in dispatch() covers CPUs that are choosing
 * their next task; this file covers CPUs that are already running a guest:
 * guest_cpus marks them, and a primary that finds no idle CPU kicks one of
 * them with SCX_KICK_PREEMPT, which ends the guest's slice at once instead
 * of at its end.
 *
 * A CPU sets its bit in dispatch() *before* it takes a guest and looks at
 * the primary DSQ once more after setting it. A primary inserts itself
 * into the primary DSQ *before* it reads guest_cpus. So either the CPU
 * sees the primary in the DSQ, or the primary sees the CPU's bit: a
 * primary cannot slip in between unseen. The bit is cleared when a primary
 * claims the CPU (guest_cpu_for()) or a primary or a guard-granted guest
 * starts running there. A stale bit on a CPU that
 * went idle costs at most a kick of an idle CPU, which then runs the
 * primary: exactly what we want anyway.
 */
#include "llc.bpf.h"
#include "preempt.bpf.h"
#include "stats.bpf.h"

/* CPUs that run, or are about to run, a preemptible guest. */
private(LINGER) struct bpf_cpumask __kptr *guest_cpus;

__hidden s32 init_guest_cpus(void)
{
	struct bpf_cpumask *mask = bpf_cpumask_create();

	if (!mask)
		return -ENOMEM;
	mask = bpf_kptr_xchg(&guest_cpus, mask);
	if (mask)
		bpf_cpumask_release(mask);
	return 0;
}

__hidden void mark_guest_cpu(s32 cpu, bool running_guest)
{
	struct bpf_cpumask *mask;

	bpf_rcu_read_lock();
	mask = guest_cpus;
	/* Test first: only a change needs the atomic write. */
	if (mask && bpf_cpumask_test_cpu(cpu, cast_mask(mask)) != running_guest) {
		if (running_guest)
			bpf_cpumask_set_cpu(cpu, mask);
		else
			bpf_cpumask_clear_cpu(cpu, mask);
	}
	bpf_rcu_read_unlock();
}

__hidden bool cpu_runs_guest(s32 cpu)
{
	struct bpf_cpumask *mask;
	bool ret = false;

	bpf_rcu_read_lock();
	mask = guest_cpus;
	if (mask)
		ret = bpf_cpumask_test_cpu(cpu, cast_mask(mask));
	bpf_rcu_read_unlock();
	return ret;
}

/*
 * Claim @cpu for @p if it runs a guest and @p may run there: true if it
 * did (its bit is clear now, as below). The plain test first: on a busy
 * node most wake-ups find no guest there, and pay no atomic for it.
 */
__hidden bool claim_guest_cpu(const struct task_struct *p, s32 cpu)
{
	struct bpf_cpumask *mask;
	bool claimed = false;

	bpf_rcu_read_lock();
	mask = guest_cpus;
	if (mask && bpf_cpumask_test_cpu(cpu, cast_mask(mask)) &&
	    bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		claimed = bpf_cpumask_test_and_clear_cpu(cpu, mask);
	bpf_rcu_read_unlock();
	return claimed;
}

/*
 * Claim a CPU that runs a guest and may run @p, preferring @prev_cpu (its
 * cache may still be warm); -1 if there is none. The claim clears the
 * CPU's bit: the primary sent there will take it, and until it runs, the
 * bit would send the next waking primary (often one woken by the same
 * timer interrupt) to the same CPU, to queue behind the first in its FIFO
 * local DSQ for a whole slice. If the CPU takes a guest again, dispatch()
 * sets its bit again, as above.
 */
__hidden s32 guest_cpu_for(const struct task_struct *p, s32 prev_cpu)
{
	u32 nr_cpus = scx_bpf_nr_cpu_ids(), tries;
	struct bpf_cpumask *mask;
	s32 cpu = -1;

	if (claim_guest_cpu(p, prev_cpu))
		return prev_cpu;
	bpf_rcu_read_lock();
	mask = guest_cpus;
	if (mask) {
		/* Another waker may claim the one found first: a few more. */
		bpf_for(tries, 0, 4) {
			cpu = bpf_cpumask_any_and_distribute(cast_mask(mask),
							     p->cpus_ptr);
			if (cpu < 0 || cpu >= nr_cpus) {
				cpu = -1;
				break;
			}
			if (bpf_cpumask_test_and_clear_cpu(cpu, mask))
				break;
			cpu = -1;
		}
	}
	bpf_rcu_read_unlock();
	return cpu;
}

/*
 * Kick a CPU that runs a guest and may run @p, for @p queued on the
 * primary DSQ. Returns true if one was kicked.
 */
__hidden bool preempt_guest_for(const struct task_struct *p)
{
	s32 cpu = guest_cpu_for(p, scx_bpf_task_cpu(p));

	if (cpu < 0)
		return false;
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	stat_inc(LINGER_STAT_PREEMPT_GUEST);
	return true;
}

/*
 * Wake @nr CPUs for tasks just put on the tier queues with no CPU in
 * mind: idle ones, else (@take_guests, for primaries) ones running a
 * guest, whose slices end at once. Picks any such CPU, not one a given
 * task may use: a CPU woken for nothing it can run dispatches and idles
 * again. For held tasks let go (bandwidth.bpf.c), after the loop that
 * moved them: 6.12's verifier refuses a DSQ iterator step after the RCU
 * unlock a per-task pick makes. A global function, verified once.
 */
__noinline int wake_cpus(u32 nr, bool take_guests)
{
	u32 nr_cpus = scx_bpf_nr_cpu_ids(), i;

	bpf_for(i, 0, nr < nr_cpus ? nr : nr_cpus) {
		const struct cpumask *idle = scx_bpf_get_idle_cpumask();
		struct bpf_cpumask *mask;
		s32 cpu = bpf_cpumask_any_distribute(idle);

		scx_bpf_put_idle_cpumask(idle);
		if ((u32)cpu < nr_cpus && scx_bpf_test_and_clear_cpu_idle(cpu)) {
			stat_inc(LINGER_STAT_KICK_IDLE);
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			continue;
		}
		if (!take_guests)
			break;
		cpu = -1;
		bpf_rcu_read_lock();
		mask = guest_cpus;
		if (mask) {
			cpu = bpf_cpumask_any_distribute(cast_mask(mask));
			if ((u32)cpu >= nr_cpus || !bpf_cpumask_test_and_clear_cpu(cpu, mask))
				cpu = -1;
		}
		bpf_rcu_read_unlock();
		if (cpu < 0)
			break;
		stat_inc(LINGER_STAT_PREEMPT_GUEST);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
	return 0;
}

/*
 * A guest can also start without passing dispatch(): it was moved to the
 * CPU's local DSQ, and a primary that claimed the CPU went in ahead of it
 * (SCX_ENQ_PREEMPT puts it at the head). Meanwhile the CPU's bit is
 * clear, so a primary that queues then sees no guest to take, and would
 * wait out the guest's whole slice once the claiming primary leaves. So
 * a guest that starts looks at its LLC's primary queue once, after its
 * bit is set (the same order as dispatch()'s): a head that may run here
 * ends its slice.
 */
__hidden void guest_start_recheck(s32 cpu)
{
	u64 dsq = tier_dsq(LINGER_TIER_PRIMARY, cpu_llc_of(cpu));
	struct task_struct *q;

	if (!scx_bpf_dsq_nr_queued(dsq))
		return;
	q = __COMPAT_scx_bpf_dsq_peek(dsq);
	if (q && bpf_cpumask_test_cpu(cpu, q->cpus_ptr)) {
		stat_inc(LINGER_STAT_PREEMPT_GUEST);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
}
