/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tunables.bpf.c - what the agent sets before load, with why each has
 * its default. Constant for the life of the program (linger.bpf.h
 * declares them for every unit), which lets the verifier prune the
 * branches of a feature that is off.
 */
#include "linger.bpf.h"

/*
 * Slice of CPU a primary may run before its CPU looks for other work. Long:
 * compute jobs lose cache and TLB state at every switch, and on a batch
 * node throughput matters more than interactivity (Kolivas). Only a higher
 * tier preempts; within the tier, the slice end is the switch point.
 */
const volatile u64 primary_slice_ns = LINGER_DEFAULT_PRIMARY_SLICE_US * 1000;

/*
 * Slice of a guest. Guests are kicked off the moment a primary wants their
 * CPU, so this bounds nothing for primaries; it only sets how often guests
 * rotate among themselves.
 */
const volatile u64 guest_slice_ns = LINGER_DEFAULT_GUEST_SLICE_US * 1000;

/*
 * Starvation guard: when guests have waited this long with no guest
 * dispatched, a CPU gives one of them guard_slice_ns (see guard.bpf.c).
 */
const volatile u64 guard_interval_ns = LINGER_DEFAULT_GUARD_INTERVAL_MS * 1000000;
const volatile u64 guard_slice_ns = LINGER_DEFAULT_GUARD_SLICE_US * 1000;

/*
 * Relief for ordinary primaries while gangs hold the CPUs (relief.bpf.c).
 * Ordinary work is sure of the open phase that ends each cycle, but
 * between two open phases a waking shell, sshd or step daemon would wait
 * up to a whole cycle (222 ms with two 100 ms slots), and wake-up-heavy
 * work crawls. So ordinary work may run relief_slice_ns in every
 * relief_period_ns of gang slots on the whole node, at once when it
 * wakes: 5% of one CPU by default, what a gang can lose to it. 0
 * disables.
 */
const volatile u64 relief_period_ns = LINGER_DEFAULT_RELIEF_PERIOD_US * 1000;
const volatile u64 relief_slice_ns = LINGER_DEFAULT_RELIEF_SLICE_US * 1000;

/*
 * The node's machinery beside gangs (machinery.bpf.c): system services
 * and step daemons take a gang member's CPU as they wake, kernel threads
 * at the member's next tick, within machinery_slice_ns in every
 * machinery_period_ns of each CPU:
 * 10% by default, what the gangs can lose to them, with a 20 ms burst
 * that a job's start-up or a Prolog runs in at once. 0 disables.
 */
const volatile u64 machinery_period_ns = LINGER_DEFAULT_MACHINERY_PERIOD_US * 1000;
const volatile u64 machinery_slice_ns = LINGER_DEFAULT_MACHINERY_SLICE_US * 1000;

/*
 * Preemption within the primary tier (wakeup.bpf.c): a primary whose
 * deadline comes first takes an ordinary primary's CPU as it wakes or at
 * the next tick. Off: the slice end is the only switch point within the
 * tier.
 */
const volatile bool wake_preempt = true;
/*
 * Guests beside primaries on SMT cores (smt.bpf.c): avoid keeps them off
 * the siblings of CPUs running primaries. The default, because owners
 * must not notice guests, and a sibling's guest slows a primary by
 * sharing its core (Alibaba measured Nginx's p99 +141% beside unmanaged
 * best-effort work, +25% with sibling-aware placement); the harvest it
 * costs is the half-busy cores' idle threads. The agent writes it.
 */
const volatile u32 smt_guests = LINGER_SMT_GUESTS_AVOID;

/*
 * The kernel watchdog's timeout (ops.timeout_ms), which the guard beats.
 *
 * Every wait is measured on one clock per task, the time it became ready
 * (guard.bpf.h: ready_at), against the thresholds here: a quarter of
 * watchdog_ns for the age guard,
 * guard_interval_ns between grants (guard.bpf.c adds the reader grant's
 * interval, which is not a tunable).
 */
const volatile u64 watchdog_ns = LINGER_DEFAULT_WATCHDOG_MS * 1000000;

/*
 * Per-class and per-job accounting for the operator's view (account.bpf.c).
 * Off, the scheduler decides the same way; only the figures are missing.
 * It exists so that the cost of counting can be measured.
 */
const volatile bool accounting = true;
