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
//! The same mix runs first under the kernel's own scheduler (EEVDF) in the
//! same boot, with one exit storm: what the emulator's slowness does to
//! any scheduler shows there, and its waits and the storm's time to end
//! are the baselines the report reads ours against.
//!
//! What the kernel says is checked throughout: no ejection and no kernel
//! warning; the longest time a runnable task waited, by class, from the
//! kernel's own sched_wakeup/sched_switch trace (windows through the whole
//! day), within the bound docs/design.md promises; every job's CPU time in
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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::load::{env_or, kernel_trouble};
use crate::trace::record_ready_waits;

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
/// The xattr a job's class is given by (as `scx_linger tag` writes it).
const CLASS_XATTR: &str = "trusted.scx_linger.class";

/// A small deterministic generator: the day's choices are repeatable from
/// the seed it prints.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A job of the churn: its cgroup, what runs in it, when it ends.
struct Job {
    cg: TestCgroup,
    child: Child,
    ends: Instant,
}

/// A barrier gang job that waits the way parallel jobs do: thread 0
/// sleeps 20 ms every 100 rounds while its partners spin at the barrier.
fn gang_job(cg: &TestCgroup, threads: usize) -> Child {
    spawn_in(
        cg,
        &format!(
            "exec {} --threads {threads} --rounds 1000000000 --iters 20000 --nap-ms 20 --nap-every 100",
            bench_bin("barrier").display()
        ),
    )
}

fn label(cg: &TestCgroup, class: &str) {
    xattr_set(&cg.path, CLASS_XATTR, class);
}

/// The class a task's cgroup gives it, as the agent reads it: the
/// nearest labelled ancestor's; unlabelled work under the day's root is
/// primary, everything else the node's own ("system"). `seen` keeps each
/// cgroup's answer for one trace window: an exit storm's 2,000 threads
/// share one cgroup, whose ancestors' labels are then read once, not
/// once a thread.
fn class_of(pid: i32, seen: &mut HashMap<String, String>) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let rel = text.lines().find_map(|l| l.strip_prefix("0::/"))?;
    if let Some(class) = seen.get(rel) {
        return Some(class.clone());
    }
    let class = if rel.starts_with("day/") || rel == "day" {
        let mut dir = PathBuf::from(CGROUP_ROOT).join(rel);
        let mut class = "primary".to_string();
        while dir != Path::new(CGROUP_ROOT) {
            if let Ok(Some(v)) = xattr::get(&dir, CLASS_XATTR) {
                class = String::from_utf8_lossy(&v).into_owned();
                break;
            }
            dir.pop();
        }
        class
    } else {
        "system".to_string()
    };
    seen.insert(rel.to_string(), class.clone());
    Some(class)
}

/// Longest ready waits by (phase, class), from the kernel's trace.
#[derive(Default)]
struct Waits {
    longest: BTreeMap<(String, String), (f64, String)>,
    windows: u64,
}

