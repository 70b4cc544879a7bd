/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pure.h - the BPF side's arithmetic that touches no kernel state: the
 * histogram bucket rule, where a gang rotation stands at a clock time,
 * where admission starts in a cycle, which gangs admission lets run, in
 * which LLC each admitted gang's members are placed, where a task
 * arriving at a tier's queue starts, a task's request and deadline, and
 * gang relief's budget.
 *
 * It compiles both as BPF (included by the units that use it) and for
 * the host (pure_host.c), so that the agent's unit tests run these very
 * functions instead of a Rust copy of them (src/bpf/pure.rs). Keep it
 * free of helpers, kfuncs and maps: only intf.h's types and loops.
 */
#ifndef __SCX_LINGER_PURE_H
#define __SCX_LINGER_PURE_H

#ifdef __bpf__
/* An open-coded iterator: the verifier checks the bound once. */
#define pure_for(i, lo, hi)	bpf_for(i, lo, hi)
#else
#include <stdbool.h>
#define pure_for(i, lo, hi)	for ((i) = (lo); (i) < (hi); (i)++)
#endif

#include "../intf.h"

/* Gang g's bit in a gang set (a u64: LINGER_MAX_GANGS is 64). */
static inline u64 gang_bit(u32 g)
{
	return 1ULL << (g & (LINGER_MAX_GANGS - 1));
}

/*
 * log2 bucket of @ns: bucket b holds [2^b, 2^(b+1)) ns (0 and 1 share
 * bucket 0; the last also holds all above). A binary search, not a loop:
 * it runs at every context switch.
 */
static inline u32 hist_bucket(u64 ns)
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

/*
 * Where rotation @r stands at CLOCK_TAI @tai: the gangs that run (into
 * *@mask), whether it is the open phase (past the last slot, or in an
 * open slot), and how long until the next
 * boundary. Cycle k starts at tai = k * cycle_ns, so nodes with the same
 * table and synchronised clocks agree. @r->cycle_ns must not be 0.
 */
static inline u64 rotation_at(const struct linger_rotation *r, u64 tai,
			      u64 *mask, bool *open)
{
	u64 pos = tai % r->cycle_ns;
	u32 i;

	pure_for(i, 0, LINGER_MAX_GANGS) {
		const struct linger_slot *s = &r->slots[i];

		if (i >= r->nr_slots)
			break;
		if (pos >= s->start_ns && pos < s->start_ns + s->len_ns) {
			*mask = s->gangs;
			*open = (r->open_slots >> i) & 1;
			return s->start_ns + s->len_ns - pos;
		}
	}
	/*
	 * Past the last slot: the open phase. The gangs of one slot lead
	 * it, each slot's in turn from cycle to cycle (slot k's in cycle
	 * number k mod the slots): a fixed slot's gangs would have what
	 * ordinary work leaves of it in every cycle, a tenth of the node
	 * more than the others. The cycle number is the clock's, so nodes
	 * with the same table agree.
	 */
	*mask = 0;
	if (r->nr_slots) {
		u64 k = (tai / r->cycle_ns) % r->nr_slots;

		*mask = r->slots[k & (LINGER_MAX_GANGS - 1)].gangs;
	}
	*open = true;
	return r->cycle_ns - pos;
}

/*
 * Draws admit_first() makes before it falls back to the first gang at or
 * after the first draw's turn. Each draw misses only when no gang of the
 * mask has the turn drawn; with the mask's gangs holding m of T turns,
 * all four miss in a share ((T - m) / T)^4 of cycles (1/81 for two jobs
 * on a three-row matrix).
 */
#define ADMIT_DRAWS	4

/*
 * Where admission starts among @mask's gangs (one tier's) in cycle number
 * @cycle_no: a position in @t's order. A draw takes a turn, @cycle_no
 * mod @turns; the gang of @mask with that turn comes first. Where none
 * has it (the slot's lead, a row nobody holds), the next draw takes the
 * next digit of @cycle_no in base @turns, a fresh turn for the same
 * cycle, so every turn of the mask comes first in an equal share of the
 * cycles: each of k gangs filling a row nobody leads gets 1/k of it.
 * Taking the next gang on after a missing turn instead gave the gang
 * after a gap the gap's cycles too (2/3 of a free row to one of two
 * jobs on a three-row matrix). After ADMIT_DRAWS misses (or for turns
 * past 63, which no table of LINGER_MAX_GANGS gangs gives), the first
 * gang at or after the first draw's turn, else the first of @mask.
 * Nodes with synchronised clocks that run the same gangs agree, whatever
 * numbers each node gave them (intf.h, struct linger_gang_table).
 */
