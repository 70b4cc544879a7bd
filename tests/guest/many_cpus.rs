// SPDX-License-Identifier: GPL-2.0-only
//! A node of many CPUs: `cargo xtask test` runs this module only on a
//! guest of `--many-cpus` vCPUs (64 by default), in single-threaded TCG:
//! every vCPU is a slice of one host thread, so this is about holding on,
//! not speed.
//!
//! The load is CPU hogs, not wake-up-heavy stressors: under this emulator
//! wake-ups between 64 vCPUs defeat sched_ext itself. 20 s of stress-ng
//! fork, switch, yield, futex and cpu (7 workers) took 55 s under EEVDF
//! with no RCU stall, but 572 s under scx_bpfland 1.1.4, with 9 RCU stall
//! reports and the kernel ejecting it for a runnable task stall;
//! scx_linger was ejected the same way. A vCPU waits its turn of the host
//! thread (100 ms per busy vCPU) while others spin on a lock it holds; the
//! kernel's own scheduler takes no cross-CPU lock on those paths. What is
//! tested here is a scheduler spread over 64 CPUs (its per-CPU state,
//! masks and queues at that size, tasks placed on any of them) loading,
//! holding both classes, and unloading; timing at that scale needs 64
//! real CPUs, not emulated ones.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::load::{assert_every_stressor_ran, assert_still_in_charge, bogo_ops, kernel_trouble};

/// The many-CPU pass's guest has at least this many.
const MANY: usize = 32;

/// The primaries' stressors: computation, and forks (new tasks placed
/// among the 64 CPUs).
const STRESSORS: [&str; 2] = ["cpu", "fork"];

#[test]
fn loads_holds_stress_ng_in_every_class_and_unloads_on_many_cpus() {
    require_guest();
    let cpus = nr_cpus();
    assert!(
        cpus >= MANY,
        "this test needs a guest of {MANY}+ vCPUs (it has {cpus}): run it in the many-CPU pass (cargo xtask test --filter many_cpus::)"
    );
    let secs = 60;
    let started = Instant::now();
    let mut agent = Agent::start(&[]);
    let loaded = started.elapsed();
    let primary = TestCgroup::new("many/primary");
    let guest = TestCgroup::new("many/guest");
    tag(&guest.rel, "guest");
    // Light stressors as primaries and two CPU hogs as guests (see the
    // module comment for why no more).
    let hogs = 2;
    let stress = |stressors: &str| {
        format!("exec stress-ng {stressors} --timeout {secs}s --metrics-brief --temp-path /tmp")
    };
    let prim = spawn_in(
        &primary,
        &stress(&STRESSORS.map(|s| format!("--{s} 1")).join(" ")),
    );
    let gst = spawn_in(&guest, &stress(&format!("--cpu {hogs}")));
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_secs(5));
        assert_still_in_charge(&mut agent, "under stress-ng");
    }
    let (p_status, p_out) = finish_child(prim, Duration::from_secs(secs + 240));
    let (g_status, g_out) = finish_child(gst, Duration::from_secs(secs + 240));
    assert_still_in_charge(&mut agent, "after stress-ng");
    let unload = Instant::now();
    let (status, out) = agent.stop();
    let unloaded = unload.elapsed();
    assert!(status.success(), "the agent did not exit cleanly: {out}");
    assert_ne!(
        state(),
        "enabled",
        "the scheduler is still loaded after the agent left"
    );
    assert!(
        p_status.success(),
        "primary stress-ng failed ({p_status}): {p_out}"
    );
    assert!(
        g_status.success(),
        "guest stress-ng failed ({g_status}): {g_out}"
    );
    let ops_p = bogo_ops(&p_out);
    let ops_g: u64 = g_out
        .lines()
        .filter_map(|l| {
            let mut w = l.split_once("] ")?.1.split_whitespace();
            (w.next()? == "cpu").then(|| w.next()?.parse::<u64>().ok())?
        })
        .sum();
    figure(&format!(
        "{cpus} vCPUs (single-threaded TCG): loaded in {:.1} s, {secs} s of stress-ng (one of each of {} as primaries, {hogs} cpu hogs as guests) without ejection, unloaded in {:.1} s; bogo ops primary {ops_p:?}, guest cpu {ops_g}",
        loaded.as_secs_f64(),
        STRESSORS.join(" "),
        unloaded.as_secs_f64()
    ));
    assert_every_stressor_ran("primary", &STRESSORS, &p_out);
    let trouble = kernel_trouble();
    assert!(trouble.is_empty(), "the kernel complained: {trouble:?}");
}
