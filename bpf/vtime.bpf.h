/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vtime.bpf.h - the order within a tier: weighted virtual time plus a
 * request, a deadline; and slices. Design: vtime.bpf.c.
 */
#ifndef __SCX_LINGER_VTIME_BPF_H
#define __SCX_LINGER_VTIME_BPF_H

#include "ctx.bpf.h"

/*
 * The slice a task of @tier runs. Primaries run long slices
 * (primary_slice_ns, tunables.bpf.c says why); guests shorter ones, which
 * bound nothing for primaries: a guest is kicked off the moment a primary
 * wants its CPU. This and the two below are inlined: each is a few loads
 * that a wake-up asks for several times, and a BPF-to-BPF call cost more
 * (the profile, bench/README.md).
 */
static __always_inline u64 tier_slice(u32 tier)
{
	return tier == LINGER_TIER_GUEST ? guest_slice_ns : primary_slice_ns;
}

/* The vtime @p queues with in @tier's DSQ on LLC @llc. */
u64 task_queue_vtime(const struct task_struct *p __arg_trusted, struct task_ctx *tctx,
		     u32 tier, u32 llc);
/* @slice, cut short for a task lighter than the default weight. */
u64 weighted_slice(struct task_struct *p, struct task_ctx *tctx, u64 slice);
/* The key @p will have once charged for running @ran ns. */
u64 charged_vtime(struct task_struct *p, struct task_ctx *tctx, u64 ran,
		  bool refresh);
/* A slice ends: charge @p's key for @ran ns and renew its request. */
void vtime_charge(struct task_struct *p, struct task_ctx *tctx, u64 ran,
		  bool refresh);
/* @tctx's task's usual run: the larger of its average and current burst. */
static __always_inline u64 task_usual_run(const struct task_ctx *tctx)
{
	return tctx->vt.avg_burst > tctx->vt.burst ? tctx->vt.avg_burst :
						    tctx->vt.burst;
}

/* Its request, ns: its usual run within its bounds (pure.h: request_ns()). */
static __always_inline u64 task_request_ns(const struct task_ctx *tctx)
{
	return request_ns(tctx->vt.avg_burst, tctx->vt.burst,
			  tier_slice(tctx->cls.tier));
}
/* Does a primary waiting on any LLC come before key @vtime on @cpu's LLC? */
bool primary_waits_before(s32 cpu, u64 vtime);
/* runnable(): a new request, and a waking task banks at most one slice. */
void vtime_wake(struct task_struct *p, struct task_ctx *tctx, u32 tier);
/* running() on @cpu: the tier's clock there follows what starts running
 * (@slotted: a member of a gang with a slot, which it does not follow). */
void vtime_advance(struct task_struct *p, struct task_ctx *tctx, bool slotted,
		   s32 cpu);
/* A slotted gang member's vtime follows no tier's clock from now on. */
void vtime_detach(struct task_ctx *tctx);
/* enable(): a task joining the scheduler starts on the primaries' floor. */
void vtime_enable(struct task_struct *p, struct task_ctx *tctx);

#endif /* __SCX_LINGER_VTIME_BPF_H */