/// Record ready waits in windows until `stop`, crediting each to the
/// phase `phase` names at the window's end.
fn trace_waits(
    stop: Arc<AtomicBool>,
    phase: Arc<Mutex<String>>,
    waits: Arc<Mutex<Waits>>,
    window: Duration,
    gap: Duration,
) {
    while !stop.load(Ordering::Relaxed) {
        let (seen, _) = record_ready_waits(|| std::thread::sleep(window));
        let phase = phase.lock().unwrap().clone();
        let mut w = waits.lock().unwrap();
        w.windows += 1;
        let mut classes = HashMap::new();
        for r in seen {
            let class = class_of(r.pid, &mut classes).unwrap_or_else(|| "exited".into());
            let e = w
                .longest
                .entry((phase.clone(), class))
                .or_insert((0.0, String::new()));
            if r.secs > e.0 {
                *e = (r.secs, format!("{}[{}]", r.comm, r.pid));
            }
        }
        drop(w);
        let until = Instant::now() + gap;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The day's base load: it runs from start to end.
struct Base {
    cgroups: Vec<TestCgroup>,
    children: Vec<Child>,
    hogs: Vec<Hogs>,
}

fn enable_cpuset(dir: &Path) {
    let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+cpuset");
}

fn start_base(root: &TestCgroup, n: usize, secs: u64) -> Base {
    let mut b = Base {
        cgroups: Vec::new(),
        children: Vec::new(),
        hogs: Vec::new(),
    };
    enable_cpuset(Path::new(CGROUP_ROOT));
    enable_cpuset(&root.path);
    let cpu = TestCgroup::new(&format!("{}/cpu", root.rel));
    label(&cpu, "primary");
    b.hogs.push(cpu.spin((n / 4).max(1)));
    let guest = TestCgroup::new(&format!("{}/guest", root.rel));
    label(&guest, "guest");
    b.hogs.push(guest.spin((n / 2).max(1)));
    // Latency-bound primaries: cyclictest's threads wake every 2 ms
    // (SCHED_OTHER, as a site's daemons and interactive work are).
    let lat = TestCgroup::new(&format!("{}/latency", root.rel));
    label(&lat, "primary");
    b.children.push(spawn_in(
        &lat,
        &format!(
            "exec cyclictest -q -t {} -i 2000 -D {}",
            (n / 8).max(1),
            secs + 600
        ),
    ));
    // Gangs: some bound to two CPUs, one with more members than its
    // cpuset, and a guest-gang.
    for k in 0..(n / 8).max(2) {
        let cg = TestCgroup::new(&format!("{}/gang{k}", root.rel));
        label(&cg, "gang");
        let threads = if k == 1 { 4 } else { 2 };
        if k % 2 == 1 && n >= 4 {
            let first = (2 * k) % n;
            let _ = std::fs::write(
                cg.path.join("cpuset.cpus"),
                format!("{first}-{}", first + 1),
            );
        }
        b.children.push(gang_job(&cg, threads));
        b.cgroups.push(cg);
    }
    let gg = TestCgroup::new(&format!("{}/guest-gang", root.rel));
    label(&gg, "guest-gang");
    b.children.push(gang_job(&gg, 2));
    b.cgroups.extend([cpu, guest, lat, gg]);
    b
}

/// Jobs that come and go: one starts every tick, each lives a few
/// seconds; a tick may flip a live job's label.
struct Churn {
    root: TestCgroup,
    live: Vec<Job>,
    started: u64,
    flips: u64,
}

const CLASSES: [&str; 4] = ["primary", "guest", "gang", "guest-gang"];

impl Churn {
    fn tick(&mut self, rng: &mut Rng, most: usize) {
        let now = Instant::now();
        let (ended, live): (Vec<Job>, Vec<Job>) = std::mem::take(&mut self.live)
            .into_iter()
            .partition(|j| j.ends <= now);
        self.live = live;
        // Dropping a job's cgroup kills what is left in it and removes it.
        for mut j in ended {
            let _ = j.child.kill();
            let _ = j.child.wait();
            drop(j.cg);
        }
        if self.live.len() < most {
            let class = CLASSES[rng.below(4) as usize];
            let cg = TestCgroup::new(&format!("{}/j{}", self.root.rel, self.started));
            self.started += 1;
            label(&cg, class);
            let child = if class.contains("gang") {
                gang_job(&cg, 2)
            } else {
                spawn_in(&cg, "while :; do :; done")
            };
            let ends = now + Duration::from_secs(3 + rng.below(10));
            self.live.push(Job { cg, child, ends });
        }
        if !self.live.is_empty() && rng.below(3) == 0 {
            let j = &self.live[rng.below(self.live.len() as u64) as usize];
            label(&j.cg, CLASSES[rng.below(4) as usize]);
            self.flips += 1;
        }
    }
}

/// One row of the report's timeline.
struct Row {
    t: f64,
    tasks: u64,
    jobs: usize,
    cpus: [f64; 3],
    longest_wait: f64,
    restarts: u64,
}

fn tasks_now() -> u64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The agent binary that schedules the day and answers its `stats`. Its
/// client, too, is the release build where the day runs one: with every
/// one of 16 emulated vCPUs busy, each runs a sixteenth of the host
/// thread, and the test build's client took 60-70 s to answer where the
/// release build's took 6 s (a fork of `true`, 4 s).
fn day_agent() -> String {
    std::env::var("SCX_LINGER_DAY_AGENT").unwrap_or_else(|_| AGENT.to_string())
}

/// `stats --json`, when the agent answers.
fn stats_if_answered() -> Option<serde_json::Value> {
    let out = agent_output(std::process::Command::new(day_agent()).args(["stats", "--json"]));
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// CPUs each tier used in the last reading: primary (with its gangs),
/// guest (with guest-gangs), and the share that went to gangs.
fn class_cpus(v: &serde_json::Value) -> [f64; 3] {
    let mut out = [0.0; 3];
    for c in v["classes"].as_array().into_iter().flatten() {
        let cpus = c["cpus_now"].as_f64().unwrap_or(0.0);
        match c["class"].as_str().unwrap_or_default() {
            "primary" => out[0] += cpus,
            "guest" => out[1] += cpus,
            "gang" => out[2] += cpus,
            "guest-gang" => out[1] += cpus,
            _ => {}
        }
    }
    out
}

/// CPU time the kernel charged a cgroup (cpu.stat usage_usec), in s.
fn usage_s(path: &Path) -> f64 {
    usage_us(path).unwrap_or(0) as f64 / 1e6
}

/// Cgroups removed but not yet released by the kernel (the root's
/// cgroup.stat `nr_dying_descendants`).
fn dying_cgroups() -> u64 {
    std::fs::read_to_string(Path::new(CGROUP_ROOT).join("cgroup.stat"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("nr_dying_descendants "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn freeze(cg: &TestCgroup, on: bool) {
    let _ = std::fs::write(cg.path.join("cgroup.freeze"), if on { "1" } else { "0" });
    let want = if on { "frozen 1" } else { "frozen 0" };
    wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(cg.path.join("cgroup.events")).is_ok_and(|e| e.contains(want))
    });
}

/// Every job's CPU time as `stats --json` and cpu.stat give it, with the
/// day frozen so both stand still; the agent's reading runs every second.
/// A job that is not frozen yet is left out: a guest freezes only when it
/// runs, on the starvation guard's trickle while primaries want every
/// CPU, and one still running would be read a second apart by the two.
fn job_cpu(root: &TestCgroup) -> BTreeMap<String, (f64, f64)> {
    freeze(root, true);
    std::thread::sleep(Duration::from_millis(2500));
    let v = stats_json_from(&day_agent());
    let mut out = BTreeMap::new();
    for j in v["jobs"].as_array().into_iter().flatten() {
        let path = j["path"].as_str().unwrap_or_default();
        if !path.starts_with(&format!("/{}/", root.rel)) {
            continue;
        }
        let cg = PathBuf::from(CGROUP_ROOT).join(&path[1..]);
        let frozen = std::fs::read_to_string(cg.join("cgroup.events"))
            .is_ok_and(|e| e.lines().any(|l| l == "frozen 1"));
        if !frozen {
            continue;
        }
        let ours = j["cpu_seconds"].as_f64().unwrap_or(0.0);
        let kernel = usage_s(&cg);
        out.insert(path.to_string(), (ours, kernel));
    }
    freeze(root, false);
    out
}

/// How long the day waits for what one emulated vCPU does alone (an
/// agent's load, the scheduler back after a hotplug, an exit storm's
/// threads): 10 minutes on 16 vCPUs, and as much longer as each busy
/// vCPU's share of the host thread is smaller. Single-threaded TCG runs
/// the vCPUs in turn, so on 64 busy vCPUs one gets a 64th: a load there
/// took 353-427 s beside the day's load, where the same load takes 15 s
/// of guest time on one quiet vCPU. The time each took is a figure of
/// the report.
fn slow_limit(n: usize) -> Duration {
    Duration::from_secs(600 * (n as u64 / 16).max(1))
}

/// Start the agent on a node whose every CPU is busy: verifying the BPF
/// program then takes minutes of one emulated vCPU's share.
fn start_agent(args: &[&str], limit: Duration) -> (Agent, f64) {
    let t = Instant::now();
    let a = Agent::start_within(Path::new(&day_agent()), args, limit);
    (a, t.elapsed().as_secs_f64())
}

/// Start the agent again after a SIGKILL, as systemd's Restart= does.
fn restart(agent: Agent, args: &[&str], limit: Duration, loads: &mut Vec<f64>) -> Agent {
    agent.kill9();
    std::thread::sleep(Duration::from_secs(1));
    let (a, secs) = start_agent(args, limit);
    loads.push(secs);
    a
}

/// The thread-exit storm: `threads` threads of one process in `cg`, each
/// a small duty cycle, all told to end at once (SIGTERM) 5 s after the
/// last one started; the seconds from the signal until the process is
/// gone. `limit` bounds each wait.
fn exit_storm(cg: &TestCgroup, threads: u64, limit: Duration) -> f64 {
    let child = spawn_in(
        cg,
        &format!(
            "exec {} --threads {threads} --iters 500 --sleep-ms 400",
            bench_bin("swarm").display()
        ),
    );
    // Signalled before its handler is in place (on 16 busy emulated
    // vCPUs the shell's exec alone can take seconds), it would die of
    // the signal instead of ending its threads.
    let status = format!("/proc/{}/status", child.id());
    let all_started = wait_until(limit, || {
        std::fs::read_to_string(&status).is_ok_and(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .is_some_and(|n| n > threads)
        })
    });
    assert!(
        all_started,
        "the exit storm's {threads} threads did not all start within {limit:?}"
    );
    std::thread::sleep(Duration::from_secs(5));
    // SAFETY: kill(2) touches no memory of ours.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let (status, out) = finish_child(child, limit);
    assert!(status.success(), "the exit storm's swarm failed: {out}");
    t.elapsed().as_secs_f64()
}

/// The day's driver (this test process: its churn, events and tracer)
/// stands for a node's batch system and monitoring, which a site runs
/// in a slice of their own with more weight than any job's. Left among
/// the day's jobs on 2 emulated vCPUs, each of its steps took 10-20 s
/// and the short form's 30-s day took six minutes. A cgroup beside the
/// day's with the highest cpu.weight, left again when dropped: this
/// process goes on to run other tests.
struct DriverSlice {
    home: PathBuf,
    slice: PathBuf,
}

impl DriverSlice {
    fn enter() -> DriverSlice {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let rel = own
            .lines()
            .find_map(|l| l.strip_prefix("0::/"))
            .unwrap_or("");
        let home = Path::new(CGROUP_ROOT).join(rel);
        let slice = Path::new(CGROUP_ROOT).join("soak-driver");
        let _ = std::fs::write(
            Path::new(CGROUP_ROOT).join("cgroup.subtree_control"),
            "+cpu",
        );
        let _ = std::fs::create_dir(&slice);
        std::fs::write(slice.join("cpu.weight"), "10000").expect("the driver's cpu.weight");
        move_self(&slice);
        DriverSlice { home, slice }
    }
}

impl Drop for DriverSlice {
    fn drop(&mut self) {
        move_self(&self.home);
        let _ = std::fs::remove_dir(&self.slice);
    }
}

fn move_self(cg: &Path) {
    std::fs::write(cg.join("cgroup.procs"), std::process::id().to_string())
        .unwrap_or_else(|e| panic!("moving the test into {}: {e}", cg.display()));
}

/// One line of the day's progress, appended to soak-progress.txt in the
/// results folder as it happens: a day cut short (a timeout, a kill)
/// still says how far it got and what each event took.
fn progress(day_start: Instant, what: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(results_dir().join("soak-progress.txt"))
    {
        let _ = writeln!(f, "{:7.1} s  {what}", day_start.elapsed().as_secs_f64());
    }
}

fn run_for(secs: u64, f: impl FnOnce() -> Child) -> (std::process::ExitStatus, String) {
    finish_child(f(), Duration::from_secs(secs + 300))
}

/// Scheduler disables the kernel logged that are not ejections: a CPU
/// going on- or offline restarts every sched_ext scheduler.
fn real_ejections() -> Vec<String> {
    ejections(&dmesg())
        .into_iter()
        .filter(|l| !l.contains("unregistered from the main kernel"))
        .collect()
}

#[test]
fn a_compressed_day_on_a_busy_node() {
    require_guest();
    let n = nr_cpus();
    let secs = env_or("SCX_LINGER_DAY_SECS", 150);
    let eevdf_secs = (secs / 5).clamp(10, 120);
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
    let waits = Arc::new(Mutex::new(Waits::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let (window, gap) = if secs > 600 { (4, 26) } else { (4, 6) };
    let tracer = {
        let (stop, phase, waits) = (stop.clone(), phase.clone(), waits.clone());
        std::thread::spawn(move || {
            trace_waits(
                stop,
                phase,
                waits,
                Duration::from_secs(window),
                Duration::from_secs(gap),
            )
        })
    };

    // The same mix under EEVDF first: what the emulator does to any
    // scheduler shows here.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(eevdf_secs) {
        churn.tick(&mut rng, most_jobs);
        std::thread::sleep(Duration::from_secs(1));
    }
    // What the emulator alone does to this node, before any scx_linger
    // figure: it decides how many vCPUs a day can be run on (see
    // `cargo xtask soak --help`), so it is in the progress file at once.
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
    // The exit storm's baseline: how long its threads take to end
    // beside this load with no BPF scheduler (on 16 emulated vCPUs that
    // share one host thread, tens of seconds).
    let storm_eevdf = {
        let cg = TestCgroup::new(&format!("{}/storm-eevdf", root.rel));
        exit_storm(&cg, storm_threads, slow_limit(n))
    };
    progress(
        t0,
        &format!("EEVDF: {eevdf_secs} s of the mix, then an exit storm gone in {storm_eevdf:.1} s"),
    );
    let eevdf_trouble = kernel_trouble();
    *phase.lock().unwrap() = "scx_linger".into();
    require_guest();

    let (mut agent, first_load) = start_agent(&args, slow_limit(n));
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
    let mut helpers: Vec<(Child, &str, u64)> = Vec::new();
    // The cgroups of the day's events, removed with everything in them
    // at the end.
    let mut event_cgroups: Vec<TestCgroup> = Vec::new();
    let event_cgroup = |name: &str| {
        let cg = TestCgroup::new(&format!("{}/{name}", root.rel));
        label(&cg, if name == "memory" { "guest" } else { "primary" });
        cg
    };
    let cpu_last = format!("/sys/devices/system/cpu/cpu{}/online", n - 1);

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
            agent.signal(libc::SIGHUP);
            reloads += 1;
            next_reload += at(0.1).min(Duration::from_secs(120));
        }
        if now >= next_restart && (now < at(0.7) || restarts == 0) {
            agent = restart(agent, &args, slow_limit(n), &mut loads);
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
                let had = figures.len();
                match what {
                    "hotplug" if n > 1 => {
                        // The kernel restarts sched_ext schedulers on a
                        // hotplug; the agent loads again at once.
                        std::fs::write(&cpu_last, "0").expect("taking a CPU offline");
                        std::thread::sleep(Duration::from_secs(3));
                        std::fs::write(&cpu_last, "1").expect("bringing a CPU back");
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
                            "exit storm: {storm_threads} threads started, then all ended at once: gone in {took:.1} s ({:.2}x EEVDF's {storm_eevdf:.1} s)",
                            took / storm_eevdf.max(0.001)
                        ));
                        event_cgroups.push(cg);
                    }
                    "fork storm" => {
                        let cg = event_cgroup("forks");
                        helpers.push((
                            spawn_in(
                                &cg,
                                &format!(
                                    "exec stress-ng --fork {} --timeout 10s --temp-path /tmp",
                                    (n / 4).max(2)
                                ),
                            ),
                            "fork storm",
                            10,
                        ));
                        event_cgroups.push(cg);
                    }
                    "memory pressure" => {
                        let cg = event_cgroup("memory");
                        helpers.push((
                            spawn_in(
                                &cg,
                                "exec stress-ng --vm 2 --vm-bytes 30% --timeout 10s --temp-path /tmp",
                            ),
                            "memory pressure",
                            10,
                        ));
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
                        freeze(&root, true);
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
                        freeze(&root, false);
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
                        // guard's grants only. Gangs are frozen so that
                        // what is measured is strict priority alone.
                        let gangs: Vec<&TestCgroup> = base
                            .cgroups
                            .iter()
                            .filter(|c| c.rel.contains("gang"))
                            .collect();
                        gangs.iter().for_each(|g| freeze(g, true));
                        let cg = event_cgroup("full");
                        let hogs = cg.spin(n + 1);
                        std::thread::sleep(Duration::from_secs(3));
                        let guests = |b: &Base| -> f64 {
                            b.cgroups
                                .iter()
                                .filter(|c| c.rel.ends_with("/guest"))
                                .map(|c| usage_s(&c.path))
                                .sum()
                        };
                        let g0 = guests(&base);
                        let w = Instant::now();
                        std::thread::sleep(Duration::from_secs(6));
                        guest_share = (guests(&base) - g0) / (w.elapsed().as_secs_f64() * n as f64);
                        drop(hogs);
                        drop(cg);
                        gangs.iter().for_each(|g| freeze(g, false));
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
        helpers.retain_mut(|(c, what, _)| match c.try_wait() {
            Ok(Some(s)) => {
                assert!(matches!(s.code(), Some(0 | 3)), "{what} failed ({s})");
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
    for (c, what, secs) in helpers {
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
    assert!(trouble.is_empty(), "the kernel logged: {trouble:#?}");
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
