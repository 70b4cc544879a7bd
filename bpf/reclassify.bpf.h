/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * reclassify.bpf.h - applying a label change or a cgroup move to tasks
 * already waiting. Design: reclassify.bpf.c.
 */
#ifndef __SCX_LINGER_RECLASSIFY_BPF_H
#define __SCX_LINGER_RECLASSIFY_BPF_H

#include "linger.bpf.h"

/* dispatch(): re-sort the queued tasks if labels, moves or slots changed. */
void reclassify_queued(void);

#endif /* __SCX_LINGER_RECLASSIFY_BPF_H */
