// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask test`: every check the project has, in the order that fails
//! fastest: formatting, lints, host unit tests, then the integration tests
//! (tests/guest) inside the sched_ext guest on each requested kernel.
//!
//! The closing line counts every test that ran, host and guest, and the
//! command fails if any step fails, if the guest cannot boot, or if a guest
//! run reports no test at all: a test that did not run never counts as
//! passed.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::paths::project_root;
use crate::progress::step;
use crate::setup::{deps, kernel};
use crate::shape::Shape;

mod passes;
use passes::every_kernel_test_exists;
pub use passes::SOAK;

#[derive(clap::Args)]
pub struct TestArgs {
    /// Kernels to run the guest tests on (repeatable): `debian`, `lts-6.12`.
    #[arg(long = "kernel", default_values_t = vec!["debian".to_string()])]
    pub kernels: Vec<String>,
    /// Also build the 6.12 LTS kernel if needed and run the guest tests on
    /// it (about 20 min the first time on 2 cores, cached after).
    #[arg(long)]
    pub lts: bool,
    /// Virtual CPUs for the guest.
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// Only guest tests whose name contains this.
    #[arg(long)]
    pub filter: Option<String>,
    /// Skip fmt, clippy and host unit tests (for iterating on guest tests).
    #[arg(long)]
    pub guest_only: bool,
    /// How long the stress-ng soak runs in each guest, in seconds (the
    /// full five-minute soak: --soak 300; the short soak of
    /// tests/guest/soak/ holds a heavier mix for longer)
    #[arg(long, default_value_t = 10)]
    pub soak: u64,
    /// How many cgroups the churn test creates and removes
    #[arg(long, default_value_t = 150)]
    pub churn: u64,
    /// How long the short soak (tests/guest/soak/) runs under
    /// scx_linger, in seconds; `cargo xtask soak` runs the full one.
    #[arg(long, default_value_t = 30)]
    pub day: u64,
    /// How many cgroups the soak's burst makes at once.
    #[arg(long, default_value_t = 50)]
    pub day_cgroups: u64,
    /// How many gang jobs the soak's burst makes.
    #[arg(long, default_value_t = 8)]
    pub day_gangs: u64,
    /// How many threads each of the soak's exit storms starts (2,000 in
    /// the full soak; the thread tests end 2,000 at once already).
    #[arg(long, default_value_t = 100)]
    pub day_storm: u64,
    /// Also run the baselines that only the bench's figures read (nothing
    /// judges them): the same load under EEVDF, or a job alone, beside
    /// what a test checks. In the two-node pass: one job alone under each
    /// scheduler, both jobs on quiet nodes, the mix without rows and under
    /// EEVDF, and MPI alone and under EEVDF at the bench's 3,000 MPI
    /// rounds (about 12 minutes more); in the plain pass a minute or two.
    #[arg(long)]
    pub baselines: bool,
    /// The node-shaped pass: the tests where topology matters
    /// (tests/guest/node_shaped.rs) on a guest of this shape.
    #[arg(long, default_value = NODE_SHAPE)]
    pub node_shape: Shape,
    /// The many-CPU pass (tests/guest/many_cpus.rs) on this many vCPUs;
    /// 0 skips it.
    #[arg(long, default_value_t = 64)]
    pub many_cpus: u32,
}

/// The shape of the node-shaped pass, and of the verifier budget's guest.
pub const NODE_SHAPE: &str = "2s2c2t2n";

/// Passed/failed counts summed from libtest's `test result:` lines.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    pub suites: u64,
}

impl Tally {
    /// Add one output line if it is a libtest summary.
    pub fn scan(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        self.suites += 1;
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(kind), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let n: u64 = n.parse().unwrap_or(0);
            match kind {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                _ => {}
            }
        }
    }
}

/// How long each stage of a run took, printed as it ends and again at
/// the close, so a slow CI run says where its time went.
#[derive(Default)]
struct Stages(Vec<(String, f64)>);

impl Stages {
    fn done(&mut self, name: &str, since: Instant) -> Instant {
        let secs = since.elapsed().as_secs_f64();
        step(&format!("stage {name}: {secs:.0} s"));
        self.0.push((name.to_string(), secs));
        Instant::now()
    }

