/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_linger - a sched_ext scheduler for shared compute nodes.
 *
 * Two tiers share the machine with strict priority between them:
 *
 *  - primary: the owners' jobs, system daemons, kernel threads.
 *  - guest: jobs that may only soak up the cycles primaries leave idle
 *    (Linger-Longer; Stiehr & Chamberlain 2006). A guest never runs on a
 *    CPU while a primary that could use that CPU waits.
 *
 * Within a tier, tasks share CPU by weighted virtual time (vtime.bpf.c),
 * in a queue per last-level cache that CPUs of other LLCs steal from
 * (llc.bpf.c). Gangs, parallel jobs of either tier, run their threads
 * together in clock-aligned slots (gang.bpf.c). A waking primary takes an
 * idle CPU, else a guest's (preempt.bpf.c); guests always go through the
 * guest DSQ, so a CPU choosing its next task sees waiting primaries
 * first. Starved guests get a bounded trickle of CPU (guard.bpf.c). Which
 * class a task is in comes from labels on its cgroup (classify.bpf.c),
 * which the agent keeps in a map.
 *
 * This unit holds the sched_ext ops, and nothing else: each op says when
 * the kernel calls it and what holds there, then hands each concern to
 * its unit (the tunables: tunables.bpf.c; a slice's start and end, and
 * dispatch()'s ways of keeping a CPU: slice.bpf.c).
 */
#include "ctx.bpf.h"
#include "account.bpf.h"
#include "bandwidth.bpf.h"
#include "classify.bpf.h"
#include "gang.bpf.h"
#include "gang_run.bpf.h"
#include "guard.bpf.h"
#include "llc.bpf.h"
#include "machinery.bpf.h"
#include "preempt.bpf.h"
#include "reclassify.bpf.h"
#include "relief.bpf.h"
#include "slice.bpf.h"
#include "smt.bpf.h"
#include "stats.bpf.h"
#include "vtime.bpf.h"
#include "wakeup.bpf.h"
#include "weight.bpf.h"

char _license[] SEC("license") = "GPL";

/* Exit information the agent reports when the scheduler stops. */
UEI_DEFINE(uei);

/*
 * select_cpu: @p is waking up (or was just forked or exec'd) and is not on
 * any queue yet. The kernel moves it to the CPU returned, and a task
 * inserted into SCX_DSQ_LOCAL here is dispatched there at once and skips
 * enqueue(). Runs on the waker's CPU, so it may look at other CPUs only
 * through their shared state (idle masks, guest_cpus).
 */
s32 BPF_STRUCT_OPS(linger_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u32 tier = task_tier(p, tctx);
	bool is_idle = false;
	s32 cpu;

	/*
	 * Gang members are placed by enqueue(), in step with their slot; a
	 * task whose cgroup used its cpu.max quota is held there, and must
	 * not claim an idle CPU it will not run on.
	 */
	if (sched_gang(tctx) != LINGER_GANG_NONE ||
	    (!bw_none() && !bw_left(p, tctx, scx_bpf_now(), NULL)))
		return prev_cpu;

	/*
	 * The kernel's default idle-CPU search prefers prev_cpu, then an idle
	 * SMT core, then any idle CPU in the same LLC and NUMA node. A primary
	 * that finds one runs there at once. A guest goes through the guest
	 * DSQ even then, so that the CPU, when it wakes, takes any primary
	 * that arrived in the meantime first.
	 */
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (tier != LINGER_TIER_PRIMARY)
		return cpu;
	if (is_idle) {
		stat_inc(LINGER_STAT_DIRECT_IDLE);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns, 0);
		return cpu;
	}

	/*
	 * No idle CPU. If one it may use runs a guest, go straight to that
	 * CPU and preempt the guest on arrival: the wake-up IPI that brings
	 * the task there is also what ends the guest's slice, so the primary
	 * waits no longer than it would for an idle CPU.
	 */
	cpu = guest_cpu_for(p, prev_cpu);
	if (cpu >= 0) {
		stat_inc(LINGER_STAT_PREEMPT_GUEST);
		wakeup_note_jump(tctx);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns,
				   SCX_ENQ_PREEMPT);
		return cpu;
	}
	/*
	 * The node's machinery, while gangs hold every CPU: a member's CPU,
	 * within that CPU's budget (machinery.bpf.c). A service takes it at
	 * once: it wakes for a request, seldom, where kernel threads (which
	 * come through enqueue()) wait for the member's tick.
	 */
	cpu = machinery_pick(p, tctx, prev_cpu);
	if (cpu >= 0 && tctx) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tctx->mach.slice,
				   SCX_ENQ_PREEMPT);
		return cpu;
	}
	wakeup_note_select(tctx, wake_flags);
	return prev_cpu;
}

