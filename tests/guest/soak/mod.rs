// SPDX-License-Identifier: GPL-2.0-only
//! The soak: a compressed day on a busy node. `cargo xtask soak` runs it
//! for 30 minutes on a node-shaped guest of 16 vCPUs and writes its report
//! to bench/results/; `cargo xtask test` a short form on the plain 2-vCPU
//! guest of the first kernel.
//!
//! Everything a node sees, at once and changing: CPU-bound and
//! latency-bound primaries (cyclictest), guests, gangs and a guest-gang
//! (some bound to cpusets, one larger than its cpuset), jobs starting and
//! ending every second or two as cgroups made and removed, labels flipped,
//! config reloads (SIGHUP), the agent killed with SIGKILL and started
//! again, a CPU taken offline and back, a thread-exit storm, a fork storm,
//! memory pressure, more than 64 gang jobs at once and thousands of
//! cgroups (10,000 in the full soak).
//!
//! With the bench's baselines (`cargo xtask soak`, or `cargo xtask test
//! --baselines`) the same mix runs first under the kernel's own scheduler
//! (EEVDF) in the same boot, with every event that needs no agent (an
//! exit storm, the full load, a fork storm, memory pressure alone and
//! beside the full load, the hotplug): what the emulator's slowness does
//! to any scheduler shows there, and its waits and the storm's time to
//! end are the baselines the report reads ours against.
//! Nothing judges them, and CI's short form leaves them out.
//!
//! What the kernel says is checked throughout: no ejection and no kernel
//! warning; the longest time a runnable task waited, by class, from the
//! kernel's own sched_wakeup/sched_switch trace (windows through the whole
//! day), within the bound docs/design.md promises, and by what the day was
//! doing meanwhile (waits.rs: what both parts ran is read against its
//! like, and the whole day against EEVDF's part); every job's CPU time in
//! `stats --json` within 2% of its cgroup's cpu.stat; BPF map entries and
//! the agent's memory back to baseline after the churn; strict priority
//! (the guests' share of the CPUs while primaries want all of them).
//!
//! SCX_LINGER_DAY_SECS sets the length of the scx_linger part (the EEVDF
//! part is a fifth of it, 10 s to 2 minutes), SCX_LINGER_DAY_CGROUPS the
//! size of the cgroup burst and SCX_LINGER_DAY_GANGS the gang jobs made
//! with it (more than 64 in the full day: more than the BPF side holds
//! gang slots for), SCX_LINGER_DAY_STORM the threads of each exit storm
//! (2,000 by default), SCX_LINGER_DAY_AGENT the agent binary that
//! schedules the day and answers its `stats` (`cargo xtask soak` passes
//! the release build, which a site runs; the test's own build by
//! default). The events are placed at fractions of the
//! day; a day whose loads ran long goes on until every event has run, so
//! no check is ever skipped.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bpf_maps::{bpf_map_entries, bpf_map_u64_keys, cgroup_id};
use crate::common::*;
use crate::load::{env_or, kernel_trouble};

mod day;
mod waits;
use day::*;
use waits::*;

