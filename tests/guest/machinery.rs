// SPDX-License-Identifier: GPL-2.0-only
//! The node's machinery beside gangs (bpf/machinery.bpf.c): a system
//! service (a cgroup below `system.slice`, where systemd puts every
//! service) that wakes while gangs fill every CPU takes a member's CPU at
//! once, within its CPU's budget; the same program with the rule off, or
//! as a job of its own, waits for relief and the open phase. Judged by the kernel's own tracepoints
//! (sched_wakeup to the sched_switch onto it) and the gangs' `cpu.stat`,
//! against EEVDF on the same workload in the same boot.

use std::process::Child;
use std::time::Duration;

use crate::common::*;
use crate::gang::{job_threads, start_job, ITERS};
use crate::trace::{self, percentile};

/// A daemon's pattern: 0.5 ms of work every 20 ms, 2.5% of a CPU (half
/// of relief's budget for the whole node), in an interpreter that costs
/// as much again on these emulated CPUs.
const DAEMON: &str = "import time\n\
while True:\n\
    t = time.perf_counter()\n\
    while time.perf_counter() - t < 0.0005:\n\
        pass\n\
    time.sleep(0.02)\n";

/// What held the CPUs during the waits over 10 ms: each pid that ran in
/// one, but for gang members, with its name, most run time first.
fn held_during_long_waits(
    timed: &[(f64, f64)],
    runs: &[trace::Run],
    members: &[i32],
) -> (usize, String) {
    let mut by_pid: std::collections::HashMap<i32, f64> = std::collections::HashMap::new();
    let mut long = 0;
    for &(t0, w) in timed.iter().filter(|(_, w)| *w > 0.010) {
        long += 1;
        for r in runs.iter().filter(|r| r.end > t0 && r.start < t0 + w) {
            let ran = r.end.min(t0 + w) - r.start.max(t0);
            *by_pid
                .entry(if members.contains(&r.pid) { -1 } else { r.pid })
                .or_default() += ran;
        }
    }
    let mut v: Vec<(i32, f64)> = by_pid.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let names: Vec<String> = v
        .iter()
        .take(6)
        .map(|(pid, ran)| {
            let name = match pid {
                -1 => "gang members".to_string(),
                0 => "idle".to_string(),
                p => std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .map(|c| format!("{}[{p}]", c.trim()))
                    .unwrap_or_else(|_| format!("[{p}]")),
            };
            format!("{name} {:.0} ms", ran * 1e3)
        })
        .collect();
    (
        long,
        format!("{long} waits over 10 ms, held by {}", names.join(", ")),
    )
}

/// What one run measured.
struct Seen {
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    wakes: usize,
    /// Waits over 10 ms.
    long: usize,
    /// What held the CPUs while it waited longest.
    held: String,
    /// The gangs' CPU time over the window, as a share of both CPUs.
    gang_share: f64,
}

