// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask verifier`: the BPF verifier budget. Runs the guest test
//! that measures every program's cost to the kernel's verifier
//! (tests/guest/verifier.rs, which holds it against bpf/verifier-budget.toml
//! on every `cargo xtask test`) on each kernel, prints the figures, and
//! with `--record` makes them the new budget.
//!
//! Recording is a deliberate step: the file's diff shows which program
//! grew, by how much, on which kernel.

use anyhow::{bail, Context, Result};

use crate::paths::project_root;
use crate::progress::step;
use crate::setup::{deps, kernel};
use crate::shape::Shape;
use crate::test::{build_guest_tests, NODE_SHAPE};
use crate::vm::{self, VmArgs};

#[derive(clap::Args)]
pub struct VerifierArgs {
    /// Write what was measured to bpf/verifier-budget.toml.
    #[arg(long)]
    pub record: bool,
    /// Also on the 6.12 LTS kernel (built if needed), as CI does.
    #[arg(long)]
    pub lts: bool,
}

const BUDGET: &str = "bpf/verifier-budget.toml";
const HEADER: &str = "\
# The BPF verifier budget: per kernel series, per program (as the kernel
# names it, in 15 characters), its length after the verifier's rewrites
# (insns) and the instructions the verifier processed to accept it
# (verified; the kernel refuses a program past 1,000,000).
# tests/guest/verifier.rs fails when a figure grows more than 10% past
# this on any run, or any program's verified count passes 40,000 on any
# kernel; `cargo xtask verifier --record` rewrites it.
";

/// The budget file: the header, then a table per kernel series with one
/// line per program, so that a diff shows each program's change.
fn render(budget: &toml::Table) -> String {
    let mut out = HEADER.to_string();
    let Some(toml::Value::Table(kernels)) = budget.get("kernels") else {
        return out;
    };
    for (series, progs) in kernels {
        out.push_str(&format!("\n[kernels.\"{series}\"]\n"));
        let toml::Value::Table(progs) = progs else {
            continue;
        };
        for (name, cost) in progs {
            let n = |k: &str| cost.get(k).and_then(toml::Value::as_integer).unwrap_or(0);
            out.push_str(&format!(
                "{name} = {{ insns = {}, verified = {} }}\n",
                n("insns"),
                n("verified")
            ));
        }
    }
    out
}

pub fn run(args: &VerifierArgs) -> Result<i32> {
    deps::run()?;
    let mut kernels = vec!["debian".to_string()];
    if args.lts {
        kernel::run(&kernel::KernelArgs {
            lts: Some("6.12".into()),
        })?;
        kernels.push("lts-6.12".into());
    }
    let exe = build_guest_tests()?;
    // More than one LLC, so that the verifier walks the stealing paths
    // (bpf/llc.bpf.c); single-threaded TCG, as 8 vCPUs need (vm.rs).
    let shape: Shape = NODE_SHAPE.parse()?;
    let path = project_root().join(BUDGET);
    let mut budget: toml::Table = match std::fs::read_to_string(&path) {
        Ok(text) => text
            .parse()
            .with_context(|| format!("{BUDGET} does not parse"))?,
        Err(_) => toml::Table::new(),
    };
    for k in &kernels {
        let mut cmd = vec!["env".to_string()];
        if args.record {
            cmd.push("SCX_LINGER_VERIFIER_RECORD=1".into());
        }
        cmd.extend([
            exe.to_string_lossy().into_owned(),
            "--test-threads=1".into(),
            "verifier::".into(),
        ]);
        let outcome = vm::run(&VmArgs {
            kernel: k.clone(),
            topology: Some(shape),
            cpus: shape.cpus(),
            mem: "2G".into(),
            timeout: 900,
            icount: false,
            single_thread: true,
            qemu_plugin: None,
            peer: None,
            cmd: vec![vm::command_string(&cmd)],
        })?;
        let measured =
            std::fs::read_to_string(outcome.dir.join("verifier.toml")).with_context(|| {
                format!(
                    "the guest on {k} measured nothing (see {})",
                    outcome.dir.display()
                )
            })?;
        print!("{measured}");
        let measured: toml::Table = measured.parse()?;
        if let Some(toml::Value::Table(series)) = measured.get("kernels") {
            let all = budget
                .entry("kernels")
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(all) = all {
                all.extend(series.clone());
            }
        }
        if outcome.exit_code != 0 && !args.record {
            bail!("the verifier budget does not hold on {k} (see above)");
        }
    }
    if args.record {
        std::fs::write(&path, render(&budget))?;
        step(&format!("recorded {}", path.display()));
    } else {
        step("the verifier budget holds");
    }
    Ok(0)
}