/// The longest a queued task may wait, whatever its class: a quarter of
/// the watchdog's 30 s plus one 100 ms look of the age guard
/// (docs/design.md, "The starvation guard and the age guard").
const WAIT_BOUND_S: f64 = 7.6;
/// A job's CPU time in `stats --json` against its cgroup's cpu.stat.
const ACCOUNTING_TOLERANCE: f64 = 0.02;
/// The guests' share of the CPUs while primaries want every one: the
/// starvation guard's grants only (1 ms per CPU every 2 s, more often
/// with many starved guests).
const GUEST_SHARE_UNDER_FULL_LOAD: f64 = 0.01;
#[test]
fn a_compressed_day_on_a_busy_node() {
    require_guest();
    let n = nr_cpus();
    let secs = env_or("SCX_LINGER_DAY_SECS", 150);
    let eevdf_secs = if baselines() {
        (secs / 5).clamp(10, 120)
    } else {
        0
    };
    let burst_cgroups = env_or("SCX_LINGER_DAY_CGROUPS", 10_000) as usize;
    let burst_gangs = env_or("SCX_LINGER_DAY_GANGS", 70) as usize;
    let storm_threads = env_or("SCX_LINGER_DAY_STORM", 2000);
    let seed = env_or(
        "SCX_LINGER_DAY_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    ) | 1;
    let mut rng = Rng(seed);
    let _driver = DriverSlice::enter();
    let args = ["--stats", "5"];
    let root = TestCgroup::new("day");
    let base = start_base(&root, n, secs + eevdf_secs);
    let mut churn = Churn {
        root: TestCgroup::new("day/jobs"),
        live: Vec::new(),
        started: 0,
        flips: 0,
    };
    let most_jobs = (n / 2).max(4);

    let phase = Arc::new(Mutex::new("eevdf".to_string()));
    let events = Arc::new(Mutex::new(Events::default()));
    let waits = Arc::new(Mutex::new(Waits::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let (window, gap) = if secs > 600 { (4, 26) } else { (4, 6) };
    // The progress file's clock: a longest wait names its window's end on
    // it, so that it can be read beside the day's events.
    let t0 = Instant::now();
    let tracer = {
        let (stop, phase, events, waits) =
            (stop.clone(), phase.clone(), events.clone(), waits.clone());
        std::thread::spawn(move || {
            trace_waits(
                stop,
                (phase, events),
                waits,
                (t0, Duration::from_secs(window)),
                Duration::from_secs(gap),
            )
        })
    };

    // What the day does besides its mix, for the waits' report.
    let begin = |what: &str| {
        events
            .lock()
            .unwrap()
            .begin(what, t0.elapsed().as_secs_f64())
    };
    let end = |handle: usize| {
        events
            .lock()
            .unwrap()
            .end(handle, t0.elapsed().as_secs_f64())
    };

    // The same mix under EEVDF first: what the emulator does to any
    // scheduler shows here.
    while t0.elapsed() < Duration::from_secs(eevdf_secs) {
        churn.tick(&mut rng, most_jobs);
        std::thread::sleep(Duration::from_secs(1));
    }
    // What the emulator alone does to this node, before any scx_linger
    // figure: it decides how many vCPUs a day can be run on (see
    // `cargo xtask soak --help`), so it is in the progress file at once.
    if eevdf_secs > 0 {
        progress(
            t0,
            &format!(
                "EEVDF: {eevdf_secs} s of the mix; longest waits {:?}; kernel {:?}",
                waits
                    .lock()
                    .unwrap()
                    .longest
                    .iter()
                    .map(|((_, class), (s, _))| format!("{class} {s:.2} s"))
                    .collect::<Vec<_>>(),
                kernel_trouble()
            ),
        );
    }
    let cpu_last = format!("/sys/devices/system/cpu/cpu{}/online", n - 1);
    // The exit storm's baseline: how long its threads take to end
    // beside this load with no BPF scheduler (on 16 emulated vCPUs that
    // share one host thread, tens of seconds).
    let storm_eevdf = baselines().then(|| {
        let cg = TestCgroup::new(&format!("{}/storm-eevdf", root.rel));
        let event = begin("exit storm");
        let took = exit_storm(&cg, storm_threads, slow_limit(n));
        end(event);
        progress(
            t0,
            &format!("EEVDF: {eevdf_secs} s of the mix, then an exit storm gone in {took:.1} s"),
        );
        // The full load too: its waits are read against these.
        let event = begin("full load");
        let share = full_load(
            &base,
            TestCgroup::new(&format!("{}/full-eevdf", root.rel)),
            n,
        );
        end(event);
        progress(
            t0,
            &format!("EEVDF: full load, guests {:.1}% of the CPUs", share * 100.0),
        );
        // The other events that need no agent, as the scx_linger part
        // runs them, so that their waits too are read against their like.
        // Memory pressure runs alone and then beside the full load, where
        // the scx_linger part may meet it: a guest's stress-ng outlasts
        // its 10 s while primaries want every CPU.
        let run = |what: &str, c: Child| {
            let event = begin(what);
            let (s, out) = run_for(10, || c);
            end(event);
            assert!(
                matches!(s.code(), Some(0 | 3)),
                "EEVDF: {what} failed ({s}): {out}"
            );
        };
        let cg = TestCgroup::new(&format!("{}/forks-eevdf", root.rel));
        run("fork storm", fork_storm(&cg, n));
        let cg = TestCgroup::new(&format!("{}/memory-eevdf", root.rel));
        label(&cg, "guest");
        run("memory pressure", memory_pressure(&cg));
        let pressure = begin("memory pressure");
        let c = memory_pressure(&cg);
        std::thread::sleep(Duration::from_secs(2));
        let event = begin("full load");
        full_load(
            &base,
            TestCgroup::new(&format!("{}/full-eevdf", root.rel)),
            n,
        );
        end(event);
        let (s, out) = run_for(10, || c);
        end(pressure);
        assert!(
            matches!(s.code(), Some(0 | 3)),
            "EEVDF: memory pressure failed ({s}): {out}"
        );
        if n > 1 {
            let event = begin("hotplug");
            cpu_off_and_back(&cpu_last);
            end(event);
        }
        progress(
            t0,
            "EEVDF: fork storm, memory pressure (alone, then with the full load), hotplug done",
        );
        took
    });
    let eevdf_trouble = kernel_trouble();
    *phase.lock().unwrap() = "scx_linger".into();
    require_guest();

    let event = begin("agent load");
    let (mut agent, first_load) = start_agent(&args, slow_limit(n));
    end(event);
    let mut loads = vec![first_load];
    let started = Instant::now();
    progress(t0, &format!("scx_linger enabled after {first_load:.0} s"));
    let at = |f: f64| Duration::from_secs_f64(secs as f64 * f);
    // Every 10 minutes at most: on 16 busy vCPUs sharing one host thread
    // each load takes 3-5 minutes, and restarts every 5 left scx_linger
    // in charge for about half of the day.
    let restart_every = at(0.3).min(Duration::from_secs(600));
    let mut next_restart = restart_every;
    let (mut restarts, mut reloads, mut hotplugs) = (0u64, 0u64, 0u64);
    let mut next_reload = at(0.1).min(Duration::from_secs(120));
    let mut events: Vec<(Duration, &str)> = vec![
        (at(0.2), "hotplug"),
        (at(0.4), "exit storm"),
        (at(0.45), "fork storm"),
        (at(0.5), "memory pressure"),
        (at(0.75), "burst"),
        (at(0.85), "full load"),
        (at(0.92), "accounting"),
    ];
    events.reverse();
    let mut rows: Vec<Row> = Vec::new();
    let mut last_row = Instant::now() - Duration::from_secs(60);
    let mut figures: Vec<String> = Vec::new();
    let mut baseline: Option<(usize, usize, u64)> = None;
    let mut burst_ids: Vec<u64> = Vec::new();
    let mut guest_share = f64::NAN;
    let mut accounting: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    // Each with its event's handle: the event lasts as long as it runs.
    let mut helpers: Vec<(usize, Child, &str, u64)> = Vec::new();
    // The cgroups of the day's events, removed with everything in them
    // at the end.
    let mut event_cgroups: Vec<TestCgroup> = Vec::new();
    let event_cgroup = |name: &str| {
        let cg = TestCgroup::new(&format!("{}/{name}", root.rel));
        label(&cg, if name == "memory" { "guest" } else { "primary" });
        cg
    };

    while started.elapsed() < Duration::from_secs(secs) || !events.is_empty() {
        let now = started.elapsed();
        let step = Instant::now();
        churn.tick(&mut rng, most_jobs);
        let churned = step.elapsed();
        // The agent and the scheduler: alive and enabled, but for the
        // moments this day takes them away on purpose.
        assert!(
            real_ejections().is_empty(),
            "ejected at {:.0} s: {:?}",
            now.as_secs_f64(),
            real_ejections()
        );
        assert!(agent.alive(), "the agent died: {}", agent.output());
        if now >= next_reload {
            end(begin("SIGHUP reload"));
            agent.signal(libc::SIGHUP);
            reloads += 1;
            next_reload += at(0.1).min(Duration::from_secs(120));
        }
        if now >= next_restart && (now < at(0.7) || restarts == 0) {
            let event = begin("SIGKILL restart");
            agent = restart(agent, &args, slow_limit(n), &mut loads);
            end(event);
            restarts += 1;
            progress(
                t0,
                &format!(
                    "SIGKILL restart: enabled again after {:.0} s",
                    loads.last().unwrap_or(&0.0)
                ),
            );
            next_restart += restart_every;
        }
        if let Some(&(when, what)) = events.last() {
            if now >= when {
                events.pop();
                progress(t0, &format!("{what} begins"));
                let event = begin(what);
                let had = figures.len();
                match what {
                    "hotplug" if n > 1 => {
                        // The kernel restarts sched_ext schedulers on a
                        // hotplug; the agent loads again at once.
                        cpu_off_and_back(&cpu_last);
                        let t = Instant::now();
                        let back = wait_until(slow_limit(n), || state() == "enabled");
                        assert!(back, "no scheduler after the hotplug: {}", agent.output());
                        loads.push(t.elapsed().as_secs_f64());
                        hotplugs += 1;
                    }
                    "exit storm" => {
                        // The storm must end, within the limit its EEVDF
                        // baseline had; how long it took is a figure of the
                        // report, not a check. On emulated vCPUs that share
                        // one host thread its time is mostly the emulator's
                        // round-robin to a halted vCPU (24.8-109 s under
                        // EEVDF alone, bench/README.md), and a bound of a
                        // few times EEVDF's failed where no task waited
                        // past the design's bound; that wait bound is
                        // checked from the trace, here as all day.
                        let cg = event_cgroup("storm");
                        let limit = slow_limit(n);
                        let took = exit_storm(&cg, storm_threads, limit);
                        figures.push(format!(
                            "exit storm: {storm_threads} threads started, then all ended at once: gone in {took:.1} s ({})",
                            storm_eevdf.map_or("EEVDF's not run: --baselines".into(), |e| format!(
                                "{:.2}x EEVDF's {e:.1} s",
                                took / e.max(0.001)
                            ))
                        ));
                        event_cgroups.push(cg);
                    }
                    "fork storm" => {
                        let cg = event_cgroup("forks");
                        helpers.push((event, fork_storm(&cg, n), "fork storm", 10));
                        event_cgroups.push(cg);
                    }
                    "memory pressure" => {
                        let cg = event_cgroup("memory");
                        helpers.push((event, memory_pressure(&cg), "memory pressure", 10));
                        event_cgroups.push(cg);
                    }
                    "burst" => {
                        // The working size after the last restart, before
                        // the burst: what the churn must come back to.
                        baseline = Some((
                            bpf_map_entries("cgrp_class"),
                            bpf_map_entries("job_accts"),
                            agent.rss_kib(),
                        ));
                        let dying_before = dying_cgroups();
                        let t = Instant::now();
                        let many = TestCgroup::new(&format!("{}/many", root.rel));
                        let cgs: Vec<TestCgroup> = (0..burst_cgroups)
                            .map(|i| {
                                let cg = TestCgroup::new(&format!("{}/c{i}", many.rel));
                                if i % 10 == 0 {
                                    label(&cg, CLASSES[i % 4]);
                                }
                                cg
                            })
                            .collect();
                        burst_ids = cgs.iter().map(|c| cgroup_id(&c.path)).collect();
                        progress(
                            t0,
                            &format!(
                                "burst: {burst_cgroups} cgroups made in {:.0} s",
                                t.elapsed().as_secs_f64()
                            ),
                        );
                        let gangs: Vec<(TestCgroup, Child)> = (0..burst_gangs)
                            .map(|i| {
                                let cg = TestCgroup::new(&format!("{}/g{i}", many.rel));
                                label(&cg, "gang");
                                burst_ids.push(cgroup_id(&cg.path));
                                let c = gang_job(&cg, 2);
                                (cg, c)
                            })
                            .collect();
                        std::thread::sleep(Duration::from_secs(10));
                        assert!(
                            real_ejections().is_empty(),
                            "ejected with {} cgroups and {} gang jobs: {:?}",
                            burst_cgroups,
                            burst_gangs,
                            real_ejections()
                        );
                        for (cg, mut c) in gangs {
                            drop(cg);
                            let _ = c.wait();
                        }
                        // Removing a cgroup while every emulated vCPU is
                        // busy takes the kernel about 0.9 s (40 in 36 s
                        // on 16 vCPUs, 12 of them busy, under EEVDF with
                        // no BPF scheduler), against 27 ms on idle ones:
                        // 10,000 would outlast the day by hours. The
                        // day's load is frozen while they go, as the
                        // accounting window freezes it. An rmdir returns
                        // before the kernel has released the cgroup: its
                        // workers go on, each holding cgroup_mutex in turn
                        // while it flushes the cgroup's per-CPU statistics
                        // (css_release_work_fn), which every cgroup write
                        // of the day then waits for. Left to the full
                        // load that follows, that took the driver's own
                        // writes more than 4 minutes. So the load stays
                        // frozen until they are released.
                        root.freeze(true);
                        let removing = Instant::now();
                        drop(cgs);
                        drop(many);
                        let removed = removing.elapsed().as_secs_f64();
                        // A little slack: earlier removals, the churn's own,
                        // may still be in flight; the burst is thousands.
                        let release_end = Instant::now() + Duration::from_secs(1800);
                        while dying_cgroups() > dying_before + 64 && Instant::now() < release_end {
                            std::thread::sleep(Duration::from_secs(1));
                        }
                        root.freeze(false);
                        progress(
                            t0,
                            &format!(
                                "burst: removed in {removed:.0} s, released by the kernel in {:.0} s ({} still dying)",
                                removing.elapsed().as_secs_f64(),
                                dying_cgroups()
                            ),
                        );
                        figures.push(format!(
                            "burst: {burst_cgroups} cgroups (a tenth labelled) and {burst_gangs} gang jobs made, run 10 s and removed in {:.0} s",
                            t.elapsed().as_secs_f64()
                        ));
                    }
                    "full load" => {
                        // Primaries want every CPU: the guests get the
                        // guard's grants only.
                        guest_share = full_load(&base, event_cgroup("full"), n);
                    }
                    "accounting" => {
                        let a = job_cpu(&root);
                        std::thread::sleep(Duration::from_secs(8));
                        let b = job_cpu(&root);
                        for (path, (ours_b, kern_b)) in b {
                            if let Some((ours_a, kern_a)) = a.get(&path) {
                                accounting.insert(path, (ours_b - ours_a, kern_b - kern_a));
                            }
                        }
                    }
                    _ => {}
                }
                // A helper's event lasts until it exits (below).
                if !helpers.iter().any(|h| h.0 == event) {
                    end(event);
                }
                progress(
                    t0,
                    &format!(
                        "{what} done{}",
                        figures[had..]
                            .first()
                            .map(|f| format!(": {f}"))
                            .unwrap_or_default()
                    ),
                );
            }
        }
        // stress-ng exits 3 when the kernel denied it the resources it
        // asked for: under memory pressure, what is being staged.
        helpers.retain_mut(|(event, c, what, _)| match c.try_wait() {
            Ok(Some(s)) => {
                assert!(matches!(s.code(), Some(0 | 3)), "{what} failed ({s})");
                end(*event);
                false
            }
            _ => true,
        });
        let row_at = Instant::now();
        // How long the row's reading of the stats took, of the row's time.
        let mut stats_took = Duration::ZERO;
        if last_row.elapsed() >= Duration::from_secs(5) {
            last_row = Instant::now();
            let longest = waits
                .lock()
                .unwrap()
                .longest
                .iter()
                .filter(|((p, _), _)| p == "scx_linger")
                .map(|(_, (s, _))| *s)
                .fold(0.0, f64::max);
            let asked = Instant::now();
            let cpus = stats_if_answered()
                .map(|v| class_cpus(&v))
                .unwrap_or([f64::NAN; 3]);
            stats_took = asked.elapsed();
            rows.push(Row {
                t: now.as_secs_f64(),
                tasks: tasks_now(),
                jobs: churn.live.len() + base.cgroups.len(),
                cpus,
                longest_wait: longest,
                restarts: restarts + hotplugs,
            });
        }
        // Where a slow step of the driver went, for the progress file.
        if step.elapsed() > Duration::from_secs(5) {
            let row = row_at.elapsed();
            progress(
                t0,
                &format!(
                    "slow step {:.0} s: churn {:.1} s, row {:.1} s (stats {:.1} s), the rest {:.1} s",
                    step.elapsed().as_secs_f64(),
                    churned.as_secs_f64(),
                    row.as_secs_f64(),
                    stats_took.as_secs_f64(),
                    (step.elapsed() - churned - row).as_secs_f64()
                ),
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = tracer.join();
    for (_, c, what, secs) in helpers {
        // A guest job has no bound on when it ends while primaries want
        // every CPU: it runs on the starvation guard's trickle. A batch
        // system ends it at its time limit; killed, it must be gone in
        // seconds (a dying task runs as a primary).
        if let Some(cg) = event_cgroups
            .iter()
            .find(|cg| cg.rel.ends_with("/memory") && what == "memory pressure")
        {
            let _ = std::fs::write(cg.path.join("cgroup.kill"), "1");
            let gone = wait_until(Duration::from_secs(60), || {
                std::fs::read_to_string(cg.path.join("cgroup.events"))
                    .is_ok_and(|e| e.lines().any(|l| l == "populated 0"))
            });
            assert!(
                gone,
                "the killed guest job ({what}) still had tasks after 60 s"
            );
            let _ = finish_child(c, Duration::from_secs(10));
            continue;
        }
        let (s, out) = run_for(secs, || c);
        assert!(
            matches!(s.code(), Some(0 | 3)),
            "{what} failed ({s}): {out}"
        );
    }

    // After the churn: label and job entries of removed cgroups gone, the
    // agent's memory back near its working size.
    let removed_left = |name: &str| {
        let ids: HashSet<u64> = burst_ids.iter().copied().collect();
        bpf_map_u64_keys(name)
            .into_iter()
            .filter(|k| ids.contains(k))
            .count()
    };
    let labels_back = wait_until(Duration::from_secs(30), || removed_left("cgrp_class") == 0);
    let jobs_back = wait_until(Duration::from_secs(30), || removed_left("job_accts") == 0);
    let after = (
        bpf_map_entries("cgrp_class"),
        bpf_map_entries("job_accts"),
        agent.rss_kib(),
    );
    let hotplug = |l: &String| !l.contains("unregistered from the main kernel");
    let trouble: Vec<String> = kernel_trouble().into_iter().filter(hotplug).collect();
    let ejected = real_ejections();
    let live_end = churn.live.len();
    let (started_jobs, flips) = (churn.started, churn.flips);
    drop(churn);

    // The report, before the agent stops: a day whose end fails still
    // leaves its figures.
    let waits = waits.lock().unwrap();
    let mut lines = vec![format!(
        "day: {n} CPUs, {eevdf_secs} s under EEVDF then {secs} s under scx_linger (seed {seed:#x}); {started_jobs} jobs started ({live_end} live at the end), {flips} labels flipped, {reloads} reloads, {restarts} SIGKILL restarts, {hotplugs} hotplug, {} trace windows",
        waits.windows
    )];
    lines.push(format!(
        "agent loads (s from start to enabled): {:?}",
        loads
            .iter()
            .map(|s| (s * 10.0).round() / 10.0)
            .collect::<Vec<_>>()
    ));
    lines.extend(figures.iter().cloned());
    for ((phase, class), (s, who)) in &waits.longest {
        lines.push(format!("longest wait: {phase} {class} {s:.3} s ({who})"));
    }
    lines.extend(waits.report());
    for (path, (ours, kernel)) in &accounting {
        lines.push(format!(
            "job cpu over 8 s: {path} stats {ours:.3} s cpu.stat {kernel:.3} s"
        ));
    }
    if let Some(b) = baseline {
        lines.push(format!(
            "after the churn: label entries {} -> {}, job entries {} -> {}, agent RSS {} KiB -> {} KiB",
            b.0, after.0, b.1, after.1, b.2, after.2
        ));
    }
    lines.push(format!(
        "guests' share of {n} CPUs while primaries wanted all: {:.3}%",
        guest_share * 100.0
    ));
    lines.push(format!("kernel under EEVDF: {eevdf_trouble:?}"));
    for l in &lines {
        figure(l);
    }
    let mut csv = std::fs::File::create(results_dir().join("soak-timeline.csv")).unwrap();
    writeln!(
        csv,
        "t_s,tasks,jobs,primary_cpus,guest_cpus,gang_cpus,longest_wait_s,restarts"
    )
    .unwrap();
    for r in &rows {
        writeln!(
            csv,
            "{:.0},{},{},{:.2},{:.2},{:.2},{:.3},{}",
            r.t, r.tasks, r.jobs, r.cpus[0], r.cpus[1], r.cpus[2], r.longest_wait, r.restarts
        )
        .unwrap();
    }
    std::fs::write(
        results_dir().join("soak-summary.txt"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let (status, out) = agent.stop_within(slow_limit(n));
    drop(base);
    drop(event_cgroups);
    drop(root);

    // The checks.
    assert!(status.success(), "the agent did not exit cleanly: {out}");
    assert!(ejected.is_empty(), "ejected: {ejected:?}");
    assert!(
        trouble.is_empty(),
        "the kernel logged: {}",
        trouble.join(" | ")
    );
    let over: Vec<String> = waits
        .longest
        .iter()
        .filter(|((p, c), (s, _))| p == "scx_linger" && c != "exited" && *s > WAIT_BOUND_S)
        .map(|((_, c), (s, w))| format!("{c} {s:.2} s ({w})"))
        .collect();
    assert!(
        over.is_empty(),
        "runnable tasks waited past the design's {WAIT_BOUND_S} s: {over:?}\n{}",
        lines.join("\n")
    );
    let off: Vec<String> = accounting
        .iter()
        .filter(|(_, (o, k))| *k > 0.2 && (o - k).abs() > k * ACCOUNTING_TOLERANCE + 0.01)
        .map(|(p, (o, k))| format!("{p}: {o:.3} s vs {k:.3} s"))
        .collect();
    assert!(!accounting.is_empty(), "no job's CPU time was compared");
    assert!(
        off.is_empty(),
        "stats --json and cpu.stat disagree: {off:?}"
    );
    assert!(
        labels_back,
        "label entries of removed cgroups stayed in BPF"
    );
    assert!(jobs_back, "job entries of removed cgroups stayed in BPF");
    assert!(restarts > 0, "the day ended before the agent was restarted");
    assert!(hotplugs > 0 || n == 1, "the day ended before the hotplug");
    let b = baseline.expect("the burst ran: every event runs before the day ends");
    // The agent gives its free heap back within a minute (memory.rs);
    // what a 10,000-cgroup burst leaves beside that is its maps' grown
    // tables, 2 MiB measured.
    assert!(
        after.2 <= b.2 + 4096,
        "agent RSS grew from {} KiB to {} KiB over the churn",
        b.2,
        after.2
    );
    assert!(
        guest_share < GUEST_SHARE_UNDER_FULL_LOAD,
        "guests took {:.2}% of the CPUs while primaries wanted every one",
        guest_share * 100.0
    );
}