/*
 * enqueue: @p is ready to run and select_cpu() did not dispatch it: it
 * woke without a free CPU, or its slice ended and it is still runnable,
 * or it was preempted (SCX_ENQ_PREEMPT), re-enqueued from a CPU a higher
 * class took (SCX_ENQ_REENQ), or never passed select_cpu() at all. It
 * must end up in some DSQ; runnable() has already been called for it if
 * it woke. Exiting tasks come here too (SCX_OPS_ENQ_EXITING), as any
 * other: see SCX_OPS_DEFINE below for why.
 */
void BPF_STRUCT_OPS(linger_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	/*
	 * A task that woke was classed by runnable() a moment ago, under the
	 * same run-queue lock, which a cgroup move also takes: the cached
	 * tier is current. Any other arrival is classed afresh.
	 */
	u32 tier = (enq_flags & SCX_ENQ_WAKEUP) && tctx ? tctx->cls.tier :
							   task_tier(p, tctx);
	u32 gang = sched_gang(tctx);
	u64 slice;
	u32 llc;
	s32 cpu;

	if (tctx)
		gang_count_runnable(tctx);
	/*
	 * Its cgroup used its cpu.max quota: it waits for the next period
	 * outside every queue (bandwidth.bpf.c), even as a CPU's last task.
	 */
	if (bw_hold(p, tctx, enq_flags, scx_bpf_now()))
		return;
	/*
	 * A guest preempted inside an RCU read-side section waits for a
	 * reader grant (guard.bpf.c), outside its gang until it is out; an
	 * idle CPU, which would run a guest, takes it at once.
	 */
	if (tier == LINGER_TIER_GUEST && task_in_rcu_reader(p)) {
		stat_inc(LINGER_STAT_ENQ_GUEST);
		guard_queue_reader(p, enq_flags);
		cpu = smt_pick_idle_for_guest(p, cpu_llc_of(scx_bpf_task_cpu(p)));
		if (cpu >= 0)
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}
	if (gang != LINGER_GANG_NONE && tctx &&
	    gang_swap_enqueue(p, tctx, enq_flags))
		return;
	/*
	 * The last runnable task of a CPU whose dispatch() kept nothing
	 * (SCX_OPS_ENQ_LAST, set for home swaps): it keeps the CPU, as the
	 * kernel keeps it without the flag.
	 */
	if (enq_flags & SCX_ENQ_LAST) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tier_slice(tier), enq_flags);
		return;
	}
	if (gang != LINGER_GANG_NONE && tctx) {
		gang_enqueue(p, tctx, gang, enq_flags);
		return;
	}
	/*
	 * It waits on the LLC of the CPU it was placed on (select_cpu()'s
	 * choice, near its cache), with its vtime measured there; whichever
	 * DSQ it goes to next, it is on none now, so its vtime may be set.
	 */
	cpu = scx_bpf_task_cpu(p);
	llc = cpu_llc_of(cpu);
	p->scx.dsq_vtime = task_queue_vtime(p, tctx, tier, llc);
	if (tier == LINGER_TIER_PRIMARY) {
		/* Work pinned to this CPU: the members leave it if they can. */
		gang_note_pinned(p, tctx, cpu);
		/*
		 * Its own CPU is idle (a task on one CPU skips select_cpu(), and
		 * a CPU may have gone idle since it ran): claim it and go to its
		 * local DSQ, as select_cpu() does with an idle CPU. The kernel
		 * then reschedules that CPU itself, where queueing and a kick
		 * would cost an irq_work, and a self-IPI when the wake-up came
		 * from an interrupt on that very CPU. Nothing queued loses by
		 * it: an idle CPU had taken nothing from the queues.
		 */
		if (scx_bpf_test_and_clear_cpu_idle(cpu)) {
			stat_inc(LINGER_STAT_DIRECT_IDLE);
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns,
					   enq_flags);
			return;
		}
		/*
		 * The node's machinery waking on a CPU a gang member holds:
		 * its local DSQ, where the member yields to it at its next
		 * tick, within the CPU's budget (machinery.bpf.c).
		 */
		slice = machinery_turn(tctx, cpu, enq_flags);
		if (slice) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, enq_flags);
			return;
		}
		/*
		 * A primary waking without select_cpu() (a task that may run
		 * on one CPU only, as every task of a 1-CPU node is) on a CPU
		 * that runs a guest takes that CPU at once, as select_cpu()
		 * hands a waking primary a guest's CPU: through its local DSQ,
		 * ahead of the guest. Queueing, then kicking its own CPU, cost
		 * an irq_work, a self-interrupt and a dispatch() more.
		 */
		if ((enq_flags & SCX_ENQ_WAKEUP) && claim_guest_cpu(p, cpu)) {
			stat_inc(LINGER_STAT_PREEMPT_GUEST);
			wakeup_note_jump(tctx);
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns,
					   enq_flags | SCX_ENQ_PREEMPT);
			return;
		}
		/*
		 * A per-CPU kernel thread that wakes, or a task that cannot
		 * migrate, gains nothing from the shared queue: give it its
		 * CPU's local DSQ, and take the CPU from a guest if one holds
		 * it. Not a user task pinned to one CPU: on a 1-CPU node or in
		 * a 1-core cpuset every task is, and the local DSQ is FIFO, so
		 * vtime order would be lost and a waking short sleeper would
		 * queue behind a compute job's whole burst. The primary DSQ
		 * hands each CPU the first task that may run there.
		 *
		 * Only as it wakes. The kernel runs what is in a local DSQ
		 * before it calls dispatch(), so a kthread whose slice ended
		 * or that was preempted, put back there, would take turns
		 * there with another busy kthread of the CPU (on a 1-CPU node
		 * every kthread is per-CPU) while nothing queued ran; a
		 * preemption meant for the queue's head (wakeup.bpf.c's
		 * tick) would only swap the two, every few microseconds,
		 * until the kernel's watchdog or RCU's stall check ended the
		 * scheduler. It queues like any primary instead.
		 */
		if (((p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1 &&
		     (enq_flags & SCX_ENQ_WAKEUP)) ||
		    is_migration_disabled(p)) {
			stat_inc(LINGER_STAT_DIRECT_PINNED);
			if (cpu_runs_guest(cpu)) {
				enq_flags |= SCX_ENQ_PREEMPT;
				stat_inc(LINGER_STAT_PREEMPT_GUEST);
			} else if ((enq_flags & SCX_ENQ_WAKEUP) &&
				   wakeup_preempts(p, tctx)) {
				enq_flags |= SCX_ENQ_PREEMPT;
			}
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns,
					   enq_flags);
			return;
		}
		/*
		 * A short sleeper that may take its CPU from the primary there
		 * (wakeup.bpf.c) goes straight to that CPU. Decided before the
		 * shared queue, so that it never waits in it; when it is not,
		 * the order below (queue first, then look at guest_cpus) holds.
		 */
		if ((enq_flags & SCX_ENQ_WAKEUP) && wakeup_preempts(p, tctx)) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, primary_slice_ns,
					   enq_flags | SCX_ENQ_PREEMPT);
			return;
		}
		stat_inc(LINGER_STAT_ENQ_PRIMARY);
		scx_bpf_dsq_insert_vtime(p, tier_dsq(LINGER_TIER_PRIMARY, llc),
					 primary_slice_ns, p->scx.dsq_vtime, enq_flags);
	} else {
		stat_inc(LINGER_STAT_ENQ_GUEST);
		guard_note_guest_queued(p->scx.dsq_vtime, llc);
		scx_bpf_dsq_insert_vtime(p, tier_dsq(LINGER_TIER_GUEST, llc),
					 guest_slice_ns, p->scx.dsq_vtime, enq_flags);
	}

	/*
	 * A CPU may idle that nobody told: select_cpu() is skipped for tasks
	 * that did not just wake (preempted or yielding tasks, new tasks on
	 * some paths), and where it ran, a CPU whose dispatch() found the
	 * queues empty may have gone idle since its search, after which it
	 * looks at them again only when kicked (the kernel wakes the CPU
	 * select_cpu() chose, not this one). Wake one that may run the task,
	 * in the LLC it waits on first (a CPU there takes it from its own
	 * queue, no steal; for a guest under avoid, a whole idle core first).
	 * The search runs on every enqueue: with it skipped where
	 * select_cpu() ran, one soak boot in two had a CPU idle for 4.8 s
	 * beside eight queued tasks, until the kernel ended the scheduler on
	 * the RCU stall of one of them (docs/design.md, the hot path's table).
	 */
	cpu = tier == LINGER_TIER_GUEST ? smt_pick_idle_for_guest(p, llc) :
					  pick_idle_near(p, llc, 0);
	if (cpu >= 0) {
		stat_inc(LINGER_STAT_KICK_IDLE);
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}
	/*
	 * No idle CPU: a primary takes one from a guest, else, woken during
	 * a gang slot, takes one from a member for a relief turn (the kicked
	 * member's dispatch() gives that turn).
	 */
	if (tier == LINGER_TIER_PRIMARY && !preempt_guest_for(p))
		relief_kick(p, tctx, enq_flags);
}

