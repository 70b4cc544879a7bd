// SPDX-License-Identifier: GPL-2.0-only
//! The agent's one stats socket: scx_stats, the sched-ext project's stats
//! protocol (JSON requests over the Unix socket /var/run/scx/root/stats),
//! so that the scx tools read scx_linger as they read scx_bpfland or
//! scx_layered. It serves two targets from the same reading (latest.rs):
//!
//! - "top", what scx tools ask for by default: LingerStats, a view of
//!   schema::Snapshot that `scx_linger run --monitor SECS` prints and
//!   `scx_linger run --help-stats` describes. Why a view rather than the
//!   schema itself: scx_stats' derive takes numbers, strings, structs,
//!   Vecs and maps, not Options, and a figure that is not known yet must
//!   not read as a measured 0. Here it is -1, and each such field's
//!   description says so.
//! - "snapshot", the whole reading as schema::Snapshot, which `stats`,
//!   `stats --json` and `top` ask for (client.rs).
//!
//! Who may read: the socket is root's with mode 0600. `run --stats-group
//! G` makes it 0660 and group G's, so the operator can let a group watch.
//! What it serves is scheduling figures and cgroup paths, nothing else,
//! and it takes no request that changes anything.

use std::collections::BTreeMap;
use std::time::Duration;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use super::latest::Latest;
use super::schema::Snapshot;

/// What stands for a figure not known yet (no sample in the interval).
const UNKNOWN: f64 = -1.0;

fn known(v: Option<f64>) -> f64 {
    v.unwrap_or(UNKNOWN)
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top, desc = "scx_linger: the node, each class, each job and each gang")]
pub struct LingerStats {
    #[stat(desc = "CPUs online")]
    pub cpus: u64,
    #[stat(desc = "sched_ext's state (/sys/kernel/sched_ext/state)")]
    pub state: String,
    #[stat(desc = "Seconds the _now figures cover")]
    pub interval_s: f64,
    #[stat(desc = "CPUs idle over the interval (/proc/stat)")]
    pub idle_cpus_now: f64,
    #[stat(
        desc = "Guest CPU time / CPU time the primaries left unused, over the interval (-1: no idle time to harvest)"
    )]
    pub guest_harvest_now: f64,
    #[stat(desc = "1: the clock is synchronised (adjtimex); 0: it is not; -1: unreadable")]
    pub clock_synchronised: i64,
    #[stat(desc = "The clock's estimated error (us; -1: unreadable)")]
    pub clock_error_us: f64,
    #[stat(desc = "Per class: primary, guest, gang, guest-gang")]
    pub classes: BTreeMap<String, ClassStat>,
    #[stat(desc = "Per job, by cgroup path")]
    pub jobs: BTreeMap<String, JobStat>,
    #[stat(desc = "Per gang, by cgroup path")]
    pub gangs: BTreeMap<String, GangStat>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "One class", _om_prefix = "class_", _om_label = "class")]
pub struct ClassStat {
    #[stat(desc = "CPU time since the agent started (s)")]
    pub cpu_seconds: f64,
    #[stat(desc = "CPUs used over the interval")]
    pub cpus_now: f64,
    #[stat(desc = "Times one of its tasks started running")]
    pub runs: u64,
    #[stat(desc = "Median run delay over the interval (us; -1: no runs)")]
    pub run_delay_p50_us_now: f64,
    #[stat(desc = "99th percentile run delay over the interval (us; -1: no runs)")]
    pub run_delay_p99_us_now: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "One job", _om_prefix = "job_", _om_label = "cgroup")]
pub struct JobStat {
    #[stat(desc = "Its class")]
    pub class: String,
    #[stat(desc = "Where the class comes from")]
    pub source: String,
    #[stat(desc = "Its Slurm job id (0: not a Slurm job)")]
    pub slurm_job_id: u64,
    #[stat(desc = "CPU time since the agent saw it (s)")]
    pub cpu_seconds: f64,
    #[stat(desc = "CPUs used over the interval")]
    pub cpus_now: f64,
    #[stat(desc = "Threads runnable now")]
    pub threads_runnable: u64,
    #[stat(desc = "Threads running now")]
    pub threads_running: u64,
    #[stat(desc = "99th percentile run delay (us; -1: no runs yet)")]
    pub run_delay_p99_us: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "One gang", _om_prefix = "gang_", _om_label = "cgroup")]
