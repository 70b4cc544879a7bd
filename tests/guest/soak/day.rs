// SPDX-License-Identifier: GPL-2.0-only
//! The day's loads and what it reads of the node: the jobs that come and
//! go, the base load, the agent's restarts, the storms, the kernel's
//! figures (the test and its checks: mod.rs).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::common::*;

/// The xattr a job's class is given by (as `scx_linger tag` writes it).
pub(super) const CLASS_XATTR: &str = "trusted.scx_linger.class";

/// A small deterministic generator: the day's choices are repeatable from
/// the seed it prints.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A job of the churn: its cgroup, what runs in it, when it ends.
pub(super) struct Job {
    pub(super) cg: TestCgroup,
    pub(super) child: Child,
    pub(super) ends: Instant,
}

/// A barrier gang job that waits the way parallel jobs do: thread 0
/// sleeps 20 ms every 100 rounds while its partners spin at the barrier.
pub(super) fn gang_job(cg: &TestCgroup, threads: usize) -> Child {
    spawn_in(
        cg,
        &format!(
            "exec {} --threads {threads} --rounds 1000000000 --iters 20000 --nap-ms 20 --nap-every 100",
            bench_bin("barrier").display()
        ),
    )
}

pub(super) fn label(cg: &TestCgroup, class: &str) {
    xattr_set(&cg.path, CLASS_XATTR, class);
}

/// The day's base load: it runs from start to end.
pub(super) struct Base {
    pub(super) cgroups: Vec<TestCgroup>,
    pub(super) children: Vec<Child>,
    pub(super) hogs: Vec<Hogs>,
}

/// Full primary load for 9 s: `n + 1` CPU-bound primaries in `cg` on `n`
/// CPUs, with the base load's gangs frozen so that what is measured is
/// strict priority alone. Returns the guests' share of the CPUs over its
/// last 6 s (the starvation guard's grants only, under scx_linger).
pub(super) fn full_load(base: &Base, cg: TestCgroup, n: usize) -> f64 {
    let gangs: Vec<&TestCgroup> = base
        .cgroups
        .iter()
        .filter(|c| c.rel.contains("gang"))
        .collect();
    gangs.iter().for_each(|g| g.freeze(true));
    let hogs = cg.spin(n + 1);
    std::thread::sleep(Duration::from_secs(3));
    let guests = || -> f64 {
        base.cgroups
            .iter()
            .filter(|c| c.rel.ends_with("/guest"))
            .map(|c| usage_s(&c.path))
            .sum()
    };
    let g0 = guests();
    let w = Instant::now();
    std::thread::sleep(Duration::from_secs(6));
    let share = (guests() - g0) / (w.elapsed().as_secs_f64() * n as f64);
    drop(hogs);
    drop(cg);
    gangs.iter().for_each(|g| g.freeze(false));
    share
}

/// Memory pressure, 10 s: two stress-ng workers each touching 30% of the
/// node's memory, in `cg` (a guest job of the day).
pub(super) fn memory_pressure(cg: &TestCgroup) -> Child {
    spawn_in(
        cg,
        "exec stress-ng --vm 2 --vm-bytes 30% --timeout 10s --temp-path /tmp",
    )
}

/// A fork storm, 10 s: a stress-ng fork worker for every fourth of the
/// node's `n` CPUs, in `cg`.
pub(super) fn fork_storm(cg: &TestCgroup, n: usize) -> Child {
    spawn_in(
        cg,
        &format!(
            "exec stress-ng --fork {} --timeout 10s --temp-path /tmp",
            (n / 4).max(2)
        ),
    )
}

/// The node's last CPU (`online`, its sysfs file) offline for 3 s, then
/// back.
pub(super) fn cpu_off_and_back(online: &str) {
    std::fs::write(online, "0").expect("taking a CPU offline");
    std::thread::sleep(Duration::from_secs(3));
    std::fs::write(online, "1").expect("bringing a CPU back");
}

pub(super) fn enable_cpuset(dir: &Path) {
    let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+cpuset");
}

