// SPDX-License-Identifier: GPL-2.0-only
//! The scheduler's life on a node: `scx_linger run` checks the machine
//! and the config (preflight.rs), loads the BPF program and serves it
//! (session.rs) until asked to stop or until the kernel ends it, and then
//! decides whether to load it again (restart.rs).
//!
//! Owns: the run command's options, the order of start-up (nothing is
//! loaded before every input has been checked), the run loop's timing and
//! the restart decision. Everything else is asked of the folders below it:
//! labels/ says what each cgroup is, gangs/ packs the slot table,
//! observe/ turns readings into figures, bpf/ is the kernel side. Nothing
//! below imports from here.
pub mod preflight;
pub mod restart;
pub mod session;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use log::{info, warn};

use crate::bpf::intf;
use crate::bpf::program::Tunables;
use crate::gangs;
use crate::labels::class;
use crate::labels::config::Config;
use crate::labels::{cgroups, tag};
use crate::node::Caps;
use crate::observe::{metrics, server};
use restart::Ending;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Config file with cgroup rules (default: /etc/scx_linger/config.toml
    /// if present). An unreadable or invalid config stops the start.
    #[arg(long)]
    pub config: Option<PathBuf>,

    /// Slice of a primary task, in microseconds. Long by default: compute
    /// jobs want few switches, and only a higher class preempts.
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_PRIMARY_SLICE_US as u64,
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub primary_slice_us: u64,

    /// Slice of a guest task, in microseconds. Guests are kicked off as
    /// soon as a primary wants the CPU, whatever this is.
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_GUEST_SLICE_US as u64,
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub guest_slice_us: u64,

    /// Starvation guard: starved guests get a grant after this long.
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_GUARD_INTERVAL_MS as u64,
          value_parser = clap::value_parser!(u64).range(10..=10_000))]
    pub guard_interval_ms: u64,

    /// Starvation guard: length of one grant, in microseconds.
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_GUARD_SLICE_US as u64,
          value_parser = clap::value_parser!(u64).range(50..=100_000))]
    pub guard_slice_us: u64,

    /// Gang relief: while gangs hold the CPUs, ordinary primary work that
    /// has waited this long gets a short turn (microseconds; 0: it waits
    /// for the open phase at the end of each cycle).
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_RELIEF_WAIT_US as u64,
          value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub relief_wait_us: u64,

    /// Gang relief: length of that turn, in microseconds.
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_RELIEF_SLICE_US as u64,
          value_parser = clap::value_parser!(u64).range(50..=100_000))]
    pub relief_slice_us: u64,

    /// Rescan cgroup labels at least this often, in milliseconds (`tag`
    /// also triggers a rescan at once).
    #[arg(long, default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(50..=60_000))]
    pub rescan_ms: u64,

    /// Default gang time slot, in ms (a gang's label may set its own).
    /// Gangs that fit on the CPUs together share a slot.
    #[arg(long, default_value_t = class::DEFAULT_SLOT_MS as u64,
          value_parser = clap::value_parser!(u64).range(10..=1000))]
    pub slot_ms: u64,

    /// Share of each gang cycle, in percent, in which ordinary (non-gang)
    /// primary work comes before gangs. Outside it, ordinary work uses the
    /// CPUs the running gangs leave free.
    #[arg(long, default_value_t = gangs::table::DEFAULT_OPEN_PCT,
          value_parser = clap::value_parser!(u32).range(1..=50))]
    pub gang_open_pct: u32,

    /// Print the scheduler's event counters every N seconds (0: never).
    #[arg(long, default_value_t = 0)]
    pub stats: u64,

    /// Serve Prometheus metrics at http://ADDR/metrics (e.g.
    /// 127.0.0.1:9464). Off by default; bind to loopback unless the
    /// network in between is trusted.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<String>,

    /// Where `stats` and `top` reach the agent.
    #[arg(long, default_value = server::SOCKET)]
    pub stats_socket: PathBuf,

    /// Let this group read the stats socket (default: root only).
    #[arg(long, value_name = "GROUP")]
    pub stats_group: Option<String>,

    /// Turn off per-class and per-job accounting in BPF (to measure what
    /// counting costs; stats then show no CPU figures).
    #[arg(long)]
    pub no_accounting: bool,

    /// After the scheduler fails (a BPF error, a watchdog stall), load it
    /// again after a back-off of 1 s, 2 s, 4 s, ... (at most 30 s); give
    /// up after this many failed runs in a row. 0: never restart.
    #[arg(long, default_value_t = 5)]
    pub max_restarts: u32,

    /// Testing only: make the BPF side fail this long after each start.
    #[arg(long, hide = true)]
    pub debug_fail_after_ms: Option<u64>,

    /// Verbose: log libbpf's messages (verifier output on load failures).
    #[arg(short, long)]
    pub verbose: bool,
}

