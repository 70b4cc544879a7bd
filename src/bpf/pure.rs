// SPDX-License-Identifier: GPL-2.0-only
//! The BPF side's pure arithmetic (bpf/lib/pure.h), compiled for the host
//! by build.rs, for unit tests: the histogram bucket rule, a rotation's
//! position at a clock time, admission's starting gang, admission itself,
//! gang homes, where a task arriving at a queue starts, a task's request
//! and deadline, and gang relief's budget are tested as the BPF program
//! computes them, not as a Rust copy would.

use super::intf::{
    linger_consts_LINGER_MAX_GANGS, linger_consts_LINGER_MAX_LLCS, linger_gang_table,
    linger_rotation,
};

extern "C" {
    fn linger_pure_hist_bucket(ns: u64) -> u32;
    fn linger_pure_rotation_at(
        r: *const linger_rotation,
        tai: u64,
        mask: *mut u64,
        open: *mut bool,
    ) -> u64;
    fn linger_pure_admit_first(
        t: *const linger_gang_table,
        turns: u32,
        mask: u64,
        cycle_no: u64,
    ) -> u32;
    fn linger_pure_admit_gangs(
        t: *const linger_gang_table,
        runnable: *const i64,
        lead: u64,
        fill: u64,
        first: u32,
    ) -> u64;
    fn linger_pure_gang_homes(
        t: *const linger_gang_table,
        runnable: *const i64,
        admitted: u64,
        nr_llcs: u32,
        llc_cpus: *const u32,
        homes: *mut u32,
    );
    fn linger_pure_arrival_vtime(clock: u64, slice: u64, queued: bool, head: u64) -> u64;
    fn linger_pure_request_ns(avg_burst: u64, burst: u64, slice: u64) -> u64;
    fn linger_pure_running_deadline(key: u64, req: u64, ran: u64, weight: u64) -> u64;
    fn linger_pure_relief_budget(clock: u64, now: u64, period: u64, slice: u64) -> u64;
    fn linger_pure_relief_claim(clock: u64, now: u64, grant: u64, period: u64, slice: u64) -> u64;
}

/// hist_bucket(): the histogram bucket a value of `ns` is counted in.
pub fn hist_bucket(ns: u64) -> u32 {
    // SAFETY: a pure function of its argument.
    unsafe { linger_pure_hist_bucket(ns) }
}

/// rotation_at(): (gangs running, open phase, ns to the next boundary),
/// or None for a rotation without gangs (cycle 0, which BPF never asks).
pub fn rotation_at(r: &linger_rotation, tai: u64) -> Option<(u64, bool, u64)> {
    if r.cycle_ns == 0 {
        return None;
    }
    let (mut mask, mut open) = (0u64, false);
    // SAFETY: reads the rotation we lend it, writes the two locals.
    let left = unsafe { linger_pure_rotation_at(r, tai, &mut mask, &mut open) };
    Some((mask, open, left))
}

/// admit_first(): the position in `t`'s order that admission among
/// `mask`'s gangs (of tier `tier`) starts from in cycle `cycle_no`.
pub fn admit_first(t: &linger_gang_table, tier: usize, mask: u64, cycle_no: u64) -> u32 {
    // SAFETY: reads the table we lend it.
    unsafe { linger_pure_admit_first(t, t.tiers[tier].turns, mask, cycle_no) }
}

/// admit_gangs(): the gangs of a tier that may run, with `runnable[g]`
/// members of gang g runnable, `lead` the slot's, `fill` the others,
/// filling from position `first` of the table's order.
pub fn admit_gangs(
    t: &linger_gang_table,
    runnable: &[i64; linger_consts_LINGER_MAX_GANGS as usize],
    lead: u64,
    fill: u64,
    first: u32,
) -> u64 {
    // SAFETY: reads the table and the 64 counts we lend it.
    unsafe { linger_pure_admit_gangs(t, runnable.as_ptr(), lead, fill, first) }
}

