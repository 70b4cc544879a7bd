/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wakeup.bpf.c - wake-up preemption within the primary tier.
 *
 * Primaries run 20 ms slices (throughput for compute jobs, main.bpf.c).
 * Were the slice end the only switch point within the tier, a primary
 * that wakes for microseconds (a shell, sshd, a node daemon, an MPI
 * progress thread) would wait up to a whole slice behind a CPU-bound
 * primary, where EEVDF lets it in within about a millisecond.
 *
 * The rule: a waking primary takes the CPU it last ran on from the
 * primary there when all of these hold:
 *  - the waker is a short sleeper: it has run at most WAKE_SHORT_BURST_NS
 *    since it last woke, and on average per wake-up;
 *  - it was not woken with SCX_WAKE_SYNC, the waker's word that it is
 *    about to sleep itself (a pipe or socket write: the woken task gets
 *    the CPU soon anyway). Without this, tasks that talk through pipes
 *    preempt each other at every message and switch many times as often
 *    as they need to. A wake-up from an interrupt (a timer, the network,
 *    a disk) is never sync. select_cpu() passes the flag on; a task that
 *    may run on one CPU only skips select_cpu(), and counts as not sync;
 *  - the running task is not a short sleeper: an ordinary primary (no
 *    gang member: those run by slot, and relief.bpf.c gives ordinary
 *    work its turns beside them) that runs longer than that on average, or
 *    has now run longer than that since it last woke;
 *  - the waker is owed CPU: its vtime is behind the running task's vtime
 *    as of now, what stopping() would charge it (EEVDF's eligibility, in
 *    this scheduler's terms; a waker banks at most one slice,
 *    vtime_wake()). As of now, not as of the running task's start: two
 *    tasks that both slept long wake at the same floor, and as of its
 *    start the running one would keep the waker out for its whole burst.
 *
 * The waker goes straight to its CPU's local DSQ with SCX_ENQ_PREEMPT,
 * which ends the running task's slice there and then: no trip through the
 * shared queue and the next dispatch(), and no kick (an irq_work and a
 * self-IPI when the waker's CPU is the one it wakes on). It runs ahead of
 * primaries queued with smaller vtimes; it is a short sleeper, and they
 * were waiting for the running task anyway. The preempted task queues
 * with its vtime charged for what it ran, so shares within the tier still
 * follow the weights, and a waker can preempt only while it is behind:
 * what it runs, it is charged. What the compute job pays is one switch
 * there and back per such wake-up, as under EEVDF.
 *
 * A running task that is short so far may not stay short: any primary
 * may wake for what looks like a short burst and then run a whole slice.
 * So when only the running task's burst so far keeps the waker out, the
 * waker queues as usual and a BPF timer kicks its CPU (SCX_KICK_PREEMPT)
 * at the moment that burst would pass WAKE_SHORT_BURST_NS, if the same
 * run still goes on then; dispatch() then takes the waker from the queue
 * in vtime order. A short sleeper thus waits at most about
 * WAKE_SHORT_BURST_NS behind another primary. Not by shortening the
 * running task's slice: sched_ext ends slices at the scheduler tick only
 * (4 ms at HZ=250).
 *
 * Only the waker's previous CPU is looked at: it is where its cache is,
 * it is one lookup however many CPUs the node has, and the waker's
 * select_cpu() has already found no idle CPU nearer.
 */
#include "ctx.bpf.h"
#include "llc.bpf.h"
#include "stats.bpf.h"

/* Longest burst per wake-up, and average, of a short sleeper. */
#define WAKE_SHORT_BURST_NS	(1000 * 1000ULL)

/* What runs on each CPU: written by that CPU, read by wakers elsewhere. */
struct wakeup_cpu {
	u64	vtime;		/* the running task's vtime when it started */
	u64	weight;		/* and its weight (task_weight()) */
	u64	started;	/* when it started (0: no ordinary primary) */
	u64	burst;		/* what it had run since it woke, then */
	bool	long_avg;	/* it runs long on average */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct wakeup_cpu);
	__uint(max_entries, 1);
} wakeup_cpus SEC(".maps");

