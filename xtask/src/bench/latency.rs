// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench --latency`: a primary's wake-up latency (rt-tests'
//! cyclictest, SCHED_OTHER, 1 ms period) on a quiet node and beside the
//! duty primaries, alone and beside guests under every guest policy; and
//! what each scx_linger op costs per call by the kernel's BPF run-time
//! statistics, with its verified instruction count (bench/latency.sh).
//! Every latency is set against EEVDF's in the same boot.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;

use super::common::{emulation, field, run_script, save_report, script_header, word};
use crate::paths::project_root;

/// A latency histogram: 1 us buckets, and the samples past its end.
#[derive(Debug, Default, Clone)]
pub(super) struct Hist {
    buckets: BTreeMap<u64, u64>,
    over: u64,
}

impl Hist {
    pub(super) fn add_line(&mut self, line: &str) {
        for kv in line.split_whitespace() {
            if let Some((us, n)) = kv.split_once(':') {
                if let (Ok(us), Ok(n)) = (us.parse::<u64>(), n.parse::<u64>()) {
                    *self.buckets.entry(us).or_default() += n;
                }
            }
        }
        self.over += field(line, "over").unwrap_or(0.0) as u64;
    }

    pub(super) fn count(&self) -> u64 {
        self.buckets.values().sum::<u64>() + self.over
    }

