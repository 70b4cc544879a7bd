// SPDX-License-Identifier: GPL-2.0-only
//! A guest job: compute forever in chunks. On SIGTERM, print how many work
//! chunks it finished (its throughput) and exit.
use std::sync::atomic::{AtomicBool, Ordering};

use linger_bench::work;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() {
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t) };
    let mut chunks = 0u64;
    while !STOP.load(Ordering::Relaxed) {
        work(100_000);
        chunks += 1;
    }
    println!("chunks={chunks}");
}
