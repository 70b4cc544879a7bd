/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pure.h compiled for the host (build.rs), with entry points the agent's
 * unit tests call (src/bpf/pure.rs). Nothing of this reaches the
 * scheduler binary: only tests reference these symbols.
 */
#include "pure.h"

u32 linger_pure_hist_bucket(u64 ns)
{
	return hist_bucket(ns);
}

u64 linger_pure_rotation_at(const struct linger_rotation *r, u64 tai,
			    u64 *mask, bool *open)
{
	return rotation_at(r, tai, mask, open);
}

u32 linger_pure_admit_first(const struct linger_gang_table *t, u32 turns, u64 mask,
			    u64 cycle_no)
{
	return admit_first(t, turns, mask, cycle_no);
}

/* The runnable counts admit_gangs() sees in the host tests (per thread:
 * the Rust tests run in parallel). */
static _Thread_local s64 test_runnable[LINGER_MAX_GANGS];

s64 gang_runnable(u32 g)
{
	return test_runnable[g & (LINGER_MAX_GANGS - 1)];
}

u64 linger_pure_admit_gangs(const struct linger_gang_table *t, const s64 *runnable,
			    u64 lead, u64 fill, u32 first)
{
	u32 g;

	for (g = 0; g < LINGER_MAX_GANGS; g++)
		test_runnable[g] = runnable[g];
	return admit_gangs(t, lead, fill, first);
}

void linger_pure_gang_homes(const struct linger_gang_table *t, const s64 *runnable,
			    u64 admitted, u32 nr_llcs, const u32 *llc_cpus, u32 *homes)
{
	u32 g;

	for (g = 0; g < LINGER_MAX_GANGS; g++)
		test_runnable[g] = runnable[g];
	gang_homes(t, admitted, nr_llcs, llc_cpus, homes);
}

u64 linger_pure_request_ns(u64 avg_burst, u64 burst, u64 slice)
{
	return request_ns(avg_burst, burst, slice);
}

u64 linger_pure_running_deadline(u64 key, u64 req, u64 ran, u64 weight)
{
	return running_deadline(key, req, ran, weight);
}

u64 linger_pure_arrival_vtime(u64 clock, u64 slice, bool queued, u64 head)
{
	return arrival_vtime(clock, slice, queued, head);
}

u64 linger_pure_relief_budget(u64 clock, u64 now, u64 period, u64 slice)
{
	return relief_budget(clock, now, period, slice);
}

u64 linger_pure_relief_claim(u64 clock, u64 now, u64 grant, u64 period, u64 slice)
{
	return relief_claim(clock, now, grant, period, slice);
}
