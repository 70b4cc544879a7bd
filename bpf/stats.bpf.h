/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stats.bpf.h - event counters. One array of LINGER_NR_STATS counters per
 * CPU: each CPU bumps only its own, so counting costs no shared cache line
 * on the hot path. The agent sums the CPUs (src/stats.rs).
 */
#ifndef __SCX_LINGER_STATS_BPF_H
#define __SCX_LINGER_STATS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64) * LINGER_NR_STATS);
	__uint(max_entries, 1);
} stats SEC(".maps");

static void stat_inc(enum linger_stat idx)
{
	u32 zero = 0;
	u64 *cnts = bpf_map_lookup_elem(&stats, &zero);

	if (cnts && idx < LINGER_NR_STATS)
		cnts[idx]++;
}

/*
 * log2 bucket of @ns: bucket b holds [2^b, 2^(b+1)) ns (0 and 1 share
 * bucket 0). A binary search, not a loop: it runs at every context switch.
 */
static u32 hist_bucket(u64 ns)
{
	u32 b = 0;

	if (ns >> 32) { ns >>= 32; b += 32; }
	if (ns >> 16) { ns >>= 16; b += 16; }
	if (ns >> 8) { ns >>= 8; b += 8; }
	if (ns >> 4) { ns >>= 4; b += 4; }
	if (ns >> 2) { ns >>= 2; b += 2; }
	if (ns >> 1) b += 1;
	return b < LINGER_HIST_BUCKETS ? b : LINGER_HIST_BUCKETS - 1;
}

static void hist_add(u64 *hist, u64 ns)
{
	u32 b = hist_bucket(ns);

	/* Re-check for the verifier, which does not follow the clamp. */
	if (b < LINGER_HIST_BUCKETS)
		hist[b]++;
}

#endif /* __SCX_LINGER_STATS_BPF_H */
