// SPDX-License-Identifier: GPL-2.0-only
//! Group C of the seed paper (Stiehr & Chamberlain 2006): what running
//! guests beside primaries does to a node's throughput, efficiency and
//! turnaround, and what it costs the primaries (bench/queue.sh). Every
//! policy is compared with the dedicated run of the same queues, one job
//! at a time, measured in the same guest boot.
//!
//! Definitions, as in the paper: throughput = jobs / hours until the last
//! job ends; efficiency = CPU time of all jobs / (CPUs x that wall time);
//! turnaround = a job's finish time, all being submitted at 0; primary
//! quality of service = the time until the last primary job ends.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use super::common::{
    emulation, field, median, results_dir, run_script, save_report, script_header, word, Policy,
    GUEST_POLICIES,
};
use super::plot::{self, Bars};

/// The dedicated run every policy is compared with, then the policies.
fn policies() -> Vec<Policy> {
    let mut p = vec![(
        "dedicated",
        "dedicated",
        "EEVDF, one job at a time (dedicated)",
    )];
    p.extend(GUEST_POLICIES);
    p
}

/// One job's line from queue.sh.
struct Job {
    primary: bool,
    cpu: f64,
    finish: f64,
}

/// One queue run's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub primaries_done: f64,
    pub makespan: f64,
    pub jobs_per_hour: f64,
    pub efficiency: f64,
    pub turnaround: f64,
}

fn outcome(jobs: &[Job], cpus: f64) -> Outcome {
    let makespan = jobs.iter().map(|j| j.finish).fold(0.0, f64::max);
    let primaries_done = jobs
        .iter()
        .filter(|j| j.primary)
        .map(|j| j.finish)
        .fold(0.0, f64::max);
    let n = jobs.len() as f64;
    Outcome {
        primaries_done,
        makespan,
        jobs_per_hour: n / makespan * 3600.0,
        efficiency: jobs.iter().map(|j| j.cpu).sum::<f64>() / (cpus * makespan),
        turnaround: jobs.iter().map(|j| j.finish).sum::<f64>() / n,
    }
}

/// experiment -> policy -> one outcome per repeat, in experiment order.
pub type Outcomes = Vec<(String, BTreeMap<String, Vec<Outcome>>)>;

pub fn parse(raw: &str) -> Outcomes {
    let cpus = raw
        .lines()
        .find(|l| l.starts_with("# "))
        .and_then(|l| field(l, "cpus"))
        .unwrap_or(1.0);
    // (exp, case, rep) -> jobs, keeping the experiments' order.
    let mut order: Vec<String> = Vec::new();
    let mut runs: BTreeMap<(String, String, u32), Vec<Job>> = BTreeMap::new();
    for line in raw.lines().filter(|l| l.starts_with("case=")) {
        let (Some(case), Some(exp), Some(rep), Some(role)) = (
            word(line, "case"),
            word(line, "exp"),
            field(line, "rep"),
            word(line, "role"),
        ) else {
            continue;
        };
        let (Some(cpu), Some(finish)) = (field(line, "cpu"), field(line, "finish")) else {
            continue;
        };
        if !order.iter().any(|e| e == exp) {
            order.push(exp.to_string());
        }
        runs.entry((exp.to_string(), case.to_string(), rep as u32))
            .or_default()
            .push(Job {
                primary: role == "primary",
                cpu,
                finish,
            });
    }
    order
        .into_iter()
        .map(|exp| {
            let mut by_case: BTreeMap<String, Vec<Outcome>> = BTreeMap::new();
            for ((e, case, _), jobs) in &runs {
                if *e == exp {
                    by_case
                        .entry(case.clone())
                        .or_default()
                        .push(outcome(jobs, cpus));
                }
            }
            (exp, by_case)
        })
        .collect()
}

fn med(v: &[Outcome], f: impl Fn(&Outcome) -> f64) -> f64 {
    median(&mut v.iter().map(f).collect::<Vec<_>>())
}

/// Change of `x` against `base`, in percent.
fn pct(x: f64, base: f64) -> f64 {
    (x / base - 1.0) * 100.0
}

pub fn report(outcomes: &Outcomes, header: &str) -> String {
    let mut out = format!("{header}\n");
    for (exp, by_case) in outcomes {
        let Some(base) = by_case.get("dedicated") else {
            continue;
        };
        let b = |f: fn(&Outcome) -> f64| med(base, f);
        out.push_str(&format!(
            "\n### {exp} primaries\n\n| policy | primaries done, s | primary run-time increase, median (min..max) | all done, s | throughput, jobs/h | throughput gain | efficiency | mean turnaround, s | turnaround change |\n|---|---|---|---|---|---|---|---|---|\n"
        ));
        for (case, _, what) in policies() {
            let Some(v) = by_case.get(case) else {
                continue;
            };
            let incs: Vec<f64> = v
                .iter()
                .map(|o| pct(o.primaries_done, b(|o| o.primaries_done)))
                .collect();
            let lo = incs.iter().copied().fold(f64::MAX, f64::min);
            let hi = incs.iter().copied().fold(f64::MIN, f64::max);
            out.push_str(&format!(
                "| {what} | {:.2} | {:+.2}% ({lo:+.2}..{hi:+.2}) | {:.2} | {:.0} | {:+.1}% | {:.1}% | {:.2} | {:+.1}% |\n",
                med(v, |o| o.primaries_done),
                median(&mut incs.clone()),
                med(v, |o| o.makespan),
                med(v, |o| o.jobs_per_hour),
                pct(med(v, |o| o.jobs_per_hour), b(|o| o.jobs_per_hour)),
                med(v, |o| o.efficiency) * 100.0,
                med(v, |o| o.turnaround),
                pct(med(v, |o| o.turnaround), b(|o| o.turnaround)),
            ));
        }
    }
    out
}

