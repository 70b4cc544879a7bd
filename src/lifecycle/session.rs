// SPDX-License-Identifier: GPL-2.0-only
//! One run of the scheduler: load it, then keep its labels, gang table
//! and stats in step with the node until the agent is asked to stop or
//! the kernel ends the run. Scheduling never waits on this loop: the BPF
//! side decides on its own with what it was last given.

use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::Result;
use log::{debug, info, warn};
use sd_notify::NotifyState;

use super::args::RunArgs;
use super::load_priority::LoadPriority;
use super::memory::Trim;
use super::restart::Ending;
use crate::bpf::program::{CpuLimit, Scheduler, Tunables};
use crate::gangs::rotation::Rotation;
use crate::labels::class::Class;
use crate::labels::config::Config;
use crate::labels::slurm;
use crate::labels::tree::{Dirty, Tree};
use crate::labels::watch::Change;
use crate::observe::counters::Counters;
use crate::observe::gang_figures;
use crate::observe::latest::Latest;
use crate::observe::sampler::{Labelled, Sampler};

/// How a run ended, and the kernel's words for why.
pub struct Ended {
    pub ending: Ending,
    pub why: String,
}

/// What wakes the run loop: the signal thread and the cgroup watch
/// (lifecycle/mod.rs) send these.
pub enum Event {
    Stop,
    /// `tag` changed a label, or the Slurm Prolog wrote a job's record
    /// (SIGUSR1): apply what changed now.
    Rescan,
    /// A stats client found the reading stale: take one now.
    Sample,
    /// Read the config again (SIGHUP: `systemctl reload`).
    Reload,
    Tree(Change),
}

/// Read the config again from where it came from (`--config`, else the
/// default path) and make it the one in use; on an error, say so in one
/// line and keep the one in use. True if it changed. The scheduler stays
/// loaded either way.
pub fn reload_config(cfg: &mut Config, args: &RunArgs) -> bool {
    match Config::load(args.config.as_deref()) {
        Ok(new) => {
            match &new.path {
                Some(p) => info!("config {} reloaded ({})", p.display(), new.describe_rules()),
                None => info!("config reloaded: no config file, no rules"),
            }
            *cfg = new;
            true
        }
        Err(e) => {
            warn!("config reload failed, keeping the one in use: {e:#}");
            false
        }
    }
}

/// Tell systemd (Type=notify) how the agent stands; nothing without
/// NOTIFY_SOCKET. A failure to tell is only logged: scheduling never
/// depends on it.
pub fn notify_service_manager(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        warn!("cannot notify the service manager: {e}");
    }
}

/// How often the stats are read while a client (`stats`, `top`,
/// Prometheus) has asked for them within WATCHED_FOR (what `top`
/// refreshes at), and otherwise. Under icount one reading cost the agent
/// 3 ms of guest CPU; at 1 s that was most of an idle agent's 0.4% of a
/// CPU.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
const SAMPLE_UNWATCHED: Duration = Duration::from_secs(10);
const WATCHED_FOR: Duration = Duration::from_secs(60);
/// How often the loop looks at the kernel at the least (an ejection is
/// noticed within this; every task runs on the kernel's scheduler
/// meanwhile).
const EJECT_WATCH: Duration = Duration::from_secs(1);
/// Cgroup events are gathered at least this long before they are
/// applied: a job manager makes a job's cgroups (job, step, task) in one
/// burst.
const SETTLE: Duration = Duration::from_millis(10);
/// Each pass over the labels costs time in proportion to the whole tree,
/// so events are gathered for this many times the last pass's cost: in
/// a burst of thousands of cgroups made one at a time, the passes then
/// take at most a fifth of a CPU (while a pass is under SETTLE_MAX / 4),
/// instead of a pass per cgroup.
const SETTLE_PER_PASS: u32 = 4;
/// ... but never longer than this, so that a new job's class is in BPF
/// well within the 2 s a Slurm job waits for it (slurm::WAIT_LIMIT).
const SETTLE_MAX: Duration = Duration::from_millis(250);

/// The full rescan's interval when changes cannot be watched (watch.rs).
const BLIND_RESCAN: Duration = Duration::from_secs(1);
/// How often, while gangs exist, their cpusets are read again (a job
/// manager may move a job's cores) and too-big gangs looked for. Sizing
/// and admission are BPF's, at every change: nothing here waits on this.
const REPACK_EVERY: Duration = Duration::from_secs(1);

