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
 * So when guests wait (in a guest DSQ, or in a guest gang's) and none
 * has left the guest DSQs for guard_interval,
 * a CPU that is choosing its next task gives the head of a guest DSQ one
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
 *
 * The age guard. The grant keeps the guest queue moving and vtime keeps
 * each tier fair, but neither bounds how long one task waits. A task far
 * ahead of its tier in vtime waits until every other task of the tier has
 * run as much more, and tasks that wake often and run briefly climb
 * slowly: a light task (nice 19 is charged 100 times its run) or one
 * charged a long run can wait for tens of seconds, past the watchdog's
 * timeout. So every AGE_LOOK_NS one CPU looks through each tier queue
 * for tasks that have been ready for a quarter of the watchdog's timeout
 * without running, and runs up to AGE_RESCUE_MAX of them on itself for a
 * guard slice. Running at all is what the watchdog asks; their place in
 * vtime is left as it is. Guests are looked for only where the CPU would
 * run a guest anyway: rescued ahead of the primaries' queue, they would
 * hold CPUs that waiting primaries need.
 *
 * Gang members wait in their gang's DSQ, not in a tier queue, and the age
 * guard looks there too, after the tier queues. A gang's slot is no bound
 * on its members' waits: admission counts CPUs, not which CPU each member
 * may use, so a member that may run on one CPU only (ranks bound to cores
 * by the batch system or the MPI launcher) can find that CPU held by a
 * gang admitted beside its own, slot after slot. Every task the
 * scheduler queues therefore runs within a quarter of the watchdog's
 * timeout plus one look (AGE_LOOK_NS), whatever the gangs.
 *
 * The reader grant. A guest preempted inside an RCU read-side critical
 * section (preemptible RCU: a primary took its CPU, or its slice ended,
 * in the middle of a path walk or a page fault) holds up every grace
 * period that began before, so every RCU callback on the node, until it
 * runs again and gets out; past 21 s the kernel reports an RCU stall and
 * ends the BPF scheduler. The guard's trickle reaches it in seconds, not
 * in time: four such guests on two CPUs made each synchronize_rcu() take
 * 13-15 s. Running it as a primary would let a guest that lives in the
 * kernel (path walks without end) take a primary's share. So it waits in
 * a queue of its own, and a CPU choosing its next task gives that
 * queue's head a guard slice at most once per READER_GRANT_INTERVAL_NS,
 * not preemptible by primaries, like a guard grant; a CPU that would run
 * a guest anyway takes readers first. Readers cost primaries at most one
 * tick (4 ms at HZ=250) per CPU per interval, and only while guests are
 * caught inside readers; each of R of them queued on C CPUs is reached
 * within R / C intervals. A reader leaving its queue is not a guest
 * leaving the guest queues (guard_note_guest_dispatch()): a guest that
 * is caught again and again would otherwise keep the guard from ever
 * being due, and the guests that never enter the kernel would starve.
 */
#include "ctx.bpf.h"
#include "gang.bpf.h"
#include "gang_run.bpf.h"
#include "guard.bpf.h"
#include "llc.bpf.h"
#include "stats.bpf.h"

#define AGE_LOOK_NS	(100 * 1000000ULL)
#define AGE_RESCUE_MAX	4
#define READER_GRANT_INTERVAL_NS	(250 * 1000000ULL)

/* When a task last left the guest DSQ (any CPU, any reason). */
static u64 guest_dsq_last_move;

/*
 * Largest vtime a guest was queued with on each LLC: the back of that
 * LLC's guest queue (a cache line each: only its CPUs write it).
 */
struct guest_tail {
	u64	vtime;
} __attribute__((aligned(64)));

static struct guest_tail guest_vtime_tail[LINGER_MAX_LLCS];

__hidden void guard_note_guest_dispatch(u64 now)
{
	/* Shared cache line: write it only when it changed meaningfully. */
	if (now - guest_dsq_last_move > 1000000)
		guest_dsq_last_move = now;
}

static u64 *tail_of(u32 llc)
{
	return &guest_vtime_tail[llc < LINGER_MAX_LLCS ? llc : 0].vtime;
}

__hidden void guard_note_guest_queued(u64 vtime, u32 llc)
{
	u64 *tail = tail_of(llc);

	if (time_after(vtime, *tail))
		*tail = vtime;
}

/* Its vtime is measured on its LLC's clock (vtime.bpf.c), as is that tail. */
__hidden void guard_send_to_back(struct task_struct *p, struct task_ctx *tctx)
{
	u64 *tail = tail_of(tctx->vt.llc);

	if (time_before(p->scx.dsq_vtime, *tail))
		p->scx.dsq_vtime = *tail + 1;
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

/* Should this CPU hand the head of a guest DSQ a grant now? */
__hidden bool guard_due(struct cpu_ctx *cctx, u64 now)
{
	u64 nr, interval;

	/*
	 * No interval is shorter than a guard slice: the cheap test first,
	 * before counting every LLC's queue, at every dispatch.
	 */
	if (now - guest_dsq_last_move < guard_slice_ns ||
	    now - cctx->guard.last_grant < guard_slice_ns)
		return false;
	nr = tier_nr_queued(LINGER_TIER_GUEST) + guest_gangs_queued();
	if (!nr)
		return false;
	interval = guard_interval(nr);
	return now - guest_dsq_last_move >= interval &&
	       now - cctx->guard.last_grant >= interval;
}

/* When a CPU last looked for overdue tasks, per tier. */
static u64 age_looked_at[LINGER_NR_TIERS];

/*
 * Move up to @budget overdue tasks of @dsq that may run on @cpu to it. A
 * primary or a gang member that may not (a task bound to other CPUs:
 * ranks bound to cores, per-CPU work) goes to the local DSQ of a CPU it
 * may run on, its last one first, and preempts what runs there: which
 * CPU looks is a race, and a CPU whose local DSQ a gang keeps full may
 * never look, so a bound task's wait would otherwise have no bound. One
 * such move ends the look (the next one, AGE_LOOK_NS later, goes on):
 * a second count carried through the loop would multiply the verifier's
 * states. A guest is moved only to @cpu, which is about to run a guest
 * anyway.
 *
 * A rescued guest runs as on a grant (@grant): not preemptible by the
 * primaries it was rescued from, or the primary queue it starts beside
 * would end its slice at once (preempt.bpf.c), and to the back of its
 * queue afterwards. Returns how many tasks @cpu itself got. A global
 * function, verified once rather than inside each caller's loop.
 */
__noinline u32 rescue_from(u64 dsq, s32 cpu, u64 now, u32 budget, bool grant)
{
	struct task_struct *p;
	u32 moved = 0;

	if (!budget || !scx_bpf_dsq_nr_queued(dsq))
		return 0;
	bpf_for_each(scx_dsq, p, dsq, 0) {
		struct task_ctx *tctx = lookup_task_ctx(p);
		u64 since;
		s32 to;

		if (!tctx)
			continue;
		since = tctx->guard.ready_at;
		if (!since || time_before(now, since + watchdog_ns / 4))
			continue;
		scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, guard_slice_ns);
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr)) {
			if (grant)
				continue;
			to = scx_bpf_task_cpu(p);
			if (!bpf_cpumask_test_cpu(to, p->cpus_ptr))
				to = bpf_cpumask_any_distribute(p->cpus_ptr);
			if (to >= 0 && to < LINGER_MAX_CPUS &&
			    scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
					     SCX_DSQ_LOCAL_ON | to, SCX_ENQ_PREEMPT))
				stat_inc(LINGER_STAT_AGE_RESCUE);
			break;
		}
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			continue;
		if (grant)
			tctx->guard.granted = true;
		stat_inc(LINGER_STAT_AGE_RESCUE);
		if (++moved >= budget)
			break;
	}
	return moved;
}

