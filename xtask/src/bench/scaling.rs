// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench --scaling`: scheduling cost as CPUs grow. hackbench
//! (bench/overhead.sh, nothing but wake-ups and context switches) under
//! EEVDF, scx_bpfland, scx_linger and scx_linger with one queue per class
//! for the whole node (`run --queues node`), one icount guest boot per
//! vCPU count and per node shape (`--topology`, e.g. 2s4c1t: 8 vCPUs on
//! 2 LLCs), each scheduler's median a ratio against EEVDF in the same
//! boot. A bar chart per boot (bench/results/scaling-icount.png) is the
//! curve.
//!
//! What icount can show: the instructions each scheduler spends per
//! wake-up and switch as the CPU count grows (loops over CPUs, cpumask
//! work, more CPUs to kick). What it cannot: lock contention and cache-
//! line traffic between CPUs running truly at once (scx issue 998's
//! shared-DSQ collapse on 128 CPUs). icount runs the vCPUs round-robin in
//! one host thread, and the emulator models no caches.

use std::collections::BTreeMap;

use anyhow::Result;

use super::common::{field, median, run_script_with, save_report, word};
use super::plot::{self, Bars};
use crate::paths::project_root;
use crate::shape::Shape;

/// The schedulers compared, as overhead.sh names them, and their labels.
const CASES: [(&str, &str); 4] = [
    ("eevdf", "EEVDF"),
    ("bpfland", "scx_bpfland 1.1.4"),
    ("linger", "scx_linger"),
    ("linger_nodeq", "--queues node"),
];

/// Median hackbench seconds per case in one boot's raw output.
fn medians(raw: &str) -> BTreeMap<String, f64> {
    let mut runs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in raw.lines().filter(|l| l.starts_with("case=")) {
        if let (Some(case), Some(t)) = (word(line, "case"), field(line, "time")) {
            runs.entry(case.to_string()).or_default().push(t);
        }
    }
    runs.into_iter()
        .map(|(c, mut v)| (c, median(&mut v)))
        .collect()
}

/// The report: one row per boot, seconds and ratios against EEVDF.
pub fn report(points: &[(String, BTreeMap<String, f64>)], header: &str) -> String {
    let mut out = format!(
        "{header}\n\n| guest | {} | scx_bpfland vs EEVDF | scx_linger vs EEVDF | one queue vs EEVDF |\n|---|---|---|---|---|---|---|---|\n",
        CASES.map(|c| c.1).join(" | ")
    );
    for (guest, m) in points {
        let secs: Vec<String> = CASES
            .iter()
            .map(|(c, _)| m.get(*c).map_or("-".into(), |t| format!("{t:.3} s")))
            .collect();
        let vs = |c: &str| match (m.get(c), m.get("eevdf")) {
            (Some(t), Some(e)) => format!("{:.2}x", t / e),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "| {guest} | {} | {} | {} | {} |\n",
            secs.join(" | "),
            vs("bpfland"),
            vs("linger"),
            vs("linger_nodeq")
        ));
    }
    out
}

/// The row name of a boot: its vCPU count, and its shape if it has one.
fn guest_name(cpus: u32, shape: Option<Shape>) -> String {
    match shape {
        Some(s) => format!("{} ({s}: {} LLCs)", s.cpus(), s.sockets),
        None => format!("{cpus} (1 LLC)"),
    }
}

pub fn run(cpus: &[u32], shapes: &[Shape], repeats: u32, env: &[(String, String)]) -> Result<()> {
    let started = std::time::Instant::now();
    let mut env = env.to_vec();
    env.push(("CASES".into(), CASES.map(|c| c.0).join(" ")));
    let mut points = Vec::new();
    let mut raws = String::new();
    let boots = cpus
        .iter()
        .map(|&n| (n, None))
        .chain(shapes.iter().map(|s| (s.cpus(), Some(*s))));
    for (n, shape) in boots {
        let (raw, _) = run_script_with(
            "overhead.sh",
            n,
            true,
            &env,
            &[repeats.to_string(), "2".into(), "100".into()],
            None,
            shape,
        )?;
        let name = guest_name(n, shape);
        raws.push_str(&format!("## {name}\n{raw}\n"));
        points.push((name, medians(&raw)));
    }
    let header = format!(
        "## Scheduling cost as CPUs grow: hackbench -p -g 2 -l 100, icount\n\nOne guest boot per vCPU count (QEMU TCG, `-icount shift=3,sleep=off`), {repeats} repeats, medians; run took {:.1} min. icount shows the instructions each scheduler spends as CPUs are added, not lock contention or cache traffic between CPUs running at once (see xtask/src/bench/scaling.rs).",
        started.elapsed().as_secs_f64() / 60.0
    );
    let table = report(&points, &header);
    save_report("scaling-icount", &table, &raws)?;
    let bars = Bars {
        title: "hackbench time vs EEVDF in the same boot, by vCPU count (icount)".into(),
        y_label: "time / EEVDF's".into(),
        groups: points.iter().map(|(n, _)| n.clone()).collect(),
        series: CASES
            .iter()
            .map(|(c, label)| {
                (
                    label.to_string(),
                    points
                        .iter()
                        .map(|(_, m)| match (m.get(*c), m.get("eevdf")) {
                            (Some(t), Some(e)) => t / e,
                            _ => f64::NAN,
                        })
                        .collect(),
                )
            })
            .collect(),
        fmt: |v| format!("{v:.2}"),
    };
    plot::draw(
        &project_root().join("bench/results/scaling-icount.png"),
        &bars,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_each_size_against_eevdf_in_its_own_boot() {
        let one = medians(
            "case=eevdf rep=1 time=2.0\ncase=linger rep=1 time=1.0\ncase=eevdf rep=2 time=4.0\n",
        );
        let md = report(&[(guest_name(4, None), one)], "h");
        assert!(
            md.contains("| 4 (1 LLC) | 3.000 s | - | 1.000 s | - | - | 0.33x | - |"),
            "{md}"
        );
        let shape: Shape = "2s4c1t".parse().unwrap();
        assert_eq!(guest_name(8, Some(shape)), "8 (2s4c1t2n: 2 LLCs)");
    }
}
