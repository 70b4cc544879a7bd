// SPDX-License-Identifier: GPL-2.0-only
//! What every bench group shares: the policies compared, running a bench
//! script in a guest boot, reading its `key=value` lines, medians, and
//! where reports go.

use anyhow::{bail, Result};

use crate::paths::project_root;
use crate::progress::step;
use crate::shape::Shape;
use crate::vm::{self, VmArgs};

/// Workload sizes: the full run, or `--quick` (under 10 minutes).
pub struct Sizes {
    pub cpus: Vec<u32>,
    pub repeats: u32,
    pub rounds: u32,
    pub bursts: u32,
}

/// A policy a bench compares: its case name in the raw output, its
/// legend on a plot, and what it is, for a report's table.
pub type Policy = (&'static str, &'static str, &'static str);

/// How guests run beside primaries, in report order; the same case names
/// in qos.sh and queue.sh.
pub const GUEST_POLICIES: [Policy; 6] = [
    ("nice19", "nice 19", "EEVDF, guests at nice 19"),
    ("sched_idle", "SCHED_IDLE", "EEVDF, guests SCHED_IDLE"),
    (
        "cpu_idle",
        "cpu.idle",
        "EEVDF, guests in a cpu.idle=1 cgroup",
    ),
    (
        "layered",
        "scx_layered",
        "scx_layered 1.1.4, guests in a weight-1 layer",
    ),
    ("linger", "scx_linger", "scx_linger, guests labelled guest"),
    (
        "linger_partial",
        "scx_linger partial",
        "scx_linger --partial (primaries in the fair class), guests SCHED_EXT and labelled guest",
    ),
];

/// The number after `key=` in a bench line.
pub fn field(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// The word after `key=` in a bench line.
pub fn word<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// The median (NaN for none).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The emulation mode's name and what it means, for a report's header.
pub fn emulation(parallel: bool) -> (&'static str, &'static str) {
    if parallel {
        (
            "parallel",
            "multi-threaded TCG (vCPUs in parallel on host threads; host timing noise included)",
        )
    } else {
        ("icount", "`-icount shift=3,sleep=off` (guest time follows instruction counts; with 2+ vCPUs one virtual clock counts all vCPUs' instructions, so work on one vCPU slows the others' progress, as on SMT siblings)")
    }
}

/// Run bench/`script` in one guest boot (`icount`: deterministic guest
/// time) with the release scx_linger and the bench workloads' directory
/// as its first two arguments, then `args`; return what it printed.
pub fn run_script(
    script: &str,
    cpus: u32,
    icount: bool,
    env: &[(String, String)],
    args: &[String],
) -> Result<String> {
    Ok(run_script_with(script, cpus, icount, env, args, None, None)?.0)
}

/// run_script(), with a QEMU plugin loaded (VmArgs::qemu_plugin) or on a
/// guest shaped like a node (VmArgs::topology: its CPU count wins); also
/// returns the boot's results folder, for what the script left there.
pub fn run_script_with(
    script: &str,
    cpus: u32,
    icount: bool,
    env: &[(String, String)],
    args: &[String],
    qemu_plugin: Option<String>,
    topology: Option<Shape>,
) -> Result<(String, std::path::PathBuf)> {
    let root = project_root();
    let path = |p: &str| root.join(p).to_string_lossy().into_owned();
    let mut cmd = vec!["env".to_string()];
    cmd.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    cmd.extend([
        "sh".to_string(),
        path(&format!("bench/{script}")),
        path("target/release/scx_linger"),
        path("target/release"),
    ]);
    cmd.extend_from_slice(args);
    let outcome = vm::run(&VmArgs {
        kernel: "debian".into(),
        topology,
        cpus,
        mem: "2G".into(),
        timeout: 3600,
        icount,
        single_thread: false,
        qemu_plugin,
        peer: None,
        cmd,
    })?;
    if outcome.exit_code != 0 {
        bail!(
            "bench/{script} failed in the guest (exit {})",
            outcome.exit_code
        );
    }
    let raw = std::fs::read_to_string(outcome.dir.join("output.log"))?;
    Ok((raw, outcome.dir))
}

/// The parameters line a bench script prints first (`# kernel=... ...`).
pub fn script_header(raw: &str) -> &str {
    raw.lines()
        .find(|l| l.starts_with("# "))
        .map_or("", |l| l.trim_start_matches("# "))
}

/// Where reports, raw outputs and plots go.
pub fn results_dir() -> std::path::PathBuf {
    project_root().join("bench/results")
}

/// The commit the measured code is, for a report's header: its short
/// hash, and whether the tree had changes beside it (bench/results aside).
fn code_version() -> String {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(project_root())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(hash) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return "commit unknown (not a git checkout)".into();
    };
    let dirty = git(&["status", "--porcelain", "--", ".", ":!bench/results"])
        .is_some_and(|s| !s.is_empty());
    if dirty {
        format!("commit {hash} with uncommitted changes")
    } else {
        format!("commit {hash}")
    }
}

/// A report's table with, under its title, the code it measured: the
/// kernel and CPU shape are in the script's own header line below.
pub fn with_provenance(table: &str, version: &str) -> String {
    match table.split_once('\n') {
        Some((title, rest)) => format!("{title}\n\nMeasured on scx_linger {version}.\n{rest}"),
        None => format!("{table}\n\nMeasured on scx_linger {version}.\n"),
    }
}

/// Write a report (`name`.md) and the raw output it came from (`name`.raw)
/// to bench/results, and show the report.
pub fn save_report(name: &str, table: &str, raw: &str) -> Result<()> {
    let results = results_dir();
    std::fs::create_dir_all(&results)?;
    let path = results.join(format!("{name}.md"));
    let table = with_provenance(table, &code_version());
    std::fs::write(&path, &table)?;
    std::fs::write(results.join(format!("{name}.raw")), raw)?;
    println!("{table}");
    step(&format!("wrote {}", path.display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_the_code_it_measured_under_its_title() {
        let t = with_provenance("## QoS\n\nkernel=7.3 cpus=1\n", "commit 0123456789ab");
        assert_eq!(
            t,
            "## QoS\n\nMeasured on scx_linger commit 0123456789ab.\n\nkernel=7.3 cpus=1\n"
        );
    }
}
