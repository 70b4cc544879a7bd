// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench --schbench`: schbench's requests as primaries
//! (bench/schbench.sh), saturated and at half of EEVDF's saturated rate,
//! with no guests and beside CPU-bound guests, under EEVDF and scx_linger
//! in one icount guest boot. Every figure is set against EEVDF's with no
//! guests at the same load, and judged against the targets: saturated
//! requests/s at or above EEVDF's; at the fixed rate, request p99 within
//! 1.2x EEVDF's, with and without guests. schbench's wake-up latency is a
//! scheduling delay only when saturated (a worker's wait from posting
//! itself to running, through the message thread); at a fixed rate it
//! counts from the worker's last request, so its idle wait for the next
//! one, and is not reported there.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;

use super::common::{emulation, field, median, run_script, save_report, script_header, word};
use crate::setup::{deps, schbench};

/// One run's figures.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    rps: f64,
    wake_p50: f64,
    wake_p99: f64,
    req_p50: f64,
    req_p99: f64,
}

fn parse(raw: &str) -> BTreeMap<String, Vec<Run>> {
    let mut runs: BTreeMap<String, Vec<Run>> = BTreeMap::new();
    for line in raw.lines().filter(|l| l.starts_with("case=")) {
        let f = |k| field(line, k);
        let (Some(case), Some(rps), Some(wake_p50), Some(wake_p99), Some(req_p50), Some(req_p99)) = (
            word(line, "case"),
            f("rps"),
            f("wake_p50"),
            f("wake_p99"),
            f("req_p50"),
            f("req_p99"),
        ) else {
            continue;
        };
        runs.entry(case.to_string()).or_default().push(Run {
            rps,
            wake_p50,
            wake_p99,
            req_p50,
            req_p99,
        });
    }
    runs
}

/// Each figure's median over a case's runs.
fn medians(runs: &[Run]) -> Run {
    let m = |g: fn(&Run) -> f64| median(&mut runs.iter().map(g).collect::<Vec<_>>());
    Run {
        rps: m(|r| r.rps),
        wake_p50: m(|r| r.wake_p50),
        wake_p99: m(|r| r.wake_p99),
        req_p50: m(|r| r.req_p50),
        req_p99: m(|r| r.req_p99),
    }
}

/// The loads (the case names' middle word, and what it is) and the runs
/// at each (scheduler, guests suffix, what it is), as schbench.sh names
/// its cases: `<scheduler>_<load>[_guests]`.
const LOADS: [(&str, &str); 2] = [("sat", "saturated"), ("rate", "fixed rate")];
const RUNS: [(&str, &str, &str); 4] = [
    ("eevdf", "", "EEVDF (baseline)"),
    ("linger", "", "scx_linger"),
    ("eevdf", "_guests", "EEVDF + SCHED_IDLE guests"),
    ("linger", "_guests", "scx_linger + guests"),
];

/// Report rows: (case, what it is, the EEVDF case it is set against).
fn cases() -> Vec<(String, String, String)> {
    LOADS
        .iter()
        .flat_map(|&(load, said)| {
            RUNS.iter().map(move |&(sched, guests, what)| {
                (
                    format!("{sched}_{load}{guests}"),
                    format!("{said}, {what}"),
                    format!("eevdf_{load}"),
                )
            })
        })
        .collect()
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "not met"
    }
}