pub struct GangStat {
    #[stat(desc = "gang or guest-gang")]
    pub class: String,
    #[stat(desc = "The cluster row its multi-node job leads (-1: a gang of this node only)")]
    pub row: i64,
    #[stat(desc = "Members runnable now")]
    pub size: u64,
    #[stat(desc = "Slots it has run")]
    pub slots: u64,
    #[stat(desc = "CPU time (s)")]
    pub cpu_seconds: f64,
    #[stat(desc = "CPU time other work ran on CPUs its slots left free (s)")]
    pub backfill_seconds: f64,
    #[stat(desc = "99th percentile skew of its members' starts in a slot (us; -1: unknown)")]
    pub skew_p99_us: f64,
}

/// The view of one reading.
pub fn view(s: &Snapshot) -> LingerStats {
    LingerStats {
        cpus: u64::from(s.node.cpus),
        state: s.node.state.clone(),
        interval_s: s.machine.interval_s,
        idle_cpus_now: s.machine.idle_cpus_now,
        guest_harvest_now: known(s.machine.guest_harvest_now),
        clock_synchronised: s.node.clock.map_or(-1, |c| i64::from(c.synchronised)),
        clock_error_us: s.node.clock.map_or(UNKNOWN, |c| c.est_error_us as f64),
        classes: s
            .classes
            .iter()
            .map(|c| {
                let stat = ClassStat {
                    cpu_seconds: c.cpu_seconds,
                    cpus_now: c.cpus_now,
                    runs: c.runs,
                    run_delay_p50_us_now: known(c.run_delay_p50_us_now),
                    run_delay_p99_us_now: known(c.run_delay_p99_us_now),
                };
                (c.class.clone(), stat)
            })
            .collect(),
        jobs: s
            .jobs
            .iter()
            .map(|j| {
                let stat = JobStat {
                    class: j.class.clone(),
                    source: j.source.clone(),
                    slurm_job_id: j.slurm_job_id.unwrap_or(0),
                    cpu_seconds: j.cpu_seconds,
                    cpus_now: j.cpus_now,
                    threads_runnable: j.threads_runnable,
                    threads_running: j.threads_running,
                    run_delay_p99_us: known(j.run_delay_p99_us),
                };
                (j.path.clone(), stat)
            })
            .collect(),
        gangs: s
            .gangs
            .iter()
            .map(|g| {
                let stat = GangStat {
                    class: g.class.clone(),
                    row: g.row.map_or(-1, i64::from),
                    size: u64::from(g.size),
                    slots: g.slots,
                    cpu_seconds: g.cpu_seconds,
                    backfill_seconds: g.backfill_seconds,
                    skew_p99_us: known(g.skew_p99_us),
                };
                (g.path.clone(), stat)
            })
            .collect(),
    }
}

/// Where scx tools look for a scheduler's stats, and where the agent
/// serves them by default.
pub const SOCKET: &str = "/var/run/scx/root/stats";
/// The target that serves the whole reading, and its argument that asks
/// for the CPU history too ("1").
pub const SNAPSHOT_TARGET: &str = "snapshot";
pub const HISTORY_ARG: &str = "history";

/// What the scx_stats server knows: the structs' metadata and the two
/// targets it serves from one reading.
fn server_data(latest: Option<Latest>) -> StatsServerData<(), ()> {
    let data = StatsServerData::new()
        .add_meta(LingerStats::meta())
        .add_meta(ClassStat::meta())
        .add_meta(JobStat::meta())
        .add_meta(GangStat::meta());
    let Some(latest) = latest else {
        return data;
    };
    let whole = latest.clone();
    data.add_stats(
        "top",
        Box::new(move |_args, _chan| {
            let snap = latest
                .get()
                .ok_or_else(|| anyhow!("scx_linger has no reading yet"))?;
            view(&snap).to_json()
        }),
    )
    .add_stats(
        SNAPSHOT_TARGET,
        Box::new(move |args, _chan| {
            let mut snap = whole
                .get()
                .ok_or_else(|| anyhow!("scx_linger has no reading yet"))?;
            if args.get(HISTORY_ARG).map(String::as_str) != Some("1") {
                snap.history.clear();
            }
            Ok(serde_json::to_value(&snap)?)
        }),
    )
}

fn group_id(name: &str) -> Result<u32> {
    match nix::unistd::Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        Ok(None) => {
            bail!("unknown group {name:?} for --stats-group: name an existing group (getent group)")
        }
        Err(e) => Err(e).with_context(|| format!("looking up group {name:?} for --stats-group")),
    }
}

