// SPDX-License-Identifier: GPL-2.0-only
//! Load: the scheduler stays in charge, and every task keeps running,
//! under the kernel's own stress tests, thousands of threads, and
//! thousands of short-lived cgroups; and what it keeps per cgroup goes
//! away with the cgroups.
//!
//! The soak lasts SCX_LINGER_SOAK_SECS (15 s by default, what CI runs;
//! `cargo xtask test --soak 300` for the full five minutes), the churn
//! SCX_LINGER_CHURN cgroups (150 by default, what CI runs).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use crate::bpf_maps::{bpf_map_entries, bpf_map_u64_keys, cgroup_id};
use crate::common::*;

pub(crate) fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The scheduler still runs us, and the kernel has not complained.
pub(crate) fn assert_still_in_charge(agent: &mut Agent, what: &str) {
    assert_eq!(
        state(),
        "enabled",
        "{what}: the scheduler was ejected: {:?}",
        ejections(&dmesg())
    );
    assert!(agent.alive(), "{what}: the agent died: {}", agent.output());
}

/// Kernel messages since the test began that say something went wrong.
pub(crate) fn kernel_trouble() -> Vec<String> {
    let log = dmesg();
    let mut bad = ejections(&log);
    bad.extend(
        log.lines()
            .filter(|l| {
                [
                    "BUG:",
                    "WARNING:",
                    "Oops",
                    "stall",
                    "hung_task",
                    "blocked for more than",
                ]
                .iter()
                .any(|w| l.contains(w))
            })
            .map(str::to_string),
    );
    bad
}

/// Stressors from stress-ng's scheduler class: process and thread
/// creation, context switches, yields, futex waits, policy changes
/// (SCHED_OTHER, BATCH, IDLE, FIFO, RR, DEADLINE: tasks leave and rejoin
/// sched_ext), and plain computation.
pub(crate) const STRESSORS: [&str; 7] = [
    "fork",
    "clone",
    "switch",
    "yield",
    "futex",
    "schedpolicy",
    "cpu",
];

/// The fields of stress-ng's --metrics-brief line per stressor
/// ("stress-ng: metrc: [pid] cpu  48  15.32  0.55  0.30 ...": bogo ops,
/// real time, user time, system time).
fn metrics(out: &str) -> impl Iterator<Item = (String, u64, f64)> + '_ {
    out.lines().filter_map(|l| {
        let mut w = l.split_once("] ")?.1.split_whitespace();
        let name = w.next()?;
        let ops = w.next()?.parse().ok()?;
        let _real: f64 = w.next()?.parse().ok()?;
        let usr: f64 = w.next()?.parse().ok()?;
        let sys: f64 = w.next()?.parse().ok()?;
        let _per_real: f64 = w.next()?.parse().ok()?;
        let per_cpu: f64 = w.next()?.parse().ok()?;
        // The times are printed to 10 ms; the rate per CPU second comes
        // from the unrounded rusage, so a stressor that ran less than
        // 5 ms still shows its CPU time through it.
        let cpu = if usr + sys > 0.0 || per_cpu <= 0.0 {
            usr + sys
        } else {
            ops as f64 / per_cpu
        };
        STRESSORS
            .contains(&name)
            .then(|| (name.to_string(), ops, cpu))
    })
}

/// Bogo operations per stressor: stress-ng's own count, for figures.
pub(crate) fn bogo_ops(out: &str) -> BTreeMap<String, u64> {
    metrics(out).map(|(name, ops, _)| (name, ops)).collect()
}

/// CPU seconds per stressor (user + system), which stress-ng takes from
/// the kernel's rusage of its workers: the kernel's word that each one
/// ran. Bogo operations are no such proof: the clone stressor first
/// populates 128 MiB, which on an emulated CPU beside busy neighbours
/// can fill a 15 s run before its first clone.
pub(crate) fn stressor_cpu_secs(out: &str) -> BTreeMap<String, f64> {
    metrics(out).map(|(name, _, cpu)| (name, cpu)).collect()
}

/// Names the stressors of `stressors` the kernel saw no CPU time for.
pub(crate) fn assert_every_stressor_ran(who: &str, stressors: &[&str], out: &str) {
    let cpu = stressor_cpu_secs(out);
    let idle: Vec<_> = stressors
        .iter()
        .filter(|s| cpu.get(**s).is_none_or(|t| *t <= 0.0))
        .collect();
    assert!(
        idle.is_empty(),
        "{who} stressors {idle:?} got no CPU time (CPU s per stressor: {cpu:?})\n{out}"
    );
}

