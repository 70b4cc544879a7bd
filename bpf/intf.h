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
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

/*
 * The classes operators label cgroups with: the one definition of that
 * vocabulary. The agent takes the values and their order from here
 * (bindgen), a label map entry carries one, and the per-class accounting
 * arrays are indexed by them.
 *
 * Bit 0 is the tier, between which priority is strict: primary work
 * (owners' jobs, system daemons, kernel threads) first, guest work only
 * on cycles primaries leave idle (Linger-Longer). Bit 1 marks a gang, a
 * parallel job whose threads are co-scheduled in time slots; a guest
 * gang is co-scheduled in what primaries leave idle.
 */
enum linger_class {
	LINGER_CLASS_PRIMARY	= 0,
	LINGER_CLASS_GUEST	= 1,
	LINGER_CLASS_GANG	= 2,
	LINGER_CLASS_GUEST_GANG	= 3,
	LINGER_NR_CLASSES	= 4,

	LINGER_CLASS_TIER_MASK	= 1,
	LINGER_CLASS_GANG_BIT	= 2,
};

/*
 * The strict-priority tiers, a class's bit 0. Each has one dispatch
 * queue (DSQ) per last-level cache (bpf/llc.bpf.h: tier_dsq()) and a
 * gang rotation of its own.
 */
enum linger_tier {
	LINGER_TIER_PRIMARY	= LINGER_CLASS_PRIMARY,
	LINGER_TIER_GUEST	= LINGER_CLASS_GUEST,
	LINGER_NR_TIERS		= 2,
};

/*
 * A gang as labels, task state and per-CPU state refer to it: 0 for "no
 * gang", so that zero-filled state means none; gang number g is
 * g + LINGER_GANG_REF_BASE. Encoded and decoded only by gang_ref() and
 * gang_of_ref() (bpf/gang.bpf.h) and gangs::table::GangRef in the agent.
 */
enum linger_gang_ref {
	LINGER_GANG_NONE	= 0,
	LINGER_GANG_REF_BASE	= 1,
};

enum linger_consts {
	/* Entries in the cgroup id -> class map. */
	LINGER_MAX_LABELS	= 65536,
	/* Deepest cgroup nesting the class lookup walks up through. */
	LINGER_MAX_CGRP_LEVEL	= 32,
	/* CPUs the per-CPU state array covers: a power of two (a mask bounds a CPU). */
	LINGER_MAX_CPUS		= 1024,
	/*
	 * Gangs (co-scheduled jobs) the slot table can hold at once. A gang
	 * set is a u64 bit mask, so this cannot grow past 64.
	 */
	LINGER_MAX_GANGS	= 64,
	/* DSQ of gang g (0-based) is LINGER_GANG_DSQ_BASE + g. */
	LINGER_GANG_DSQ_BASE	= 256,
	/*
	 * Last-level caches (LLCs) the scheduler keeps queues for: each has
	 * a DSQ per tier, below LINGER_GANG_DSQ_BASE. Nodes today have a
	 * few dozen at most (2 x 128-core EPYC: 32); one with more shares
	 * them out, several LLCs a queue.
	 */
	LINGER_MAX_LLCS		= 64,
	/*
	 * A gang's home (bpf/lib/pure.h: gang_homes()) when it has none: it
	 * does not fit in any one LLC it may use, and its members spread.
	 */
	LINGER_NO_HOME		= 0xffff,
	/*
	 * Buckets of every histogram the BPF side keeps (run delay, gang
	 * skew, slot switch latency): bucket b counts values in
	 * [2^b, 2^(b+1)) ns, 0 and 1 ns share bucket 0, and the last bucket
	 * also holds everything above 2^LINGER_HIST_BUCKETS ns. Filled by
	 * hist_bucket() (bpf/lib/pure.h), read back by observe/histogram.rs.
	 */
	LINGER_HIST_BUCKETS	= 32,
	/* Jobs (cgroups) the per-job accounting map can hold. */
	LINGER_MAX_JOBS		= 16384,
	/*
	 * Other hardware threads of one core a CPU's topology entry can
	 * name (x86 has 2 threads a core, POWER up to 8).
	 */
	LINGER_MAX_SMT_SIBLINGS	= 8,
	/* Cgroups with a cpu.max limit the bandwidth map can hold. */
	LINGER_MAX_BW_CGROUPS	= 16384,
	/*
	 * Limited cgroups (cpu.max) a task is charged to at most: the
	 * nearest ones on its path to the root. Deeper nesting of limits is
	 * rare (a job's limit, its user's or its account's).
	 */
	LINGER_BW_DEPTH		= 4,
	/*
	 * The DSQ where tasks of a cgroup that used up its cpu.max quota
	 * wait for the next period (bpf/bandwidth.bpf.c), past the gang
	 * DSQs.
	 */
	LINGER_BW_DSQ		= LINGER_GANG_DSQ_BASE + LINGER_MAX_GANGS,
	/*
	 * The DSQ where guests preempted inside an RCU read-side critical
	 * section wait for a reader grant (bpf/guard.bpf.c).
	 */
	LINGER_READER_DSQ	= LINGER_BW_DSQ + 1,
};

