// SPDX-License-Identifier: GPL-2.0-only
//! One reading of the stats (schema.rs) a second: the BPF side's
//! counters, turned into rates against the previous reading, with job
//! names and classes from the agent's last label scan, and the machine's
//! idle time from the kernel's own accounting (/proc/stat).
//!
//! It also retires the accounting of jobs whose cgroups are gone: an
//! entry is dropped once a label scan made after it first appeared no
//! longer lists its cgroup, so a cgroup created between two scans is
//! never mistaken for a removed one.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::counters::Counters;
use super::gang_figures::{gang_stats, rotation_views};
use super::histogram;
use super::log;
use super::schema::*;
use crate::bpf::intf::linger_cpu_acct;
use crate::bpf::program::{JobAccount, Scheduler};
use crate::gangs::rotation::Rotation;
use crate::labels::cgroups::Resolved;
use crate::labels::class::Class;
use crate::node;

/// Readings the run-delay percentiles span (about 10 s).
const DELAY_WINDOW: usize = 10;
/// History points kept for `top` (5 minutes of 1 s readings).
const HISTORY: usize = 300;

/// The agent's latest label scan: every cgroup with its class and source,
/// indexed by id once per label change rather than at every reading (at
/// 10,000 cgroups that index was most of an idle agent's CPU).
#[derive(Default)]
pub struct Labelled {
    pub at: Option<Instant>,
    pub cgroups: Vec<Resolved>,
    by_id: HashMap<u64, usize>,
    /// The newest cgroup the scan named (the largest id).
    newest: u64,
}

impl Labelled {
    pub fn new(at: Instant, cgroups: Vec<Resolved>) -> Labelled {
        let by_id = cgroups.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        let newest = cgroups.iter().map(|r| r.id).max().unwrap_or(0);
        Labelled {
            at: Some(at),
            cgroups,
            by_id,
            newest,
        }
    }

    fn get(&self, id: u64) -> Option<&Resolved> {
        self.by_id.get(&id).and_then(|&i| self.cgroups.get(i))
    }
}

#[derive(Clone, Copy)]
struct Reading {
    at: Instant,
    acct: linger_cpu_acct,
    idle_ns: u64,
}

pub struct Sampler {
    started: Instant,
    first: Option<Reading>,
    window: VecDeque<Reading>,
    history: VecDeque<HistoryPoint>,
    prev_jobs: HashMap<u64, u64>,
    first_seen: HashMap<u64, Instant>,
    /// The newest cgroup any scan has named (the largest id).
    newest_named: u64,
    /// Each job's most threads on CPUs at once, over the samples.
    peak_running: HashMap<u64, u64>,
}

/// idle + iowait of all CPUs from /proc/stat's first line, in ns.
pub fn proc_stat_idle_ns(text: &str, ticks_per_s: u64) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let ticks = f.get(3)? + f.get(4).copied().unwrap_or(0);
    Some(ticks * (1_000_000_000 / ticks_per_s.max(1)))
}

fn idle_ns() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    let hz = sysconf(SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100, |t| t.max(1) as u64);
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| proc_stat_idle_ns(&t, hz))
        .unwrap_or(0)
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// sched_ext's state now and the scheduler it runs, as sysfs says.
pub fn sched_ext_now() -> (String, String) {
    (
        read_trimmed("/sys/kernel/sched_ext/state"),
        read_trimmed("/sys/kernel/sched_ext/root/ops"),
    )
}