#[test]
fn stress_ng_as_primaries_and_guests_beside_a_gang_soaks_without_ejection() {
    require_guest();
    let secs = env_or("SCX_LINGER_SOAK_SECS", 15);
    let mut agent = Agent::start(&["--stats", "10"]);
    let primary = TestCgroup::new("soak/primary");
    let guest = TestCgroup::new("soak/guest");
    let gang = TestCgroup::new("soak/gang");
    tag(&guest.rel, "guest");
    tag(&gang.rel, "gang");

    let stress = format!(
        "exec stress-ng {} --timeout {secs}s --metrics-brief --temp-path /tmp",
        STRESSORS.map(|s| format!("--{s} 1")).join(" ")
    );
    let jobs = [spawn_in(&primary, &stress), spawn_in(&guest, &stress)];
    // A gang that never ends by itself (killed at the end), and that
    // waits the way parallel jobs do: one member sleeps 20 ms after every
    // 100 rounds (~15 ms of work) while its partner spins at the barrier.
    // A gang that computes without pause holds both CPUs in every slot:
    // the primaries' stress-ng then ends only thanks to gang relief, but
    // the guests', which only get idle cycles and there are none, crawls
    // on the guard's trickle for minutes: right, and too long for CI.
    let mut barrier = spawn_in(
        &gang,
        &format!(
            "exec {} --threads 2 --rounds 1000000000 --iters 20000 --nap-ms 20 --nap-every 100",
            bench_bin("barrier").display()
        ),
    );

    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_secs(5));
        assert_still_in_charge(&mut agent, "during the soak");
    }
    // Guests are starved by design while primaries fill the CPUs: their
    // stress-ng may take a while to notice its own timeout.
    let [p, g] = jobs.map(|j| {
        let r = finish_child(j, Duration::from_secs(secs + 300));
        (r, started.elapsed().as_secs_f64())
    });
    let ((p, p_done), (g, g_done)) = (p, g);
    assert_still_in_charge(&mut agent, "after the soak");
    for (who, (status, out)) in [("primary", &p), ("guest", &g)] {
        assert!(
            status.success(),
            "stress-ng as {who} failed ({status}): {out}"
        );
    }
    let (ops_p, ops_g) = (bogo_ops(&p.1), bogo_ops(&g.1));
    figure(&format!(
        "soak: {secs} s of stress-ng ({}) as primaries and as guests beside a 2-thread gang, {} CPUs: bogo ops primary {ops_p:?} (done at {p_done:.0} s), guest {ops_g:?} (done at {g_done:.0} s); no ejection",
        STRESSORS.join(" "),
        nr_cpus()
    ));
    assert_every_stressor_ran("primary", &STRESSORS, &p.1);
    assert!(
        matches!(barrier.try_wait(), Ok(None)),
        "the gang's job ended during the soak"
    );
    let _ = barrier.kill();
    let _ = barrier.wait();
    let trouble = kernel_trouble();
    assert!(trouble.is_empty(), "the kernel logged: {trouble:#?}");
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// Run the swarm workload (bench/src/bin/swarm.rs) in `cg`.
fn swarm(cg: &TestCgroup, threads: usize) -> std::process::Child {
    spawn_in(
        cg,
        &format!(
            "exec {} --threads {threads} --iters 500 --sleep-ms 400",
            bench_bin("swarm").display()
        ),
    )
}