/// How the agent ended.
pub enum Exit {
    /// Asked to stop (SIGINT/SIGTERM).
    Requested,
    /// The scheduler was stopped by someone else, or failed too often.
    Kernel,
}

/// What wakes the run loop.
pub enum Event {
    Stop,
    Rescan,
}

pub fn run(args: &RunArgs) -> Result<Exit> {
    preflight::check(Path::new("/"), Caps::current())?;
    // Everything that can be wrong with the input is checked before the
    // scheduler is loaded: a bad config changes nothing.
    let cfg = Config::load(args.config.as_deref())?;
    let mount = cgroups::cgroup2_mount()?;

    let (tx, events) = mpsc::channel();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGUSR1,
    ])
    .context("installing signal handlers")?;
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let ev = if sig == signal_hook::consts::SIGUSR1 {
                Event::Rescan
            } else {
                Event::Stop
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
        relief_wait: Duration::from_micros(args.relief_wait_us),
        relief_slice: Duration::from_micros(args.relief_slice_us),
        accounting: !args.no_accounting,
        debug_fail_after: args.debug_fail_after_ms.map(Duration::from_millis),
        libbpf_verbose: args.verbose,
    };
    // The stats socket and the metrics endpoint come up before the
    // scheduler, so a bad address or group changes nothing.
    let latest: server::Latest = Default::default();
    let _socket = server::serve(
        &args.stats_socket,
        args.stats_group.as_deref(),
        latest.clone(),
    )?;
    if let Some(addr) = &args.metrics_addr {
        metrics::serve(addr, latest.clone())?;
        info!("metrics at http://{addr}/metrics");
    }
    if let Some(p) = &cfg.path {
        info!("config {} ({} rules)", p.display(), cfg.rules.len());
    }
    let _pid_file = PidFile::create(Path::new(tag::PID_FILE));

    // Load, serve, and when the kernel ends a run, load again if the
    // restart policy says so (restart.rs). Every task keeps running in
    // between, on the kernel's default scheduler.
    let mut policy = restart::Policy::new(args.max_restarts);
    loop {
        let started = Instant::now();
        let ended = session::run(args, &cfg, &mount, &tunables, &events, &latest)?;
        match policy.after(ended.ending, started.elapsed()) {
            restart::Decision::Stop => {
                return Ok(if ended.ending == Ending::Requested {
                    Exit::Requested
                } else {
                    Exit::Kernel
                });
            }
            restart::Decision::GiveUp => {
                eprintln!(
                    "scx_linger: giving up after {} failed runs in a row (last: {}); the kernel's default scheduler runs every task",
                    policy.failures(),
                    ended.why
                );
                return Ok(Exit::Kernel);
            }
            restart::Decision::Restart(wait) => {
                warn!(
                    "restarting in {:.1} s after: {} ({} failed runs in a row, at most {})",
                    wait.as_secs_f64(),
                    ended.why,
                    policy.failures(),
                    policy.max_failures
                );
                if let Ok(Event::Stop) = events.recv_timeout(wait) {
                    return Ok(Exit::Requested);
                }
            }
        }
    }
}

/// /run/scx_linger.pid while the agent runs, so `tag` can notify it.
struct PidFile(PathBuf);

impl PidFile {
    fn create(path: &Path) -> Option<PidFile> {
        match std::fs::write(path, format!("{}\n", std::process::id())) {
            Ok(()) => Some(PidFile(path.to_path_buf())),
            Err(e) => {
                warn!(
                    "cannot write {} ({e}): `tag` will take effect at the next periodic rescan",
                    path.display()
                );
                None
            }
        }
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