/*
 * dispatch: @cpu's local DSQ is empty and it needs its next task. @prev
 * is the task it ran (NULL if none, or if prev left the scheduler);
 * still runnable if SCX_TASK_QUEUED is set, and then it keeps the CPU if
 * its slice is refilled here. Tasks moved with scx_bpf_dsq_move_to_local()
 * run next; if nothing is moved and prev is not refilled, the CPU goes
 * idle (or runs prev once more if it is the only runnable task).
 */
void BPF_STRUCT_OPS(linger_dispatch, s32 cpu, struct task_struct *prev)
{
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);
	u64 now = scx_bpf_now();
	struct task_ctx *tctx = NULL;
	u32 prev_tier = LINGER_TIER_PRIMARY;
	bool prev_ordinary = false, smt_blocked = false;

	gang_cpu_dispatching(cpu);
	machinery_dispatching(cpu);

	/*
	 * A guest caught inside an RCU read-side section holds up the node's
	 * grace periods: a reader grant, as often as guard.bpf.c allows. Not
	 * noted as a guest leaving the guest queues: the guard's grants must
	 * go on whatever the readers get.
	 */
	if (cctx && guard_grant_reader(cctx, now))
		return;

	/*
	 * Starved guests first, but only as often as the guard allows: those
	 * waiting longest (past a quarter of the watchdog's timeout, in a
	 * tier queue or a guest gang's) before the heads of the queues, or a
	 * guest that is never at a head, a guest-gang member behind a busy
	 * guest queue or a gang after the first, would get no grant at all.
	 */
	if (cctx && guard_due(cctx, now)) {
		cctx->guard.grant_pending = true;
		if (guard_rescue_overdue(LINGER_TIER_GUEST, cpu, now) ||
		    tier_move_to_local(LINGER_TIER_GUEST, cpu) ||
		    guard_grant_guest_gang()) {
			cctx->guard.last_grant = now;
			guard_note_guest_dispatch(now);
			stat_inc(LINGER_STAT_GUARD_GRANT);
			return;
		}
		cctx->guard.grant_pending = false;
	}

	/* Labels or the gang table changed: re-sort the tasks already waiting. */
	reclassify_queued(now);

	/* Any primary that has waited too long, whatever its vtime. */
	if (guard_rescue_overdue(LINGER_TIER_PRIMARY, cpu, now))
		return;

	if (prev && (prev->scx.flags & SCX_TASK_QUEUED))
		tctx = lookup_task_ctx(prev);
	else
		prev = NULL;
	if (prev && may_run_on(prev, tctx, now)) {
		/*
		 * An ordinary primary: not a guest, not a member of a slotted
		 * gang. Its tier is re-derived here, once, not taken from the
		 * cache: a task kept on its CPU slice after slice never passes
		 * enqueue(), and it may have moved or been relabelled since.
		 */
		prev_tier = task_tier(prev, tctx);
		prev_ordinary = prev_tier == LINGER_TIER_PRIMARY &&
				sched_gang(tctx) == LINGER_GANG_NONE;
	} else {
		prev = NULL;
		tctx = NULL;
	}

	/*
	 * In a gang slot, the slot's primary gangs come first, but ordinary
	 * work gets a relief turn before them while the budget lasts.
	 */
	if (!gang_open && relief_dispatch(now))
		return;
	if (!gang_open && dispatch_gang(LINGER_TIER_PRIMARY, cpu, prev, tctx, now))
		return;

	/*
	 * An ordinary primary that is still runnable keeps its CPU unless a
	 * primary with a smaller vtime waits: fair among primaries, and never
	 * handed to a guest (strict priority covers the task on the CPU too).
	 */
	if (prev_ordinary &&
	    !primary_waits_before(cpu, charged_vtime(prev, tctx,
						     account_ran(tctx, now), false))) {
		keep_running(prev, tctx, cpu);
		return;
	}

	if (tier_move_to_local(LINGER_TIER_PRIMARY, cpu)) {
		stat_inc(LINGER_STAT_DISPATCH_PRIMARY);
		return;
	}

	/* The head was not for this CPU: a runnable primary still wins. */
	if (prev_ordinary) {
		keep_running(prev, tctx, cpu);
		return;
	}

	/* The open phase: the next primary gang fills what ordinary work leaves. */
	if (gang_open && dispatch_gang(LINGER_TIER_PRIMARY, cpu, prev, tctx, now))
		return;

	/*
	 * No primary for this CPU. Announce that it is about to run a guest,
	 * then look at the primary DSQ once more: see preempt.bpf.c for why
	 * this order means no primary is ever left waiting behind a guest.
	 */
	mark_guest_cpu(cpu, true);
	if (tier_move_to_local(LINGER_TIER_PRIMARY, cpu)) {
		stat_inc(LINGER_STAT_DISPATCH_PRIMARY);
		return;
	}
	smt_note_cpu(cpu, false);
	/*
	 * Guests: one that waited too long, then (unless a sibling runs a
	 * primary: smt.bpf.c) readers holding up RCU, the slot's guest
	 * gangs, the rest.
	 */
	if (guard_rescue_overdue(LINGER_TIER_GUEST, cpu, now))
		return;
	smt_blocked = smt_guest_blocked(cpu);
	if (!smt_blocked && scx_bpf_dsq_move_to_local(LINGER_READER_DSQ, 0)) {
		stat_inc(LINGER_STAT_DISPATCH_GUEST);
		return;
	}
	if (!smt_blocked && dispatch_gang(LINGER_TIER_GUEST, cpu, prev, tctx, now))
		return;
	if (!smt_blocked && tier_move_to_local(LINGER_TIER_GUEST, cpu)) {
		guard_note_guest_dispatch(now);
		stat_inc(LINGER_STAT_DISPATCH_GUEST);
		return;
	}

	/*
	 * Nothing is waiting. If the previous task still wants the CPU, let it
	 * run another slice instead of going through the idle loop (unless it
	 * is a gang member whose slot is over, or a guest beside a sibling's
	 * primary). It keeps running without a new running() call, so
	 * keep_running() fixes the CPU's marks.
	 */
	if (prev && !waits_for_slot(tctx) &&
	    !(smt_blocked && prev_tier == LINGER_TIER_GUEST))
		keep_running(prev, tctx, cpu);
}

