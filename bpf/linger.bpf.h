/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * linger.bpf.h - what every compilation unit of the scheduler includes:
 * the scx headers, the interface shared with the agent, the BPF side's
 * pure arithmetic, and the tunables the agent writes before load.
 *
 * The scheduler is one BPF object linked from several units (build.rs),
 * one concern each; each unit's header declares what it offers the
 * others. Functions that cross units are __hidden: libbpf then verifies
 * them in their caller's context, like static functions, rather than on
 * their own; those with a loop, or called inside one, are global
 * (__noinline) and verified once (see "Verifier budget" in DEVELOPING.md).
 * What the ops ask at every wake-up or switch and is a few loads (or a
 * test that mostly finds nothing to do) is a static inline in its unit's
 * header instead: a BPF-to-BPF call costs more than that (the profile in
 * bench/README.md). Maps never cross: a
 * map is its unit's, and other units reach it through that unit's
 * functions.
 */
#ifndef __SCX_LINGER_BPF_H
#define __SCX_LINGER_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "lib/pure.h"

/*
 * Tunables, defined in tunables.bpf.c. The agent writes them before load;
 * they are constant for the life of the program, which lets the verifier
 * prune dead branches. Why each has its default: tunables.bpf.c.
 */
extern const volatile u64 primary_slice_ns;
extern const volatile u64 guest_slice_ns;
extern const volatile u64 guard_interval_ns;
extern const volatile u64 guard_slice_ns;
extern const volatile u64 relief_period_ns;
extern const volatile u64 relief_slice_ns;
extern const volatile u64 machinery_period_ns;
extern const volatile u64 machinery_slice_ns;
extern const volatile bool wake_preempt;
extern const volatile u32 smt_guests;
extern const volatile u64 watchdog_ns;
extern const volatile bool accounting;

/* The root cgroup's id: kernel threads and the system itself. */
#define ROOT_CGROUP_ID	1ULL

/* The tier a class is scheduled in (bit 0 of enum linger_class). */
static __always_inline u32 class_tier(u32 class)
{
	return class & LINGER_CLASS_TIER_MASK;
}

#endif /* __SCX_LINGER_BPF_H */