static inline u32 admit_first(const struct linger_gang_table *t, u32 turns,
			      u64 mask, u64 cycle_no)
{
	u64 held = 0, digits = cycle_no;
	u32 want = 0, i, first = 0;
	bool any = false;

	/* The slot timer asks at every tick, gangs or none. */
	if (!mask)
		return 0;
	/* Which turns below @turns (and below 64) a gang of @mask has. */
	pure_for(i, 0, LINGER_MAX_GANGS) {
		u32 turn;

		if (i >= t->nr_order)
			break;
		if (!(mask & gang_bit(t->order[i])))
			continue;
		turn = t->turn_of[i];
		if (turn < turns && turn < 64)
			held |= 1ULL << turn;
	}
	if (turns) {
		want = (u32)(cycle_no % turns);
		pure_for(i, 0, ADMIT_DRAWS) {
			u32 draw = (u32)(digits % turns);

			if (draw < 64 && (held >> draw & 1)) {
				want = draw;
				break;
			}
			digits /= turns;
		}
	}
	pure_for(i, 0, LINGER_MAX_GANGS) {
		if (i >= t->nr_order)
			break;
		if (!(mask & gang_bit(t->order[i])))
			continue;
		if (t->turn_of[i] >= want)
			return i;
		if (!any) {
			any = true;
			first = i;
		}
	}
	return first;
}

/*
 * Members of gang @g runnable now (never negative): on the BPF side the
 * count in gang_stats (gang.bpf.c), in the host tests what the test set.
 */
s64 gang_runnable(u32 g);

/* CPUs gang @g takes when @want of its members run: at most its cpuset's. */
static inline u32 gang_takes(const struct linger_gang_table *t, u32 g, s64 want)
{
	u32 own = t->cpus_of[g & (LINGER_MAX_GANGS - 1)];

	if (want <= 0)
		return 0;
	return own && want > own ? own : (u32)want;
}

/*
 * Admission (the design is in gang.bpf.c): the gangs of one tier that may
 * run now. @lead: the slot's gangs, always admitted; @fill: the tier's
 * other gangs, admitted whole in @t's order from position @first
 * (admit_first(); wrapping round) while their runnable members fit on the
 * CPUs still free, and never beside a gang bound to cores overlapping
 * their own.
 */
static inline u64 admit_gangs(const struct linger_gang_table *t, u64 lead,
			      u64 fill, u32 first)
{
	u64 admitted = lead;
	u32 room = t->nr_cpus, i, g;
	bool placed = false;

	pure_for(g, 0, LINGER_MAX_GANGS) {
		u32 takes;

		if (!(lead & gang_bit(g)))
			continue;
		takes = gang_takes(t, g, gang_runnable(g));
		if (takes)
			placed = true;
		room = takes >= room ? 0 : room - takes;
	}
	pure_for(i, 0, LINGER_MAX_GANGS) {
		s64 want;
		u32 takes;

		if (!room || i >= t->nr_order)
			break;
		g = t->order[((first + i) % t->nr_order) & (LINGER_MAX_GANGS - 1)] &
		    (LINGER_MAX_GANGS - 1);
		if (!(fill & gang_bit(g)))
			continue;
		want = gang_runnable(g);
		/* Nothing runnable: it is admitted when a member wakes. */
		if (want <= 0)
			continue;
		takes = gang_takes(t, g, want);
		if (t->conflicts[g] & admitted)
			continue;
		/*
		 * Too big for its own CPUs or for the room: it runs in its
		 * own slot, and in a slot whose lead has nothing runnable,
		 * where it stands in for the lead (else a big gang beside
		 * idle ones would run only 1/N of the time).
		 */
		if (want > takes || takes > room) {
			if (placed)
				continue;
			takes = takes > room ? room : takes;
		}
		placed = true;
		admitted |= gang_bit(g);
		room -= takes;
	}
	return admitted;
}

