// SPDX-License-Identifier: GPL-2.0-only
//! The scheduler's life on a node: `scx_linger run` checks the machine
//! and the config (preflight.rs), loads the BPF program and serves it
//! (session.rs) until asked to stop or until the kernel ends it, and then
//! decides whether to load it again (restart.rs).
//!
//! Owns: the run command's options, the order of start-up (nothing is
//! loaded before every input has been checked), the run loop's timing,
//! the restart decision and when the agent gives freed memory back
//! (memory.rs). Everything else is asked of the folders below it:
//! labels/ says what each cgroup is, gangs/ lays out the slot table,
//! observe/ turns readings into figures, bpf/ is the kernel side. Nothing
//! below imports from here.
mod args;
mod load_priority;
mod memory;
pub mod preflight;
pub mod restart;
pub mod session;

pub use args::RunArgs;

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use log::{info, warn};

use crate::bpf::program::Tunables;
use crate::labels::agent::{self, PidFile};
use crate::labels::config::Config;
use crate::labels::{cgroups, watch};
use crate::node::Caps;
use crate::observe::latest::Latest;
use crate::observe::{metrics, scx_stats};
use restart::Ending;
use session::Event;

/// How the agent ended, and its exit status (the one home of the codes;
/// docs/operating.md ("Exit codes") lists them, with 1 for an error the agent
/// reported, such as bad input or a failed load, and 2 for a usage
/// error, clap's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Asked to stop (SIGINT/SIGTERM).
    Requested,
    /// Someone else stopped the scheduler (sysrq-S, an unregister, the
    /// kernel ending it without an error): an operator's decision, which
    /// a service manager should not override by restarting.
    Stopped,
    /// The scheduler failed too often in a row (--max-restarts).
    GaveUp,
}

/// `run --help`'s list of exit statuses; a unit test holds it to
/// Exit::code().
pub const EXIT_HELP: &str = "Exit status: 0 stopped on request (SIGINT/SIGTERM); 1 an error it reported (bad input, a failed load); 2 a usage error; 3 stopped by someone else (sysrq-S, an unregister): do not restart; 4 gave up after failing more than --max-restarts times in a row. Every task runs on the kernel's default scheduler after any of them.";

impl Exit {
    pub const STOPPED_CODE: u8 = 3;
    pub const GAVE_UP_CODE: u8 = 4;

    pub fn code(self) -> u8 {
        match self {
            Exit::Requested => 0,
            Exit::Stopped => Self::STOPPED_CODE,
            Exit::GaveUp => Self::GAVE_UP_CODE,
        }
    }
}

