// SPDX-License-Identifier: GPL-2.0-only
//! The node's machinery beside gangs (bpf/machinery.bpf.c): a system
//! service (a cgroup below `system.slice`, where systemd puts every
//! service) that wakes while gangs fill every CPU takes a member's CPU at
//! once, within its budget; the same program as a job of its own waits
//! for relief and the open phase. Judged by the kernel's own tracepoints
//! (sched_wakeup to the sched_switch onto it) and the gangs' `cpu.stat`,
//! against EEVDF on the same workload in the same boot.

use std::process::Child;
use std::time::Duration;

use crate::common::*;
use crate::gang::{job_threads, start_job, ITERS};
use crate::trace::{self, percentile};

/// A daemon's pattern: 1 ms of work every 20 ms (5% of a CPU, which is
/// relief's whole budget on the node and half the machinery's on one CPU).
const DAEMON: &str = "import time\n\
while True:\n\
    t = time.perf_counter()\n\
    while time.perf_counter() - t < 0.001:\n\
        pass\n\
    time.sleep(0.02)\n";

/// What one run measured.
struct Seen {
    p50_ms: f64,
    p99_ms: f64,
    wakes: usize,
    /// The gangs' CPU time over the window, as a share of both CPUs.
    gang_share: f64,
}

/// Run the daemon in `cg` beside two 2-thread gangs (`gangs`: started
/// already, or None under EEVDF with the same spinning jobs), and read its
/// wake-up waits from the trace over `window`.
fn daemon_beside(cg: &TestCgroup, gangs: &[&TestCgroup; 2], window: Duration) -> Seen {
    let mut daemon: Child = spawn_in(cg, &format!("exec python3 -c '{DAEMON}'"));
    std::thread::sleep(Duration::from_millis(800));
    let tids = trace::threads_of(daemon.id());
    let before = gangs.map(|g| usage_us(&g.path).unwrap_or(0));
    let mut waits = trace::record_wake_waits(window, &tids);
    let after = gangs.map(|g| usage_us(&g.path).unwrap_or(0));
    let _ = daemon.kill();
    let _ = daemon.wait();
    let used: u64 = (0..2).map(|i| after[i].saturating_sub(before[i])).sum();
    let wakes = waits.len();
    Seen {
        p50_ms: percentile(&mut waits, 50) * 1e3,
        p99_ms: percentile(&mut waits, 99) * 1e3,
        wakes,
        gang_share: used as f64 / (2.0 * window.as_micros() as f64),
    }
}

/// Two gangs of two threads that compute without pause fill both CPUs in
/// every slot. A daemon below `system.slice` (the node's machinery) waits
/// a few milliseconds at most per wake-up; with the rule off (or as a job
/// of its own, outside the node's services) it waits for relief's budget,
/// which it alone would use up, and the open phase. Under EEVDF the same
/// daemon is one of five threads on two CPUs.
#[test]
fn the_nodes_machinery_wakes_at_once_beside_gangs_that_fill_every_cpu() {
    require_guest();
    assert_eq!(nr_cpus(), 2, "this test is written for 2 vCPUs");
    let (a, b) = (
        TestCgroup::new("machinery-gang-a"),
        TestCgroup::new("machinery-gang-b"),
    );
    let service = TestCgroup::new("system.slice/linger-test-daemon.service");
    let job = TestCgroup::new("linger-test-daemon");
    let args = ["--threads", "2", "--rounds", "1000000000", "--iters", ITERS];
    let window = Duration::from_secs(5);
    let run = |agent_args: Option<&[&str]>, cg: &TestCgroup| {
        let agent = agent_args.map(Agent::start);
        if agent.is_some() {
            tag(&a.rel, "gang");
            tag(&b.rel, "gang");
        }
        let mut jobs = [start_job(&a, &args), start_job(&b, &args)];
        for j in &jobs {
            job_threads(j, 2);
        }
        std::thread::sleep(Duration::from_secs(1));
        let seen = daemon_beside(cg, &[&a, &b], window);
        for j in &mut jobs {
            let _ = j.kill();
            let _ = j.wait();
        }
        if let Some(agent) = agent {
            let (status, out) = agent.stop();
            assert!(status.success(), "the agent failed: {out}");
        }
        seen
    };
    let eevdf = run(None, &service);
    let off = run(Some(&["--machinery-period-us", "0"]), &service);
    let as_job = run(Some(&[]), &job);
    let on = run(Some(&[]), &service);
    let line = |name: &str, s: &Seen| {
        format!(
            "{name} p50 {:.2} ms, p99 {:.2} ms ({} wake-ups), gangs {:.0}% of the CPUs",
            s.p50_ms,
            s.p99_ms,
            s.wakes,
            s.gang_share * 100.0
        )
    };
    figure(&format!(
        "machinery: a daemon waking every 20 ms for 1 ms beside two gangs filling both CPUs: {}; {}; {}; {}",
        line("as a service", &on),
        line("the rule off", &off),
        line("as a job of its own", &as_job),
        line("EEVDF", &eevdf),
    ));
    // Bounds for a loaded 2-core host running the vCPUs: the service is
    // served within a few milliseconds, far sooner than without the rule,
    // and the gangs keep their CPUs (the daemon's 5% of one CPU, relief
    // and the open phase are all they give up).
    assert!(
        on.p99_ms < 10.0 && on.p99_ms < off.p99_ms / 2.0,
        "a service waited p99 {:.2} ms with the rule, {:.2} ms without",
        on.p99_ms,
        off.p99_ms
    );
    assert!(
        on.p50_ms < as_job.p50_ms,
        "a job of its own was served as soon as a service: {:.2} / {:.2} ms",
        as_job.p50_ms,
        on.p50_ms
    );
    assert!(
        on.gang_share > 0.8,
        "the gangs kept {:.0}% of the CPUs beside the service",
        on.gang_share * 100.0
    );
}