/* May gang @g use LLC @llc (its cpuset touches it, or it is not bound)? */
static inline bool gang_may_use_llc(const struct linger_gang_table *t, u32 g, u32 llc)
{
	u64 llcs = t->llcs_of[g & (LINGER_MAX_GANGS - 1)];

	return !llcs || ((llcs >> (llc & (LINGER_MAX_LLCS - 1))) & 1);
}

/*
 * Gang homes: the LLC on whose CPUs the members of each admitted gang are
 * placed (gang_run.bpf.c), so that a gang that fits in one LLC shares its
 * cache, and gangs that fit side by side do not interleave over the
 * node's LLCs. Decided from the same live counts as admission, each time
 * admission is, for the gangs @admitted (one tier's):
 * - a gang keeps its home while it may use that LLC and its runnable
 *   members still fit there beside the gangs already kept: members that
 *   run stay where they are (a running member moves only when it leaves
 *   its CPU, so a home that moved would strand them);
 * - the others, in gang order, take the LLC they may use with the most
 *   CPUs left, if they fit there. Most room, not best fit: a gang whose
 *   threads are still starting counts few members, and best fit would
 *   pile every young gang into the first LLC;
 * - a gang that fits in no LLC keeps the home it had: a job's launching
 *   thread counts as a member while it spawns the workers, and a home
 *   dropped for that moment would scatter the workers that start
 *   meanwhile over other gangs' LLCs; its members fill their home first
 *   and spill over. One that never had a home gets LINGER_NO_HOME and
 *   spreads.
 * Room is each LLC's CPUs (@llc_cpus, @nr_llcs of them), each gang
 * taking gang_takes() of its home's. A gang bound to part of an LLC
 * counts against that LLC only; placement never leaves its cpuset. Gangs
 * not admitted keep their home for when they are. @homes: per gang, the
 * current homes in, the new ones out.
 */
static inline void gang_homes(const struct linger_gang_table *t, u64 admitted,
			      u32 nr_llcs, const u32 *llc_cpus, u32 *homes)
{
	/*
	 * CPUs, at most LINGER_MAX_CPUS: 16 bits hold them, in half the
	 * stack (in BPF, 512 bytes cover a whole chain of calls, and this
	 * runs at the end of the deepest: a member's look for room).
	 */
	u16 room[LINGER_MAX_LLCS];
	u64 left = 0;
	u32 g, l;

	if (nr_llcs > LINGER_MAX_LLCS)
		nr_llcs = LINGER_MAX_LLCS;
	pure_for(l, 0, nr_llcs)
		room[l & (LINGER_MAX_LLCS - 1)] = llc_cpus[l & (LINGER_MAX_LLCS - 1)];
	pure_for(g, 0, LINGER_MAX_GANGS) {
		u32 home = homes[g], takes;

		if (!(admitted & gang_bit(g)))
			continue;
		takes = gang_takes(t, g, gang_runnable(g));
		if (home < nr_llcs && gang_may_use_llc(t, g, home) &&
		    takes <= room[home & (LINGER_MAX_LLCS - 1)]) {
			room[home & (LINGER_MAX_LLCS - 1)] -= takes;
			continue;
		}
		left |= gang_bit(g);
	}
	pure_for(g, 0, LINGER_MAX_GANGS) {
		u32 best = LINGER_NO_HOME, most = 0, takes;

		if (!(left & gang_bit(g)))
			continue;
		takes = gang_takes(t, g, gang_runnable(g));
		pure_for(l, 0, nr_llcs) {
			u32 r = room[l & (LINGER_MAX_LLCS - 1)];

			if (gang_may_use_llc(t, g, l) && takes <= r &&
			    (best == LINGER_NO_HOME || r > most)) {
				best = l;
				most = r;
			}
		}
		if (best == LINGER_NO_HOME && homes[g] < nr_llcs &&
		    gang_may_use_llc(t, g, homes[g])) {
			/* Fits nowhere: it stays, and its home is full. */
			room[homes[g] & (LINGER_MAX_LLCS - 1)] = 0;
			continue;
		}
		homes[g] = best;
		if (best != LINGER_NO_HOME)
			room[best & (LINGER_MAX_LLCS - 1)] -= takes;
	}
}