/*
 * Where guests may run beside primaries on an SMT core (--smt-guests).
 * Hardware threads of one core share its execution units, caches and
 * memory bandwidth: a guest on the sibling of a CPU running a primary
 * slows that primary even though it never takes its CPU.
 *  - AVOID: a guest does not start on a CPU whose sibling runs a
 *    primary, and one already there is kicked off when a primary starts
 *    on the core (the starvation guard's trickle still runs anywhere).
 *  - SHARE: siblings are independent CPUs, as the kernel sees them.
 */
enum linger_smt_guests {
	LINGER_SMT_GUESTS_SHARE	= 0,
	LINGER_SMT_GUESTS_AVOID	= 1,
};

/*
 * Where one CPU sits (array map cpu_topo, one entry per CPU), written
 * by the agent from sysfs before the scheduler attaches; an entry left
 * zero means a CPU with no SMT siblings. Ids are the kernel's: core is
 * unique on the node (not the per-package core_id), llc and node as the
 * kernel numbers them.
 */
struct linger_cpu_topo {
	u32	core;
	u32	llc;
	u32	node;
	u32	nr_siblings;	/* entries of siblings[] in use */
	s32	siblings[LINGER_MAX_SMT_SIBLINGS];	/* the core's other CPUs */
};

/*
 * A cgroup's cpu.max as the BPF side enforces it (hash map cgrp_bws,
 * keyed by cgroup id; bpf/bandwidth.bpf.c). The limit comes from the
 * kernel (ops.cgroup_set_bandwidth(), 6.17 and later) or, on a kernel
 * without that op, from the agent, which reads cpu.max from cgroupfs and
 * writes whole entries (period_end and used_ns zero). period_end and
 * used_ns are the BPF side's alone after that.
 */
struct linger_bw {
	u64	period_ns;	/* cpu.max's period */
	u64	quota_ns;	/* run time the cgroup may have in one period */
	u64	period_end;	/* scx_bpf_now() at which this period ends */
	u64	used_ns;	/* run time charged to this period */
};

/*
 * The value of a cgrp_class entry: what the agent says one cgroup is. The
 * agent describes every cgroup (src/labels/cgroups.rs decides: labels,
 * rules, cpu.idle, inheritance, the root, the default class, the job), so
 * the BPF side decides nothing about classes: it looks a task's cgroup
 * up, and for a cgroup created since the agent last looked, takes what
 * its nearest described ancestor says its heirs get.
 *
 * Gang numbers are handed out by the agent, which keeps them stable while
 * the gang's cgroup exists; a gang without a number (the table is full)
 * runs as ordinary work of its tier.
 */
struct linger_label {
	u32	class;		/* enum linger_class */
	u32	gang;		/* enum linger_gang_ref: which gang, if a gang */
	u64	job;		/* cgroup id its tasks' CPU time counts for */
	u32	heir_class;	/* what a not yet described descendant gets */
	u32	heir_gang;
	u64	heir_job;	/* 0: the descendant's own top-level cgroup */
	/*
	 * The node's machinery (bpf/machinery.bpf.c): its system services
	 * and Slurm's step daemons, which the agent names (always primary).
	 * Kernel threads are machinery without an entry.
	 */
	u32	machinery;
	u32	heir_machinery;
};

/*
 * One time slot of the gang rotation: [start_ns, start_ns + len_ns) within
 * the cycle, and the gangs that run together in it (a bit per gang
 * number). Gangs share a slot when their members fit on the CPUs at once.
 */
struct linger_slot {
	u64	start_ns;
	u64	len_ns;
	u64	gangs;
};

