// SPDX-License-Identifier: GPL-2.0-only
//! A parallel job with busy-waiting barriers, like an MPI or OpenMP
//! program whose runtime spins while it waits for its partners: N threads
//! each compute a fixed amount, then meet at a spinning barrier, for R
//! rounds. Run alone on N free CPUs it takes R x (one round's compute);
//! time-shared thread by thread it wastes whole slices spinning for a
//! partner that is not running (NCSA's 5x).
//!
//! Usage: barrier [--threads N] [--rounds R] [--iters I] [--nap-ms M --nap-every K]
//!
//! With --nap-ms, thread 0 sleeps M ms every K rounds (a member blocked on
//! I/O) and reports how late it got its CPU back after each sleep.
//!
//! Prints one line: `wall_ms=… cpu_ms=… rounds=… threads=…` and, with naps,
//! `wake_late_us_p50=… wake_late_us_p99=… wake_late_us_max=…`.
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linger_bench::work;

/// Sense-reversing spin barrier: the last thread to arrive flips the
/// generation, the others spin on it. Never sleeps.
struct SpinBarrier {
    arrived: AtomicU32,
    generation: AtomicU64,
    n: u32,
}

impl SpinBarrier {
    fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        while self.generation.load(Ordering::Acquire) == gen {
            std::hint::spin_loop();
        }
    }
}

struct Args {
    threads: u32,
    rounds: u64,
    iters: u64,
    nap: Option<(Duration, u64)>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: 2,
        rounds: 2000,
        iters: 20_000,
        nap: None,
    };
    let (mut nap_ms, mut nap_every) = (0u64, 10u64);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or(format!("{name} needs a number"))
        };
        match flag.as_str() {
            "--threads" => a.threads = val("--threads")?.clamp(1, 1024) as u32,
            "--rounds" => a.rounds = val("--rounds")?,
            "--iters" => a.iters = val("--iters")?,
            "--nap-ms" => nap_ms = val("--nap-ms")?,
            "--nap-every" => nap_every = val("--nap-every")?.max(1),
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    if nap_ms > 0 {
        a.nap = Some((Duration::from_millis(nap_ms), nap_every));
    }
    Ok(a)
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// One member's life: compute, meet, repeat. Returns the napper's
/// wake-up lateness samples.
fn member(idx: u32, a: &Args, barrier: &SpinBarrier) -> Vec<Duration> {
    let mut late = Vec::new();
    for round in 0..a.rounds {
        work(a.iters);
        if let (0, Some((nap, every))) = (idx, a.nap) {
            if round % every == every - 1 {
                let due = Instant::now() + nap;
                std::thread::sleep(nap);
                late.push(Instant::now().saturating_duration_since(due));
            }
        }
        barrier.wait();
    }
    late
}

fn percentile(sorted: &[Duration], p: usize) -> u128 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[(sorted.len() - 1) * p / 100].as_micros()
}

fn main() {
    let args = match parse_args() {
        Ok(a) => Arc::new(a),
        Err(e) => {
            eprintln!("barrier: {e}");
            std::process::exit(2);
        }
    };
    let barrier = Arc::new(SpinBarrier {
        arrived: AtomicU32::new(0),
        generation: AtomicU64::new(0),
        n: args.threads,
    });
    let start = Instant::now();
    // The main thread is member 0, as in OpenMP: N threads, not N + 1.
    let others: Vec<_> = (1..args.threads)
        .map(|i| {
            let (a, b) = (args.clone(), barrier.clone());
            std::thread::spawn(move || member(i, &a, &b))
        })
        .collect();
    let mut late = member(0, &args, &barrier);
    for h in others {
        late.extend(h.join().unwrap_or_default());
    }
    let wall = start.elapsed();
    print!(
        "wall_ms={} cpu_ms={} rounds={} threads={}",
        wall.as_millis(),
        cpu_time().as_millis(),
        args.rounds,
        args.threads
    );
    if !late.is_empty() {
        late.sort();
        print!(
            " wake_late_us_p50={} wake_late_us_p99={} wake_late_us_max={}",
            percentile(&late, 50),
            percentile(&late, 99),
            late.last().map_or(0, |d| d.as_micros())
        );
    }
    println!();
}
