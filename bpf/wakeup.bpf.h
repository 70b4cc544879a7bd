/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wakeup.bpf.h - wake-up preemption within the primary tier: a primary
 * that sleeps most of its time does not wait out a CPU-bound primary's
 * long slice. Design: wakeup.bpf.c.
 */
#ifndef __SCX_LINGER_WAKEUP_BPF_H
#define __SCX_LINGER_WAKEUP_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/* A task's wake-up state, written by the ops and wakeup.bpf.c only. */
struct wakeup_task {
	u64	burst;		/* ns run since it last woke */
	u64	avg_burst;	/* running average of burst per wake-up */
	u64	ahead;		/* vtime its queue key is ahead of its own */
	bool	sync_wake;	/* its waker said it will sleep (SCX_WAKE_SYNC) */
	bool	jumped;		/* sent to a guest's CPU past the queue */
};

/* runnable(): @tctx's task woke up (or is new). */
void wakeup_note_wake(struct task_ctx *tctx);
/* select_cpu(): @tctx's task wakes with @wake_flags and found no CPU. */
void wakeup_note_select(struct task_ctx *tctx, u64 wake_flags);
/* select_cpu(): @tctx's task goes to a guest's CPU, past the queue. */
void wakeup_note_jump(struct task_ctx *tctx);
/* running(): @p starts on this CPU. */
void wakeup_note_running(struct task_struct *p, struct task_ctx *tctx);
/* stopping(): @tctx's task leaves its CPU after running @ran ns. */
void wakeup_note_stopping(struct task_ctx *tctx, u64 ran);
/*
 * enqueue(): primary @p woke (select_cpu() found no idle CPU and no guest
 * to take over, or was not asked): true if the rule lets it preempt the
 * primary on its CPU now. The caller then inserts it into that CPU's
 * local DSQ with SCX_ENQ_PREEMPT (counted here). When the running task
 * may become preemptible later, a timer is armed here to kick that CPU
 * then, and the caller queues @p as usual.
 */
bool wakeup_preempts(struct task_struct *p, struct task_ctx *tctx);
/*
 * enqueue(), just before @p goes into its LLC's primary DSQ: a short
 * sleeper's queue key is set ahead of its vtime. wakeup_queue_key_undo()
 * gives it its own vtime back: at running(), and at every enqueue() first.
 */
void wakeup_queue_key(struct task_struct *p, struct task_ctx *tctx,
		      u64 enq_flags);
void wakeup_queue_key_undo(struct task_struct *p, struct task_ctx *tctx);
/* init(): set up each CPU's wake-up timer. */
s32 wakeup_timers_init(void);

#endif /* __SCX_LINGER_WAKEUP_BPF_H */
