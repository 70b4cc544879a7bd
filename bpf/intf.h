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
 * two can never drift apart.
 */
enum linger_class {
	LINGER_CLASS_PRIMARY	= 0,	/* owners' jobs, system daemons, kthreads */
	LINGER_CLASS_GUEST	= 1,	/* runs only on cycles primaries leave idle */
	LINGER_NR_CLASSES	= 2,
};

/*
 * Per-CPU event counters, indexed by enum linger_stat. The BPF side bumps
 * its own CPU's slot (no shared atomics on the hot path); the agent sums
 * the slots of all CPUs.
 */
enum linger_stat {
	LINGER_STAT_DIRECT_IDLE,	/* woken onto an idle CPU, no queueing */
	LINGER_STAT_DIRECT_PINNED,	/* per-CPU task straight to its CPU */
	LINGER_STAT_ENQ_SHARED,		/* queued on a class DSQ */
	LINGER_STAT_DISPATCH,		/* moved from a class DSQ to a CPU */
	LINGER_STAT_KICK_IDLE,		/* idle CPU woken for a queued task */
	LINGER_STAT_KEEP_PREV,		/* nothing queued: prev ran on */
	LINGER_NR_STATS,
};

/* Default slice: long, as compute jobs want (Kolivas); see main.bpf.c. */
#define LINGER_DEFAULT_SLICE_US		20000ULL

#endif /* __SCX_LINGER_INTF_H */