pub(super) fn start_base(root: &TestCgroup, n: usize, secs: u64) -> Base {
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
pub(super) struct Churn {
    pub(super) root: TestCgroup,
    pub(super) live: Vec<Job>,
    pub(super) started: u64,
    pub(super) flips: u64,
}

pub(super) const CLASSES: [&str; 4] = ["primary", "guest", "gang", "guest-gang"];

impl Churn {
    pub(super) fn tick(&mut self, rng: &mut Rng, most: usize) {
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
pub(super) struct Row {
    pub(super) t: f64,
    pub(super) tasks: u64,
    pub(super) jobs: usize,
    pub(super) cpus: [f64; 3],
    pub(super) longest_wait: f64,
    pub(super) restarts: u64,
}

pub(super) fn tasks_now() -> u64 {
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
pub(super) fn day_agent() -> String {
    std::env::var("SCX_LINGER_DAY_AGENT").unwrap_or_else(|_| AGENT.to_string())
}

/// `stats --json`, when the agent answers.
pub(super) fn stats_if_answered() -> Option<serde_json::Value> {
    let out = agent_output(std::process::Command::new(day_agent()).args(["stats", "--json"]));
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// CPUs each tier used in the last reading: primary (with its gangs),
/// guest (with guest-gangs), and the share that went to gangs.
pub(super) fn class_cpus(v: &serde_json::Value) -> [f64; 3] {
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
pub(super) fn usage_s(path: &Path) -> f64 {
    usage_us(path).unwrap_or(0) as f64 / 1e6
}

/// Cgroups removed but not yet released by the kernel (the root's
/// cgroup.stat `nr_dying_descendants`).
pub(super) fn dying_cgroups() -> u64 {
    std::fs::read_to_string(Path::new(CGROUP_ROOT).join("cgroup.stat"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("nr_dying_descendants "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Every job's CPU time as `stats --json` and cpu.stat give it, with the
/// day frozen so both stand still; the agent's reading runs every second.
/// A job that is not frozen yet is left out: a guest freezes only when it
/// runs, on the starvation guard's trickle while primaries want every
/// CPU, and one still running would be read a second apart by the two.
pub(super) fn job_cpu(root: &TestCgroup) -> BTreeMap<String, (f64, f64)> {
    root.freeze(true);
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
    root.freeze(false);
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
pub(super) fn slow_limit(n: usize) -> Duration {
    Duration::from_secs(600 * (n as u64 / 16).max(1))
}

/// Start the agent on a node whose every CPU is busy: verifying the BPF
/// program then takes minutes of one emulated vCPU's share.
pub(super) fn start_agent(args: &[&str], limit: Duration) -> (Agent, f64) {
    let t = Instant::now();
    let a = Agent::start_within(Path::new(&day_agent()), args, limit);
    (a, t.elapsed().as_secs_f64())
}

/// Start the agent again after a SIGKILL, as systemd's Restart= does.
pub(super) fn restart(agent: Agent, args: &[&str], limit: Duration, loads: &mut Vec<f64>) -> Agent {
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
pub(super) fn exit_storm(cg: &TestCgroup, threads: u64, limit: Duration) -> f64 {
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
pub(super) struct DriverSlice {
    pub(super) home: PathBuf,
    pub(super) slice: PathBuf,
}

impl DriverSlice {
    pub(super) fn enter() -> DriverSlice {
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

pub(super) fn move_self(cg: &Path) {
    std::fs::write(cg.join("cgroup.procs"), std::process::id().to_string())
        .unwrap_or_else(|e| panic!("moving the test into {}: {e}", cg.display()));
}

/// One line of the day's progress, appended to soak-progress.txt in the
/// results folder as it happens: a day cut short (a timeout, a kill)
/// still says how far it got and what each event took.
pub(super) fn progress(day_start: Instant, what: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(results_dir().join("soak-progress.txt"))
    {
        let _ = writeln!(f, "{:7.1} s  {what}", day_start.elapsed().as_secs_f64());
    }
}

pub(super) fn run_for(secs: u64, f: impl FnOnce() -> Child) -> (std::process::ExitStatus, String) {
    finish_child(f(), Duration::from_secs(secs + 300))
}

/// Scheduler disables the kernel logged that are not ejections: a CPU
/// going on- or offline restarts every sched_ext scheduler.
pub(super) fn real_ejections() -> Vec<String> {
    ejections(&dmesg())
        .into_iter()
        .filter(|l| !l.contains("unregistered from the main kernel"))
        .collect()
}