/* One per CPU: kicks it when its running task stops being short. */
struct wakeup_timer {
	struct bpf_timer timer;
	u64	started;	/* the run it was armed for */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct wakeup_timer);
	__uint(max_entries, LINGER_MAX_CPUS);
} wakeup_timers SEC(".maps");

__hidden void wakeup_note_wake(struct task_ctx *tctx)
{
	if (!tctx)
		return;
	/* A running average over about four wake-ups. */
	tctx->wk.avg_burst = (tctx->wk.avg_burst * 3 + tctx->wk.burst) / 4;
	tctx->wk.burst = 0;
}

__hidden void wakeup_note_select(struct task_ctx *tctx, u64 wake_flags)
{
	if (tctx)
		tctx->wk.sync_wake = wake_flags & SCX_WAKE_SYNC;
}

static bool short_sleeper(struct task_ctx *tctx)
{
	return tctx->wk.avg_burst <= WAKE_SHORT_BURST_NS &&
	       tctx->wk.burst <= WAKE_SHORT_BURST_NS;
}

/*
 * A short sleeper can also queue where the rule cannot see the task it
 * will wait behind: it woke while a guest held its CPU, which another
 * primary woken by the same timer interrupt had just claimed
 * (preempt.bpf.c) and entered through the local DSQ; nothing else looks
 * at the queue again until that primary's burst ends. And a long runner
 * that dispatch() takes from the queue ahead of a short sleeper (its
 * vtime is smaller) runs its whole burst with nothing to look again. So a
 * primary that runs long looks at the head of its LLC's primary queue as
 * it starts: a short sleeper there that is not owed CPU yet gets the timer
 * kick at the moment it will be (kick_when_owed()), when dispatch()
 * compares the two again. One owed no less than the long runner (two
 * tasks woken by one interrupt wake at the same floor: the tie goes to
 * the short sleeper) ends its slice at once, but only after a jump past
 * the queue: otherwise dispatch() has chosen between them already, and a
 * kick at every start only adds switches and makes short sleepers' tail
 * latency worse. Only the head: it is one peek, and the queue is in vtime
 * order.
 */
__hidden void wakeup_note_jump(struct task_ctx *tctx)
{
	if (tctx)
		tctx->wk.jumped = true;
}

/* Arm @cpu's timer to fire @after ns into the run that began at @started. */
static void kick_later(s32 cpu, u64 started, u64 after)
{
	struct wakeup_timer *wt = bpf_map_lookup_elem(&wakeup_timers, &cpu);

	if (!wt || wt->started == started)
		return;		/* armed for this run already */
	wt->started = started;
	stat_inc(LINGER_STAT_WAKE_DEFER);
	bpf_timer_start(&wt->timer, after, 0);
}

/*
 * A waker that is not owed CPU yet (its vtime is @gap past what the
 * running task's is now) will be once that task has run gap * weight / 100
 * ns more: kick the CPU then, when dispatch() compares the two again,
 * rather than leave the waker behind the rest of a long burst. Within a
 * slice only: a waker further ahead has had its share.
 */
static void kick_when_owed(s32 cpu, u64 started, u64 gap, u64 weight,
			   u64 not_before)
{
	u64 after = gap * weight / 100 + 1;

	if (after < not_before)
		after = not_before;
	if (after <= primary_slice_ns)
		kick_later(cpu, started, after);
}

