/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stats.bpf.h - event counters and histograms.
 */
#ifndef __SCX_LINGER_STATS_BPF_H
#define __SCX_LINGER_STATS_BPF_H

#include "linger.bpf.h"

/* Count one event of kind @idx on this CPU (stats.bpf.c). */
void stat_inc(enum linger_stat idx);

/* Count @ns in a histogram of LINGER_HIST_BUCKETS (rule: intf.h). */
static __always_inline void hist_add(u64 *hist, u64 ns)
{
	u32 b = hist_bucket(ns);

	/* Re-check for the verifier, which does not follow the clamp. */
	if (b < LINGER_HIST_BUCKETS)
		hist[b]++;
}

#endif /* __SCX_LINGER_STATS_BPF_H */