pub fn run(args: &RunArgs) -> Result<Exit> {
    // The scx tools' conventions: these two load nothing.
    if args.help_stats {
        scx_stats::describe(&mut std::io::stdout())?;
        return Ok(Exit::Requested);
    }
    if let Some(secs) = args.monitor {
        if !(secs.is_finite() && secs > 0.0) {
            anyhow::bail!("--monitor {secs}: give the seconds between readings, above 0");
        }
        scx_stats::monitor(Duration::from_secs_f64(secs))?;
        return Ok(Exit::Requested);
    }
    preflight::check(Path::new("/"), Caps::current())?;
    // Everything that can be wrong with the input is checked before the
    // scheduler is loaded: a bad config changes nothing.
    let mut cfg = Config::load(args.config.as_deref())?;
    let mount = cgroups::cgroup2_mount()?;
    memory::no_huge_pages();

    let (tx, events) = mpsc::channel();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGUSR1,
        signal_hook::consts::SIGHUP,
    ])
    .context("installing signal handlers")?;
    // Cgroups made, removed or relabelled arrive as events; without them
    // (no inotify) the run loop rescans the tree every second instead.
    let mut blind = false;
    let watch_tx = tx.clone();
    let sample_tx = tx.clone();
    if let Err(e) = watch::spawn(&mount, move |c| watch_tx.send(Event::Tree(c)).is_ok()) {
        warn!("cannot watch the cgroup tree ({e:#}): the agent rescans every cgroup periodically");
        blind = true;
    }
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let ev = match sig {
                signal_hook::consts::SIGUSR1 => Event::Rescan,
                signal_hook::consts::SIGHUP => Event::Reload,
                _ => Event::Stop,
            };
            if tx.send(ev).is_err() {
                break;
            }
        }
    });

    let tunables = Tunables {
        primary_slice: Duration::from_micros(args.primary_slice_us),
        guest_slice: Duration::from_micros(args.guest_slice_us),
        guard_interval: Duration::from_millis(args.guard_interval_ms),
        guard_slice: Duration::from_micros(args.guard_slice_us),
        relief_period: Duration::from_micros(args.relief_period_us),
        relief_slice: Duration::from_micros(args.relief_slice_us),
        machinery_period: Duration::from_micros(args.machinery_period_us),
        machinery_slice: Duration::from_micros(args.machinery_slice_us),
        wake_preempt: !args.no_wake_preempt,
        partial: args.partial,
        smt_guests: args.smt_guests.bpf_value(),
        llc_queues: args.queues == args::Queues::Llc,
        accounting: !args.no_accounting,
        debug_fail_after: args.debug_fail_after_ms.map(Duration::from_millis),
        exit_dump_len: args.exit_dump_len,
        libbpf_verbose: args.verbose,
    };
    // The stats socket and the metrics endpoint come up before the
    // scheduler, so a bad address or group changes nothing.
    let latest: Latest = Default::default();
    latest.on_stale(move || {
        let _ = sample_tx.send(Event::Sample);
    });
    let _socket = scx_stats::serve(
        latest.clone(),
        &args.stats_socket,
        args.stats_group.as_deref(),
    )?;
    if let Some(addr) = &args.metrics_addr {
        metrics::serve(addr, latest.clone(), args.metrics_max_jobs)?;
        info!("metrics at http://{addr}/metrics");
    }
    if let Some(p) = &cfg.path {
        info!("config {} ({})", p.display(), cfg.describe_rules());
    }
    let _pid_file = PidFile::create(Path::new(agent::PID_FILE));

    // Load, serve, and when the kernel ends a run, load again if the
    // restart policy says so (restart.rs). Every task keeps running in
    // between, on the kernel's default scheduler.
    let mut policy = restart::Policy::new(args.max_restarts);
    loop {
        let started = Instant::now();
        let ended = session::run(
            args, &mut cfg, &mount, &tunables, &events, &latest, &mut blind,
        )?;
        match policy.after(ended.ending, started.elapsed()) {
            restart::Decision::Stop => {
                return Ok(if ended.ending == Ending::Requested {
                    Exit::Requested
                } else {
                    Exit::Stopped
                });
            }
            restart::Decision::GiveUp => {
                eprintln!(
                    "scx_linger: giving up after {} failed runs in a row (last: {}); the kernel's default scheduler runs every task",
                    policy.failures(),
                    ended.why
                );
                return Ok(Exit::GaveUp);
            }
            restart::Decision::Restart(wait) => {
                warn!(
                    "restarting in {:.1} s after: {} ({} failed runs in a row, at most {})",
                    wait.as_secs_f64(),
                    ended.why,
                    policy.failures(),
                    policy.max_failures
                );
                if stop_requested_within(&events, wait, &mut blind, &mut cfg, args) {
                    return Ok(Exit::Requested);
                }
                latest.note_restart();
            }
        }
    }
}

/// Wait out a restart's delay; true if asked to stop meanwhile. Other
/// events need no answer now (the next run reads the whole tree), but a
/// watch gone blind stays so, and a reload is done now (the next run
/// uses the config it read).
fn stop_requested_within(
    events: &mpsc::Receiver<Event>,
    wait: std::time::Duration,
    blind: &mut bool,
    cfg: &mut Config,
    args: &RunArgs,
) -> bool {
    let until = Instant::now() + wait;
    loop {
        match events.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(Event::Stop) => return true,
            Ok(Event::Reload) => {
                session::reload_config(cfg, args);
            }
            Ok(Event::Tree(watch::Change::Blind(why))) if !*blind => {
                warn!("{why}");
                *blind = true;
            }
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_distinct_and_documented() {
        let all = [Exit::Requested, Exit::Stopped, Exit::GaveUp];
        let codes: Vec<u8> = all.iter().map(|e| e.code()).collect();
        assert_eq!(codes, [0, 3, 4], "1 and 2 are an error and a usage error");
        for (e, what) in
            all.iter()
                .zip(["stopped on request", "stopped by someone else", "gave up"])
        {
            assert!(EXIT_HELP.contains(&format!("{} {what}", e.code())), "{e:?}");
        }
    }
}