static void recheck_queued(s32 cpu, const struct wakeup_cpu *wc, bool jumped)
{
	u64 dsq = tier_dsq(LINGER_TIER_PRIMARY, cpu_llc_of(cpu));
	struct task_struct *q;
	struct task_ctx *qctx;
	u64 qvtime;

	if (!scx_bpf_dsq_nr_queued(dsq))
		return;
	q = __COMPAT_scx_bpf_dsq_peek(dsq);
	qctx = q ? lookup_task_ctx(q) : NULL;
	/* A sync wakee, as in the rule: its waker is about to sleep. */
	if (!qctx || !short_sleeper(qctx) || qctx->wk.sync_wake ||
	    !bpf_cpumask_test_cpu(cpu, q->cpus_ptr))
		return;
	/*
	 * Its key comes before the running task's vtime: dispatch(), which
	 * takes the smallest key, did not choose between them. The running
	 * task came another way: from the CPU's local DSQ, where an idle CPU
	 * was handed it before the head woke. Left alone, the head waits out
	 * its whole burst, even while another CPU goes idle.
	 */
	if (time_before(q->scx.dsq_vtime, wc->vtime))
		goto kick;
	/* Its own vtime, not its queue key (wakeup_queue_key()). */
	qvtime = q->scx.dsq_vtime + qctx->wk.ahead;
	if (time_after(qvtime, wc->vtime)) {
		kick_when_owed(cpu, wc->started, qvtime - wc->vtime,
			       wc->weight, 0);
		return;
	}
	/* Owed already: dispatch() ran the head's equal only after a jump. */
	if (!jumped)
		return;
kick:
	stat_inc(LINGER_STAT_WAKE_PREEMPT);
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
}

__hidden void wakeup_note_running(struct task_struct *p, struct task_ctx *tctx)
{
	u32 zero = 0;
	struct wakeup_cpu *wc = bpf_map_lookup_elem(&wakeup_cpus, &zero);
	bool jumped = false;

	if (!wc)
		return;
	if (tctx && tctx->wk.jumped) {
		tctx->wk.jumped = false;
		jumped = true;
	}
	if (tctx && tctx->wk.sync_wake)
		tctx->wk.sync_wake = false;
	/*
	 * Decided here, not by the caller: a branch in running() itself
	 * doubles what the verifier walks through there.
	 */
	if (!tctx || tctx->cls.tier != LINGER_TIER_PRIMARY ||
	    sched_gang(tctx) != LINGER_GANG_NONE) {
		wc->started = 0;
		return;
	}
	wc->vtime = p->scx.dsq_vtime;
	wc->weight = task_weight(p, tctx, false) ?: 1;
	wc->started = scx_bpf_now() ?: 1;
	wc->burst = tctx->wk.burst;
	wc->long_avg = tctx->wk.avg_burst > WAKE_SHORT_BURST_NS;
	if (wake_preempt && (wc->long_avg || wc->burst > WAKE_SHORT_BURST_NS))
		recheck_queued(bpf_get_smp_processor_id(), wc, jumped);
}

__hidden void wakeup_note_stopping(struct task_ctx *tctx, u64 ran)
{
	u32 zero = 0;
	struct wakeup_cpu *wc = bpf_map_lookup_elem(&wakeup_cpus, &zero);

	if (wc)
		wc->started = 0;
	if (tctx)
		tctx->wk.burst += ran;
}