    /// The smallest bucket holding fraction `q` of the samples; None if
    /// that lies past the histogram's end.
    pub(super) fn quantile(&self, q: f64) -> Option<u64> {
        let want = (q * self.count() as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (&us, &n) in &self.buckets {
            seen += n;
            if seen >= want {
                return Some(us);
            }
        }
        None
    }

    pub(super) fn max(&self) -> Option<u64> {
        (self.over == 0)
            .then(|| self.buckets.keys().next_back().copied())
            .flatten()
    }
}

/// Report rows: (case, what it is, the case it is a ratio against).
const CASES: [(&str, &str, &str); 16] = [
    ("quiet_eevdf", "quiet node, EEVDF (baseline)", "quiet_eevdf"),
    (
        "quiet_bpfland",
        "quiet node, scx_bpfland 1.1.4",
        "quiet_eevdf",
    ),
    ("quiet_linger", "quiet node, scx_linger", "quiet_eevdf"),
    (
        "quiet_linger_rescan1s",
        "quiet node, scx_linger rescanning every cgroup each second (as before cgroupfs events)",
        "quiet_eevdf",
    ),
    (
        "eevdf_alone",
        "duty primaries, EEVDF (baseline)",
        "eevdf_alone",
    ),
    (
        "sched_idle",
        "duty primaries + SCHED_IDLE guests, EEVDF",
        "eevdf_alone",
    ),
    (
        "cpu_idle",
        "duty primaries + cpu.idle=1 guests, EEVDF",
        "eevdf_alone",
    ),
    (
        "layered_alone",
        "duty primaries, scx_layered 1.1.4",
        "eevdf_alone",
    ),
    (
        "layered",
        "duty primaries + guests, scx_layered 1.1.4",
        "eevdf_alone",
    ),
    ("linger_alone", "duty primaries, scx_linger", "eevdf_alone"),
    (
        "linger",
        "duty primaries + guests, scx_linger",
        "eevdf_alone",
    ),
    (
        "linger_alone_nowp",
        "duty primaries, scx_linger --no-wake-preempt",
        "eevdf_alone",
    ),
    (
        "linger_nowp",
        "duty primaries + guests, scx_linger --no-wake-preempt",
        "eevdf_alone",
    ),
    (
        "linger_partial_alone",
        "duty primaries, scx_linger --partial (every task in the fair class)",
        "eevdf_alone",
    ),
    (
        "linger_partial",
        "duty primaries + SCHED_EXT guests, scx_linger --partial",
        "eevdf_alone",
    ),
    (
        "linger_stats",
        "as above, BPF run-time stats on (their cost included)",
        "eevdf_alone",
    ),
];

struct Parsed {
    hists: BTreeMap<String, Hist>,
    /// op -> (calls, ns)
    ops: BTreeMap<String, (u64, u64)>,
}

fn parse(raw: &str) -> Parsed {
    let mut hists: BTreeMap<String, Hist> = BTreeMap::new();
    let mut ops = BTreeMap::new();
    for line in raw.lines() {
        if let Some(case) = line
            .starts_with("case=")
            .then(|| word(line, "case"))
            .flatten()
        {
            hists.entry(case.to_string()).or_default().add_line(line);
        } else if let Some(op) = line.starts_with("op=").then(|| word(line, "op")).flatten() {
            let n = |k| field(line, k).unwrap_or(0.0) as u64;
            ops.insert(op.to_string(), (n("calls"), n("ns")));
        }
    }
    Parsed { hists, ops }
}

fn us(v: Option<u64>) -> String {
    v.map_or("> 20 ms".into(), |v| format!("{v} us"))
}

fn ratio(v: Option<u64>, base: Option<u64>) -> String {
    match (v, base) {
        (Some(v), Some(b)) if b > 0 => format!("{:.2}x", v as f64 / b as f64),
        _ => "-".into(),
    }
}

/// Verified instructions per program (first 15 characters of its name,
/// as the kernel keeps it) for a kernel series, from the budget the
/// verifier guest test holds every program to.
pub fn verified_budget(budget_toml: &str, series: &str) -> BTreeMap<String, u64> {
    let Ok(t) = budget_toml.parse::<toml::Table>() else {
        return BTreeMap::new();
    };
    t.get("kernels")
        .and_then(|k| k.get(series))
        .and_then(toml::Value::as_table)
        .map(|progs| {
            progs
                .iter()
                .filter_map(|(name, c)| {
                    let v = c.get("verified")?.as_integer()?;
                    Some((name.clone(), v as u64))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The kernel series ("7.3") of a bench header's `kernel=7.3.4+deb13`.
fn series(raw: &str) -> String {
    let k = raw
        .lines()
        .find_map(|l| word(l, "# kernel").or_else(|| word(l, "kernel")))
        .unwrap_or("");
    k.split('.').take(2).collect::<Vec<_>>().join(".")
}

pub fn report(raw: &str, header: &str, verified: &BTreeMap<String, u64>) -> String {
    let p = parse(raw);
    let mut out = format!("{header}\n\n");
    if p.hists.is_empty() {
        out.push_str("(no cyclictest run: the bench failed)\n");
        return out;
    }
    out.push_str("### Wake-up latency (cyclictest, SCHED_OTHER, 1 ms period)\n\n| case | wake-ups | p50 | p99 | p99.9 | max | p99 vs baseline | max vs baseline |\n|---|---|---|---|---|---|---|---|\n");
    for (case, what, base) in CASES {
        let Some(h) = p.hists.get(case) else {
            continue;
        };
        let b = p.hists.get(base);
        out.push_str(&format!(
            "| {what} | {} | {} | {} | {} | {} | {} | {} |\n",
            h.count(),
            us(h.quantile(0.5)),
            us(h.quantile(0.99)),
            us(h.quantile(0.999)),
            us(h.max()),
            ratio(h.quantile(0.99), b.and_then(|b| b.quantile(0.99))),
            ratio(h.max(), b.and_then(Hist::max)),
        ));
    }
    out.push_str(&targets(&p.hists));
    if !p.ops.is_empty() {
        let total: u64 = p.ops.values().map(|o| o.1).sum();
        out.push_str("\n### What each scx_linger op costs (kernel.bpf_stats_enabled, one cyclictest run beside duty primaries and guests)\n\nGuest time under icount (instruction counts, no caches modelled): compare ops with each other and across commits, not with hardware. Verified instructions: bpf/verifier-budget.toml for this kernel series.\n\n| op | calls | ns per call | share of BPF time | verified insns |\n|---|---|---|---|---|\n");
        let mut ops: Vec<_> = p.ops.iter().collect();
        ops.sort_by_key(|(_, o)| std::cmp::Reverse(o.1));
        for (op, (calls, ns)) in ops {
            let short: String = op.chars().take(15).collect();
            let insns = verified.get(&short).map_or("-".to_string(), u64::to_string);
            let per = if *calls > 0 {
                format!("{:.0}", *ns as f64 / *calls as f64)
            } else {
                "-".into()
            };
            out.push_str(&format!(
                "| {op} | {calls} | {per} | {:.1}% | {insns} |\n",
                *ns as f64 * 100.0 / total.max(1) as f64
            ));
        }
    }
    out
}

/// The targets, against this boot's baselines.
fn targets(h: &BTreeMap<String, Hist>) -> String {
    let get = |c: &str, f: &dyn Fn(&Hist) -> Option<u64>| h.get(c).and_then(f);
    let p50 = |x: &Hist| x.quantile(0.5);
    let p99 = |x: &Hist| x.quantile(0.99);
    let max = |x: &Hist| x.max();
    let mut out = String::from("\nTargets (ratios in this boot):\n");
    let mut line = |what: &str, v: Option<u64>, base: Option<u64>, limit: f64| {
        let verdict = match (v, base) {
            (Some(v), Some(b)) if b > 0 => {
                let r = v as f64 / b as f64;
                format!(
                    "{r:.2}x (limit {limit:.2}x): {}",
                    if r <= limit { "met" } else { "not met" }
                )
            }
            _ => "not measurable (past the histogram)".into(),
        };
        out.push_str(&format!("- {what}: {verdict}\n"));
    };
    line(
        "beside guests, p99 vs EEVDF with the primaries alone",
        get("linger", &p99),
        get("eevdf_alone", &p99),
        1.10,
    );
    line(
        "beside guests, max vs EEVDF with the primaries alone",
        get("linger", &max),
        get("eevdf_alone", &max),
        2.0,
    );
    line(
        "no guests (duty primaries), p50 vs EEVDF",
        get("linger_alone", &p50),
        get("eevdf_alone", &p50),
        1.0,
    );
    line(
        "no guests (duty primaries), p99 vs EEVDF",
        get("linger_alone", &p99),
        get("eevdf_alone", &p99),
        1.0,
    );
    line(
        "quiet node, p50 vs EEVDF",
        get("quiet_linger", &p50),
        get("quiet_eevdf", &p50),
        1.0,
    );
    line(
        "quiet node, p99 vs EEVDF",
        get("quiet_linger", &p99),
        get("quiet_eevdf", &p99),
        1.0,
    );
    out
}

/// The agent's own CPU on an idle node (bench/agent-cpu.sh), as a table.
pub fn agent_report(raw: &str) -> String {
    let mut out = String::from("\n### The agent's own CPU on an idle node (its schedstat, after its start-up scan)\n\n| cgroups | how changes reach it | agent CPU, % of one CPU |\n|---|---|---|\n");
    let mut at_1000 = None;
    for line in raw.lines().filter(|l| l.starts_with("agent ")) {
        let (Some(n), Some(how), Some(cpu), Some(span)) = (
            field(line, "cgroups"),
            word(line, "how"),
            field(line, "cpu_ns"),
            field(line, "span_ns"),
        ) else {
            continue;
        };
        let pct = cpu * 100.0 / span.max(1.0);
        let how_said = match how {
            "events" => "cgroupfs events (default)",
            "rescan1s" => "full rescan every second (before)",
            other => other,
        };
        if how == "events" && (500.0..5000.0).contains(&n) {
            at_1000 = Some(pct);
        }
        out.push_str(&format!("| {n:.0} | {how_said} | {pct:.3}% |\n"));
    }
    if let Some(p) = at_1000 {
        out.push_str(&format!(
            "\nTarget: at most 0.05% of one CPU with 1,000 cgroups: {p:.3}%, {}.\n",
            if p <= 0.05 { "met" } else { "not met" }
        ));
    }
    out
}

pub fn run(cpus: u32, repeats: u32, env: &[(String, String)]) -> Result<()> {
    let started = Instant::now();
    let loops = 10_000u32;
    let raw = run_script(
        "latency.sh",
        cpus,
        true,
        env,
        &[repeats.to_string(), loops.to_string()],
    )?;
    let (_, how) = emulation(false);
    let header = format!(
        "## Primary wake-up latency and per-op cost, {cpus} vCPU(s), icount\n\n{} ; QEMU TCG with {how}; {repeats} runs of {loops} wake-ups per case, histograms merged; run took {:.1} min.",
        script_header(&raw),
        started.elapsed().as_secs_f64() / 60.0
    );
    let budget = std::fs::read_to_string(project_root().join("bpf/verifier-budget.toml"))
        .unwrap_or_default();
    let mut table = report(&raw, &header, &verified_budget(&budget, &series(&raw)));
    let agent_raw = run_script("agent-cpu.sh", cpus, true, env, &["30".to_string()])?;
    table.push_str(&agent_report(&agent_raw));
    save_report(
        &format!("latency-{cpus}cpu-icount"),
        &table,
        &format!("{raw}\n{agent_raw}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_histograms_and_sets_each_case_against_its_baseline() {
        let raw = "\
# kernel=7.3 cpus=1
case=quiet_eevdf rep=1 50:98 60:1 70:1 over=0
case=quiet_eevdf rep=2 50:100 over=0
case=quiet_linger rep=1 55:99 200:1 over=0
case=eevdf_alone rep=1 100:99 300:1 over=0
case=linger rep=1 100:98 320:1 over=1
op=linger_enqueue calls=1000 ns=2000000
op=linger_running calls=500 ns=500000
";
        assert_eq!(series(raw), "7.3");
        let budget = verified_budget(
            "[kernels.\"7.3\"]\nlinger_enqueue = { insns = 1, verified = 900 }\n",
            "7.3",
        );
        let md = report(raw, "h", &budget);
        assert!(
            md.contains("| quiet node, EEVDF (baseline) | 200 | 50 us | 50 us | 70 us | 70 us | 1.00x | 1.00x |"),
            "{md}"
        );
        assert!(
            md.contains("| quiet node, scx_linger | 100 | 55 us | 55 us | 200 us | 200 us | 1.10x | 2.86x |"),
            "{md}"
        );
        // One sample past the histogram: no max, p99 still inside it.
        assert!(
            md.contains("| 100 | 100 us | 320 us | > 20 ms | > 20 ms | 3.20x | - |"),
            "{md}"
        );
        assert!(
            md.contains("| linger_enqueue | 1000 | 2000 | 80.0% | 900 |"),
            "{md}"
        );
        assert!(
            md.contains("| linger_running | 500 | 1000 | 20.0% | - |"),
            "{md}"
        );
        assert!(
            md.contains("quiet node, p50 vs EEVDF: 1.10x (limit 1.00x): not met"),
            "{md}"
        );
        assert!(report("", "h", &budget).contains("no cyclictest run"));
        let agent = agent_report(
            "agent cgroups=1012 how=events cpu_ns=3000000 span_ns=30000000000\nagent cgroups=1012 how=rescan1s cpu_ns=300000000 span_ns=30000000000\n",
        );
        assert!(
            agent.contains("| 1012 | cgroupfs events (default) | 0.010% |"),
            "{agent}"
        );
        assert!(
            agent.contains("| 1012 | full rescan every second (before) | 1.000% |"),
            "{agent}"
        );
        assert!(agent.contains("0.010%, met"), "{agent}");
    }
}
