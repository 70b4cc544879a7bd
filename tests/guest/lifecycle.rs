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
    // Nothing it loads is deprecated on this kernel (cpu_release and
    // cpu_acquire from 6.19: bpf/main.bpf.c).
    let deprecated: Vec<String> = dmesg()
        .lines()
        .filter(|l| l.contains("deprecated") && (l.contains("sched_ext") || l.contains("ops->")))
        .map(str::to_owned)
        .collect();
    assert!(
        deprecated.is_empty(),
        "the kernel warns at load: {deprecated:?}"
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
fn cpu_and_fork_workloads_progress_without_ejection() {
    require_guest();
    let mut spinners = Hogs::spin(nr_cpus() + 1);
    let mut forkers = Hogs::fork_loop(2);
    let agent = Agent::start(&["--stats", "5"]);
    let ops = ops_name().unwrap();

    // Sample every 5 s for 10 s: every spinner got CPU, forks continued,
    // and the kernel still runs us (the soak holds the same load, and
    // more, for longer).
    let started = Instant::now();
    let mut runtimes = spinners.runtimes();
    let mut forks = forks_since_boot();
    while started.elapsed() < Duration::from_secs(10) {
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
fn sighup_reloads_the_config_without_unloading_the_scheduler() {
    require_guest();
    let cfg = results_dir().join("reload.toml");
    let rule = |class: &str| format!("[[rule]]\ncgroup = \"t-reload/job\"\nclass = \"{class}\"\n");
    std::fs::write(&cfg, rule("guest")).unwrap();
    let job = TestCgroup::new("t-reload/job");
    let agent = Agent::start(&["--config", cfg.to_str().unwrap()]);
    let _primaries = Hogs::spin(nr_cpus());
    let hog = job.spin(1);
    std::thread::sleep(Duration::from_secs(1));
    // What the kernel ran (schedstat): as a guest beside a primary per
    // CPU, the job gets only the starvation guard's trickle.
    let as_guest = cpu_share(&hog, Duration::from_secs(3));

    // `systemctl reload`: the rule now says primary.
    std::fs::write(&cfg, rule("primary")).unwrap();
    agent.signal(libc::SIGHUP);
    assert!(
        wait_until(Duration::from_secs(10), || agent
            .output()
            .contains("reloaded (1 path rules, 0 Slurm rules)")),
        "no reload logged: {}",
        agent.output()
    );
    std::thread::sleep(Duration::from_secs(1));
    let as_primary = cpu_share(&hog, Duration::from_secs(3));

    // A broken config is reported in one line and the one in use kept.
    std::fs::write(
        &cfg,
        "[[rule]]\ncgroup = \"t-reload/job\"\nclass = \"idle\"\n",
    )
    .unwrap();
    agent.signal(libc::SIGHUP);
    assert!(
        wait_until(Duration::from_secs(10), || agent
            .output()
            .contains("config reload failed")),
        "no reload failure logged: {}",
        agent.output()
    );
    let after_bad = cpu_share(&hog, Duration::from_secs(3));
    figure(&format!(
        "reload: a job a config rule makes guest, then primary by SIGHUP: {:.0}% of a CPU as guest, {:.0}% after the reload, {:.0}% after a broken config was refused",
        as_guest * 100.0,
        as_primary * 100.0,
        after_bad * 100.0
    ));
    let p = nr_cpus() as f64;
    // One of p + 1 equal primaries gets p / (p + 1) of a CPU.
    let fair = p / (p + 1.0);
    assert!(as_guest < 0.1, "as a guest it got {as_guest:.2} of a CPU");
    assert!(
        as_primary > fair / 2.0,
        "after the reload it got {as_primary:.2} of a CPU"
    );
    assert!(
        after_bad > fair / 2.0,
        "after a broken config it got {after_bad:.2}"
    );
    assert_eq!(state(), "enabled");
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
    assert_eq!(
        out.matches("scheduler enabled").count(),
        1,
        "the scheduler was loaded again: {out}"
    );
    let refused: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("config reload failed"))
        .collect();
    assert_eq!(refused.len(), 1, "{out}");
    assert!(refused[0].contains("unknown class \"idle\""), "{out}");
}
