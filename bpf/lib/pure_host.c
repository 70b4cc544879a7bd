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

u32 linger_pure_admit_first(u64 mask, u64 cycle_no)
{
	return admit_first(mask, cycle_no);
}
