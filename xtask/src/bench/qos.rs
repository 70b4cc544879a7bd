// SPDX-License-Identifier: GPL-2.0-only
//! Group B: primary quality of service beside guests (bench/qos.sh),
//! under each guest policy, as ratios against EEVDF with the primaries
//! alone in the same boot; its report and plot.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;

use super::common::{
    emulation, field, median, results_dir, run_script, save_report, script_header, word, Policy,
    Sizes, GUEST_POLICIES,
};
use super::plot::{self, Bars};

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
    plot::draw(
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

/// Group B: primary QoS beside guests (bench/qos.sh), report and plot.
pub fn run(cpus: u32, sz: &Sizes, parallel: bool, env: &[(String, String)]) -> Result<()> {
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
