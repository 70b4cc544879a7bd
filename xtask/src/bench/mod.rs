// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench`: the seed paper's experiments (Stiehr & Chamberlain
//! 2006) under the policies an operator has today, under scx_layered and
//! under scx_linger, each figure a ratio against a baseline measured in
//! the same guest boot: primary quality of service beside guests (group
//! B, here), then job queues (group C, bench_queue.rs).
//!
//! The guest runs with QEMU's `-icount shift=3,sleep=off`: its clock
//! follows instruction counts, so the host's noise drops out and a run
//! repeats to about 0.01 s. Emulation models no caches, so cache effects are
//! not captured. Results go to bench/results/.

mod common;
mod gang;
mod latency;
mod overhead;
mod plot;
mod profile;
mod qos;
mod queue;
mod scaling;
mod schbench;
pub mod soak;
mod timeline;

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::paths::project_root;
use crate::progress::step;
use crate::setup::{deps, scx_tools};
use crate::shape::Shape;
use common::Sizes;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// vCPU counts to measure (1 is the seed paper's uniprocessor node).
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 2])]
    pub cpus: Vec<u32>,
    /// Repeats of every case (median, min and max are reported).
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// Work rounds per primary job (10 ms compute + 10 ms sleep each).
    #[arg(long, default_value_t = 100)]
    pub rounds: u32,
    /// 10 ms bursts per thread of every job in the group C queues.
    #[arg(long, default_value_t = 100)]
    pub bursts: u32,
    /// A short run of everything above for 1 vCPU (under 10 minutes):
    /// 3 repeats of 30 rounds and 30 bursts.
    #[arg(long)]
    pub quick: bool,
    /// Run the vCPUs really in parallel (multi-threaded TCG) instead of
    /// icount. icount runs vCPUs round-robin on one virtual clock that
    /// counts every vCPU's instructions, so with 2+ vCPUs a busy CPU slows
    /// the clock-relative progress of the others; parallel TCG has no such
    /// coupling but carries the host's timing noise.
    #[arg(long)]
    pub parallel: bool,
    /// Measure gang scheduling instead (bench/gang.sh): spinning-barrier
    /// jobs under EEVDF, scx_bpfland and as scx_linger gangs, on parallel TCG with the
    /// largest --cpus given (at least 2).
    #[arg(long)]
    pub gang: bool,
    /// With --gang: jobs bound to cpusets (bench/gang.sh's LAYOUTS) on 4
    /// vCPUs, makespan against the ideal schedule.
    #[arg(long, requires = "gang")]
    pub cpusets: bool,
    /// With --gang: real MPI jobs instead (Debian's OpenMPI running
    /// bench/mpi/ring.py through mpi4py, mpirun inside the job's cgroup),
    /// two at once.
    #[arg(long, requires = "gang", conflicts_with = "cpusets")]
    pub mpi: bool,
    /// With --gang --mpi: guest boots, each with its own baseline (the
    /// targets are judged boot by boot: multi-threaded TCG moves a whole
    /// boot's figures together).
    #[arg(long, default_value_t = 3, requires = "mpi")]
    pub boots: u32,
    /// Measure scheduler overhead instead (bench/overhead.sh): hackbench
    /// under EEVDF, scx_linger, and scx_linger --no-accounting (the cost
    /// of counting for the stats), in icount guests, at least 5 repeats.
    #[arg(long)]
    pub overhead: bool,
    /// Measure primary wake-up latency instead (bench/latency.sh):
    /// cyclictest on a quiet node and beside duty primaries and guests
    /// under each guest policy, and the per-op cost of scx_linger's BPF
    /// programs, in icount guests.
    #[arg(long)]
    pub latency: bool,
    /// Measure schbench's requests as primaries instead
    /// (bench/schbench.sh): saturated and at half of EEVDF's rate, with
    /// no guests and beside guests, under EEVDF and scx_linger, in icount
    /// guests; schbench is built from its pinned upstream commit.
    #[arg(long)]
    pub schbench: bool,
    /// Measure scheduling cost as CPUs grow instead: hackbench under
    /// EEVDF, scx_bpfland and scx_linger at each --cpus count (e.g.
    /// --cpus 1,2,4,8,16), one icount boot per count, with a PNG.
    #[arg(long)]
    pub scaling: bool,
    /// With --scaling: also one boot per node shape given (e.g. 2s4c1t:
    /// 8 vCPUs on 2 sockets, so 2 LLCs; see xtask/src/shape.rs), where
    /// scx_linger's queues per LLC and one queue for the node differ.
    #[arg(long, value_delimiter = ',', requires = "scaling")]
    pub topology: Vec<Shape>,
    /// Profile a primary's wake-up instead (bench/profile.sh): guest
    /// kernel instructions per function, counted by a QEMU plugin
    /// (bench/profile/insn_profile.c), under EEVDF and scx_linger beside
    /// duty primaries, alone and beside guests, and under scx_bpfland
    /// alone; one icount boot, 1 vCPU.
    #[arg(long)]
    pub profile: bool,
}

