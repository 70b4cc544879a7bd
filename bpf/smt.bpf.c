/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * smt.bpf.c - guests and SMT siblings (--smt-guests, enum
 * linger_smt_guests in intf.h).
 *
 * Two hardware threads of a core share its execution units, its L1 and
 * L2 caches and its memory bandwidth. A guest on the sibling of a CPU
 * that runs a primary never takes the primary's CPU, yet slows it: this
 * is the interference co-location systems guard against first (Alibaba's
 * group identity and openEuler's qos_level keep best-effort work off a
 * busy core's siblings). The kernel's SCHED_IDLE and cpu.idle cannot, as
 * they see each thread as a CPU of its own.
 *
 * Under avoid, primary_cpus marks the CPUs that run a primary. A CPU
 * whose sibling is marked takes no guest in dispatch() (only the
 * starvation guard's grants and its overdue rescue, which keep guests
 * alive, still run there), and a CPU that starts running a primary kicks
 * its siblings' guests off. When a CPU stops running primaries, it wakes
 * its idle siblings if guests wait. Core scheduling's cookies would do
 * this in the kernel, but with a sched_ext scheduler they deadlock SMT
 * hosts (sched-ext/scx issue 3715), so this is ours.
 *
 * Ordering, as for guest_cpus (preempt.bpf.c): a CPU marks itself as
 * about to run a guest, then reads its siblings' primary bits; a CPU
 * marks itself as running a primary, then reads its siblings' guest
 * bits. Both marks are atomic read-modify-writes, so one of the two sees
 * the other: a guest cannot start beside a primary unseen.
 *
 * Topology comes from the agent (cpu_topo, written before attach); a CPU
 * without siblings there is never blocked. On a machine without SMT the
 * agent writes share (src/bpf/topology.rs: smt_policy()), so there, as
 * under share, this costs one rodata test per call and no map lookup.
 */
#include "gang.bpf.h"
#include "gang_run.bpf.h"
#include "llc.bpf.h"
#include "preempt.bpf.h"
#include "smt.bpf.h"
#include "stats.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct linger_cpu_topo);
	__uint(max_entries, LINGER_MAX_CPUS);
} cpu_topo SEC(".maps");

/* CPUs that run a primary (kept under avoid only). */
private(SMT) struct bpf_cpumask __kptr *primary_cpus;

__hidden s32 init_smt(void)
{
	struct bpf_cpumask *mask = bpf_cpumask_create();

	if (!mask)
		return -ENOMEM;
	mask = bpf_kptr_xchg(&primary_cpus, mask);
	if (mask)
		bpf_cpumask_release(mask);
	return 0;
}

/* @cpu's siblings, or NULL if it has none (or avoid is off). */
static const struct linger_cpu_topo *siblings_of(s32 cpu)
{
	struct linger_cpu_topo *topo;
	u32 key = cpu;

	if (smt_guests != LINGER_SMT_GUESTS_AVOID)
		return NULL;
	topo = bpf_map_lookup_elem(&cpu_topo, &key);
	return topo && topo->nr_siblings ? topo : NULL;
}

/* Kick each sibling of @topo's CPU: guests off (@primary), or idle ones awake. */
static void kick_siblings(const struct linger_cpu_topo *topo, bool primary)
{
	u32 i;

	bpf_for(i, 0, LINGER_MAX_SMT_SIBLINGS) {
		s32 sib;

		if (i >= topo->nr_siblings)
			break;
		sib = topo->siblings[i];
		if (sib < 0 || sib >= LINGER_MAX_CPUS)
			continue;
		if (!primary) {
			scx_bpf_kick_cpu(sib, SCX_KICK_IDLE);
		} else if (cpu_runs_guest(sib)) {
			scx_bpf_kick_cpu(sib, SCX_KICK_PREEMPT);
			stat_inc(LINGER_STAT_SMT_KICK);
		}
	}
}

__hidden void smt_note_cpu(s32 cpu, bool primary)
{
	const struct linger_cpu_topo *topo = siblings_of(cpu);
	struct bpf_cpumask *mask;
	bool changed = false;

	if (!topo)
		return;
	bpf_rcu_read_lock();
	mask = primary_cpus;
	/* Test first: only a change needs the atomic write. */
	if (mask && bpf_cpumask_test_cpu(cpu, cast_mask(mask)) != primary) {
		if (primary)
			bpf_cpumask_set_cpu(cpu, mask);
		else
			bpf_cpumask_clear_cpu(cpu, mask);
		changed = true;
	}
	bpf_rcu_read_unlock();
	if (!changed)
		return;
	/* A core freed of primaries matters only if guests wait for it. */
	if (primary || tier_nr_queued(LINGER_TIER_GUEST) ||
	    guest_gangs_queued())
		kick_siblings(topo, primary);
}

__hidden bool smt_guest_blocked(s32 cpu)
{
	const struct linger_cpu_topo *topo = siblings_of(cpu);
	struct bpf_cpumask *mask;
	bool blocked = false;
	u32 i;

	if (!topo)
		return false;
	bpf_rcu_read_lock();
	mask = primary_cpus;
	bpf_for(i, 0, LINGER_MAX_SMT_SIBLINGS) {
		s32 sib;

		if (!mask || i >= topo->nr_siblings)
			break;
		sib = topo->siblings[i];
		if (sib >= 0 && sib < LINGER_MAX_CPUS &&
		    bpf_cpumask_test_cpu(sib, cast_mask(mask))) {
			blocked = true;
			break;
		}
	}
	bpf_rcu_read_unlock();
	if (blocked)
		stat_inc(LINGER_STAT_SMT_DECLINE);
	return blocked;
}

__hidden s32 smt_pick_idle_for_guest(const struct task_struct *p, u32 llc)
{
	s32 cpu;

	if (smt_guests == LINGER_SMT_GUESTS_AVOID) {
		cpu = pick_idle_near(p, llc, SCX_PICK_IDLE_CORE);
		if (cpu >= 0)
			return cpu;
	}
	return pick_idle_near(p, llc, 0);
}