/*
 * runnable: @p became runnable: it woke up, or it is new. Called after
 * select_cpu() and before enqueue() for that wake-up, and paired with
 * quiescent(): a task whose slice ends while it stays runnable passes
 * neither.
 */
void BPF_STRUCT_OPS(linger_runnable, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u32 tier = task_tier(p, tctx);
	u64 now = scx_bpf_now();

	if (tctx)
		gang_count_runnable(tctx);
	account_runnable(tctx, now);
	guard_note_waiting(tctx, true, now);
	vtime_wake(p, tctx, tier);
}

/*
 * running: @p is about to run on this CPU (the one it runs on): its
 * slice starts counting now. Every running() is followed by one
 * stopping(); a task dispatch() keeps on its CPU passes neither.
 */
void BPF_STRUCT_OPS(linger_running, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *cctx = lookup_cpu_ctx(cpu);
	u32 tier = tctx ? tctx->cls.tier : LINGER_TIER_PRIMARY;
	u64 now = scx_bpf_now(), relief;
	bool granted;

	if (cctx) {
		if (tier == LINGER_TIER_GUEST && cctx->guard.grant_pending && tctx) {
			tctx->guard.granted = true;
			p->scx.slice = guard_slice_ns;
		}
		cctx->guard.grant_pending = false;
	}
	relief = relief_running(tier, now);
	if (relief)
		p->scx.slice = relief;
	start_slice(p, tctx, cpu, p->scx.slice, now);
	granted = tctx && tctx->guard.granted;
	if (tier == LINGER_TIER_GUEST && !granted)
		guest_start_recheck(cpu);
	account_running(tctx, now);
	guard_note_waiting(tctx, false, now);
	gang_note_running(cpu, tctx, now);
}

