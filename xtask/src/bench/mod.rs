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

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::bench_plot::Bars;
use crate::paths::project_root;
use crate::vm::{self, VmArgs};
use crate::{deps, scx_tools, step};

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
    /// Measure scheduler overhead instead (bench/overhead.sh): hackbench
    /// under EEVDF, scx_linger, and scx_linger --no-accounting (the cost
    /// of counting for the stats), in icount guests, at least 5 repeats.
    #[arg(long)]
    pub overhead: bool,
}

/// A policy a bench compares: its case name in the raw output, its
/// legend on a plot, and what it is, for a report's table.
pub type Policy = (&'static str, &'static str, &'static str);

/// How guests run beside primaries, in report order; the same case names
/// in qos.sh and queue.sh.
pub const GUEST_POLICIES: [Policy; 5] = [
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
];

/// The QoS report's rows: the baseline, every guest policy, and each
/// sched_ext scheduler with the primaries alone just before its guests.
fn qos_cases() -> Vec<Policy> {
    let mut cases = vec![(
        "eevdf_alone",
        "EEVDF alone",
        "EEVDF, primaries alone (baseline)",
    )];
    for p in GUEST_POLICIES {
        match p.0 {
            "layered" => cases.push((
                "layered_alone",
                "scx_layered alone",
                "scx_layered 1.1.4, primaries alone",
            )),
            "linger" => cases.push((
                "linger_alone",
                "scx_linger alone",
                "scx_linger, primaries alone",
            )),
            _ => {}
        }
        cases.push(p);
    }
    cases
}

/// One duty job's figures from one run.
#[derive(Debug, Clone, Default)]
struct Sample {
    wall: f64,
    delay_us: f64,
    late_p50_us: f64,
    late_p99_us: f64,
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
            late_p50_us: field(line, "late_p50_us").unwrap_or(f64::NAN),
            late_p99_us: field(line, "late_p99_us").unwrap_or(f64::NAN),
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

/// One repeat of a case: the mean over its primary jobs, and the guests'
/// CPU time and harvest. Harvest is the guests' share of the CPU time
/// nothing else wanted: guest time / (guest time + time the CPUs stood
/// idle), both from the kernel.
struct Repeat {
    wall: f64,
    delay_us: f64,
    late_p50_us: f64,
    late_p99_us: f64,
    guest: f64,
    harvest: f64,
}

fn per_repeat(reps: &BTreeMap<u32, Vec<Sample>>) -> Vec<Repeat> {
    reps.values()
        .map(|s| {
            let mean = |f: fn(&Sample) -> f64| s.iter().map(f).sum::<f64>() / s.len() as f64;
            let (guest, idle) = (s[0].guest_run, s[0].idle);
            Repeat {
                wall: mean(|x| x.wall),
                delay_us: mean(|x| x.delay_us),
                late_p50_us: mean(|x| x.late_p50_us),
                // The worst job's tail, not an average of tails.
                late_p99_us: s.iter().map(|x| x.late_p99_us).fold(f64::NAN, f64::max),
                guest,
                harvest: if guest + idle > 0.0 {
                    guest / (guest + idle)
                } else {
                    0.0
                },
            }
        })
        .collect()
}

fn med_of(reps: &[Repeat], f: fn(&Repeat) -> f64) -> f64 {
    median(&mut reps.iter().map(f).collect::<Vec<_>>())
}

/// The baseline: EEVDF with the primaries alone, median wall time.
fn baseline(runs: &Runs) -> f64 {
    runs.get("eevdf_alone")
        .map(|r| med_of(&per_repeat(r), |x| x.wall))
        .unwrap_or(f64::NAN)
}

fn report(runs: &Runs, header: &str) -> String {
    let mut out = format!("{header}\n\n");
    out.push_str("| policy | primary wall, median s | run-time increase vs EEVDF alone, median (min..max) | run delay per wake-up, mean us (schedstat) | wake-up to running p50 / p99 us | guest CPU, s | guest harvest of idle CPU |\n|---|---|---|---|---|---|---|\n");
    let base = baseline(runs);
    for (case, _, what) in qos_cases() {
        let Some(r) = runs.get(case) else { continue };
        let reps = per_repeat(r);
        let incs: Vec<f64> = reps.iter().map(|x| (x.wall / base - 1.0) * 100.0).collect();
        let (lo, hi) = incs
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        let guests = !case.ends_with("alone");
        let guest_col = |v: String| if guests { v } else { "-".into() };
        out.push_str(&format!(
            "| {what} | {:.3} | {:+.2}% ({:+.2}..{:+.2}) | {:.0} | {:.0} / {:.0} | {} | {} |\n",
            med_of(&reps, |x| x.wall),
            median(&mut incs.clone()),
            lo,
            hi,
            med_of(&reps, |x| x.delay_us),
            med_of(&reps, |x| x.late_p50_us),
            med_of(&reps, |x| x.late_p99_us),
            guest_col(format!("{:.2}", med_of(&reps, |x| x.guest))),
            guest_col(format!("{:.1}%", med_of(&reps, |x| x.harvest * 100.0))),
        ));
    }
    out
}

/// The QoS plot: each guest policy's median primary run-time increase.
fn plot(runs: &Runs, path: &std::path::Path, title: &str) -> Result<()> {
    let base = baseline(runs);
    let cases: Vec<_> = qos_cases()
        .into_iter()
        .filter(|(case, _, _)| !case.ends_with("alone") && runs.contains_key(*case))
        .collect();
    let values = cases
        .iter()
        .map(|(case, _, _)| (med_of(&per_repeat(&runs[*case]), |x| x.wall) / base - 1.0) * 100.0)
        .collect();
    crate::bench_plot::draw(
        path,
        &Bars {
            title: title.to_string(),
            y_label: "primary run-time increase vs EEVDF alone, %".into(),
            groups: cases
                .iter()
                .map(|(_, legend, _)| legend.to_string())
                .collect(),
            series: vec![("run-time increase".into(), values)],
            fmt: |v| format!("{v:+.2}%"),
        },
    )
}

/// Workload sizes: the full run, or `--quick` (under 10 minutes).
struct Sizes {
    cpus: Vec<u32>,
    repeats: u32,
    rounds: u32,
    bursts: u32,
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
    if args.gang {
        let cpus = args.cpus.iter().copied().max().unwrap_or(2).max(2);
        crate::bench_gang::run(cpus, args.repeats, &env)?;
        return Ok(0);
    }
    if args.overhead {
        for &cpus in &args.cpus {
            crate::bench_overhead::run(cpus, args.repeats.max(5), &env)?;
        }
        return Ok(0);
    }
    let sz = sizes(args);
    for &cpus in &sz.cpus {
        run_qos(cpus, &sz, args.parallel, &env)?;
        crate::bench_queue::run(cpus, sz.repeats, sz.bursts, args.parallel, &env)?;
    }
    step(&format!(
        "bench done in {:.1} min",
        started.elapsed().as_secs_f64() / 60.0
    ));
    Ok(0)
}

/// Group B: primary QoS beside guests (bench/qos.sh), report and plot.
fn run_qos(cpus: u32, sz: &Sizes, parallel: bool, env: &[(String, String)]) -> Result<()> {
    let t = Instant::now();
    let (mode, emulation) = emulation(parallel);
    let raw = run_script(
        "qos.sh",
        cpus,
        !parallel,
        env,
        &[sz.repeats.to_string(), sz.rounds.to_string()],
    )?;
    let name = format!("qos-{cpus}cpu-{mode}");
    let header = format!(
        "## Primary QoS beside guests (group B), {cpus} vCPU(s), {mode}\n\n{} ; QEMU TCG, {emulation}; no caches are modelled, so cache effects (Strazdins & Uhlmann) are not captured; {} repeats; one half-busy primary job per CPU (10 ms compute, 10 ms sleep), one CPU-bound guest per CPU. Run delay from /proc schedstat; wake-up to running = how late each primary ran after its sleep's deadline (1 ns timer slack), p50 mean over jobs, p99 of the worst job; guest harvest = guest CPU / (guest CPU + idle CPU) from /proc. Run took {:.1} min.\n\n![QoS impact]({name}.png)",
        script_header(&raw),
        sz.repeats,
        t.elapsed().as_secs_f64() / 60.0
    );
    let runs = parse(&raw);
    save_report(&name, &report(&runs, &header), &raw)?;
    plot(
        &runs,
        &results_dir().join(format!("{name}.png")),
        &format!("Primary QoS beside guests, {cpus} vCPU(s)"),
    )
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

/// Where reports, raw outputs and plots go.
pub fn results_dir() -> std::path::PathBuf {
    project_root().join("bench/results")
}

/// Write a report (`name`.md) and the raw output it came from (`name`.raw)
/// to bench/results, and show the report.
pub fn save_report(name: &str, table: &str, raw: &str) -> Result<()> {
    let results = results_dir();
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
case=nice19 rep=1 wall=2.2 run=1.0 delay_us=500.0 slices=100 guest_run=900000e-6 idle=100000e-6
case=linger rep=1 wall=2.01 run=1.0 delay_us=20.0 slices=100 late_p50_us=30.0 late_p99_us=90.0 guest_run=980000e-6 idle=20000e-6
case=layered rep=1 wall=2.1 run=1.0 delay_us=200.0 slices=100 late_p50_us=300.0 late_p99_us=900.0 guest_run=900000e-6 idle=0e-6
";
        let runs = parse(raw);
        assert_eq!(runs.len(), 4);
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
        assert!(md.contains("| 20 | 30 / 90 | 0.98 | 98.0% |"), "{md}");
        assert!(
            md.contains("| scx_layered 1.1.4, guests in a weight-1 layer | 2.100 | +5.00%"),
            "{md}"
        );
    }
}
