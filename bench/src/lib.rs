// SPDX-License-Identifier: GPL-2.0-only
//! Shared pieces of the benchmark workloads.

use std::hint::black_box;

/// Burn `iters` iterations of a dependent integer chain: a fixed amount of
/// work, so that under QEMU's icount its duration is a pure function of
/// the CPU time it got.
pub fn work(iters: u64) -> u64 {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..iters {
        x = black_box(x.rotate_left(7) ^ i).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    x
}

/// (run ns, run-delay ns, timeslices) from a schedstat file: the kernel's
/// own accounting of a task's CPU time and of its waits for a CPU.
pub fn schedstat(path: &str) -> (u64, u64, u64) {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    (at(0), at(1), at(2))
}

/// This thread's schedstat figures (see `schedstat`).
pub fn schedstat_self() -> (u64, u64, u64) {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    schedstat(&format!("/proc/self/task/{tid}/schedstat"))
}

/// Ask the kernel to fire this thread's timers on time (1 ns of slack
/// instead of 50 us), so a sleep's lateness is the wait for a CPU.
pub fn exact_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep `ms` milliseconds to an absolute deadline and return how late,
/// in ns, the thread ran again: the wake-up-to-run delay (with
/// `exact_timers`), as the task itself sees it.
pub fn sleep_late_ns(ms: u64) -> u64 {
    let deadline = monotonic_ns() + ms * 1_000_000;
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is a valid absolute deadline; a signal only ends the
    // sleep early, which the loop below absorbs.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
    monotonic_ns().saturating_sub(deadline)
}

/// The `p`-th percentile (0..=100) of `v`, nearest rank; 0 when empty.
pub fn percentile(v: &mut [u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// This process's CPU time so far, all threads, in seconds.
pub fn process_cpu_s() -> f64 {
    // SAFETY: an all-zero rusage is a valid value to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid rusage to write.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile(&mut v, 50.0), 50);
        assert_eq!(percentile(&mut v, 99.0), 99);
        assert_eq!(percentile(&mut v, 100.0), 100);
        assert_eq!(percentile(&mut [7], 99.0), 7);
        assert_eq!(percentile(&mut [], 50.0), 0);
    }
}
