// SPDX-License-Identifier: GPL-2.0-only
//! The verifier budget (bpf/verifier-budget.toml): what each of our BPF
//! programs costs the kernel's verifier, held against the recorded figures
//! on every run, as the kernel reports them.
//!
//! Two figures per program, from the kernel's bpf_prog_info while the
//! scheduler is loaded: its length after the verifier's rewrites (`insns`)
//! and the instructions the verifier processed to accept it (`verified`,
//! verified_insns). The second is what runs out
//! first: the kernel refuses a program past one million, and a scheduler
//! that creeps towards it fails to load on some kernel one day. A figure
//! may grow by GROWTH over its record; past that the test fails and says
//! which program grew, so that the growth is looked at and recorded on
//! purpose (`cargo xtask verifier --record`) rather than found later.

use std::collections::BTreeMap;
use std::time::Duration;

use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};
use serde::{Deserialize, Serialize};

use crate::common::*;

/// How much a figure may grow over its record before the test fails.
const GROWTH: f64 = 0.10;
/// The kernel's limit on instructions processed per program.
const KERNEL_LIMIT: u64 = 1_000_000;
/// What any one program may cost, on any kernel, whatever its record:
/// 4% of the kernel's limit. What grows past it is a loop walked again
/// inside every caller that inlines it; the fix is to make the loop, or
/// its body, a function of its own (`__noinline`, not `__hidden`, which
/// the BPF linker turns static), which the verifier checks once.
const PROGRAM_CEILING: u64 = 40_000;

/// One program's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    pub insns: u64,
    pub verified: u64,
}

/// bpf/verifier-budget.toml: per kernel series ("7.3", "6.12"), per
/// program.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Budget {
    pub kernels: BTreeMap<String, BTreeMap<String, Cost>>,
}

fn budget_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf/verifier-budget.toml")
}

/// The kernel series this guest runs: "7.3" of "7.3.4+deb13-amd64".
fn kernel_series() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    release
        .trim()
        .split('.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".")
}

/// Time since boot, as the kernel stamps a program's load.
fn since_boot() -> Duration {
    let up = std::fs::read_to_string("/proc/uptime").unwrap_or_default();
    let secs: f64 = up
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    Duration::from_secs_f64(secs)
}

/// Every BPF program of ours loaded since `since`, by name: the kernel's
/// own bpf_prog_info (Debian's bpftool shows neither verified_insns nor
/// which process holds a program).
fn programs_since(since: Duration) -> BTreeMap<String, Cost> {
    let opts = ProgInfoQueryOptions::default().include_xlated_prog_insns(true);
    ProgInfoIter::with_query_opts(opts)
        .filter(|p| p.load_time >= since)
        .filter_map(|p| {
            let name = p.name.to_string_lossy().into_owned();
            name.starts_with("linger_").then(|| {
                let cost = Cost {
                    insns: p.xlated_prog_insns.len() as u64 / 8,
                    verified: u64::from(p.verified_insns),
                };
                (name, cost)
            })
        })
        .collect()
}

#[test]
fn every_program_stays_within_its_verifier_budget() {
    require_guest();
    let llcs = super::llcs().len();
    assert!(
        llcs >= 2,
        "the budget is measured on a guest of 2 or more LLCs (`cargo xtask verifier` boots one); this one has {llcs}"
    );
    // Whole seconds: /proc/uptime and load times are rounded differently.
    let before = since_boot().saturating_sub(Duration::from_secs(1));
    let agent = Agent::start(&[]);
    let measured = programs_since(before);
    drop(agent);
    assert!(
        measured.len() >= 16,
        "found {} programs of the agent's: {measured:?}",
        measured.len()
    );

    // What was measured, for `cargo xtask verifier --record` to keep.
    let series = kernel_series();
    let mut found = Budget::default();
    found.kernels.insert(series.clone(), measured.clone());
    std::fs::write(
        results_dir().join("verifier.toml"),
        toml::to_string(&found).unwrap(),
    )
    .unwrap();
    let mut total = Cost {
        insns: 0,
        verified: 0,
    };
    for c in measured.values() {
        total.insns += c.insns;
        total.verified += c.verified;
    }
    figure(&format!(
        "verifier on {series}: {} programs, {} insns, {} verified in all; most verified: {}",
        measured.len(),
        total.insns,
        total.verified,
        measured
            .iter()
            .max_by_key(|(_, c)| c.verified)
            .map_or(String::new(), |(n, c)| format!("{n} {}", c.verified))
    ));
    if std::env::var_os("SCX_LINGER_VERIFIER_RECORD").is_some() {
        return;
    }

    let text = std::fs::read_to_string(budget_path()).expect(
        "bpf/verifier-budget.toml is missing: record it with `cargo xtask verifier --record`",
    );
    let budget: Budget = toml::from_str(&text).expect("bpf/verifier-budget.toml does not parse");
    // A newer kernel than any recorded (Debian moved on) is held against
    // the newest record below it; its own figures come with a --record.
    let key = |s: &str| -> Vec<u64> { s.split('.').filter_map(|n| n.parse().ok()).collect() };
    let (rec_series, recorded) = budget
        .kernels
        .iter()
        .filter(|(s, _)| key(s) <= key(&series))
        .max_by_key(|(s, _)| key(s))
        .unwrap_or_else(|| {
            panic!("bpf/verifier-budget.toml has no figures for kernel {series} or older: record them with `cargo xtask verifier --record`")
        });
    if *rec_series != series {
        figure(&format!(
            "verifier on {series}: held against the {rec_series} record (no {series} figures yet)"
        ));
    }
    let mut over = Vec::new();
    for (name, cost) in &measured {
        assert!(
            cost.verified < KERNEL_LIMIT / 2,
            "{name}: the verifier processed {} instructions, over half the kernel's limit",
            cost.verified
        );
        if cost.verified > PROGRAM_CEILING {
            over.push(format!(
                "{name}: verified {} past the ceiling of {PROGRAM_CEILING} for any program",
                cost.verified
            ));
        }
        let Some(rec) = recorded.get(name) else {
            over.push(format!("{name}: new program, not in the budget"));
            continue;
        };
        let grew = |now: u64, was: u64| now as f64 > was as f64 * (1.0 + GROWTH);
        if grew(cost.insns, rec.insns) || grew(cost.verified, rec.verified) {
            over.push(format!(
                "{name}: insns {} -> {}, verified {} -> {}",
                rec.insns, cost.insns, rec.verified, cost.verified
            ));
        }
    }
    assert!(
        over.is_empty(),
        "over bpf/verifier-budget.toml ({rec_series}) on {series}: grew more than {:.0}%, or past the ceiling (look at why, then `cargo xtask verifier --record`):\n{}",
        GROWTH * 100.0,
        over.join("\n")
    );
}
