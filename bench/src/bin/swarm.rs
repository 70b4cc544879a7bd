// SPDX-License-Identifier: GPL-2.0-only
//! Many threads at once, each a small duty cycle: compute a little, sleep
//! a little, forever. On SIGTERM, print how many cycles the least and the
//! most served thread finished, so a caller can tell that every one of
//! them ran (a scheduler that loses track of a task among thousands shows
//! as `min=0`).
//!
//! Usage: swarm --threads N [--iters I] [--sleep-ms S]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use linger_bench::work;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

struct Args {
    threads: usize,
    iters: u64,
    sleep: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: 0,
        iters: 2_000,
        sleep: Duration::from_millis(10),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--threads" => a.threads = num(&value)? as usize,
            "--iters" => a.iters = num(&value)?,
            "--sleep-ms" => a.sleep = Duration::from_millis(num(&value)?),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.threads == 0 {
        return Err("--threads N is required".into());
    }
    Ok(a)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("swarm: {e}");
            std::process::exit(2);
        }
    };
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t) };
    let cycles: Arc<Vec<AtomicU64>> =
        Arc::new((0..args.threads).map(|_| AtomicU64::new(0)).collect());
    let mut handles = Vec::with_capacity(args.threads);
    for i in 0..args.threads {
        let (cycles, iters, sleep) = (cycles.clone(), args.iters, args.sleep);
        // Small stacks: thousands of threads in a 2 GiB guest.
        let spawned = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                while !STOP.load(Ordering::Relaxed) {
                    work(iters);
                    cycles[i].fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(sleep);
                }
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("swarm: thread {i} of {}: {e}", args.threads);
                std::process::exit(1);
            }
        }
    }
    println!("started={}", args.threads);
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for h in handles {
        let _ = h.join();
    }
    let mut done: Vec<u64> = cycles.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    done.sort_unstable();
    println!(
        "threads={} min={} p50={} max={} total={}",
        done.len(),
        done[0],
        done[done.len() / 2],
        done[done.len() - 1],
        done.iter().sum::<u64>()
    );
}