    /// A stage timed by whoever ran it (passes side by side).
    fn record(&mut self, name: &str, secs: f64) {
        step(&format!("stage {name}: {secs:.0} s"));
        self.0.push((name.to_string(), secs));
    }

    fn print(&self) {
        step("time per stage:");
        for (name, secs) in &self.0 {
            eprintln!("    {secs:>7.0} s  {name}");
        }
    }
}

pub fn run(args: &TestArgs) -> Result<i32> {
    let started = Instant::now();
    let mut stages = Stages::default();
    let mut t = Instant::now();
    deps::run()?;
    let mut kernels = args.kernels.clone();
    if args.lts && !kernels.iter().any(|k| k == "lts-6.12") {
        kernel::run(&kernel::KernelArgs {
            lts: Some("6.12".into()),
        })?;
        kernels.push("lts-6.12".into());
    }
    t = stages.done("packages and kernels", t);

    let mut tally = Tally::default();
    if !args.guest_only {
        step("cargo fmt --check");
        cargo(&["fmt", "--all", "--check"])?;
        step("cargo clippy -D warnings");
        // --all-targets skips tests marked `test = false`: name the guest
        // tests explicitly so they are linted too.
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ])?;
        cargo(&[
            "clippy", "--test", "guest", "--quiet", "--", "-D", "warnings",
        ])?;
        t = stages.done("fmt and clippy", t);
        step("host unit tests");
        let host = cargo_scanned(&["test", "--workspace"], &mut tally)?;
        if !host {
            bail!("host unit tests failed");
        }
        t = stages.done("host unit tests", t);
    }

    step("building the guest integration tests");
    let exe = build_guest_tests()?;
    every_kernel_test_exists(&exe)?;
    crate::spank::build()?;
    // The package the guest installs (tests/guest/package.rs), from the
    // debug build the other guest tests run.
    let deb = crate::package::build(true)?;
    crate::package::lint(&deb, true)?;
    t = stages.done("guest test build and package", t);
    let (failures, oopses) = passes::run_all(args, &exe, &kernels, &mut stages, &mut tally, t)?;
    stages.print();
    if oopses > 0 {
        step(&format!(
            "the emulator's int3 oops ended {oopses} boot(s); each was booted again for the tests left"
        ));
    }
    step(&format!(
        "all done in {:.1} min",
        started.elapsed().as_secs_f64() / 60.0
    ));
    // The closing line CI reads: every test that ran, host and guest.
    println!("{} passed, {} failed", tally.passed, tally.failed);
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(0)
}

pub fn cargo(args: &[&str]) -> Result<()> {
    let status = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project_root())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

/// Run cargo, echo its stdout and tally libtest summaries; true on success.
fn cargo_scanned(args: &[&str], tally: &mut Tally) -> Result<bool> {
    let mut child = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project_root())
        .stdout(Stdio::piped())
        .spawn()
        .context("running cargo")?;
    let stdout = child.stdout.take().expect("piped");
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        tally.scan(&line);
    }
    Ok(child.wait()?.success())
}

/// Build tests/guest (and the scx_linger binary and bench workloads it
/// runs) and return the test executable's path.
pub fn build_guest_tests() -> Result<PathBuf> {
    // The gang tests run the bench crate's workloads (barrier), optimised
    // like a real parallel job would be.
    cargo(&["build", "--release", "--quiet", "--package", "linger-bench"])?;
    let out = Command::new(env!("CARGO"))
        .args([
            "test",
            "--test",
            "guest",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(project_root())
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo test --no-run")?;
    if !out.status.success() {
        bail!("building the guest tests failed");
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "guest" {
            if let Some(exe) = msg["executable"].as_str() {
                return Ok(PathBuf::from(exe));
            }
        }
    }
    bail!("cargo did not report the guest test executable")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_libtest_summaries() {
        let mut t = Tally::default();
        t.scan("test result: ok. 8 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s");
        t.scan("test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 1 filtered out");
        t.scan("running 5 tests");
        assert_eq!(
            t,
            Tally {
                passed: 11,
                failed: 2,
                suites: 2
            }
        );
    }
}
