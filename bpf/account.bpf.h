/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * account.bpf.h - where the CPU time goes, per class and per job.
 * Design: account.bpf.c.
 */
#ifndef __SCX_LINGER_ACCOUNT_BPF_H
#define __SCX_LINGER_ACCOUNT_BPF_H

#include "linger.bpf.h"

struct task_ctx;

/* enable(): it is ours from now on; charge only what it runs from here. */
void account_enable(struct task_struct *p, struct task_ctx *tctx);
/* runnable(): it waits for a CPU from @now. */
void account_runnable(struct task_ctx *tctx, u64 now);
/* running(): its run delay ends, its run begins. */
void account_running(struct task_ctx *tctx, u64 now);
/* How long it has run since it started or was last charged, at @now. */
u64 account_ran(const struct task_ctx *tctx, u64 now);
/* Charge what the kernel charged it so far; returns that time. */
u64 account_checkpoint(struct task_struct *p, struct task_ctx *tctx, u64 now);
/* stopping(): charge its run; @runnable: it waits again from @now. */
u64 account_stopping(struct task_struct *p, struct task_ctx *tctx, bool runnable,
		     u64 now);
/* quiescent(): it no longer wants a CPU. */
void account_quiescent(struct task_ctx *tctx);
/* CPU time non-members ran during primary gang slots. */
void account_backfill(u64 ran);

#endif /* __SCX_LINGER_ACCOUNT_BPF_H */
