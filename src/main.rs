// SPDX-License-Identifier: GPL-2.0-only
//! scx_linger: a sched_ext scheduler for shared compute nodes.
//!
//! The command line, and where each command lives:
//!
//! - `run` is the scheduler's whole life on the node (lifecycle/).
//! - `tag`, `untag` and `ls` are how an operator labels jobs (labels/);
//!   they work with or without a running agent.
//! - `stats` and `top` read the running agent's figures (observe/).
//!
//! The folders, from the bottom up (each imports only from those before
//! it): node.rs (the machine), bpf/ (the kernel side and the one header it
//! shares with us), labels/ (what each cgroup is), gangs/ (the slot
//! table), observe/ (figures), lifecycle/ (the run loop). README.md's
//! "Layout" section draws the data flow between them.
mod bpf;
mod gangs;
mod labels;
mod lifecycle;
mod node;
mod observe;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use labels::config::Config;
use labels::{cgroups, slurm, tag};
use lifecycle::RunArgs;
use node::Caps;
use observe::{log, server, top};

#[derive(Parser, Debug)]
#[command(
    name = "scx_linger",
    version,
    about = "sched_ext scheduler for shared compute nodes: guests take only idle cycles"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load the scheduler and run it until SIGINT/SIGTERM (needs root).
    #[command(after_help = lifecycle::EXIT_HELP)]
    Run(RunArgs),
    /// Label a cgroup (path relative to the cgroup2 mount, or absolute).
    Tag {
        cgroup: String,
        /// primary, guest, gang (a co-scheduled parallel job) or guest-gang.
        class: String,
        /// A gang's time slot in ms (default: the agent's --slot-ms).
        #[arg(long)]
        slot_ms: Option<u64>,
        /// Write the user. label even as root (it can only demote).
        #[arg(long)]
        user: bool,
    },
    /// Remove a cgroup's labels (root removes both; a user, the user. one).
    Untag { cgroup: String },
    /// Print the running agent's stats (classes, jobs, gangs).
    Stats {
        /// One JSON document per reading (schema: src/observe/schema.rs).
        #[arg(long)]
        json: bool,
        /// Keep printing a reading every S seconds.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3600))]
        interval: Option<u64>,
        /// Stop after N readings (with --interval).
        #[arg(long)]
        count: Option<u64>,
        /// The agent's stats socket.
        #[arg(long, default_value = server::SOCKET)]
        socket: PathBuf,
    },
    /// Full-screen live view of the running agent's stats (q quits).
    Top {
        /// The agent's stats socket.
        #[arg(long, default_value = server::SOCKET)]
        socket: PathBuf,
    },
    /// Slurm's Prolog or Epilog: record a job's partition, QOS, account
    /// and --linger request for the agent, or remove the record; `wait`
    /// (the SPANK plugin, in each task): wait until the agent has applied
    /// the job's class. Exits 0 (a failing Prolog drains the node), but 1
    /// when `wait` gives up; a problem is one line on stderr and the job
    /// goes on.
    Slurm {
        #[arg(value_enum)]
        hook: slurm::Hook,
    },
    /// List labelled cgroups with their effective class and its source.
    Ls {
        /// Every cgroup, labelled or not.
        #[arg(long)]
        all: bool,
        /// Config file (default: /etc/scx_linger/config.toml if present).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let verbose = matches!(&cli.command, Command::Run(a) if a.verbose);
    log::init(verbose);
    let result = match cli.command {
        Command::Run(args) => lifecycle::run(&args).map(|exit| ExitCode::from(exit.code())),
        Command::Tag {
            cgroup,
            class,
            slot_ms,
            user,
        } => {
            let ns = if user {
                tag::Namespace::User
            } else {
                tag::default_namespace(Caps::current())
            };
            cgroups::cgroup2_mount()
                .and_then(|m| tag::tag(&m, &cgroup, &class, slot_ms, ns))
                .map(print_ok)
        }
        Command::Untag { cgroup } => cgroups::cgroup2_mount()
            .and_then(|m| tag::untag(&m, &cgroup, Caps::current()))
            .map(print_ok),
        Command::Stats {
            json,
            interval,
            count,
            socket,
        } => server::print(&socket, json, interval, count).map(|_| ExitCode::SUCCESS),
        Command::Top { socket } => top::run(&socket).map(|_| ExitCode::SUCCESS),
        Command::Slurm { hook } => {
            match slurm::run_hook(hook, std::path::Path::new(slurm::RECORD_DIR)) {
                Ok(msg) => println!("{msg}"),
                // `wait` gave up: the SPANK plugin logs it (exit 1).
                Err(e) if hook == slurm::Hook::Wait => {
                    eprintln!("scx_linger slurm wait: {e:#} (the job goes on)");
                    return ExitCode::FAILURE;
                }
                Err(e) => eprintln!("scx_linger slurm {}: {e:#} (the job goes on)", hook.name()),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Ls { all, config } => Config::load(config.as_deref())
            .and_then(|cfg| tag::ls(&cgroups::cgroup2_mount()?, &cfg, all))
            .map(|table| {
                print!("{table}");
                ExitCode::SUCCESS
            }),
    };
    result.unwrap_or_else(|e| {
        eprintln!("scx_linger: {e:#}");
        ExitCode::FAILURE
    })
}

fn print_ok(msg: String) -> ExitCode {
    println!("{msg}");
    ExitCode::SUCCESS
}