/// The node: kernel, CPUs, which sched_ext scheduler runs, load.
pub fn node() -> Node {
    let load: Vec<f64> = read_trimmed("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .filter_map(|v| v.parse().ok())
        .collect();
    let (state, scheduler) = sched_ext_now();
    Node {
        hostname: read_trimmed("/proc/sys/kernel/hostname"),
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        cpus: node::online_cpus(),
        state,
        scheduler,
        loadavg: [0, 1, 2].map(|i| load.get(i).copied().unwrap_or(0.0)),
        clock: node::clock_sync(),
        ..Default::default()
    }
}

impl Sampler {
    pub fn new() -> Sampler {
        Sampler {
            started: Instant::now(),
            first: None,
            window: VecDeque::with_capacity(DELAY_WINDOW + 1),
            history: VecDeque::with_capacity(HISTORY + 1),
            prev_jobs: HashMap::new(),
            first_seen: HashMap::new(),
            newest_named: 0,
            peak_running: HashMap::new(),
        }
    }

    /// Take a reading. Figures that cannot be read are left empty: the
    /// stats never stop the scheduler.
    pub fn sample(
        &mut self,
        sched: &Scheduler,
        rotation: &Rotation,
        labelled: &Labelled,
    ) -> Snapshot {
        let now = Instant::now();
        let cur = Reading {
            at: now,
            acct: sched.class_accounts().unwrap_or_else(|_| zero_acct()),
            idle_ns: idle_ns(),
        };
        let first = *self.first.get_or_insert(cur);
        let prev = self.window.back().copied().unwrap_or(first);
        let oldest = self.window.front().copied().unwrap_or(first);
        let dt = now.duration_since(prev.at).as_secs_f64().max(1e-3);

        let mut node = node();
        node.agent_pid = std::process::id();
        node.agent_uptime_s = now.duration_since(self.started).as_secs_f64();
        node.accounting = sched.accounting();
        let cpus = f64::from(node.cpus.max(1));

        let classes: Vec<ClassStats> = Class::ALL
            .iter()
            .map(|c| class_stats(*c, &cur.acct, &prev.acct, &oldest.acct, dt))
            .collect();
        let idle_cpus_now = cur.idle_ns.saturating_sub(prev.idle_ns) as f64 / 1e9 / dt;
        let machine = Machine {
            interval_s: dt,
            idle_cpus_now,
            guest_harvest_now: harvest_between(&prev, &cur, cpus),
            guest_harvest: harvest_between(&first, &cur, cpus),
        };

        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(HistoryPoint {
            time_ms: log::now_ms(),
            cpus: Class::ALL.map(|c| classes[c.index()].cpus_now),
            idle: idle_cpus_now,
        });
        if self.window.len() == DELAY_WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(cur);

        let events = sched
            .counters_per_cpu()
            .map(|per_cpu| {
                Counters::sum_per_cpu(&per_cpu)
                    .named()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
            })
            .unwrap_or_default();
        let table = rotation.table();
        Snapshot {
            schema: SCHEMA,
            time_ms: log::now_ms(),
            node,
            machine,
            classes,
            events,
            jobs: self.jobs(sched, labelled, dt),
            gangs: gang_stats(rotation, sched),
            rotations: rotation_views(table, node::tai_now()),
            history: self.history.iter().cloned().collect(),
            log: log::recent(),
        }
    }

    fn jobs(&mut self, sched: &Scheduler, labelled: &Labelled, dt: f64) -> Vec<JobStats> {
        let now = Instant::now();
        let mut jobs = Vec::new();
        let mut cpu_now = HashMap::new();
        self.newest_named = self.newest_named.max(labelled.newest);
        for JobAccount {
            id,
            acct: ja,
            on_cpus: running,
        } in sched.job_accounts()
        {
            let seen = *self.first_seen.entry(id).or_insert(now);
            let Some(r) = labelled.get(id) else {
                if account_gone(labelled.at, self.newest_named, id, seen, now) {
                    sched.forget_job(id);
                    self.first_seen.remove(&id);
                    self.peak_running.remove(&id);
                    continue;
                }
                // New since the last scan: named at the next one.
                cpu_now.insert(id, ja.cpu_ns);
                continue;
            };
            let before = self.prev_jobs.get(&id).copied().unwrap_or(ja.cpu_ns);
            cpu_now.insert(id, ja.cpu_ns);
            let peak = self.peak_running.entry(id).or_insert(0);
            *peak = (*peak).max(running);
            jobs.push(JobStats {
                id,
                path: format!("/{}", r.rel),
                class: r.class.to_string(),
                // A multi-node gang job without a row here says so where
                // the operator looks at jobs (stats, top).
                source: if r.rowless {
                    format!(
                        "{}; on several nodes without a cluster row: not a gang here",
                        r.source
                    )
                } else {
                    r.source.to_string()
                },
                slurm_job_id: r.slurm_job,
                rowless: r.rowless,
                cpu_seconds: ja.cpu_ns as f64 / 1e9,
                cpus_now: ja.cpu_ns.saturating_sub(before) as f64 / 1e9 / dt,
                threads_runnable: ja.nr_runnable.max(0) as u64,
                threads_running: running,
                cpus_max: *peak,
                runs: ja.runs,
                run_delay_p99_us: histogram::percentile_us(&ja.delay_hist, 99),
            });
        }
        self.first_seen.retain(|id, _| cpu_now.contains_key(id));
        self.peak_running.retain(|id, _| cpu_now.contains_key(id));
        self.prev_jobs = cpu_now;
        jobs.sort_by(|a, b| {
            b.cpus_now
                .total_cmp(&a.cpus_now)
                .then(b.cpu_seconds.total_cmp(&a.cpu_seconds))
        });
        jobs
    }
}

fn zero_acct() -> linger_cpu_acct {
    bytemuck::Zeroable::zeroed()
}

/// Class `a`'s figures: totals from `cur`, rates against `prev`, run
/// delay percentiles over the window since `oldest`.
fn class_stats(
    class: Class,
    cur: &linger_cpu_acct,
    prev: &linger_cpu_acct,
    oldest: &linger_cpu_acct,
    dt: f64,
) -> ClassStats {
    let a = class.index();
    let runs = cur.runs[a].saturating_sub(oldest.runs[a]);
    let delay = cur.delay_ns[a].saturating_sub(oldest.delay_ns[a]);
    let hist = histogram::since(&cur.delay_hist[a], &oldest.delay_hist[a]);
    ClassStats {
        class: class.name().to_string(),
        cpu_seconds: cur.cpu_ns[a] as f64 / 1e9,
        cpus_now: cur.cpu_ns[a].saturating_sub(prev.cpu_ns[a]) as f64 / 1e9 / dt,
        runs: cur.runs[a],
        run_delay_mean_us_now: (runs > 0).then(|| delay as f64 / runs as f64 / 1e3),
        run_delay_p50_us_now: histogram::percentile_us(&hist, 50),
        run_delay_p99_us_now: histogram::percentile_us(&hist, 99),
        run_delay_seconds: cur.delay_ns[a] as f64 / 1e9,
        run_delay_hist: cur.delay_hist[a].to_vec(),
    }
}

/// Guest harvest between two readings (see schema::harvest).
fn harvest_between(from: &Reading, to: &Reading, cpus: f64) -> Option<f64> {
    let d = |a: usize| to.acct.cpu_ns[a].saturating_sub(from.acct.cpu_ns[a]) as f64;
    let wall = to.at.duration_since(from.at).as_nanos() as f64;
    if wall < 1e8 {
        return None;
    }
    let tier = |t: Class| {
        Class::ALL
            .iter()
            .filter(|c| c.tier() == t)
            .map(|c| d(c.index()))
            .sum::<f64>()
    };
    harvest(tier(Class::Guest), tier(Class::Primary), cpus * wall)
}

/// How long a job account may go unnamed before an id no newer than a
/// named cgroup's says its cgroup is gone: a live cgroup is named within
/// the agent's settle time (at most 250 ms) or a blind rescan (1 s).
const UNNAMED_GRACE: Duration = Duration::from_secs(3);

/// Whether the cgroup of job account `id`, first seen at `seen` and
/// absent from the latest scan (made at `scan_at`), is gone, where
/// `newest` is the newest cgroup any scan has named. Either that scan
/// began after the account was first seen, or the account has gone
/// unnamed for UNNAMED_GRACE and a scan named it or a cgroup made after
/// it: cgroup ids only grow (kernfs hands them out in order, with a
/// generation above its 32-bit counter). A cgroup made and removed
/// between two readings is first seen after the scan its removal
/// caused, and without the second rule waited for the next cgroup event
/// anywhere on the node to be forgotten.
fn account_gone(
    scan_at: Option<Instant>,
    newest: u64,
    id: u64,
    seen: Instant,
    now: Instant,
) -> bool {
    scan_at.is_some_and(|at| at > seen)
        || (now.saturating_duration_since(seen) >= UNNAMED_GRACE && id <= newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_account_is_forgotten_once_its_cgroup_is_known_gone() {
        let t0 = Instant::now();
        let later = |s: u64| t0 + Duration::from_secs(s);
        // A scan after the first sighting did not name it: gone.
        assert!(account_gone(Some(later(1)), 5, 9, t0, later(1)));
        // First seen after the last scan, newer than anything it named:
        // a cgroup the next scan will name, however long that takes.
        assert!(!account_gone(Some(t0), 5, 9, later(1), later(60)));
        // Older than a cgroup a scan named, but only just seen: the
        // scan for it may still be settling.
        assert!(!account_gone(Some(t0), 12, 9, later(1), later(2)));
        // Named once, or older than a named cgroup, and unnamed past the
        // grace: gone.
        assert!(account_gone(Some(t0), 12, 9, later(1), later(4)));
        assert!(account_gone(Some(t0), 9, 9, later(1), later(4)));
        // No scan yet: nothing is known gone.
        assert!(!account_gone(None, 0, 9, t0, later(60)));
    }

    #[test]
    fn idle_from_proc_stat() {
        let text = "cpu  100 0 50 1000 20 0 0 0 0 0\ncpu0 50 0 25 500 10 0 0 0 0 0\n";
        // (1000 + 20) ticks of 10 ms.
        assert_eq!(proc_stat_idle_ns(text, 100), Some(10_200_000_000));
        assert_eq!(proc_stat_idle_ns("intr 5\n", 100), None);
    }
}
