// SPDX-License-Identifier: GPL-2.0-only
//! scx_linger: a sched_ext scheduler for shared compute nodes.
//!
//! `scx_linger run` is the whole life of the scheduler: check the machine,
//! load the BPF program, attach it, report until asked to stop or until the
//! kernel ejects it, detach, report why it ended.
mod bpf_intf;
mod bpf_skel;
mod preflight;
mod scheduler;
mod stats;

use std::mem::MaybeUninit;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use log::{info, warn};

use scheduler::{Exit, Scheduler, Tunables};
use stats::Counters;

#[derive(Parser, Debug)]
#[command(
    name = "scx_linger",
    version,
    about = "sched_ext scheduler for shared compute nodes: guests take only idle cycles, gangs run together"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load the scheduler and run it until SIGINT/SIGTERM (needs root).
    Run(RunArgs),
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Slice a task may run before the CPU looks for other work, in
    /// microseconds. Long by default: compute jobs want few switches.
    #[arg(long, default_value_t = bpf_intf::LINGER_DEFAULT_SLICE_US as u64,
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    slice_us: u64,

    /// Print the scheduler's event counters every N seconds (0: never).
    #[arg(long, default_value_t = 0)]
    stats: u64,

    /// Verbose: log libbpf's messages (verifier output on load failures).
    #[arg(short, long)]
    verbose: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => {
            init_logging(args.verbose);
            match run(&args) {
                Ok(Exit::Requested) => ExitCode::SUCCESS,
                Ok(Exit::Kernel) => ExitCode::from(2),
                Err(e) => {
                    eprintln!("scx_linger: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn init_logging(verbose: bool) {
    let level = if verbose {
        simplelog::LevelFilter::Debug
    } else {
        simplelog::LevelFilter::Info
    };
    // Plain lines on stderr, whether or not it is a terminal: the agent
    // usually runs under systemd or a job script that keeps a log.
    let _ = simplelog::WriteLogger::init(
        level,
        simplelog::ConfigBuilder::new()
            .set_time_level(simplelog::LevelFilter::Off)
            .build(),
        std::io::stderr(),
    );
}

fn run(args: &RunArgs) -> Result<Exit> {
    preflight::check(Path::new("/"), preflight::Caps::current())?;

    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the SIGINT/SIGTERM handler")?;

    let tunables = Tunables {
        slice: Duration::from_micros(args.slice_us),
        libbpf_verbose: args.verbose,
    };
    let mut storage = MaybeUninit::uninit();
    let sched = Scheduler::load(&mut storage, &tunables)?;
    println!("scx_linger: scheduler enabled");

    let interval = Duration::from_secs(args.stats);
    let mut last = Counters::default();
    let mut last_print = Instant::now();
    while !shutdown.load(Ordering::Relaxed) && !sched.exited() {
        std::thread::sleep(Duration::from_millis(100));
        if args.stats > 0 && last_print.elapsed() >= interval {
            last_print = Instant::now();
            match sched.counters() {
                Ok(now) => {
                    info!("stats: {}", now.since(&last).line());
                    last = now;
                }
                Err(e) => warn!("{e:#}"),
            }
        }
    }

    let requested = !sched.exited();
    let exit = sched.shutdown(requested)?;
    println!("scx_linger: scheduler disabled");
    Ok(exit)
}