/* The timer: @key's CPU's running task has now run long. */
static int wakeup_timer_fired(void *map, int *key, struct wakeup_timer *wt)
{
	struct wakeup_cpu *wc;
	u32 zero = 0;
	s32 cpu = *key;

	wc = bpf_map_lookup_percpu_elem(&wakeup_cpus, &zero, cpu);
	/* Only if that run goes on: else the waker has had its turn. */
	if (wc && wc->started && wc->started == wt->started) {
		stat_inc(LINGER_STAT_WAKE_PREEMPT);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
	return 0;
}

__hidden s32 wakeup_timers_init(void)
{
	struct wakeup_timer *wt;
	s32 ret;
	u32 cpu;

	bpf_for(cpu, 0, scx_bpf_nr_cpu_ids()) {
		wt = bpf_map_lookup_elem(&wakeup_timers, &cpu);
		if (!wt)
			return -ENOENT;
		ret = bpf_timer_init(&wt->timer, &wakeup_timers, CLOCK_MONOTONIC);
		if (!ret)
			ret = bpf_timer_set_callback(&wt->timer, wakeup_timer_fired);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The primary queue is in vtime order, and dispatch() keeps it. So a
 * short sleeper that queues (its CPU was idle, or another primary runs
 * there that the rule lets go on) would wait behind every primary with a
 * smaller vtime, whatever that one's burst: a primary that sleeps and
 * then runs long wakes with up to a slice's credit (vtime_wake()), and
 * the short sleeper would wait out its whole burst.
 *
 * EEVDF orders by deadline, vruntime plus the request, so a task asking
 * for little runs before one of the same vruntime asking for much. Here
 * the same, in two classes of request: a short sleeper woken without
 * SCX_WAKE_SYNC queues with its key a slice ahead of its vtime, as if it
 * had banked the slice a long runner banks by sleeping. Only the key: it
 * gets its own vtime back when it starts running, so what it runs it is
 * charged, and weights hold. It goes ahead only of primaries within a
 * slice of it; one that ran further ahead waits its turn in vtime order.
 */
static u64 queue_key_ahead(struct task_ctx *tctx)
{
	if (!wake_preempt || tctx->wk.sync_wake || !short_sleeper(tctx))
		return 0;
	return primary_slice_ns;
}

__hidden void wakeup_queue_key(struct task_struct *p, struct task_ctx *tctx,
			       u64 enq_flags)
{
	if (!tctx || !(enq_flags & SCX_ENQ_WAKEUP))
		return;
	tctx->wk.ahead = queue_key_ahead(tctx);
	p->scx.dsq_vtime -= tctx->wk.ahead;
}

__hidden void wakeup_queue_key_undo(struct task_struct *p, struct task_ctx *tctx)
{
	if (!tctx || !tctx->wk.ahead)
		return;
	p->scx.dsq_vtime += tctx->wk.ahead;
	tctx->wk.ahead = 0;
}

__hidden bool wakeup_preempts(struct task_struct *p, struct task_ctx *tctx)
{
	u64 started, ran, now, running_vtime, key, short_for = 0;
	struct wakeup_cpu *wc;
	u32 zero = 0;
	bool sync;
	s32 cpu;

	if (!wake_preempt || !tctx)
		return false;
	/* Cleared as it starts running (wakeup_note_running()). */
	sync = tctx->wk.sync_wake;
	if (sync || !short_sleeper(tctx))
		return false;
	cpu = scx_bpf_task_cpu(p);
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	wc = bpf_map_lookup_percpu_elem(&wakeup_cpus, &zero, cpu);
	if (!wc)
		return false;
	started = wc->started;
	if (!started)
		return false;
	now = scx_bpf_now();
	ran = time_before(started, now) ? now - started : 0;
	/* The running task's vtime now: what stopping() would charge it. */
	running_vtime = wc->vtime + ran * 100 / wc->weight;
	/* Until its run so far is long, the running task may go on. */
	if (!wc->long_avg && wc->burst + ran <= WAKE_SHORT_BURST_NS)
		short_for = WAKE_SHORT_BURST_NS - wc->burst - ran + 1;
	/*
	 * Compared as dispatch() would compare them: by the key the waker
	 * would queue with (wakeup_queue_key()). By its own vtime, a short
	 * sleeper up to a slice ahead would wait for the running task to
	 * catch up, though its key comes first.
	 */
	key = p->scx.dsq_vtime - queue_key_ahead(tctx);
	if (!time_before(key, running_vtime)) {
		kick_when_owed(cpu, started, key - running_vtime,
			       wc->weight, short_for);
		return false;
	}
	if (short_for) {
		kick_later(cpu, started, short_for);
		return false;
	}
	stat_inc(LINGER_STAT_WAKE_PREEMPT);
	return true;
}