pub fn report(raw: &str, header: &str) -> String {
    let runs = parse(raw);
    let cases = cases();
    let med: BTreeMap<&str, Run> = cases
        .iter()
        .filter_map(|(c, _, _)| runs.get(c).map(|v| (c.as_str(), medians(v))))
        .collect();
    let mut out = format!("{header}\n\n");
    if !med.contains_key("eevdf_sat") {
        out.push_str("(no EEVDF run: the bench failed)\n");
        return out;
    }
    out.push_str("| case | runs | requests/s | wake-up p50 / p99 | request p50 / p99 | requests/s vs EEVDF | wake-up p99 vs EEVDF | request p99 vs EEVDF |\n|---|---|---|---|---|---|---|---|\n");
    for (case, what, base) in &cases {
        let (Some(r), Some(b)) = (med.get(case.as_str()), med.get(base.as_str())) else {
            continue;
        };
        let ratio = |a: f64, b: f64| format!("{:.2}x", a / b.max(1.0));
        let saturated = !case.contains("_rate");
        let (wake, wake_ratio) = if saturated {
            (
                format!("{:.0} / {:.0} us", r.wake_p50, r.wake_p99),
                ratio(r.wake_p99, b.wake_p99),
            )
        } else {
            ("-".into(), "-".into())
        };
        out.push_str(&format!(
            "| {what} | {} | {:.1} | {wake} | {:.0} / {:.0} us | {} | {wake_ratio} | {} |\n",
            runs[case].len(),
            r.rps,
            r.req_p50,
            r.req_p99,
            ratio(r.rps, b.rps),
            ratio(r.req_p99, b.req_p99),
        ));
    }
    out.push_str("\nTargets (each against EEVDF with no guests at the same load):\n");
    for (case, base, what) in [
        ("linger_sat", "eevdf_sat", "no guests"),
        ("linger_sat_guests", "eevdf_sat", "beside guests"),
    ] {
        if let (Some(r), Some(b)) = (med.get(case), med.get(base)) {
            out.push_str(&format!(
                "- saturated requests/s at or above EEVDF's, {what}: {:.2}x, {}\n",
                r.rps / b.rps.max(f64::MIN_POSITIVE),
                verdict(r.rps >= b.rps)
            ));
        }
    }
    for (case, what) in [
        ("linger_rate", "no guests"),
        ("linger_rate_guests", "beside guests"),
    ] {
        if let (Some(r), Some(b)) = (med.get(case), med.get("eevdf_rate")) {
            let req = r.req_p99 / b.req_p99.max(1.0);
            out.push_str(&format!(
                "- fixed rate, {what}: request p99 {req:.2}x (limit 1.2x), {}\n",
                verdict(req <= 1.2),
            ));
        }
    }
    out
}

pub fn run(cpus: u32, repeats: u32, env: &[(String, String)]) -> Result<()> {
    let started = Instant::now();
    // What building it from upstream's archive needs on the host.
    deps::install_packages(&["curl", "gcc", "make"])?;
    let bin = schbench::ensure()?;
    let runtime = 30u32;
    let raw = run_script(
        "schbench.sh",
        cpus,
        true,
        env,
        &[
            bin.to_string_lossy().into_owned(),
            runtime.to_string(),
            repeats.to_string(),
        ],
    )?;
    let (_, how) = emulation(false);
    let header = format!(
        "## schbench as primaries, {cpus} vCPU(s), icount\n\n{} ; schbench {} ; QEMU TCG with {how}; {} ; run took {:.1} min.",
        script_header(&raw),
        &schbench::SCHBENCH_COMMIT[..12],
        raw.lines()
            .filter(|l| l.starts_with("# fixed rate"))
            .map(|l| l.trim_start_matches("# "))
            .next()
            .unwrap_or("no fixed-rate run"),
        started.elapsed().as_secs_f64() / 60.0
    );
    save_report(
        &format!("schbench-{cpus}cpu-icount"),
        &report(&raw, &header),
        &raw,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_each_case_against_eevdf_at_the_same_load_and_judges_the_targets() {
        let raw = "\
# kernel=7.3 cpus=2 schbench -m 1 -t 4 -r 20 (x1)
case=eevdf_sat rep=1 rps=40.00 wake_p50=10 wake_p99=400 req_p50=90000 req_p99=150000
case=linger_sat rep=1 rps=44.00 wake_p50=12 wake_p99=600 req_p50=80000 req_p99=140000
# fixed rate: -R 20
case=eevdf_rate rep=1 rps=20.00 wake_p50=8 wake_p99=360 req_p50=50000 req_p99=152000
case=linger_rate rep=1 rps=20.00 wake_p50=9 wake_p99=9500 req_p50=52000 req_p99=170000
case=linger_rate_guests rep=1 rps=20.00 wake_p50=9 wake_p99=500 req_p50=52000 req_p99=353000
";
        let md = report(raw, "h");
        assert!(
            md.contains("| saturated, scx_linger | 1 | 44.0 | 12 / 600 us | 80000 / 140000 us | 1.10x | 1.50x | 0.93x |"),
            "{md}"
        );
        assert!(md.contains("no guests: 1.10x, met"), "{md}");
        assert!(
            md.contains(
                "| fixed rate, scx_linger | 1 | 20.0 | - | 52000 / 170000 us | 1.00x | - | 1.12x |"
            ),
            "{md}"
        );
        assert!(
            md.contains("fixed rate, no guests: request p99 1.12x (limit 1.2x), met\n"),
            "{md}"
        );
        assert!(
            md.contains("fixed rate, beside guests: request p99 2.32x (limit 1.2x), not met\n"),
            "{md}"
        );
        assert!(report("", "h").contains("no EEVDF run"));
    }
}