/// How often the clock's synchronisation is looked at where the config
/// sets cluster rows (the only case in which nodes' clocks must agree).
const CLOCK_CHECK_EVERY: Duration = Duration::from_secs(30);

/// How long to gather events after a pass that took `pass`.
fn settle_after(pass: Duration) -> Duration {
    (pass * SETTLE_PER_PASS).clamp(SETTLE, SETTLE_MAX)
}

/// Say once, when it changes, whether the clock is good enough for rows
/// of `rows`: `last` is what was said before.
fn check_clock(cfg: &Config, last: &mut Option<Option<String>>) {
    let Some(rows) = cfg.rows else {
        *last = None;
        return;
    };
    let clock = crate::node::clock_sync();
    let fault = match clock {
        Some(c) => c.fault_for(rows.slot),
        None => Some("the clock's synchronisation state cannot be read (adjtimex refused: a seccomp filter such as systemd's ProtectClock=yes?): multi-node gang jobs may meet in their rows only by chance".into()),
    };
    if last.as_ref() == Some(&fault) {
        return;
    }
    match (&fault, clock) {
        (Some(why), _) => warn!("{why}"),
        (None, Some(c)) => info!("clock: {} (fit for cluster rows)", c.describe()),
        (None, None) => {}
    }
    *last = Some(fault);
}

/// Hand BPF the cpu.max of every limited cgroup in `tree` (a no-op where
/// the kernel passes the limits itself). A failure keeps what BPF has.
fn publish_limits(sched: &mut Scheduler, tree: &Tree) {
    let want: BTreeMap<u64, CpuLimit> = tree
        .cgroups()
        .filter_map(|c| Some((c.id, c.cpu_max?.entry())))
        .collect();
    match sched.sync_limits(&want) {
        Ok(0) => {}
        Ok(changed) => info!(
            "cpu.max: {} limited cgroups; {changed} map entries changed",
            want.len()
        ),
        Err(e) => warn!("handing cpu.max limits to BPF failed, keeping the previous ones: {e:#}"),
    }
}

/// What the last publish_labels() left: the labels for the stats, and
/// the counts of labelled cgroups the log last said.
#[derive(Default)]
struct Published {
    labelled: Labelled,
    /// The log says at `info` when these counts change; a job manager's
    /// unlabelled cgroups coming and going are `debug`, else a burst of
    /// thousands of cgroups is thousands of lines in the journal.
    said: String,
    /// The multi-node jobs running without a row here that the log has
    /// named (by cgroup id), so that each is named once.
    rowless: std::collections::BTreeSet<u64>,
}

/// Hand BPF the labels of every cgroup in `tree` (resolved again below
/// what changed); keep them in `published`
/// for the stats. A failure keeps the labels BPF already has: scheduling
/// never waits on the agent. Returns true if any label (or the cluster rows) changed.
fn publish_labels(
    sched: &mut Scheduler,
    rotation: &mut Rotation,
    published: &mut Published,
    tree: &mut Tree,
    cfg: &Config,
) -> bool {
    let started = Instant::now();
    publish_limits(sched, tree);
    let resolved_now = tree.resolve(cfg.default_class);
    let resolved = tree.resolved();
    let reshaped = rotation.set_rows(cfg.rows);
    let want = rotation.label_entries(resolved.clone());
    let count = |c: Class| resolved.clone().filter(|r| r.own && r.class == c).count();
    let counts = Class::ALL.map(|c| format!("{} {c}", count(c))).join(", ");
    let own = resolved.clone().filter(|r| r.own).count();
    let rowless: std::collections::BTreeSet<u64> = resolved
        .clone()
        .filter(|r| r.rowless)
        .map(|r| r.id)
        .collect();
    for r in resolved
        .clone()
        .filter(|r| r.rowless && !published.rowless.contains(&r.id))
    {
        let job = r
            .slurm_job
            .map(|j| format!("Slurm job {j} (/{})", r.rel))
            .unwrap_or_else(|| format!("/{}", r.rel));
        warn!("{job} spans several nodes and has no cluster row here: it runs as ordinary {} work with a gang's share of the cycle, not a gang slotted on this node alone", r.class);
    }
    published.rowless = rowless;
    let result = sched.sync_labels(want);
    if result.is_ok() {
        // BPF has every class now: release the Slurm jobs waiting on it.
        slurm::mark_applied(
            Path::new(slurm::RECORD_DIR),
            resolved
                .clone()
                .filter_map(|r| Some((r.slurm_job?, r.class.name()))),
        );
    }
    // The stats' copy is made again only when an answer changed.
    if resolved_now > 0 || published.labelled.at.is_none() {
        published.labelled = Labelled::new(started, resolved.cloned().collect());
    } else {
        published.labelled.at = Some(started);
    }
    match result {
        Ok(changed) if changed > 0 => {
            let line = format!(
                "labels: {own} labelled cgroups ({counts}) of {}, {resolved_now} resolved again; {changed} map entries changed in {:?}",
                tree.count(),
                started.elapsed()
            );
            if published.said == counts {
                debug!("{line}");
            } else {
                info!("{line}");
                published.said = counts;
            }
            true
        }
        Ok(_) => {
            debug!(
                "labels: {} cgroups, no change, {:?}",
                tree.count(),
                started.elapsed()
            );
            reshaped
        }
        Err(e) => {
            warn!("handing labels to BPF failed, keeping the previous labels: {e:#}");
            false
        }
    }
}

