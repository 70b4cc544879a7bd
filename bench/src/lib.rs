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