/// The three plots of a queue report: primary run-time increase,
/// throughput gain, efficiency, per experiment and policy.
pub fn plot(outcomes: &Outcomes, dir: &Path, name: &str, title: &str) -> Result<()> {
    let groups: Vec<String> = outcomes
        .iter()
        .map(|(e, _)| format!("{e} primaries"))
        .collect();
    let series = |skip_dedicated: bool, f: &dyn Fn(&[Outcome], &[Outcome]) -> f64| {
        policies()
            .into_iter()
            .filter(|(case, _, _)| !(skip_dedicated && *case == "dedicated"))
            .map(|(case, legend, _)| {
                let values = outcomes
                    .iter()
                    .map(
                        |(_, by_case)| match (by_case.get(case), by_case.get("dedicated")) {
                            (Some(v), Some(base)) => f(v, base),
                            _ => f64::NAN,
                        },
                    )
                    .collect();
                (legend.to_string(), values)
            })
            .collect::<Vec<_>>()
    };
    let charts = [
        (
            "qos",
            "primary run-time increase vs dedicated, %",
            series(true, &|v, b| {
                pct(med(v, |o| o.primaries_done), med(b, |o| o.primaries_done))
            }),
        ),
        (
            "throughput",
            "throughput gain vs dedicated, %",
            series(true, &|v, b| {
                pct(med(v, |o| o.jobs_per_hour), med(b, |o| o.jobs_per_hour))
            }),
        ),
        (
            "efficiency",
            "efficiency (CPU time used / CPU time available), %",
            series(false, &|v, _| med(v, |o| o.efficiency) * 100.0),
        ),
    ];
    for (what, y_label, series) in charts {
        plot::draw(
            &dir.join(format!("{name}-{what}.png")),
            &Bars {
                title: format!("{title}: {y_label}"),
                y_label: y_label.to_string(),
                groups: groups.clone(),
                series,
                fmt: |v| format!("{v:.1}"),
            },
        )?;
    }
    Ok(())
}

/// Run bench/queue.sh in one guest boot; write its report and plots.
pub fn run(
    cpus: u32,
    repeats: u32,
    bursts: u32,
    parallel: bool,
    env: &[(String, String)],
) -> Result<()> {
    let t = std::time::Instant::now();
    let (mode, emulation) = emulation(parallel);
    let raw = run_script(
        "queue.sh",
        cpus,
        !parallel,
        env,
        &[repeats.to_string(), bursts.to_string()],
    )?;
    let name = format!("queue-{cpus}cpu-{mode}");
    let header = format!(
        "## Throughput, efficiency and turnaround of job queues (group C), {cpus} vCPU(s), {mode}\n\n{} ; QEMU TCG, {emulation}; no caches are modelled; {repeats} repeats, medians. Per experiment a queue of primary jobs and a queue of 3 CPU-bound guest jobs, all submitted at 0, each job one thread per CPU: cpu jobs compute {bursts} bursts of 10 ms per thread, io jobs sleep 10 ms after every burst. Dedicated = EEVDF, one job at a time, primaries first (the paper's set 5; its jobs never overlap, so it is also group A, each job alone); the other rows run both queues side by side (sets 6 and 7). Run took {:.1} min.\n\n![primary QoS]({name}-qos.png) ![throughput]({name}-throughput.png) ![efficiency]({name}-efficiency.png)",
        script_header(&raw),
        t.elapsed().as_secs_f64() / 60.0
    );
    let outcomes = parse(&raw);
    save_report(&name, &report(&outcomes, &header), &raw)?;
    plot(&outcomes, &results_dir(), &name, &format!("{cpus} vCPU(s)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "\
# kernel=7.3 cpus=2 iters_per_10ms=1 bursts=100
case=dedicated exp=io-bound rep=1 role=primary kind=io wall=2.0 cpu=2.0 finish=2.0e0
case=dedicated exp=io-bound rep=1 role=guest kind=cpu wall=1.0 cpu=2.0 finish=3.0e0
case=linger exp=io-bound rep=1 role=primary kind=io wall=2.02 cpu=2.0 finish=2.02e0
case=linger exp=io-bound rep=1 role=guest kind=cpu wall=2.0 cpu=2.0 finish=2.0e0
case=nice19 exp=io-bound rep=1 role=primary kind=io wall=2.4 cpu=2.0 finish=2.4e0
case=nice19 exp=io-bound rep=1 role=guest kind=cpu wall=2.0 cpu=2.0 finish=2.0e0
";

    #[test]
    fn figures_follow_the_papers_definitions() {
        let o = parse(RAW);
        assert_eq!(o.len(), 1);
        let ded = o[0].1["dedicated"][0];
        // Two jobs in 3 s on 2 CPUs, 4 CPU-s used.
        assert_eq!(ded.makespan, 3.0);
        assert_eq!(ded.jobs_per_hour, 2400.0);
        assert!((ded.efficiency - 4.0 / 6.0).abs() < 1e-9);
        assert_eq!(ded.turnaround, 2.5);
        assert_eq!(ded.primaries_done, 2.0);
    }

    #[test]
    fn report_gives_changes_against_the_dedicated_run() {
        let md = report(&parse(RAW), "h");
        assert!(md.contains("### io-bound primaries"), "{md}");
        // Primaries 1% later, throughput 2400 -> 3564 jobs/h (+48.5%).
        assert!(
            md.contains("| scx_linger, guests labelled guest | 2.02 | +1.00% (+1.00..+1.00) | 2.02 | 3564 | +48.5% |"),
            "{md}"
        );
        assert!(
            md.contains("| EEVDF, guests at nice 19 | 2.40 | +20.00%"),
            "{md}"
        );
    }
}