/// Load the scheduler and serve it until it ends (see the module comment).
///
/// `blind` says the cgroup watch cannot see every change (watch.rs); it
/// outlives the run, as the watch does.
pub fn run(
    args: &RunArgs,
    cfg: &mut Config,
    mount: &Path,
    tunables: &Tunables,
    events: &Receiver<Event>,
    latest: &Latest,
    blind: &mut bool,
) -> Result<Ended> {
    let mut storage = MaybeUninit::uninit();
    let priority = LoadPriority::raise();
    let mut sched = Scheduler::load(&mut storage, tunables)?;
    let mut rotation = Rotation::new(
        mount,
        Duration::from_millis(args.slot_ms),
        args.gang_open_pct,
        sched.cpu_llcs(),
    );
    let mut published = Published::default();
    // Labels first, then attach: no task is ever scheduled as a primary
    // just because the first scan had not finished (a restart under load).
    // Changes from here on arrive as events and are applied one cgroup at
    // a time; the full rescan is a safety net.
    let mut tree = Tree::scan(mount, cfg);
    publish_labels(&mut sched, &mut rotation, &mut published, &mut tree, cfg);
    sched.attach()?;
    drop(priority);
    let mut sampler = Sampler::new();
    let mut trim = Trim::new();
    println!("scx_linger: scheduler enabled");
    // Ready: every cgroup is labelled and the scheduler runs.
    notify_service_manager(&[NotifyState::Ready, NotifyState::Status("scheduler enabled")]);

    let rescan_every = |blind: bool| {
        let every = Duration::from_millis(args.rescan_ms);
        if blind {
            every.min(BLIND_RESCAN)
        } else {
            every
        }
    };
    let stats_every = Duration::from_secs(args.stats);
    let mut next_rescan = Instant::now() + rescan_every(*blind);
    let mut dirty: Vec<Dirty> = Vec::new();
    let mut next_apply: Option<Instant> = None;
    let mut settle = SETTLE;
    let mut next_repack = Some(Instant::now());
    let mut next_stats = Instant::now() + stats_every;
    let mut next_sample = Instant::now();
    let mut next_clock_check = Instant::now();
    let mut clock_said = None;
    let mut last = Counters::default();
    let mut requested = false;
    // A reload is done once its relabelling is published.
    let mut reloaded = false;
    while !sched.exited() {
        // Wake at least every second to notice the kernel ejecting us.
        let mut wake = next_rescan
            .min(next_sample)
            .min(Instant::now() + EJECT_WATCH);
        for at in [next_apply, next_repack].into_iter().flatten() {
            wake = wake.min(at);
        }
        if args.stats > 0 {
            wake = wake.min(next_stats);
        }
        match events.recv_timeout(wake.saturating_duration_since(Instant::now())) {
            Ok(Event::Stop) => {
                notify_service_manager(&[NotifyState::Stopping]);
                requested = true;
                break;
            }
            Ok(Event::Rescan) if *blind => next_rescan = Instant::now(),
            Ok(Event::Rescan) => {
                // `tag`'s labels come with cgroupfs events of their own; a
                // Slurm job's record does not.
                for d in tree.slurm_job_dirs() {
                    if !dirty.contains(&d) {
                        dirty.push(d);
                    }
                }
                next_apply = Some(Instant::now());
            }
            Ok(Event::Sample) => next_sample = Instant::now(),
            Ok(Event::Reload) => {
                notify_service_manager(&[NotifyState::Reloading]);
                if reload_config(cfg, args) {
                    dirty = vec![Dirty::All];
                    next_apply = Some(Instant::now());
                    reloaded = true;
                } else {
                    notify_service_manager(&[NotifyState::Ready]);
                }
            }
            Ok(Event::Tree(Change::Dirty(d))) => {
                for d in d {
                    if !dirty.contains(&d) {
                        dirty.push(d);
                    }
                }
                next_apply.get_or_insert(Instant::now() + settle);
            }
            Ok(Event::Tree(Change::Blind(why))) => {
                if !*blind {
                    warn!("{why}");
                    *blind = true;
                    next_rescan = Instant::now() + rescan_every(true);
                }
            }
            Err(_) => {}
        }
        let now = Instant::now();
        if now >= next_clock_check {
            check_clock(cfg, &mut clock_said);
            next_clock_check = now + CLOCK_CHECK_EVERY;
        }
        trim.tick(now);
        if now >= next_rescan {
            dirty = vec![Dirty::All];
            next_apply = Some(now);
            next_rescan = now + rescan_every(*blind);
        }
        if next_apply.is_some_and(|at| now >= at) {
            next_apply = None;
            let started = Instant::now();
            for d in dirty.drain(..) {
                tree.refresh(mount, cfg, &d);
            }
            debug!("cgroup tree read again in {:?}", started.elapsed());
            let changed = publish_labels(&mut sched, &mut rotation, &mut published, &mut tree, cfg);
            settle = settle_after(started.elapsed());
            if std::mem::take(&mut reloaded) {
                notify_service_manager(&[NotifyState::Ready]);
            }
            if changed {
                // A new gang's slot at once: the table needs no counts.
                next_repack = Some(now);
                let soon = now + Duration::from_millis(200);
                // The reading is also what forgets the accounting of
                // removed jobs: take it soon after the tree changed.
                next_sample = next_sample.min(soon);
            }
        }
        if next_repack.is_some_and(|at| now >= at) {
            if let Err(e) = rotation.update(&mut sched) {
                warn!("gang table update failed, keeping the previous one: {e:#}");
            }
            // Without gangs there is nothing to look at until a label
            // changes (which sets it again above).
            next_repack = rotation.has_gangs().then(|| now + REPACK_EVERY);
        }
        if now >= next_sample {
            latest.set(sampler.sample(&sched, &rotation, &published.labelled));
            // Every second while someone looks (or the log wants stats).
            let watched = args.stats > 0 || latest.watched(WATCHED_FOR);
            next_sample = now
                + if watched {
                    SAMPLE_EVERY
                } else {
                    SAMPLE_UNWATCHED
                };
        }
        if args.stats > 0 && now >= next_stats {
            next_stats = now + stats_every;
            match sched.counters_per_cpu() {
                Ok(per_cpu) => {
                    let c = Counters::sum_per_cpu(&per_cpu);
                    info!("stats: {}", c.since(&last).line());
                    last = c;
                    for line in gang_figures::summary(&rotation, &sched) {
                        info!("stats: {line}");
                    }
                }
                Err(e) => warn!("{e:#}"),
            }
        }
    }

    for line in gang_figures::summary(&rotation, &sched) {
        info!("{line}");
    }
    let exit = sched.shutdown();
    println!("scx_linger: scheduler disabled");
    let ending = if requested {
        Ending::Requested
    } else {
        Ending::from_exit(exit.kind, exit.restart_requested)
    };
    Ok(Ended {
        ending,
        why: exit.why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_gather_longer_after_a_costly_pass_but_never_near_slurms_wait() {
        assert_eq!(settle_after(Duration::ZERO), SETTLE);
        assert_eq!(
            settle_after(Duration::from_millis(20)),
            Duration::from_millis(80)
        );
        assert_eq!(settle_after(Duration::from_secs(10)), SETTLE_MAX);
        // A job's class reaches BPF after the gathering and one pass; the
        // Prolog waits slurm::WAIT_LIMIT for it.
        assert!(SETTLE_MAX * 4 <= slurm::WAIT_LIMIT);
    }
}
