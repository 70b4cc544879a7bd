/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * smt.bpf.h - keeping guests off the SMT siblings of CPUs that run
 * primaries (--smt-guests avoid). Design: smt.bpf.c.
 */
#ifndef __SCX_LINGER_SMT_BPF_H
#define __SCX_LINGER_SMT_BPF_H

#include "linger.bpf.h"

/* init(): create the mask of CPUs running a primary. */
s32 init_smt(void);
/*
 * @cpu runs a primary from now on (@primary), or no longer does. Under
 * avoid, a change kicks the core's guests off, or wakes idle siblings
 * that guests wait for.
 */
void smt_note_cpu(s32 cpu, bool primary);
/* Must @cpu run no guest now, because a sibling runs a primary? */
bool smt_guest_blocked(s32 cpu);
/*
 * An idle CPU for guest @p, in LLC @llc first (llc.bpf.c) and, under
 * avoid, a whole idle core before a lone idle thread; -1 if none.
 */
s32 smt_pick_idle_for_guest(const struct task_struct *p, u32 llc);

#endif /* __SCX_LINGER_SMT_BPF_H */