/// Serve both targets at `path` until the returned server is dropped: root
/// alone may connect, or `group` too.
pub fn serve(latest: Latest, path: &Path, group: Option<&str>) -> Result<StatsServer<(), ()>> {
    let gid = group.map(group_id).transpose()?;
    if UnixStream::connect(path).is_ok() {
        bail!(
            "another scx_linger agent serves stats at {}: stop it first",
            path.display()
        );
    }
    let server = StatsServer::new(server_data(Some(latest)))
        .set_path(path)
        .launch()
        .with_context(|| format!("cannot serve stats at {}", path.display()))?;
    let mode = if gid.is_some() { 0o660 } else { 0o600 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    if let Some(gid) = gid {
        std::os::unix::fs::chown(path, None, Some(gid))
            .with_context(|| format!("giving {} to group {gid}", path.display()))?;
        // scx_stats makes the directories above it with the agent's umask
        // (0700 under the unit's UMask=0077): let the group pass through
        // them, as everyone may through /run; the socket's own mode and
        // group decide who connects.
        for dir in path.ancestors().skip(1).take(2) {
            let mode = std::fs::metadata(dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .permissions()
                .mode();
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o011))
                .with_context(|| format!("setting the mode of {}", dir.display()))?;
        }
    }
    Ok(server)
}

/// `--help-stats`: what each field means, as scx tools print it.
pub fn describe(out: &mut impl std::io::Write) -> Result<()> {
    server_data(None).describe_meta(out, None)
}

/// `--monitor SECS`: print a running agent's view every `interval`, as an
/// scx_stats client (the scx tools' own loop, scx_utils::monitor_stats),
/// until SIGINT.
pub fn monitor(interval: Duration) -> Result<()> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone())?;
    scx_utils::monitor_stats::<LingerStats>(
        &[],
        interval,
        || stop.load(std::sync::atomic::Ordering::Relaxed),
        |s| match print_view(&mut std::io::stdout().lock(), &s) {
            // Its reader went away (`run --monitor 1 | head`): done.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            other => other.map_err(Into::into),
        },
    )
}

fn print_view(out: &mut impl std::io::Write, s: &LingerStats) -> std::io::Result<()> {
    let harvest = if s.guest_harvest_now < 0.0 {
        "-".to_string()
    } else {
        format!("{:.0}%", s.guest_harvest_now * 100.0)
    };
    writeln!(
        out,
        "[scx_linger] {} cpus {} idle {:.2} guest harvest {harvest}",
        s.state, s.cpus, s.idle_cpus_now
    )?;
    for (name, c) in &s.classes {
        writeln!(
            out,
            "  {name:<11} cpus {:>6.2} runs {:>10} delay p50 {:>8.0} us p99 {:>8.0} us",
            c.cpus_now, c.runs, c.run_delay_p50_us_now, c.run_delay_p99_us_now
        )?;
    }
    let mut jobs: Vec<_> = s.jobs.iter().collect();
    jobs.sort_by(|a, b| b.1.cpus_now.total_cmp(&a.1.cpus_now));
    for (path, j) in jobs.iter().take(10) {
        writeln!(out, "  job {path} {} cpus {:.2}", j.class, j.cpus_now)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::schema::{ClassStats, JobStats};

    #[test]
    fn the_view_keeps_unknown_figures_unknown_and_names_slurm_jobs() {
        let mut s = Snapshot::default();
        s.classes.push(ClassStats {
            class: "guest".into(),
            run_delay_p99_us_now: Some(12.0),
            ..Default::default()
        });
        s.jobs.push(JobStats::slurm_guest_42());
        let v = view(&s);
        assert_eq!(v.classes["guest"].run_delay_p99_us_now, 12.0);
        assert_eq!(v.classes["guest"].run_delay_p50_us_now, UNKNOWN);
        assert_eq!(v.guest_harvest_now, UNKNOWN);
        let j = &v.jobs["/system.slice/slurmstepd.scope/job_42"];
        assert_eq!((j.slurm_job_id, j.run_delay_p99_us), (42, UNKNOWN));
        // It round-trips through the protocol's JSON.
        let json = v.to_json().unwrap();
        assert_eq!(serde_json::from_value::<LingerStats>(json).unwrap(), v);
    }

    #[test]
    fn help_stats_describes_every_struct() {
        let mut out = Vec::new();
        describe(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for name in [
            "LingerStats",
            "ClassStat",
            "JobStat",
            "GangStat",
            "slurm_job_id",
        ] {
            assert!(text.contains(name), "{name} missing from:\n{text}");
        }
    }
}
