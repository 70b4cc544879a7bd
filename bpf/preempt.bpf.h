/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * preempt.bpf.h - which CPUs run a guest a waking primary may take.
 * Design, and why no primary slips in unseen: preempt.bpf.c.
 */
#ifndef __SCX_LINGER_PREEMPT_BPF_H
#define __SCX_LINGER_PREEMPT_BPF_H

#include "linger.bpf.h"

/* init(): create the mask. */
s32 init_guest_cpus(void);
/* @cpu runs, or is about to run, a preemptible guest (or no longer). */
void mark_guest_cpu(s32 cpu, bool running_guest);
/* Does @cpu run a preemptible guest? */
bool cpu_runs_guest(s32 cpu);
/* Claim @cpu alone for @p if it runs a guest @p may take; true if so. */
bool claim_guest_cpu(const struct task_struct *p, s32 cpu);
/*
 * Claim a CPU running a guest that @p may use, @prev_cpu first (no other
 * waking primary is sent there until it takes a guest again); -1 if none.
 */
s32 guest_cpu_for(const struct task_struct *p, s32 prev_cpu);
/* Kick such a CPU for @p, queued on the primary DSQ; true if one was. */
bool preempt_guest_for(const struct task_struct *p);
/* A guest starts on @cpu: end its slice if a primary queued meanwhile. */
void guest_start_recheck(s32 cpu);
/* Wake @nr CPUs, idle ones, else (@take_guests) ones running a guest. */
int wake_cpus(u32 nr, bool take_guests);

#endif /* __SCX_LINGER_PREEMPT_BPF_H */