/// Run the daemon in `cg` beside two 2-thread gangs (`gangs`: started
/// already, or None under EEVDF with the same spinning jobs), and read its
/// wake-up waits from the trace over `window`. The gangs are frozen once
/// the window closes: reading the trace back beside them, this test's own
/// process is ordinary work that relief and the open phase serve, and
/// took longer than the window; a fatal signal still ends them.
fn daemon_beside(cg: &TestCgroup, gangs: &[&TestCgroup; 2], window: Duration) -> Seen {
    let mut daemon: Child = spawn_in(cg, &format!("exec python3 -c '{DAEMON}'"));
    std::thread::sleep(Duration::from_millis(800));
    let tids = trace::threads_of(daemon.id());
    // The gangs' share over the trace's window alone: reading and parsing
    // the trace afterwards takes longer than the window on these CPUs.
    let mut before = [0; 2];
    let mut after = [0; 2];
    let (timed, runs) = trace::record_wake_waits_around(
        window,
        &tids,
        || before = gangs.map(|g| usage_us(&g.path).unwrap_or(0)),
        || {
            after = gangs.map(|g| usage_us(&g.path).unwrap_or(0));
            gangs.iter().for_each(|g| g.freeze(true));
        },
    );
    let members: Vec<i32> = gangs
        .iter()
        .flat_map(|g| {
            std::fs::read_to_string(g.path.join("cgroup.threads"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect();
    let (long, held) = held_during_long_waits(&timed, &runs, &members);
    let mut waits: Vec<f64> = timed.iter().map(|(_, w)| *w).collect();
    let _ = daemon.kill();
    let _ = daemon.wait();
    let used: u64 = (0..2).map(|i| after[i].saturating_sub(before[i])).sum();
    let wakes = waits.len();
    Seen {
        p50_ms: percentile(&mut waits, 50) * 1e3,
        p95_ms: percentile(&mut waits, 95) * 1e3,
        p99_ms: percentile(&mut waits, 99) * 1e3,
        wakes,
        long,
        held,
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
        let mut seen = daemon_beside(cg, &[&a, &b], window);
        if agent.is_some() {
            let ev = &stats_json()["events"];
            seen.held += &format!(
                "; machinery turns {}, relief {}, gang switches {}",
                ev["machinery"], ev["gang_relief"], ev["gang_switch"]
            );
        }
        for j in &mut jobs {
            let _ = j.kill();
            let _ = j.wait();
        }
        // The next run's jobs start in the same cgroups.
        a.freeze(false);
        b.freeze(false);
        if let Some(agent) = agent {
            let (status, out) = agent.stop();
            assert!(status.success(), "the agent failed: {out}");
        }
        seen
    };
    // EEVDF's figure is the bench's (`--baselines`), not judged here.
    let eevdf = baselines().then(|| run(None, &service));
    let off = run(Some(&["--machinery-period-us", "0"]), &service);
    let as_job = run(Some(&[]), &job);
    let on = run(Some(&[]), &service);
    let line = |name: &str, s: &Seen| {
        format!(
            "{name} p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({} wake-ups; {}), gangs {:.0}% of the CPUs",
            s.p50_ms,
            s.p95_ms,
            s.p99_ms,
            s.wakes,
            s.held,
            s.gang_share * 100.0
        )
    };
    figure(&format!(
        "machinery: a daemon waking every 20 ms for 0.5 ms beside two gangs filling both CPUs: {}; {}; {}; {}",
        line("as a service", &on),
        line("the rule off", &off),
        line("as a job of its own", &as_job),
        eevdf.map_or("EEVDF not run (--baselines)".into(), |e| line("EEVDF", &e)),
    ));
    // Bounds for a loaded 2-core host running the vCPUs: the service is
    // served within a few milliseconds nearly always, and it waits over
    // 10 ms far less often than without the rule; the gangs keep their
    // CPUs (the daemon's share, relief and the open phase are all they
    // give up). Its p99 is the bench's figure, not a bound here: two or
    // three waits in two hundred decide it on this emulator (from 1.3 to
    // 58 ms with the rule across boots, while its waits over 10 ms were
    // 8% of its wake-ups at most, against about half without the rule).
    let share = |s: &Seen| s.long as f64 / s.wakes.max(1) as f64;
    assert!(
        on.p95_ms < 10.0 && share(&on) < share(&off) / 5.0,
        "a service waited p95 {:.2} ms with the rule, and over 10 ms at {} of {} wake-ups \
         against {} of {} without",
        on.p95_ms,
        on.long,
        on.wakes,
        off.long,
        off.wakes
    );
    assert!(
        on.p50_ms < as_job.p50_ms,
        "a job of its own was served as soon as a service: {:.2} / {:.2} ms",
        as_job.p50_ms,
        on.p50_ms
    );
    assert!(
        on.gang_share > 0.85,
        "the gangs kept {:.0}% of the CPUs beside the service",
        on.gang_share * 100.0
    );
}