/*
 * stopping: @p leaves this CPU: its slice ended, it was preempted, or it
 * blocks. @runnable: it still wants a CPU (enqueue() follows); else
 * quiescent() follows. p->scx.slice holds what is left of its slice.
 */
void BPF_STRUCT_OPS(linger_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 now = scx_bpf_now();
	s32 cpu = scx_bpf_task_cpu(p);
	u64 ran = account_stopping(p, tctx, runnable, now);

	/*
	 * Still runnable with slice left: a higher sched class (or core
	 * scheduling) takes the CPU, as our own preemptions and slice ends
	 * leave none (the kernel's put_prev_task_scx() says the same). The
	 * kernel would keep it at the head of this CPU's local DSQ until
	 * that class is done; with its slice ended it goes through enqueue()
	 * instead, to a CPU that is ours, and a gang member's gang reacts.
	 * cpu_release()'s re-enqueue on 6.12 left it there
	 * (faults::a_primary_on_a_cpu_a_real_time_task_takes_runs_elsewhere).
	 * The CPU is the higher class's until one of ours runs there again
	 * (gang_run.bpf.c), and where the kernel allows it here (6.19 and
	 * later) what waits in its local DSQ goes through enqueue() too.
	 */
	if (runnable && p->scx.slice) {
		p->scx.slice = 0;
		gang_note_displaced(tctx);
		gang_cpu_released(cpu, true);
		scx_bpf_reenqueue_local_from_anywhere();
	}
	charge_slice(p, tctx, ran, now, true);
	guard_note_waiting(tctx, runnable, now);
	gang_note_stopping(cpu, runnable);
	wakeup_note_stopping(cpu);

	/* A guard grant sends its guest to the back of the guest queue. */
	if (tctx && tctx->guard.granted) {
		tctx->guard.granted = false;
		guard_send_to_back(p, tctx);
	}
}

