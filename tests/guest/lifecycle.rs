// SPDX-License-Identifier: GPL-2.0-only
//! The scheduler loads, keeps every task running under load, and leaves the
//! kernel's default scheduler in charge however the agent ends.

use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn loads_names_itself_and_unloads_on_sigterm() {
    require_guest();
    assert_eq!(state(), "disabled", "a scheduler is loaded before the test");
    let agent = Agent::start(&[]);
    let ops = ops_name().expect("root/ops is readable while enabled");
    assert!(ops.starts_with("scx_linger"), "root/ops names {ops}");
    assert!(
        dmesg().contains(&format!("BPF scheduler \"{ops}\" enabled")),
        "the kernel did not log our scheduler as enabled"
    );

    let (status, out) = agent.stop();
    assert!(status.success(), "agent exited with {status}: {out}");
    assert!(
        wait_until(Duration::from_secs(10), || state() == "disabled"),
        "state is {} after SIGTERM",
        state()
    );
    assert!(
        out.contains("unregistered from user space"),
        "agent did not report the kernel's exit reason: {out}"
    );
}

#[test]
fn cpu_and_fork_workloads_progress_for_30s_without_ejection() {
    require_guest();
    let mut spinners = Hogs::spin(nr_cpus() + 1);
    let mut forkers = Hogs::fork_loop(2);
    let agent = Agent::start(&["--stats", "5"]);
    let ops = ops_name().unwrap();

    // Sample every 5 s for 30 s: every spinner got CPU, forks continued,
    // and the kernel still runs us.
    let started = Instant::now();
    let mut runtimes = spinners.runtimes();
    let mut forks = forks_since_boot();
    while started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_secs(5));
        assert_eq!(
            state(),
            "enabled",
            "scheduler was ejected: {:?}",
            ejections(&dmesg())
        );
        assert_eq!(ops_name().as_deref(), Some(ops.as_str()));
        let now = spinners.runtimes();
        assert!(
            all_progressed(&runtimes, &now),
            "a CPU-bound task made no progress in 5 s: {runtimes:?} -> {now:?}"
        );
        let f = forks_since_boot();
        assert!(f > forks + 10, "fork/exit loop stalled: {forks} -> {f}");
        assert!(spinners.all_alive() && forkers.all_alive());
        runtimes = now;
        forks = f;
    }

    let (status, out) = agent.stop();
    assert!(status.success(), "agent exited with {status}: {out}");
    assert!(out.contains("stats:"), "agent printed no stats: {out}");
    assert!(ejections(&dmesg()).is_empty(), "{:?}", ejections(&dmesg()));

    // Back on the default scheduler, the same tasks keep running.
    let before = spinners.runtimes();
    std::thread::sleep(Duration::from_secs(2));
    assert!(all_progressed(&before, &spinners.runtimes()));
    assert!(spinners.all_alive() && forkers.all_alive());
}

#[test]
fn sigkill_of_the_agent_falls_back_to_the_default_scheduler() {
    require_guest();
    let mut spinners = Hogs::spin(nr_cpus() + 1);
    let agent = Agent::start(&[]);
    std::thread::sleep(Duration::from_secs(2));

    agent.kill9();
    assert!(
        wait_until(Duration::from_secs(10), || state() == "disabled"),
        "state is {} after SIGKILL of the agent",
        state()
    );
    let before = spinners.runtimes();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        all_progressed(&before, &spinners.runtimes()),
        "tasks stopped running after the agent was killed"
    );
    assert!(spinners.all_alive());
    assert!(ejections(&dmesg()).is_empty(), "{:?}", ejections(&dmesg()));

    // And the scheduler can be loaded again.
    let again = Agent::start(&[]);
    let (status, out) = again.stop();
    assert!(status.success(), "{out}");
}
