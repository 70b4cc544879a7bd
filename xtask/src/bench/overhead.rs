// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench --overhead`: what scheduling through scx_linger
//! costs, and what its accounting adds (bench/overhead.sh). hackbench
//! runs under EEVDF, scx_linger, and scx_linger --no-accounting, in one
//! icount guest boot, so every figure is a ratio against EEVDF (or against
//! scx_linger without accounting) measured alongside it.

use std::collections::BTreeMap;

use anyhow::Result;

use super::common::{field, median, run_script, save_report, script_header, word};

/// hackbench seconds per repeat, per case.
fn parse(raw: &str) -> BTreeMap<String, Vec<f64>> {
    let mut runs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in raw.lines().filter(|l| l.starts_with("case=")) {
        if let (Some(case), Some(t)) = (word(line, "case"), field(line, "time")) {
            runs.entry(case.to_string()).or_default().push(t);
        }
    }
    runs
}

fn min_max(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::MAX, f64::min);
    let hi = v.iter().copied().fold(f64::MIN, f64::max);
    (lo, hi)
}

pub fn report(raw: &str, header: &str) -> String {
    let runs = parse(raw);
    let mut out = format!("{header}\n\n");
    let med = |case: &str| runs.get(case).map(|v| median(&mut v.clone()));
    let Some(eevdf) = med("eevdf") else {
        out.push_str("(no EEVDF run: the bench failed)\n");
        return out;
    };
    let bpfland = med("bpfland");
    out.push_str("| scheduler | hackbench time, median (min..max) | vs EEVDF | vs scx_bpfland |\n|---|---|---|---|\n");
    for (case, what) in [
        ("eevdf", "EEVDF (Linux default)"),
        ("bpfland", "scx_bpfland 1.1.4"),
        ("linger", "scx_linger"),
        ("linger_noacct", "scx_linger --no-accounting"),
        ("linger_nowp", "scx_linger --no-wake-preempt"),
    ] {
        let (Some(v), Some(m)) = (runs.get(case), med(case)) else {
            continue;
        };
        let (lo, hi) = min_max(v);
        out.push_str(&format!(
            "| {what} | {m:.3} s ({lo:.3}..{hi:.3}) | {:+.1}% | {} |\n",
            (m / eevdf - 1.0) * 100.0,
            bpfland.map_or("-".into(), |b| format!("{:+.1}%", (m / b - 1.0) * 100.0))
        ));
    }
    if let (Some(on), Some(off)) = (med("linger"), med("linger_noacct")) {
        out.push_str(&format!(
            "\nCost of counting (per-class and per-job accounting on vs off): {:+.1}%.\n",
            (on / off - 1.0) * 100.0
        ));
    }
    if let (Some(on), Some(off)) = (med("linger"), med("linger_nowp")) {
        out.push_str(&format!(
            "\nCost of wake-up preemption among primaries (on vs off): {:+.1}%.\n",
            (on / off - 1.0) * 100.0
        ));
    }
    out
}

pub fn run(cpus: u32, repeats: u32, env: &[(String, String)]) -> Result<()> {
    let started = std::time::Instant::now();
    let raw = run_script(
        "overhead.sh",
        cpus,
        true,
        env,
        &[repeats.to_string(), "2".into(), "100".into()],
    )?;
    let header = format!(
        "## Scheduler overhead: hackbench, {cpus} vCPU(s), icount\n\n{} ; QEMU TCG with `-icount shift=3,sleep=off` (guest time follows instruction counts, so host noise drops out; no caches are modelled); {repeats} repeats; run took {:.1} min.",
        script_header(&raw),
        started.elapsed().as_secs_f64() / 60.0
    );
    let table = report(&raw, &header);
    save_report(&format!("overhead-{cpus}cpu-icount"), &table, &raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_ratios_against_eevdf_and_the_cost_of_counting() {
        let raw = "\
# kernel=7.3 cpus=2 hackbench -p -g 2 -l 100
case=eevdf rep=1 time=1.000
case=linger rep=1 time=1.050
case=linger_noacct rep=1 time=1.000
case=eevdf rep=2 time=1.100
case=bpfland rep=1 time=1.075
case=linger rep=2 time=1.100
case=linger_noacct rep=2 time=1.050
";
        let md = report(raw, "h");
        assert!(
            md.contains("| EEVDF (Linux default) | 1.050 s (1.000..1.100) | +0.0% | -2.3% |"),
            "{md}"
        );
        assert!(
            md.contains("| scx_linger | 1.075 s (1.050..1.100) | +2.4% | +0.0% |"),
            "{md}"
        );
        assert!(
            md.contains("Cost of counting (per-class and per-job accounting on vs off): +4.9%"),
            "{md}"
        );
        assert!(report("", "h").contains("no EEVDF run"));
    }
}