/// gang_homes(): the home LLC of each of the `admitted` gangs, with
/// `runnable[g]` members of gang g runnable, `llc_cpus` the CPUs of each
/// LLC and `homes` the current homes (updated in place).
pub fn gang_homes(
    t: &linger_gang_table,
    runnable: &[i64; linger_consts_LINGER_MAX_GANGS as usize],
    admitted: u64,
    llc_cpus: &[u32],
    homes: &mut [u32; linger_consts_LINGER_MAX_GANGS as usize],
) {
    let mut cpus = [0u32; linger_consts_LINGER_MAX_LLCS as usize];
    let n = llc_cpus.len().min(cpus.len());
    cpus[..n].copy_from_slice(&llc_cpus[..n]);
    // SAFETY: reads the table, the 64 counts and the LLC sizes we lend
    // it, writes the 64 homes.
    unsafe {
        linger_pure_gang_homes(
            t,
            runnable.as_ptr(),
            admitted,
            n as u32,
            cpus.as_ptr(),
            homes.as_mut_ptr(),
        )
    }
}

/// arrival_vtime(): the vtime a task arriving at a tier's queue starts
/// from, given the tier's clock, its slice and the queue's head if any.
pub fn arrival_vtime(clock: u64, slice: u64, head: Option<u64>) -> u64 {
    // SAFETY: a pure function of its arguments.
    unsafe { linger_pure_arrival_vtime(clock, slice, head.is_some(), head.unwrap_or(0)) }
}

/// request_ns(): what a task asks to run per wake-up, for its deadline.
pub fn request_ns(avg_burst: u64, burst: u64, slice: u64) -> u64 {
    // SAFETY: a pure function of its arguments.
    unsafe { linger_pure_request_ns(avg_burst, burst, slice) }
}

/// running_deadline(): a running task's deadline `ran` ns into its run.
pub fn running_deadline(key: u64, req: u64, ran: u64, weight: u64) -> u64 {
    // SAFETY: a pure function of its arguments.
    unsafe { linger_pure_running_deadline(key, req, ran, weight) }
}

/// relief_budget(): what ordinary work may run in gang slots at `now`,
/// with relief's budget clock at `clock`.
pub fn relief_budget(clock: u64, now: u64, period: u64, slice: u64) -> u64 {
    // SAFETY: a pure function of its arguments.
    unsafe { linger_pure_relief_budget(clock, now, period, slice) }
}

/// relief_claim(): relief's budget clock after `grant` ns are claimed.
pub fn relief_claim(clock: u64, now: u64, grant: u64, period: u64, slice: u64) -> u64 {
    // SAFETY: a pure function of its arguments.
    unsafe { linger_pure_relief_claim(clock, now, grant, period, slice) }
}

#[cfg(test)]
mod tests {
    use super::{arrival_vtime, relief_budget, relief_claim, request_ns, running_deadline};

    const PERIOD: u64 = 40_000_000;
    const TURN: u64 = 2_000_000;

    #[test]
    fn relief_earns_its_slice_per_period_and_saves_no_more() {
        let now = 1_000_000_000_000u64;
        assert_eq!(relief_budget(now, now, PERIOD, TURN), 0);
        assert_eq!(relief_budget(now + 5, now, PERIOD, TURN), 0);
        assert_eq!(relief_budget(now - PERIOD / 4, now, PERIOD, TURN), TURN / 4);
        assert_eq!(relief_budget(now - PERIOD, now, PERIOD, TURN), TURN);
        assert_eq!(relief_budget(0, now, PERIOD, TURN), TURN);
        // Period 0: relief is off.
        assert_eq!(relief_budget(0, now, 0, TURN), 0);
    }

