// SPDX-License-Identifier: GPL-2.0-only
//! A primary job that is half busy: `rounds` times, compute a fixed amount
//! of work, then sleep. Prints one line: wall seconds, run seconds, mean
//! run delay per wake-up (us), timeslices, and the p50/p99 of how late it
//! ran after each sleep ended (its own wake-up-to-run delay, us).
//!
//! `duty calibrate MS` prints how many work iterations take MS milliseconds
//! on an otherwise idle machine; pass that as ITERS.
//!
//! Usage: duty ROUNDS ITERS SLEEP_MS | duty calibrate MS
use std::time::{Duration, Instant};

use linger_bench::{exact_timers, percentile, schedstat_self, sleep_late_ns, work};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("calibrate") {
        let ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
        let mut iters = 1_000u64;
        loop {
            let t = Instant::now();
            work(iters);
            let e = t.elapsed();
            if e >= Duration::from_millis(200) {
                println!("{}", iters as u128 * ms as u128 * 1000 / e.as_micros());
                return;
            }
            iters *= 2;
        }
    }
    let num = |i: usize| -> u64 {
        args.get(i).and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            eprintln!("usage: duty ROUNDS ITERS SLEEP_MS | duty calibrate MS");
            std::process::exit(2)
        })
    };
    let (rounds, iters, sleep_ms) = (num(0), num(1), num(2));
    exact_timers();
    let mut late = Vec::with_capacity(rounds as usize);
    let s0 = schedstat_self();
    let t = Instant::now();
    for _ in 0..rounds {
        work(iters);
        late.push(sleep_late_ns(sleep_ms));
    }
    let wall = t.elapsed().as_secs_f64();
    let s1 = schedstat_self();
    let slices = (s1.2 - s0.2).max(1);
    println!(
        "wall={wall:.4} run={:.4} delay_us={:.1} slices={slices} late_p50_us={:.1} late_p99_us={:.1}",
        (s1.0 - s0.0) as f64 / 1e9,
        (s1.1 - s0.1) as f64 / slices as f64 / 1e3,
        percentile(&mut late, 50.0) as f64 / 1e3,
        percentile(&mut late, 99.0) as f64 / 1e3
    );
}