/*
 * tick: a scheduler tick on the CPU running @p (every 1/HZ s while it
 * runs). Setting its slice to 0 here makes the kernel reschedule the CPU
 * at once, and dispatch() choose again. With a wake-up and a slice's
 * start, one of the three moments when a primary with an earlier
 * deadline takes the CPU from the primary running (wakeup.bpf.c).
 */
void BPF_STRUCT_OPS(linger_tick, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);

	/* The node's machinery waits behind a gang member: it yields now. */
	if (machinery_tick(cpu)) {
		p->scx.slice = 0;
		return;
	}
	wakeup_tick(p, cpu);
}

/*
 * quiescent: @p no longer wants a CPU (it sleeps, or it is leaving the
 * scheduler). Paired with runnable(): what runnable() counted, this
 * uncounts (a job's count of a task that slept on a CPU is already gone:
 * stopping() took it with the job's entry in hand, account.bpf.c).
 */
void BPF_STRUCT_OPS(linger_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx)
		gang_uncount_runnable(tctx);
	account_quiescent(tctx);
}

/*
 * cpu_release: a higher sched class (RT, deadline, stop) takes this CPU,
 * and cpu_acquire: it gives it back. Tasks waiting in its local DSQ would
 * wait until it comes back: send them through enqueue() again
 * (SCX_ENQ_REENQ), a gang member to another CPU so that the gang keeps
 * running together (as the kernel's scx_pair example reacts for its
 * pairs). Loaded only on kernels that allow that re-enqueue nowhere else
 * (6.12): from 6.19 the kernel deprecates both ops and allows it from
 * stopping(), which sees the same displacement (src/bpf/program.rs).
 */