/*
 * The same for the members of @tier's gangs, from the first gang's DSQ
 * that has any. A rescued member runs its guard slice outside its slot
 * and queues in its gang's DSQ again when it ends. Global, verified once
 * on its own: inlined, its loop would be walked again inside dispatch().
 */
__noinline bool rescue_gangs(u32 tier, s32 cpu, u64 now)
{
	u64 mask = tier_scheduled(tier);
	u32 g;

	if (!mask)
		return false;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		if ((mask & gang_bit(g)) &&
		    rescue_from(GANG_DSQ(g), cpu, now, AGE_RESCUE_MAX,
				tier == LINGER_TIER_GUEST))
			return true;
	}
	return false;
}

/*
 * Up to AGE_RESCUE_MAX overdue tasks of @tier, from the first LLC's queue
 * that has any (the next look, AGE_LOOK_NS later, reaches the others).
 * Not a budget shared across LLCs: a count carried through the loop
 * gives the verifier a state per value, and dispatch() would outgrow it.
 */
static bool rescue_any(u32 tier, s32 cpu, u64 now)
{
	u32 llc;

	bpf_for(llc, 0, nr_llcs) {
		if (rescue_from(tier_dsq(tier, llc), cpu, now, AGE_RESCUE_MAX,
				tier == LINGER_TIER_GUEST))
			return true;
	}
	return rescue_gangs(tier, cpu, now);
}

__hidden bool guard_rescue_overdue(u32 tier, s32 cpu, u64 now)
{
	u64 *looked = &age_looked_at[tier == LINGER_TIER_GUEST ? LINGER_TIER_GUEST : LINGER_TIER_PRIMARY];
	u64 last = *looked;

	/* One CPU per look; the others go on at once. */
	if (now - last < AGE_LOOK_NS ||
	    __sync_val_compare_and_swap(looked, last, now) != last)
		return false;
	return rescue_any(tier == LINGER_TIER_GUEST ? LINGER_TIER_GUEST : LINGER_TIER_PRIMARY,
			  cpu, now);
}

__hidden void guard_queue_reader(struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, LINGER_READER_DSQ, guard_slice_ns, enq_flags);
}

__hidden bool guard_grant_reader(struct cpu_ctx *cctx, u64 now)
{
	if (now - cctx->guard.last_reader_grant < READER_GRANT_INTERVAL_NS ||
	    !scx_bpf_dsq_nr_queued(LINGER_READER_DSQ))
		return false;
	/* running() makes it a grant: a guard slice, not preemptible. */
	cctx->guard.grant_pending = true;
	if (!scx_bpf_dsq_move_to_local(LINGER_READER_DSQ, 0)) {
		cctx->guard.grant_pending = false;
		return false;
	}
	cctx->guard.last_reader_grant = now;
	stat_inc(LINGER_STAT_READER_GRANT);
	return true;
}
