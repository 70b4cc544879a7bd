// SPDX-License-Identifier: GPL-2.0-only
//! The node's machinery beside gangs (bpf/machinery.bpf.c): a system
//! service (a cgroup below `system.slice`, where systemd puts every
//! service) that wakes while gangs fill every CPU takes a member's CPU at
//! once, within its CPU's budget; the same program with the rule off, or
//! as a job of its own, waits for relief and the open phase. Judged by the kernel's own tracepoints
//! (sched_wakeup to the sched_switch onto it) and the gangs' `cpu.stat`,
//! against EEVDF on the same workload in the same boot.

use std::io::{BufRead, Read};
use std::process::Child;
use std::time::Duration;

use crate::common::*;
use crate::gang::{job_threads, start_job, ITERS};
use crate::trace::{self, percentile};

/// A daemon's pattern: 0.5 ms of work every 20 ms, 2.5% of a CPU (half
/// of relief's budget for the whole node), in an interpreter that costs
/// as much again on these emulated CPUs. SIGUSR1 has it print how many
/// rounds it has completed: its progress, which its wake-up waits do not
/// show (a wait for the CPU in the middle of a round is not a wake-up).
const DAEMON: &str = "\
import signal, time
rounds = 0
signal.signal(signal.SIGUSR1, lambda *_: print(rounds, flush=True))
print(\"ready\", flush=True)
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < 0.0005:
        pass
    time.sleep(0.02)
    rounds += 1
";

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
    /// Rounds of its loop it completed in the window.
    rounds: usize,
    /// Its sleeps in the window, as the kernel traced them.
    sleeps: usize,
    /// Waits over 10 ms.
    long: usize,
    /// What held the CPUs while it waited longest.
    held: String,
    /// The gangs' CPU time over the window, as a share of both CPUs.
    gang_share: f64,
    /// The daemon's own CPU time over the window (its cgroup's
    /// `cpu.stat`), as a share of one CPU: its progress, which the
    /// wake-up waits do not show (a wait mid-run is not a wake-up).
    daemon_share: f64,
}

