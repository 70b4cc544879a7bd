// SPDX-License-Identifier: GPL-2.0-only
//! Developer and CI tasks for scx_linger (`cargo xtask …`).
//!
//! Our own machines run kernels without sched_ext, so every scheduler test
//! runs in a QEMU guest (software emulation) booting a Debian kernel that has
//! it. These tasks install what that needs, fetch or build the kernels, boot
//! the guest, and run the tests and the demo there. Everything they download
//! or build is cached outside the git tree (see `paths`), so a second run
//! costs only what changed.
//!
//! Modules, from the bottom up: paths.rs (the cache and the tree),
//! progress.rs (step headers),
//! setup/ (packages, tools, kernels), vm.rs (one guest boot), then the
//! tasks: test.rs, demo.rs, bench/ (each group of experiments in its own
//! file over bench/common.rs) and verifier.rs (the BPF verifier budget).
mod bench;
mod copyright;
mod demo;
mod package;
mod paths;
mod progress;
mod setup;
mod shape;
mod spank;
mod test;
mod verifier;
mod vm;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "scx_linger developer and CI tasks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install missing build and guest tools (Debian packages, virtme-ng).
    Deps,
    /// Fetch the newest Debian kernel with sched_ext, or build an LTS one.
    Kernel(setup::kernel::KernelArgs),
    /// Boot the sched_ext guest and run a command in the project tree.
    Vm(vm::VmArgs),
    /// Formatting, lints, host unit tests, then the guest integration tests.
    Test(test::TestArgs),
    /// The README's main job: boot the guest, load scx_linger, show it work.
    Demo(demo::DemoArgs),
    /// The BPF verifier budget: measure every program on the guest kernels,
    /// hold it against bpf/verifier-budget.toml, or --record it.
    Verifier(verifier::VerifierArgs),
    /// The seed paper's experiments under each policy (icount guest): primary
    /// QoS beside guests, then job-queue throughput, efficiency and turnaround.
    Bench(bench::BenchArgs),
    /// A compressed day on a node-shaped guest (16 vCPUs, 30 minutes by
    /// default): everything a node sees at once, checked against what the
    /// kernel says; its report goes to bench/results/.
    Soak(bench::soak::SoakArgs),
    /// The Debian package: binary, systemd unit, /etc config, man pages,
    /// completions, Slurm hooks and SPANK plugin (target/package/),
    /// checked by lintian (installed if missing).
    Package(package::PackageArgs),
}

fn main() {
    let cli = Cli::parse();
    let result: Result<i32> = match cli.command {
        Command::Deps => setup::deps::run().map(|_| 0),
        Command::Kernel(a) => setup::kernel::run(&a).map(|_| 0),
        Command::Vm(a) => vm::run_cli(&a),
        Command::Test(a) => test::run(&a),
        Command::Demo(a) => demo::run(&a),
        Command::Bench(a) => bench::run(&a),
        Command::Soak(a) => bench::soak::run(&a),
        Command::Verifier(a) => verifier::run(&a),
        Command::Package(a) => package::run(&a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            std::process::exit(1);
        }
    }
}
