/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stats.bpf.c - event counters. One array of LINGER_NR_STATS counters per
 * CPU: each CPU bumps only its own, so counting costs no shared cache line
 * on the hot path. The agent sums the CPUs (src/observe/counters.rs).
 */
#include "stats.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64) * LINGER_NR_STATS);
	__uint(max_entries, 1);
} stats SEC(".maps");

__hidden void stat_inc(enum linger_stat idx)
{
	u32 zero = 0;
	u64 *cnts = bpf_map_lookup_elem(&stats, &zero);

	if (cnts && idx < LINGER_NR_STATS)
		cnts[idx]++;
}
