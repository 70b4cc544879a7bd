/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * guard.bpf.h - the starvation guards: a bounded trickle of CPU for
 * guests under full primary load, and a bound on any one task's wait.
 * Design: guard.bpf.c.
 */
#ifndef __SCX_LINGER_GUARD_BPF_H
#define __SCX_LINGER_GUARD_BPF_H

#include "ctx.bpf.h"

/* A guest left the guest DSQ at @now (any CPU, any reason). */
void guard_note_guest_dispatch(u64 now);
/* A guest queues on LLC @llc with @vtime: the back of that queue moves. */
void guard_note_guest_queued(u64 vtime, u32 llc);
/* A granted guest goes to the back of its LLC's guest queue. */
void guard_send_to_back(struct task_struct *p, struct task_ctx *tctx);
/* Should this CPU hand the head of the guest queues a grant now? */
bool guard_due(struct cpu_ctx *cctx, u64 now);
/*
 * runnable(), running() and stopping(): from @now it waits (@waits), or
 * not. Inlined: one store, at every op of a switch.
 */
static __always_inline void guard_note_waiting(struct task_ctx *tctx, bool waits,
					       u64 now)
{
	if (tctx)
		tctx->guard.ready_at = waits ? now : 0;
}
/* dispatch(): run @tier's tasks that waited too long on @cpu; true if any. */
bool guard_rescue_overdue(u32 tier, s32 cpu, u64 now);

/*
 * Was @p preempted inside an RCU read-side critical section (preemptible
 * RCU)? The kernel marks such a task blocked when it switches away from
 * it (rcu_note_context_switch(), before the scheduler's ops run) and
 * clears the mark as it leaves its outermost section. Not the nesting
 * count: the BPF trampoline that runs these ops takes rcu_read_lock()
 * itself, so the count of the task being switched out is never 0 here.
 */
static __always_inline bool task_in_rcu_reader(const struct task_struct *p)
{
	if (bpf_core_field_exists(p->rcu_read_unlock_special))
		return p->rcu_read_unlock_special.b.blocked;
	return false;
}

/* enqueue(): a guest inside an RCU read-side section waits for a reader grant. */
void guard_queue_reader(struct task_struct *p, u64 enq_flags);
/* dispatch(): give a waiting reader a grant on this CPU if one is due; true if so. */
bool guard_grant_reader(struct cpu_ctx *cctx, u64 now);

#endif /* __SCX_LINGER_GUARD_BPF_H */