void BPF_STRUCT_OPS(linger_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	gang_cpu_released(cpu, true);
	scx_bpf_reenqueue_local();
}

void BPF_STRUCT_OPS(linger_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	gang_cpu_released(cpu, false);
}

/*
 * enable: @p starts being scheduled by us: at load for every task, and
 * for a new task once it is set up. init_task() has run for it already
 * and may have run long before (at load for every task, and at fork,
 * where it may sleep); enable() is where its vtime must be set, since
 * from here on it is compared with the running tasks' vtimes.
 */
void BPF_STRUCT_OPS(linger_enable, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	account_enable(p, tctx);
	vtime_enable(p, tctx);
}

/*
 * init_task: @p is about to be scheduled by us, at load (every existing
 * task) or at fork. Sleepable: the one place where its state can be
 * allocated, so that every later op finds it. Failing fails the fork (or
 * the load).
 */
s32 BPF_STRUCT_OPS(linger_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	return create_task_ctx(p) ? 0 : -ENOMEM;
}

/*
 * cgroup_init, cgroup_set_weight: a cgroup's cpu.weight, for cgroups with
 * the cpu controller enabled (every existing one at load, then new ones
 * and changes).
 */
s32 BPF_STRUCT_OPS(linger_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	set_cgroup_weight(cgrp, args->weight);
	/* Its cpu.max, on kernels that pass it (6.17 and later). */
	if (bpf_core_field_exists(args->bw_quota_us))
		bw_set(cgrp, args->bw_period_us, args->bw_quota_us);
	return 0;
}

/*
 * cgroup_set_bandwidth: @cgrp's cpu.max was written (6.17 and later; else
 * the agent reads cgroupfs and the loader leaves this op out).
 */
void BPF_STRUCT_OPS(linger_set_bandwidth, struct cgroup *cgrp, u64 period_us,
		    u64 quota_us, u64 burst_us)
{
	bw_set(cgrp, period_us, quota_us);
}

void BPF_STRUCT_OPS(linger_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	set_cgroup_weight(cgrp, weight);
}

/* cgroup_exit: @cgrp is going away (for cgroups cgroup_init() saw). */
void BPF_STRUCT_OPS(linger_cgroup_exit, struct cgroup *cgrp)
{
	bw_forget(cgrp);
}

/*
 * cgroup_prep_move: @p is about to move from @from to @to through the cpu
 * controller, still in @from. Called in the writer's context: a task
 * moving itself keeps its class through the rest of its write
 * (classify.bpf.c: note_own_move()). Never refuses a move.
 */
