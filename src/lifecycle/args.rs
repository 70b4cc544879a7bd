// SPDX-License-Identifier: GPL-2.0-only
//! The options of `scx_linger run`, with their defaults from bpf/intf.h
//! and the labels' and gangs' own constants, and their accepted ranges.

use std::path::PathBuf;

use crate::bpf::intf;
use crate::labels::class;
use crate::observe::scx_stats;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Config file with cgroup rules (default: /etc/scx_linger/config.toml
    /// if present). An unreadable or invalid config stops the start. Given
    /// twice, the last wins: the unit passes the default before the
    /// environment file's flags, which may name another.
    #[arg(long, overrides_with = "config")]
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

    /// Gang relief: while gangs hold the CPUs, ordinary primary work may
    /// run --relief-slice-us in every this many microseconds on the node,
    /// at once when it wakes (0: it waits for the open phase at the end
    /// of each cycle).
    #[arg(long, alias = "relief-wait-us",
          default_value_t = intf::LINGER_DEFAULT_RELIEF_PERIOD_US as u64,
          value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub relief_period_us: u64,

    /// Gang relief: what ordinary work may run per period, and the
    /// longest turn, in microseconds.
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_RELIEF_SLICE_US as u64,
          value_parser = clap::value_parser!(u64).range(50..=100_000))]
    pub relief_slice_us: u64,

    /// The node's machinery (kernel threads, system services, Slurm's
    /// step daemons) beside gangs: it takes a gang member's CPU as it
    /// wakes, for at most --machinery-slice-us in every this many
    /// microseconds of each CPU (0: it waits like other work).
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_MACHINERY_PERIOD_US as u64,
          value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub machinery_period_us: u64,

    /// The node's machinery beside gangs: what it may run per period on
    /// each CPU, and the longest burst it banks, in microseconds.
    #[arg(long, default_value_t = intf::LINGER_DEFAULT_MACHINERY_SLICE_US as u64,
          value_parser = clap::value_parser!(u64).range(50..=1_000_000))]
    pub machinery_slice_us: u64,

    /// No wake-up preemption among primaries: a primary that sleeps most
    /// of its time (a shell, a daemon, an MPI progress thread, cyclictest)
    /// then waits for a CPU-bound primary's slice to end instead of
    /// taking the CPU when it wakes.
    #[arg(long)]
    pub no_wake_preempt: bool,

    /// sched_ext's partial mode: schedule only tasks whose policy is
    /// SCHED_EXT and leave every other task in the kernel's fair class
    /// (EEVDF), which then ranks above all of them. Ordinary primaries then
    /// wake exactly as under Linux's own scheduler; guests and gangs must
    /// be started as SCHED_EXT (`chrt --ext`, util-linux 2.41+, or
    /// sched_setattr), as the agent does not switch tasks itself. Under
    /// it, gang members rank below every fair task, and --guard-* cannot
    /// lift a starved guest above the fair class: kernels with a sched_ext
    /// deadline server (7.x) run starved guests through it, taking about 5%
    /// from busy primaries, and on kernels without one (6.12) guests
    /// starved past the watchdog timeout end the scheduler.
    #[arg(long)]
    pub partial: bool,

    /// Guests beside primaries on SMT cores. `avoid`: no guest starts on a
    /// CPU whose sibling hardware thread runs a primary, and one already
    /// there is moved off when a primary starts on the core, because a
    /// sibling's guest slows the primary through the core it shares.
    /// `share`: every hardware thread is a CPU of its own (the harvest of
    /// half-busy cores, at that cost). Nothing changes without SMT.
    #[arg(long, value_enum, default_value_t = SmtGuests::Avoid)]
    pub smt_guests: SmtGuests,

    /// Where each class's queue of waiting tasks lives. `llc`: one per
    /// last-level cache, which CPUs of the other caches steal from, so
    /// the node's CPUs do not all contend for one lock. `node`: one for
    /// the whole node (for comparison). The same
    /// on a node of one LLC.
    #[arg(long, value_enum, default_value_t = Queues::Llc)]
    pub queues: Queues,

    /// Read the whole cgroup tree again this often, in milliseconds: a
    /// safety net. Cgroups made, removed or relabelled (by `tag`,
    /// `setfattr` or `cpu.idle`) take effect at once through cgroupfs
    /// events; where those cannot be had (inotify limits) the agent
    /// rescans every second instead.
    #[arg(long, default_value_t = 600_000,
          value_parser = clap::value_parser!(u64).range(50..=86_400_000))]
    pub rescan_ms: u64,

    /// Default gang time slot, in ms (a gang's label may set its own).
    /// Gangs that fit on the CPUs together share a slot. The config's
    /// `[rows]`, where set, gives every primary gang slot its length.
    #[arg(long, default_value_t = class::DEFAULT_SLOT_MS as u64,
          value_parser = clap::value_parser!(u64).range(10..=1000))]
    pub slot_ms: u64,

    /// Share of each gang cycle, in percent, in which ordinary (non-gang)
    /// primary work comes before gangs. Outside it, ordinary work uses the
    /// CPUs the running gangs leave free. The config's `[rows]`, where
    /// set, has its own.
    #[arg(long, default_value_t = class::DEFAULT_OPEN_PCT,
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

    /// Export per-job series for at most N jobs, those with the most CPU
    /// time (0: none); scx_linger_jobs still counts them all. Bounds what a
    /// node sends Prometheus whatever runs on it.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub metrics_max_jobs: usize,

    /// Where the agent serves its stats (scx_stats' protocol): `stats`,
    /// `top`, `--monitor` and the scx tools read them there.
    #[arg(long, default_value = scx_stats::SOCKET)]
    pub stats_socket: PathBuf,

    /// Let this group read the stats socket (default: root only).
    #[arg(long, value_name = "GROUP")]
    pub stats_group: Option<String>,

    /// Load nothing: print a running scx_linger's figures every SECS
    /// seconds, read over scx_stats (/var/run/scx/root/stats) as the scx
    /// tools read them, until Ctrl-C.
    #[arg(long, value_name = "SECS")]
    pub monitor: Option<f64>,

    /// Load nothing: say what each field of the scx_stats view means.
    #[arg(long)]
    pub help_stats: bool,

    /// Turn off per-class and per-job accounting in BPF (to measure what
    /// counting costs; stats then show no CPU figures).
    #[arg(long)]
    pub no_accounting: bool,

    /// After the scheduler fails (a BPF error, a watchdog stall), load it
    /// again after a back-off of 1 s, 2 s, 4 s, ... (at most 30 s); give
    /// up after this many failed runs in a row. 0: never restart.
    #[arg(long, default_value_t = 5)]
    pub max_restarts: u32,

    /// Bytes of the kernel's debug dump (every CPU's queue and tasks) kept
    /// when the scheduler fails, printed to the log (0: the kernel's
    /// default, 32 KiB, which a node with thousands of runnable tasks
    /// outgrows).
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=64 << 20))]
    pub exit_dump_len: u32,

    /// Testing only: make the BPF side fail this long after each start.
    #[arg(long, hide = true)]
    pub debug_fail_after_ms: Option<u64>,

    /// Verbose: log libbpf's messages (verifier output on load failures).
    #[arg(short, long)]
    pub verbose: bool,
}

/// `--queues`: a queue per class per LLC, or one per class for the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Queues {
    Llc,
    Node,
}

/// `--smt-guests`: the policy of enum linger_smt_guests (bpf/intf.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SmtGuests {
    Avoid,
    Share,
}

impl SmtGuests {
    pub fn bpf_value(self) -> intf::linger_smt_guests {
        match self {
            SmtGuests::Avoid => intf::linger_smt_guests_LINGER_SMT_GUESTS_AVOID,
            SmtGuests::Share => intf::linger_smt_guests_LINGER_SMT_GUESTS_SHARE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        args: RunArgs,
    }

    #[test]
    fn a_config_named_in_the_environment_file_wins_over_the_units_default() {
        let run = Run::try_parse_from([
            "run",
            "--config",
            "/etc/scx_linger/config.toml",
            "--config",
            "/etc/scx_linger/site.toml",
        ])
        .unwrap();
        assert_eq!(run.args.config, Some("/etc/scx_linger/site.toml".into()));
    }
}
