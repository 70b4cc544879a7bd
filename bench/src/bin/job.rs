// SPDX-License-Identifier: GPL-2.0-only
//! A queue of batch jobs of fixed size, for the throughput experiments of
//! group C (Stiehr & Chamberlain 2006). Runs the jobs one after another;
//! each job is THREADS threads, each computing BURSTS bursts of ITERS work
//! iterations. A `cpu` job computes without pause; an `io` job sleeps
//! SLEEP_MS after every burst, like a communication-bound MPI rank waiting
//! for its messages ("I/O-bound" in the paper).
//!
//! One process runs the whole queue, so a job starts without an exec:
//! under emulation an exec costs a good fraction of a job, time no job
//! would account for. A queue of guests is started as a guest (nice,
//! SCHED_IDLE, a cgroup) and every job's threads inherit that.
//!
//! Usage: job T0_NS THREADS BURSTS ITERS SLEEP_MS KIND[,KIND...]
//!
//! The queue starts at T0_NS (CLOCK_REALTIME, as `date +%s%N` prints it),
//! after sleeping until then: the caller starts every queue of a run with
//! the same T0 a little ahead, so that no queue's start-up is measured.
//! Prints one line per job: `kind=… wall=… cpu=… finish=…` (seconds;
//! finish is since T0_NS).
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use linger_bench::{exact_timers, process_cpu_s, sleep_late_ns, work};

const USAGE: &str =
    "usage: job T0_NS THREADS BURSTS ITERS SLEEP_MS KIND[,KIND...] (KIND: cpu or io)";

fn fail(msg: &str) -> ! {
    eprintln!("job: {msg}\n{USAGE}");
    std::process::exit(2)
}

/// One job: `threads` threads of `bursts` bursts, sleeping `sleep_ms`
/// after each when `io`.
fn run_job(threads: u64, bursts: u64, iters: u64, sleep_ms: u64) {
    let workers: Vec<_> = (0..threads.max(1))
        .map(|_| {
            std::thread::spawn(move || {
                exact_timers();
                for _ in 0..bursts {
                    work(iters);
                    if sleep_ms > 0 {
                        sleep_late_ns(sleep_ms);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
}

fn realtime_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 6 {
        fail("six arguments expected");
    }
    let num = |i: usize| -> u64 {
        args[i]
            .parse()
            .unwrap_or_else(|_| fail(&format!("{:?} is not a number", args[i])))
    };
    let (t0_ns, threads, bursts, iters, sleep_ms) = (num(0), num(1), num(2), num(3), num(4));
    let wait = t0_ns.saturating_sub(realtime_ns());
    if wait > 10_000_000_000 {
        fail("T0_NS is more than 10 s ahead");
    }
    std::thread::sleep(Duration::from_nanos(wait));
    for kind in args[5].split(',') {
        let sleep = match kind {
            "cpu" => 0,
            "io" => sleep_ms,
            _ => fail(&format!("unknown job kind {kind:?}")),
        };
        let (t, cpu0) = (Instant::now(), process_cpu_s());
        run_job(threads, bursts, iters, sleep);
        let now_ns = realtime_ns();
        println!(
            "kind={kind} wall={:.4} cpu={:.4} finish={:.4}",
            t.elapsed().as_secs_f64(),
            process_cpu_s() - cpu0,
            now_ns.saturating_sub(t0_ns) as f64 / 1e9
        );
    }
}