/*
 * The vtime a task arriving at a tier's queue starts from (vtime.bpf.c:
 * tier_floor()): one @slice behind @clock, the largest vtime that started
 * running there, but never behind the queue's head (@head, the smallest
 * vtime waiting, when @queued). The clock measures what ran, not what
 * waits: when tasks queued long ago have barely run (gang slots held the
 * CPUs, or a burst of new jobs arrived), they wait with vtimes far behind
 * it, and a task placed a slice behind the clock would queue behind all
 * of them, a waking kernel thread for seconds. Placed no later than the
 * head, it is next in line.
 */
static inline u64 arrival_vtime(u64 clock, u64 slice, bool queued, u64 head)
{
	u64 floor = clock - slice;

	if (queued && (s64)(head - floor) < 0)
		return head;
	return floor;
}

/*
 * The shortest request: what a task that wakes for microseconds still
 * asks for. EEVDF's own request is its base slice (0.75 ms times a
 * factor that grows with the CPUs), never a task's observed burst, and
 * for the same reason: two tasks that both run for microseconds would
 * otherwise preempt each other each time the running one passed its
 * few microseconds, and tasks that talk through pipes or sockets
 * (hackbench) would switch at every message. Above it, requests still
 * tell a short sleeper from a CPU-bound task (1 ms against a 20 ms slice).
 */
#define MIN_REQUEST_NS	(1000 * 1000ULL)

/*
 * A task's request (vtime.bpf.c): what it asks to run before it sleeps
 * again, in ns of CPU: the larger of its average run per wake-up
 * (@avg_burst) and its run since it last woke (@burst), within
 * [MIN_REQUEST_NS, its tier's @slice]. A task that sleeps most of its
 * time asks for little; a CPU-bound one asks for the whole slice.
 */
static inline u64 request_ns(u64 avg_burst, u64 burst, u64 slice)
{
	u64 req = avg_burst > burst ? avg_burst : burst;

	if (req < MIN_REQUEST_NS)
		req = MIN_REQUEST_NS;
	return req < slice ? req : slice;
}

/*
 * The deadline of a task running since it started with queue key @key
 * (its vtime plus its request in vtime) and request @req ns, @ran ns
 * into that run, at @weight (100: the default). EEVDF's rule: the
 * deadline holds until the request is used up; from then on the task is
 * on a new request, and its deadline is its vtime now plus the request,
 * which is @key advanced by what it ran. So a CPU-bound task keeps its
 * deadline for its whole slice and a short sleeper that runs long loses
 * its early one as it runs.
 */
static inline u64 running_deadline(u64 key, u64 req, u64 ran, u64 weight)
{
	if (ran < req)
		return key;
	return key + ran * 100 / (weight ? weight : 1);
}

/*
 * Gang relief's budget (relief.bpf.c): ordinary primary work may run
 * @slice ns in every @period ns of gang slots on the node. The budget is
 * kept as a clock: running r ns moves it r * @period / @slice ns ahead,
 * and what may run at @now is what the time since the clock earns, at
 * most one @slice (a budget unused for a whole period is not saved up).
 * One word, so CPUs claim from it with one compare-and-swap.
 */
static inline u64 relief_cost(u64 ran, u64 period, u64 slice)
{
	return slice ? ran * period / slice : 0;
}

/* What ordinary work may run at @now, with the budget clock at @clock. */
static inline u64 relief_budget(u64 clock, u64 now, u64 period, u64 slice)
{
	u64 earned;

	if (!period || (s64)(now - clock) <= 0)
		return 0;
	earned = now - clock;
	if (earned >= period)
		return slice;
	return earned * slice / period;
}

/* The clock after @grant ns are claimed at @now. */
static inline u64 relief_claim(u64 clock, u64 now, u64 grant, u64 period,
			       u64 slice)
{
	u64 floor = now - period;

	if ((s64)(clock - floor) < 0)
		clock = floor;
	return clock + relief_cost(grant, period, slice);
}

#endif /* __SCX_LINGER_PURE_H */