/// Run the daemon in `cg` beside two 2-thread gangs (`gangs`: started
/// already, or None under EEVDF with the same spinning jobs), and read its
/// wake-up waits from the trace over `window`. The gangs are frozen once
/// the window closes: reading the trace back beside them, this test's own
/// process is ordinary work that relief and the open phase serve, and
/// took longer than the window; a fatal signal still ends them.
fn daemon_beside(cg: &TestCgroup, gangs: &[&TestCgroup; 2], window: Duration) -> Seen {
    let mut daemon: Child = spawn_in(cg, &format!("exec python3 -c '{DAEMON}'"));
    // Started (python is slow to start on these CPUs, and SIGUSR1 before
    // its handler would end it), and past its first rounds.
    let mut out = std::io::BufReader::new(daemon.stdout.take().expect("piped"));
    let mut line = String::new();
    let _ = out.read_line(&mut line);
    assert_eq!(line.trim(), "ready", "the daemon did not start");
    let report = || unsafe { libc::kill(daemon.id() as i32, libc::SIGUSR1) };
    std::thread::sleep(Duration::from_millis(800));
    let tids = trace::threads_of(daemon.id());
    // The gangs' share over the trace's window alone: reading and parsing
    // the trace afterwards takes longer than the window on these CPUs.
    let mut before = [0; 2];
    let mut after = [0; 2];
    let (mut own_before, mut own_after) = (0, 0);
    let traced = trace::record_wake_waits_around(
        window,
        &tids,
        || {
            before = gangs.map(|g| usage_us(&g.path).unwrap_or(0));
            own_before = usage_us(&cg.path).unwrap_or(0);
            report();
        },
        || {
            after = gangs.map(|g| usage_us(&g.path).unwrap_or(0));
            own_after = usage_us(&cg.path).unwrap_or(0);
            report();
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
    let (long, held) = held_during_long_waits(&traced.waits, &traced.runs, &members);
    let mut waits: Vec<f64> = traced.waits.iter().map(|(_, w)| *w).collect();
    // Its second report may still be on its way to the pipe.
    std::thread::sleep(Duration::from_millis(300));
    let _ = daemon.kill();
    let _ = daemon.wait();
    let mut rest = String::new();
    let _ = out.read_to_string(&mut rest);
    let reported: Vec<usize> = rest.lines().filter_map(|l| l.trim().parse().ok()).collect();
    let rounds = match reported[..] {
        [first, last, ..] => last.saturating_sub(first),
        _ => panic!("the daemon reported {reported:?} rounds at the window's ends: {rest}"),
    };
    let used: u64 = (0..2).map(|i| after[i].saturating_sub(before[i])).sum();
    let wakes = waits.len();
    Seen {
        p50_ms: percentile(&mut waits, 50) * 1e3,
        p95_ms: percentile(&mut waits, 95) * 1e3,
        p99_ms: percentile(&mut waits, 99) * 1e3,
        wakes,
        rounds,
        sleeps: traced.sleeps,
        long,
        held,
        gang_share: used as f64 / (2.0 * window.as_micros() as f64),
        daemon_share: own_after.saturating_sub(own_before) as f64 / window.as_micros() as f64,
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
            "{name} p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({} wake-ups; {}), gangs {:.0}% of the CPUs, \
             the daemon {} rounds ({} sleeps) and {:.1}% of one",
            s.p50_ms,
            s.p95_ms,
            s.p99_ms,
            s.wakes,
            s.held,
            s.gang_share * 100.0,
            s.rounds,
            s.sleeps,
            s.daemon_share * 100.0
        )
    };
    figure(&format!(
        "machinery: a daemon waking every 20 ms for 0.5 ms beside two gangs filling both CPUs: {}; {}; {}; {}",
        line("as a service", &on),
        line("the rule off", &off),
        line("as a job of its own", &as_job),
        eevdf.map_or("EEVDF not run (--baselines)".into(), |e| line("EEVDF", &e)),
    ));
    // Bounds for a loaded 2-core host running the vCPUs (three boots on
    // a quiet one: p95 0.3-0.5 ms, no wait over 10 ms, 224-232 rounds
    // against EEVDF's 216-219; with the rule off or as a job of its own,
    // 10-15 waits over 10 ms and 190-206 rounds). The service is served
    // within a few milliseconds nearly always and waits over 10 ms far
    // less often than without the rule or as a job; it completes its
    // rounds nearly as often as it would alone (a turn too short for a
    // round would leave the rest of it waiting as ordinary work, which
    // the wake-up waits cannot show); the gangs keep their CPUs (the
    // daemon's share, relief and the open phase are all they give up).
    // Its p99 is the bench's figure, not a bound here: two or three waits
    // in two hundred decide it.
    let share = |s: &Seen| s.long as f64 / s.wakes.max(1) as f64;
    assert!(
        on.p95_ms < 10.0 && share(&on) <= share(&off).min(share(&as_job)) / 5.0,
        "a service waited p95 {:.2} ms with the rule, and over 10 ms at {} of {} wake-ups \
         against {} of {} without and {} of {} as a job of its own",
        on.p95_ms,
        on.long,
        on.wakes,
        off.long,
        off.wakes,
        as_job.long,
        as_job.wakes
    );
    // A round is 20 ms of sleep and 0.5 ms of work at best.
    let ideal_rounds = window.as_secs_f64() / 0.0205;
    assert!(
        on.rounds as f64 >= 0.75 * ideal_rounds,
        "the service completed {} rounds in {:?}, where it could complete {:.0}",
        on.rounds,
        window,
        ideal_rounds
    );
    assert!(
        on.gang_share > 0.85,
        "the gangs kept {:.0}% of the CPUs beside the service",
        on.gang_share * 100.0
    );
}