/*
 * The rotation of one tier (primary gangs or guest gangs). Slots follow
 * each other from 0 to nr_slots - 1, then the primary tier's open phase
 * (open_ns; see gang.bpf.c) ends the cycle. Where a cycle starts is fixed
 * by the clock: cycle k begins at CLOCK_TAI = k * cycle_ns, so nodes with
 * the same table and synchronised clocks switch together.
 * open_slots: slots that are open phase too (bit i: slot i), where the
 * node's share of the cycle goes to jobs that run as ordinary work in
 * a gang's stead (a multi-node job without a cluster row); their gangs
 * fill what that work leaves, as in the open phase.
 */
struct linger_rotation {
	u64	cycle_ns;	/* 0: no gangs in this tier */
	u64	open_ns;	/* the open phase at the end of the cycle */
	u64	gangs;		/* every gang with a slot in this rotation */
	u64	open_slots;
	u32	nr_slots;
	u32	turns;		/* admission's turns per round (admit_first()) */
	struct linger_slot slots[LINGER_MAX_GANGS];
};

/*
 * The whole gang table the agent hands to the BPF side. The agent lays
 * out the rotation only: one slot per gang, led by that gang, in path
 * order; it never sizes gangs. Which other gangs share a slot is decided
 * by the BPF side alone (gang.bpf.c), from live runnable counts and the
 * CPUs each gang may use:
 * nr_cpus: the node's CPUs, how many members the admitted gangs may
 * have runnable together.
 * cpus_of: per gang number, how many CPUs its cpuset allows (0: any).
 * conflicts: per gang number, the gangs bound to cores that overlap its
 * own. Counting CPUs cannot tell whether such gangs fit together, so BPF
 * never admits a gang beside one it conflicts with.
 * llcs_of: per gang number, the LLCs (bit i: the BPF side's LLC i, as
 * the agent numbered them into cpu_llc) its cpuset touches (0: any).
 * Where its members are placed, its home, must be one of them.
 * order, turn_of, nr_order: the order in which gangs fill the CPUs a
 * slot's lead leaves. order[i] is a gang number, turn_of[i] its turn;
 * each tier's gangs appear once, by turn. In cycle k, filling starts at
 * the gang whose turn is drawn from k and its tier's turns
 * (admit_first() in lib/pure.h). Turns come from what every node that
 * runs a job agrees on (its cluster row, else its path), never from the
 * node's own gang numbers, so that two nodes running the same
 * multi-node jobs fill a free row with the same one.
 */
struct linger_gang_table {
	struct linger_rotation tiers[LINGER_NR_TIERS];
	u32	nr_cpus;
	u32	nr_order;
	u32	cpus_of[LINGER_MAX_GANGS];
	u64	conflicts[LINGER_MAX_GANGS];
	u64	llcs_of[LINGER_MAX_GANGS];
	u32	order[LINGER_MAX_GANGS];
	u32	turn_of[LINGER_MAX_GANGS];
};

/*
 * What the BPF side counts for each gang (array map gang_stats, one entry
 * per gang number). Written by whichever CPU sees the event; the agent
 * reads it.
 */
struct linger_gang_stats {
	s64	nr_runnable;	/* member threads runnable now: the gang's size */
	u64	slots;		/* slots the gang was given */
	u64	partial;	/* slots in which fewer members started than were runnable */
	u64	displaced;	/* members pushed off their CPU by a higher class */
	u64	cpu_ns;		/* CPU time of its members */
	u64	backfill_ns;	/* CPU time non-members ran during its slots */
	u64	skew_hist[LINGER_HIST_BUCKETS];		/* first to last member start */
	u64	switch_hist[LINGER_HIST_BUCKETS];	/* slot boundary to first member start */
};

/*
 * Per-CPU accounting (array map cpu_accts, one entry, per-CPU), indexed
 * by enum linger_class (a gang's time apart from its tier's ordinary
 * work): each CPU
 * adds to its own copy only, so the hot path shares no cache line; the
 * agent sums the CPUs. Run delay is the time from becoming ready to run
 * (a wake-up, or a preemption that left the task runnable) to running,
 * the same interval the kernel's schedstat run_delay sums.
 */
struct linger_cpu_acct {
	u64	cpu_ns[LINGER_NR_CLASSES];
	u64	runs[LINGER_NR_CLASSES];		/* times a task started running */
	u64	delay_ns[LINGER_NR_CLASSES];	/* sum of run delays */
	u64	delay_hist[LINGER_NR_CLASSES][LINGER_HIST_BUCKETS];
	u64	backfill_ns;	/* non-members on CPUs during primary gang slots */
	u64	running_job;	/* the job whose thread is on this CPU now (0: none) */
};