/// The `key=value` figures of the swarm's last line.
fn swarm_figures(out: &str) -> BTreeMap<String, u64> {
    out.lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

#[test]
fn thousands_of_threads_in_every_class_all_keep_running() {
    require_guest();
    let mut agent = Agent::start(&[]);
    let primary = TestCgroup::new("swarm/primary");
    let guest = TestCgroup::new("swarm/guest");
    let gang = TestCgroup::new("swarm/gang");
    tag(&guest.rel, "guest");
    tag(&gang.rel, "gang");
    // 2,000 threads, each computing a little then sleeping 400 ms: 5,000
    // wake-ups a second, which 2 emulated CPUs serve with room to spare
    // even beside a busy host, so every one of them must get to run,
    // guests included. (Sleeping 100 ms, the primaries and the gang alone
    // filled both CPUs while one host core was busy, and the guests then
    // rightly got only the guard's trickle.) The gang has far more
    // members than CPUs.
    let counts = [("primary", 800), ("guest", 800), ("gang", 400)];
    let jobs = [
        swarm(&primary, counts[0].1),
        swarm(&guest, counts[1].1),
        swarm(&gang, counts[2].1),
    ];
    // Each thread cycles about twice a second when served: 15 s leaves
    // a thread that never ran no room to hide.
    let window = Duration::from_secs(15);
    std::thread::sleep(window);
    assert_still_in_charge(&mut agent, "with 2,000 threads");
    for j in &jobs {
        // SAFETY: kill(2) touches no memory of ours.
        unsafe { libc::kill(j.id() as i32, libc::SIGTERM) };
    }
    let results = jobs.map(|j| finish_child(j, Duration::from_secs(120)));
    let mut line = Vec::new();
    let mut figures = Vec::new();
    for ((class, n), (status, out)) in counts.iter().zip(&results) {
        assert!(status.success(), "{class} swarm failed ({status}): {out}");
        let f = swarm_figures(out);
        assert_eq!(f.get("threads"), Some(&(*n as u64)), "{class}: {out}");
        line.push(format!(
            "{class} {n} threads: cycles min {} p50 {} max {}",
            f["min"], f["p50"], f["max"]
        ));
        figures.push((class, f));
    }
    let line = line.join("; ");
    for (class, f) in &figures {
        assert!(
            f["min"] > 0,
            "a {class} thread never finished a cycle in {window:?}: {line}"
        );
    }
    figure(&format!(
        "threads: 2,000 at once for {} s on {} CPUs, every one ran: {line}",
        window.as_secs(),
        nr_cpus(),
    ));
    let trouble = kernel_trouble();
    assert!(trouble.is_empty(), "the kernel logged: {trouble:#?}");
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// The labels a churn batch gives its cgroups, in turn.
const CHURN_CLASSES: [&str; 4] = ["guest", "primary", "gang", "guest-gang"];
const CHURN_BATCH: usize = 100;

/// Create CHURN_BATCH labelled cgroups under `root`, run a short task in
/// each, wait until the agent has handed every label to BPF, then end
/// them: half the tasks exit by themselves, half are killed with their
/// cgroup while running. Removes the cgroups, adding their ids to
/// `removed`; returns the most label entries BPF held meanwhile.
fn churn_batch(
    root: &TestCgroup,
    batch: usize,
    labels_before: usize,
    removed: &mut HashSet<u64>,
) -> usize {
    let cgs: Vec<TestCgroup> = (0..CHURN_BATCH)
        .map(|i| {
            let cg = TestCgroup::new(&format!("{}/b{batch}-{i}", root.rel));
            xattr_set(
                &cg.path,
                "trusted.scx_linger.class",
                CHURN_CLASSES[i % CHURN_CLASSES.len()],
            );
            removed.insert(cgroup_id(&cg.path));
            cg
        })
        .collect();
    let tasks: Vec<_> = cgs
        .iter()
        .enumerate()
        .map(|(i, cg)| {
            // Even (guest, gang): a short computation that ends by itself.
            // Odd (primary, guest-gang): would wait for minutes, and is
            // killed below with its cgroup.
            if i % 2 == 0 {
                spawn_in(cg, "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done")
            } else {
                spawn_in(cg, "exec sleep 600")
            }
        })
        .collect();
    let mut peak = 0;
    let seen = wait_until(Duration::from_secs(20), || {
        peak = peak.max(bpf_map_entries("cgrp_class"));
        peak >= labels_before + CHURN_BATCH
    });
    assert!(
        seen,
        "the agent never handed batch {batch}'s {CHURN_BATCH} labels to BPF ({labels_before} before, {peak} at most)"
    );
    for (i, (cg, t)) in cgs.into_iter().zip(tasks).enumerate() {
        if i % 2 == 0 {
            let _ = finish_child(t, Duration::from_secs(120));
        }
        // Dropping the cgroup kills what is left in it and removes it.
        drop(cg);
    }
    peak
}

#[test]
fn cgroup_churn_leaves_bpf_maps_and_agent_memory_at_baseline() {
    require_guest();
    let total = env_or("SCX_LINGER_CHURN", 150) as usize;
    // No periodic rescan: cgroups made and removed reach the agent as
    // cgroupfs events.
    let mut agent = Agent::start(&[]);
    let root = TestCgroup::new("churn");
    // One batch first: the agent's allocator and caches reach their
    // working size on first use, which is not a leak.
    let labels0 = bpf_map_entries("cgrp_class");
    let mut removed = HashSet::new();
    churn_batch(&root, 0, labels0, &mut removed);
    // The agent describes every cgroup, so any cgroup the system creates
    // meanwhile adds an entry that rightly stays: judge by the removed
    // cgroups' ids, as for the job accounting below.
    let labels_of_removed = |removed: &HashSet<u64>| {
        bpf_map_u64_keys("cgrp_class")
            .into_iter()
            .filter(|id| removed.contains(id))
            .count()
    };
    let settled = |removed: &HashSet<u64>| {
        wait_until(Duration::from_secs(20), || labels_of_removed(removed) == 0)
    };
    assert!(settled(&removed), "labels of removed cgroups stayed in BPF");
    std::thread::sleep(Duration::from_secs(2));
    let base = (
        bpf_map_entries("cgrp_class"),
        bpf_map_entries("job_accts"),
        agent.rss_kib(),
    );

    let started = Instant::now();
    let mut peak = 0;
    for batch in 1..=total.div_ceil(CHURN_BATCH) {
        peak = peak.max(churn_batch(&root, batch, base.0, &mut removed));
        assert_still_in_charge(&mut agent, &format!("churn batch {batch}"));
    }
    let churned = started.elapsed();
    let labels_back = settled(&removed);
    // Job accounting of gone cgroups is dropped at the agent's next
    // reading (every second). The count alone cannot say so: any
    // long-lived cgroup whose first task runs meanwhile (a system
    // daemon waking) adds an entry that rightly stays.
    let stale = || {
        bpf_map_u64_keys("job_accts")
            .into_iter()
            .filter(|id| removed.contains(id))
            .count()
    };
    let jobs_back = wait_until(Duration::from_secs(10), || stale() == 0);
    let after = (
        bpf_map_entries("cgrp_class"),
        bpf_map_entries("job_accts"),
        agent.rss_kib(),
    );
    figure(&format!(
        "churn: {total} cgroups created, labelled ({}), filled and removed in {:.0} s: BPF label entries {} -> peak {peak} -> {} ({} of removed cgroups); job accounting entries {} -> {} ({} of removed cgroups); agent RSS {} KiB -> {} KiB",
        CHURN_CLASSES.join("/"),
        churned.as_secs_f64(),
        base.0,
        after.0,
        labels_of_removed(&removed),
        base.1,
        after.1,
        stale(),
        base.2,
        after.2
    ));
    assert!(
        labels_back,
        "{} removed cgroups still have label entries in BPF after 20 s",
        labels_of_removed(&removed)
    );
    assert!(
        jobs_back,
        "{} removed cgroups still have job accounting in BPF after 10 s",
        stale()
    );
    // Allocator slack, not growth with the number of cgroups: 10x the
    // churn must not cost 10x this.
    assert!(
        after.2 <= base.2 + 2048,
        "agent RSS grew from {} KiB to {} KiB over {total} cgroups",
        base.2,
        after.2
    );
    assert_still_in_charge(&mut agent, "after the churn");
    let trouble = kernel_trouble();
    assert!(trouble.is_empty(), "the kernel logged: {trouble:#?}");
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// stress-ng's own lines, no kernel needed: a stressor whose 7 ms of CPU
/// print as 0.00 s still counts as having run.
#[test]
fn a_stressor_under_10_ms_of_cpu_still_ran() {
    let out = "stress-ng: metrc: [264] schedpolicy           2     10.07      0.00      0.00         0.20         277.05\n\
stress-ng: metrc: [264] cpu                  59     10.07      0.61      0.13         5.86          79.86\n";
    let cpu = stressor_cpu_secs(out);
    assert!((cpu["schedpolicy"] - 2.0 / 277.05).abs() < 1e-9, "{cpu:?}");
    assert!((cpu["cpu"] - 0.74).abs() < 1e-9, "{cpu:?}");
}
