/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * intf.h - everything that crosses between the BPF scheduler and the Rust
 * agent. The BPF side includes it after vmlinux.h; build.rs runs bindgen on
 * it for the agent (src/bpf_intf.rs). Keep it free of BPF-only constructs.
 */
#ifndef __SCX_LINGER_INTF_H
#define __SCX_LINGER_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

/*
 * Scheduling classes, highest first. A task's class decides which shared
 * dispatch queue (DSQ) it waits in; the DSQ id is the class number, so the
 * two can never drift apart. The numbers are also the values of the
 * cgrp_class map (cgroup id -> class) that the agent fills from labels.
 */
enum linger_class {
	LINGER_CLASS_PRIMARY	= 0,	/* owners' jobs, system daemons, kthreads */
	LINGER_CLASS_GUEST	= 1,	/* runs only on cycles primaries leave idle */
	LINGER_NR_CLASSES	= 2,
};

enum linger_consts {
	/* Entries in the cgroup id -> class map. */
	LINGER_MAX_LABELS	= 65536,
	/* Deepest cgroup nesting the class lookup walks up through. */
	LINGER_MAX_CGRP_LEVEL	= 32,
	/* CPUs the per-CPU state array covers. */
	LINGER_MAX_CPUS		= 1024,
};

/*
 * Per-CPU event counters, indexed by enum linger_stat. The BPF side bumps
 * its own CPU's slot (no shared atomics on the hot path); the agent sums
 * the slots of all CPUs.
 */
enum linger_stat {
	LINGER_STAT_DIRECT_IDLE,	/* primary woken onto an idle CPU */
	LINGER_STAT_DIRECT_PINNED,	/* per-CPU primary straight to its CPU */
	LINGER_STAT_ENQ_PRIMARY,	/* queued on the primary DSQ */
	LINGER_STAT_ENQ_GUEST,		/* queued on the guest DSQ */
	LINGER_STAT_DISPATCH_PRIMARY,	/* primary DSQ -> a CPU */
	LINGER_STAT_DISPATCH_GUEST,	/* guest DSQ -> a CPU */
	LINGER_STAT_KICK_IDLE,		/* idle CPU woken for a queued task */
	LINGER_STAT_PREEMPT_GUEST,	/* CPU running a guest kicked for a primary */
	LINGER_STAT_GUARD_GRANT,	/* starvation guard gave a guest a slice */
	LINGER_STAT_KEEP_PREV,		/* nothing queued: prev ran on */
	LINGER_STAT_CLASSIFY,		/* task class (re)computed from its cgroup */
	LINGER_STAT_RECLASSIFY,		/* queued task moved to its new class's DSQ */
	LINGER_NR_STATS,
};

/* Defaults; the agent's flags override them (see main.bpf.c for why). */
#define LINGER_DEFAULT_PRIMARY_SLICE_US		20000ULL
#define LINGER_DEFAULT_GUEST_SLICE_US		10000ULL
#define LINGER_DEFAULT_GUARD_INTERVAL_MS	2000ULL
#define LINGER_DEFAULT_GUARD_SLICE_US		1000ULL
#define LINGER_DEFAULT_WATCHDOG_MS		30000ULL

#endif /* __SCX_LINGER_INTF_H */