    #[test]
    fn a_relief_claim_spends_the_budget_and_short_turns_leave_the_rest() {
        let now = 1_000_000_000_000u64;
        // A long idle budget is one slice: claiming it all empties it.
        let clock = relief_claim(0, now, TURN, PERIOD, TURN);
        assert_eq!(clock, now);
        assert_eq!(relief_budget(clock, now, PERIOD, TURN), 0);
        // Ten 100 us turns in a row out of a full budget leave half.
        let mut clock = now - PERIOD;
        for _ in 0..10 {
            clock = relief_claim(clock, now, 100_000, PERIOD, TURN);
        }
        assert_eq!(relief_budget(clock, now, PERIOD, TURN), TURN / 2);
        // Over a long run, at most one slice per period on the node.
        let (mut clock, mut ran) = (0u64, 0u64);
        for ms in 0..4_000u64 {
            let t = now + ms * 1_000_000;
            let b = relief_budget(clock, t, PERIOD, TURN);
            if b >= 100_000 {
                clock = relief_claim(clock, t, b, PERIOD, TURN);
                ran += b;
            }
        }
        assert!(ran <= TURN * (4_000 / 40 + 1), "{ran}");
        assert!(ran >= TURN * (4_000 / 40 - 1), "{ran}");
    }

    const SLICE: u64 = 20_000_000;

    #[test]
    fn a_request_is_the_usual_run_per_wake_up_within_a_slice() {
        // A short sleeper asks for its usual run, or for what it has run
        // since it woke if that is longer, but never less than 1 ms.
        assert_eq!(request_ns(50_000, 0, SLICE), 1_000_000);
        assert_eq!(request_ns(1_500_000, 0, SLICE), 1_500_000);
        assert_eq!(request_ns(50_000, 3_000_000, SLICE), 3_000_000);
        // A slice shorter than that caps it.
        assert_eq!(request_ns(0, 0, 500_000), 500_000);
        // A CPU-bound task asks for the whole slice, never more.
        assert_eq!(request_ns(90_000_000, 0, SLICE), SLICE);
        assert_eq!(request_ns(0, 5 * SLICE, SLICE), SLICE);
    }

    #[test]
    fn a_running_deadline_holds_until_the_request_is_used_up() {
        let key = 1_000_000_000u64;
        // A CPU-bound task keeps its deadline for its whole slice.
        assert_eq!(running_deadline(key, SLICE, 0, 100), key);
        assert_eq!(running_deadline(key, SLICE, SLICE - 1, 100), key);
        // Then it is on a new request: its vtime now plus the request.
        assert_eq!(running_deadline(key, SLICE, SLICE, 100), key + SLICE);
        // A short sleeper that runs long loses its early deadline as it runs,
        // faster at a lighter weight.
        assert_eq!(
            running_deadline(key, 50_000, 2_000_000, 100),
            key + 2_000_000
        );
        assert_eq!(
            running_deadline(key, 50_000, 2_000_000, 50),
            key + 4_000_000
        );
        // A weight of 0 (never written) counts as 1, not a division by zero.
        assert_eq!(running_deadline(key, 0, 1, 0), key + 100);
    }

    #[test]
    fn an_arrival_starts_a_slice_behind_the_clock_when_nothing_waits_further_back() {
        assert_eq!(arrival_vtime(60 * SLICE, SLICE, None), 59 * SLICE);
        // A head within the last slice, or ahead of the clock, changes nothing.
        assert_eq!(
            arrival_vtime(60 * SLICE, SLICE, Some(59 * SLICE + 1)),
            59 * SLICE
        );
        assert_eq!(
            arrival_vtime(60 * SLICE, SLICE, Some(61 * SLICE)),
            59 * SLICE
        );
    }

    #[test]
    fn an_arrival_never_queues_behind_a_head_that_has_barely_run() {
        // Tasks queued long ago wait 52 s of vtime behind the clock: a
        // waking task is next in line, not behind all of them.
        let clock = 60_726_000_000u64;
        let head = 8_032_726_668u64;
        assert_eq!(arrival_vtime(clock, SLICE, Some(head)), head);
    }

    #[test]
    fn arrival_compares_across_the_wrap_of_the_clock() {
        // Vtimes are compared by their difference, as time_before() does.
        let clock = 5u64;
        assert_eq!(arrival_vtime(clock, SLICE, None), clock.wrapping_sub(SLICE));
        let head = u64::MAX - 2 * SLICE;
        assert_eq!(arrival_vtime(clock, SLICE, Some(head)), head);
        assert_eq!(
            arrival_vtime(clock, SLICE, Some(clock)),
            clock.wrapping_sub(SLICE)
        );
    }
}
