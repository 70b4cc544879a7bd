/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * reclassify.bpf.h - applying a label change or a cgroup move to tasks
 * already waiting. Design: reclassify.bpf.c.
 */
#ifndef __SCX_LINGER_RECLASSIFY_BPF_H
#define __SCX_LINGER_RECLASSIFY_BPF_H

#include "linger.bpf.h"

/*
 * dispatch(): re-sort the queued tasks if labels, moves or slots changed,
 * and let go of tasks held for cpu.max whose cgroups may run again.
 */
void reclassify_queued(u64 now);

#endif /* __SCX_LINGER_RECLASSIFY_BPF_H */
