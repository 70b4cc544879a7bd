/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stats.bpf.h - event counters and histograms.
 */
#ifndef __SCX_LINGER_STATS_BPF_H
#define __SCX_LINGER_STATS_BPF_H

#include "linger.bpf.h"

/*
 * The counters (stats.bpf.c says why per CPU). Weak: each unit has the
 * same definition and the linker keeps one, so stat_inc() is inlined
 * where it counts rather than called.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64) * LINGER_NR_STATS);
	__uint(max_entries, 1);
} stats __weak SEC(".maps");

/* Count one event of kind @idx on this CPU. */
static __always_inline void stat_inc(enum linger_stat idx)
{
	u32 zero = 0;
	u64 *cnts = bpf_map_lookup_elem(&stats, &zero);

	if (cnts && idx < LINGER_NR_STATS)
		cnts[idx]++;
}

/* Count @ns in a histogram of LINGER_HIST_BUCKETS (rule: intf.h). */
static __always_inline void hist_add(u64 *hist, u64 ns)
{
	u32 b = hist_bucket(ns);

	/* Re-check for the verifier, which does not follow the clamp. */
	if (b < LINGER_HIST_BUCKETS)
		hist[b]++;
}

#endif /* __SCX_LINGER_STATS_BPF_H */