fn sizes(args: &BenchArgs) -> Sizes {
    if args.quick {
        return Sizes {
            cpus: vec![1],
            repeats: 3,
            rounds: 30,
            bursts: 30,
        };
    }
    Sizes {
        cpus: args.cpus.clone(),
        repeats: args.repeats,
        rounds: args.rounds,
        bursts: args.bursts,
    }
}

pub fn run(args: &BenchArgs) -> Result<i32> {
    let started = Instant::now();
    deps::run()?;
    deps::install_packages(&["fonts-dejavu-core"])?;
    let tools = scx_tools::ensure()?;
    step("building scx_linger and the bench workloads (release)");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--bins",
            "-p",
            "scx_linger",
            "-p",
            "linger-bench",
        ])
        .current_dir(project_root())
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("build failed");
    }
    let env = tool_env(&tools);
    if args.gang && args.cpusets {
        gang::run_cpusets(args.repeats, &env)?;
        return Ok(0);
    }
    if args.gang && args.mpi {
        let cpus = args.cpus.iter().copied().max().unwrap_or(2).max(2);
        gang::run_mpi(cpus, args.repeats, args.boots.max(1), &env)?;
        return Ok(0);
    }
    if args.gang {
        let cpus = args.cpus.iter().copied().max().unwrap_or(2).max(2);
        gang::run(cpus, args.repeats, &env)?;
        return Ok(0);
    }
    if args.latency {
        for &cpus in &args.cpus {
            latency::run(cpus, args.repeats.max(1), &env)?;
        }
        return Ok(0);
    }
    if args.schbench {
        for &cpus in &args.cpus {
            schbench::run(cpus, args.repeats.max(1), &env)?;
        }
        return Ok(0);
    }
    if args.profile {
        profile::run(5000, &env)?;
        return Ok(0);
    }
    if args.scaling {
        scaling::run(&args.cpus, &args.topology, args.repeats, &env)?;
        return Ok(0);
    }
    if args.overhead {
        for &cpus in &args.cpus {
            overhead::run(cpus, args.repeats.max(5), &env)?;
        }
        return Ok(0);
    }
    let sz = sizes(args);
    for &cpus in &sz.cpus {
        qos::run(cpus, &sz, args.parallel, &env)?;
        queue::run(cpus, sz.repeats, sz.bursts, args.parallel, &env)?;
    }
    step(&format!(
        "bench done in {:.1} min",
        started.elapsed().as_secs_f64() / 60.0
    ));
    Ok(0)
}

/// What the bench scripts need to start the comparison schedulers.
fn tool_env(tools: &scx_tools::ScxTools) -> Vec<(String, String)> {
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    vec![
        ("SCX_LAYERED".into(), s(&tools.layered)),
        ("SCX_BPFLAND".into(), s(&tools.bpfland)),
        (
            "LAYERED_CONFIG".into(),
            s(&project_root().join("bench/layered-guests.json")),
        ),
    ]
}
