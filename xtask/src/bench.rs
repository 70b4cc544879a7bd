// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench`: primary quality of service beside guests, under
//! the policies an operator has today and under scx_linger, each figure a
//! ratio against a baseline measured in the same guest boot.
//!
//! The guest runs with QEMU's `-icount shift=3,sleep=off`: its clock
//! follows instruction counts, so the host's noise drops out and a run
//! repeats to about 0.01 s. Emulation models no caches, so cache effects are
//! not captured. Results go to bench/results/qos-<N>cpu.md.

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::paths::project_root;
use crate::vm::{self, VmArgs};
use crate::{deps, step};

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
    /// Run the vCPUs really in parallel (multi-threaded TCG) instead of
    /// icount. icount runs vCPUs round-robin on one virtual clock that
    /// counts every vCPU's instructions, so with 2+ vCPUs a busy CPU slows
    /// the clock-relative progress of the others; parallel TCG has no such
    /// coupling but carries the host's timing noise.
    #[arg(long)]
    pub parallel: bool,
    /// Measure gang scheduling instead (bench/gang.sh): spinning-barrier
    /// jobs under EEVDF and as scx_linger gangs, on parallel TCG with the
    /// largest --cpus given (at least 2).
    #[arg(long)]
    pub gang: bool,
    /// Measure scheduler overhead instead (bench/overhead.sh): hackbench
    /// under EEVDF, scx_linger, and scx_linger --no-accounting (the cost
    /// of counting for the stats), in icount guests, at least 5 repeats.
    #[arg(long)]
    pub overhead: bool,
}

/// Policies in report order, with what each is.
const CASES: &[(&str, &str)] = &[
    ("eevdf_alone", "EEVDF, primaries alone (baseline)"),
    ("eevdf_nice19", "EEVDF, guests at nice 19"),
    ("eevdf_sched_idle", "EEVDF, guests SCHED_IDLE"),
    ("eevdf_cpu_idle", "EEVDF, guests in a cpu.idle=1 cgroup"),
    ("linger_alone", "scx_linger, primaries alone"),
    ("linger_guest", "scx_linger, guests labelled guest"),
];

/// One duty job's figures from one run.
#[derive(Debug, Clone, Default)]
struct Sample {
    wall: f64,
    delay_us: f64,
    guest_run: f64,
    idle: f64,
}