s32 BPF_STRUCT_OPS(linger_cgroup_prep_move, struct task_struct *p,
		   struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx;

	if (p != bpf_get_current_task_btf())
		return 0;
	tctx = lookup_task_ctx(p);
	if (tctx)
		note_own_move(p, tctx);
	return 0;
}

/*
 * cgroup_move: @p moved from @from to @to, through the cpu controller
 * (moves elsewhere in the tree come through the cgroup_attach_task
 * tracepoint: reclassify.bpf.c). Its cgroup's weight and cpu.max
 * limits change with it.
 */
void BPF_STRUCT_OPS(linger_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	weight_note_move(tctx, to);
	bw_note_move(tctx);
}

/*
 * init: sleepable, before any task is scheduled by us: create the DSQs
 * (one per tier per LLC, one per gang, the cpu.max hold), the CPU masks
 * (each LLC's, the guests', the primaries') and the timers.
 */
s32 BPF_STRUCT_OPS_SLEEPABLE(linger_init)
{
	u32 g;
	s32 ret;

	ret = init_llcs();
	if (ret)
		return ret;
	bpf_for(g, 0, LINGER_MAX_GANGS) {
		ret = scx_bpf_create_dsq(GANG_DSQ(g), -1);
		if (ret) {
			scx_bpf_error("failed to create gang DSQ %u: %d", g, ret);
			return ret;
		}
	}
	ret = init_guest_cpus();
	if (ret)
		return ret;
	ret = init_smt();
	if (ret)
		return ret;
	/* The cpu.max hold, the RCU readers' queue, then the two timers. */
	if ((ret = scx_bpf_create_dsq(LINGER_BW_DSQ, -1)) ||
	    (ret = scx_bpf_create_dsq(LINGER_READER_DSQ, -1)) ||
	    (ret = bw_timer_init()) || (ret = gang_timer_init()))
		scx_bpf_error("failed to create the cpu.max hold or RCU reader DSQ, or a timer: %d",
			      ret);
	return ret;
}

/* exit: the scheduler is being disabled; keep why for the agent. */
void BPF_STRUCT_OPS(linger_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(linger_ops,
	       .select_cpu	= (void *)linger_select_cpu,
	       .enqueue		= (void *)linger_enqueue,
	       .dispatch	= (void *)linger_dispatch,
	       .runnable	= (void *)linger_runnable,
	       .running		= (void *)linger_running,
	       .stopping	= (void *)linger_stopping,
	       .tick		= (void *)linger_tick,
	       .quiescent	= (void *)linger_quiescent,
	       .cpu_release	= (void *)linger_cpu_release,
	       .cpu_acquire	= (void *)linger_cpu_acquire,
	       .enable		= (void *)linger_enable,
	       .init_task	= (void *)linger_init_task,
	       .cgroup_init	= (void *)linger_cgroup_init,
	       .cgroup_set_weight = (void *)linger_cgroup_set_weight,
	       .cgroup_prep_move = (void *)linger_cgroup_prep_move,
	       .cgroup_move	= (void *)linger_cgroup_move,
	       .cgroup_exit	= (void *)linger_cgroup_exit,
	       .cgroup_set_bandwidth = (void *)linger_set_bandwidth,
	       .init		= (void *)linger_init,
	       .exit		= (void *)linger_exit,
	       /*
	        * ENQ_EXITING: without it the kernel puts a task that runs
	        * after PF_EXITING straight on its CPU's local DSQ, FIFO, and
	        * never calls dispatch() while that DSQ has tasks. Threads
	        * that exit together queue on the mm's rwsem and wake one
	        * another through that path, so the local DSQs may never
	        * empty, and every task queued elsewhere, the RCU grace-period
	        * kthread among them, waits until the kernel's RCU stall check
	        * ends the scheduler. The kernel's default exists for
	        * schedulers that find tasks by pid, which this one never
	        * does: its state is task storage, kept until the task is
	        * freed.
	        */
	       .flags		= SCX_OPS_ENQ_LAST | SCX_OPS_ENQ_EXITING,
	       .timeout_ms	= LINGER_DEFAULT_WATCHDOG_MS,
	       .name		= "scx_linger");