/*
 * Per-job accounting (per-CPU hash map job_accts, keyed by the job's
 * cgroup id). A task's job is the labelled cgroup its class comes from;
 * a task that no label reaches belongs to its top-level cgroup
 * (system.slice, user.slice, ...), and the root cgroup's tasks to the
 * root. The BPF side creates an entry when a job first runs; the agent
 * deletes the entries of cgroups that no longer exist. Each CPU adds to
 * its own copy, so a gang's threads on many CPUs share no cache line;
 * the agent sums the copies. The runnable count is such a sum too: a
 * thread counted on one CPU and uncounted on another leaves +1 and -1,
 * so one CPU's copy may be negative. Its threads on CPUs now are the
 * CPUs whose linger_cpu_acct.running_job is the job: the agent counts
 * them.
 */
struct linger_job_acct {
	u64	cpu_ns;
	s64	nr_runnable;	/* threads runnable (queued or running) now */
	u64	runs;
	u64	delay_hist[LINGER_HIST_BUCKETS];
};

/*
 * Per-CPU event counters, indexed by enum linger_stat. The BPF side bumps
 * its own CPU's slot (no shared atomics on the hot path); the agent sums
 * the slots of all CPUs.
 */
enum linger_stat {
	LINGER_STAT_DIRECT_IDLE,	/* primary woken onto an idle CPU */
	LINGER_STAT_DIRECT_PINNED,	/* per-CPU kthread straight to its CPU */
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
	LINGER_STAT_GANG_SWITCH,	/* slot boundary that changed the running gangs */
	LINGER_STAT_GANG_DISPATCH,	/* gang member moved to a CPU */
	LINGER_STAT_GANG_KICK,		/* CPU kicked to make room for a waking member */
	LINGER_STAT_GANG_NO_ROOM,	/* waking member found no CPU to take */
	LINGER_STAT_GANG_DISPLACED,	/* member pushed off by a higher sched class */
	LINGER_STAT_BACKFILL,		/* non-gang task ran on a CPU during a gang slot */
	LINGER_STAT_GANG_RELIEF,	/* relief turn for ordinary work in a gang slot */
	LINGER_STAT_AGE_RESCUE,		/* task run because it waited a quarter of the watchdog */
	LINGER_STAT_WAKE_PREEMPT,	/* a waking primary's deadline came first: it preempted a primary */
	LINGER_STAT_QUEUE_PREEMPT,	/* ... a queued primary's did, as a slice began or at a tick */
	LINGER_STAT_SMT_KICK,		/* guest kicked off a core a primary started on */
	LINGER_STAT_SMT_DECLINE,	/* CPU ran no guest: its sibling runs a primary */
	LINGER_STAT_GANG_HOME_SWAP,	/* member outside its gang's home sent to a CPU there */
	LINGER_STAT_BW_THROTTLE,	/* task held back: its cgroup used its cpu.max quota */
	LINGER_STAT_READER_GRANT,	/* guest inside an RCU read-side section given a slice */
	LINGER_STAT_MACHINERY,		/* the node's machinery woke onto a gang member's CPU */
	LINGER_STAT_GANG_PIN_SWAP,	/* member sent off a CPU ordinary work is pinned to */
	LINGER_NR_STATS,
};

/* Defaults; the agent's flags override them (see main.bpf.c for why). */
#define LINGER_DEFAULT_PRIMARY_SLICE_US		20000ULL
#define LINGER_DEFAULT_GUEST_SLICE_US		10000ULL
#define LINGER_DEFAULT_GUARD_INTERVAL_MS	2000ULL
#define LINGER_DEFAULT_GUARD_SLICE_US		1000ULL
#define LINGER_DEFAULT_WATCHDOG_MS		30000ULL
#define LINGER_DEFAULT_SLOT_MS			100ULL
#define LINGER_DEFAULT_OPEN_PCT			10ULL
#define LINGER_DEFAULT_RELIEF_PERIOD_US		40000ULL
#define LINGER_DEFAULT_RELIEF_SLICE_US		2000ULL
#define LINGER_DEFAULT_MACHINERY_PERIOD_US	200000ULL
#define LINGER_DEFAULT_MACHINERY_SLICE_US	20000ULL

#endif /* __SCX_LINGER_INTF_H */