pub fn field(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

pub fn word<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// Per case, per repeat: the samples (one per duty job).
type Runs = BTreeMap<String, BTreeMap<u32, Vec<Sample>>>;

fn parse(output: &str) -> Runs {
    let mut runs = Runs::new();
    for line in output.lines().filter(|l| l.starts_with("case=")) {
        let (Some(case), Some(rep)) = (word(line, "case"), field(line, "rep")) else {
            continue;
        };
        let s = Sample {
            wall: field(line, "wall").unwrap_or(0.0),
            delay_us: field(line, "delay_us").unwrap_or(0.0),
            guest_run: field(line, "guest_run").unwrap_or(0.0),
            idle: field(line, "idle").unwrap_or(0.0),
        };
        runs.entry(case.to_string())
            .or_default()
            .entry(rep as u32)
            .or_default()
            .push(s);
    }
    runs
}

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

/// Per repeat: mean wall, mean delay, guest CPU, guest harvest. Harvest
/// is the guests' share of the CPU time nothing else wanted: guest time /
/// (guest time + time the CPUs stood idle), both from the kernel.
fn per_repeat(reps: &BTreeMap<u32, Vec<Sample>>) -> Vec<(f64, f64, f64, f64)> {
    reps.values()
        .map(|s| {
            let n = s.len() as f64;
            let wall = s.iter().map(|x| x.wall).sum::<f64>() / n;
            let delay = s.iter().map(|x| x.delay_us).sum::<f64>() / n;
            let (guest, idle) = (s[0].guest_run, s[0].idle);
            let harvest = if guest + idle > 0.0 {
                guest / (guest + idle)
            } else {
                0.0
            };
            (wall, delay, guest, harvest)
        })
        .collect()
}

fn report(runs: &Runs, header: &str) -> String {
    let mut out = format!("{header}\n\n");
    out.push_str("| policy | primary wall, median s | run-time increase vs EEVDF alone, median (min..max) | run delay per wake-up, median us | guest CPU, s | guest harvest of idle CPU |\n|---|---|---|---|---|---|\n");
    let base = runs
        .get("eevdf_alone")
        .map(|r| median(&mut per_repeat(r).iter().map(|x| x.0).collect::<Vec<_>>()))
        .unwrap_or(f64::NAN);
    for (case, what) in CASES {
        let Some(r) = runs.get(*case) else { continue };
        let reps = per_repeat(r);
        let mut walls: Vec<f64> = reps.iter().map(|x| x.0).collect();
        let incs: Vec<f64> = walls.iter().map(|w| (w / base - 1.0) * 100.0).collect();
        let (lo, hi) = incs
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        let mut incs_m = incs.clone();
        let guests = !case.ends_with("alone");
        out.push_str(&format!(
            "| {what} | {:.3} | {:+.2}% ({:+.2}..{:+.2}) | {:.0} | {} | {} |\n",
            median(&mut walls),
            median(&mut incs_m),
            lo,
            hi,
            median(&mut reps.iter().map(|x| x.1).collect::<Vec<_>>()),
            if guests {
                format!(
                    "{:.2}",
                    median(&mut reps.iter().map(|x| x.2).collect::<Vec<_>>())
                )
            } else {
                "-".into()
            },
            if guests {
                format!(
                    "{:.1}%",
                    median(&mut reps.iter().map(|x| x.3 * 100.0).collect::<Vec<_>>())
                )
            } else {
                "-".into()
            },
        ));
    }
    out
}

pub fn run(args: &BenchArgs) -> Result<i32> {
    deps::run()?;
    step("building scx_linger and the bench workloads (release)");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--bin",
            "scx_linger",
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
    if args.gang {
        let cpus = args.cpus.iter().copied().max().unwrap_or(2).max(2);
        crate::bench_gang::run(cpus, args.repeats)?;
        return Ok(0);
    }
    if args.overhead {
        for &cpus in &args.cpus {
            crate::bench_overhead::run(cpus, args.repeats.max(5))?;
        }
        return Ok(0);
    }
    for &cpus in &args.cpus {
        let raw = run_script(
            "qos.sh",
            cpus,
            !args.parallel,
            &[args.repeats.to_string(), args.rounds.to_string()],
        )?;
        let (mode, emulation) = if args.parallel {
            ("parallel", "multi-threaded TCG (vCPUs in parallel on host threads; host timing noise included)")
        } else {
            ("icount", "`-icount shift=3,sleep=off` (guest time follows instruction counts; with 2+ vCPUs one virtual clock counts all vCPUs' instructions, so work on one vCPU slows the others' progress, as on SMT siblings)")
        };
        let header = format!(
            "## Primary QoS beside guests, {cpus} vCPU(s), {mode}\n\n{} ; QEMU TCG, {emulation}; no caches are modelled, so cache effects are not captured; {} repeats; one half-busy primary job per CPU (10 ms compute, 10 ms sleep), one CPU-bound guest per CPU. Run delay from /proc schedstat, guest harvest = guest CPU / (guest CPU + idle CPU) from /proc.",
            script_header(&raw),
            args.repeats
        );
        let table = report(&parse(&raw), &header);
        save_report(&format!("qos-{cpus}cpu-{mode}"), &table, &raw)?;
    }
    Ok(0)
}

/// Run bench/`script` in one guest boot (`icount`: deterministic guest
/// time) with the release scx_linger and the bench workloads' directory
/// as its first two arguments, then `args`; return what it printed.
pub fn run_script(script: &str, cpus: u32, icount: bool, args: &[String]) -> Result<String> {
    let root = project_root();
    let path = |p: &str| root.join(p).to_string_lossy().into_owned();
    let mut cmd = vec![
        "sh".to_string(),
        path(&format!("bench/{script}")),
        path("target/release/scx_linger"),
        path("target/release"),
    ];
    cmd.extend_from_slice(args);
    let outcome = vm::run(&VmArgs {
        kernel: "debian".into(),
        cpus,
        mem: "2G".into(),
        timeout: 3600,
        icount,
        cmd,
    })?;
    if outcome.exit_code != 0 {
        bail!(
            "bench/{script} failed in the guest (exit {})",
            outcome.exit_code
        );
    }
    Ok(std::fs::read_to_string(outcome.dir.join("output.log"))?)
}

/// The parameters line a bench script prints first (`# kernel=... ...`).
pub fn script_header(raw: &str) -> &str {
    raw.lines()
        .find(|l| l.starts_with("# "))
        .map_or("", |l| l.trim_start_matches("# "))
}

/// Write a report (`name`.md) and the raw output it came from (`name`.raw)
/// to bench/results, and show the report.
pub fn save_report(name: &str, table: &str, raw: &str) -> Result<()> {
    let results = project_root().join("bench/results");
    std::fs::create_dir_all(&results)?;
    let path = results.join(format!("{name}.md"));
    std::fs::write(&path, table)?;
    std::fs::write(results.join(format!("{name}.raw")), raw)?;
    println!("{table}");
    step(&format!("wrote {}", path.display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_runs_and_reports_ratios_against_the_baseline() {
        let raw = "\
# kernel=7.3 cpus=1
case=eevdf_alone rep=1 wall=2.0 run=1.0 delay_us=10.0 slices=100 guest_run=0e-6 span=2000000e-6
case=eevdf_nice19 rep=1 wall=2.2 run=1.0 delay_us=500.0 slices=100 guest_run=900000e-6 idle=100000e-6
case=linger_guest rep=1 wall=2.01 run=1.0 delay_us=20.0 slices=100 guest_run=980000e-6 idle=20000e-6
";
        let runs = parse(raw);
        assert_eq!(runs.len(), 3);
        let md = report(&runs, "h");
        assert!(
            md.contains("| EEVDF, guests at nice 19 | 2.200 | +10.00%"),
            "{md}"
        );
        assert!(
            md.contains("| scx_linger, guests labelled guest | 2.010 | +0.50%"),
            "{md}"
        );
        // 0.98 s of guest time, 0.02 s of idle CPU left over.
        assert!(md.contains("98.0%"), "{md}");
    }
}
