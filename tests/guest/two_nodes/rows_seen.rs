// SPDX-License-Identifier: GPL-2.0-only
//! What the two nodes' traces say of the rows: when each row started on
//! each node against its boundary on the TAI clock, how late the slot
//! ticks came, each job's share of its row, and how much of the time its
//! ranks ran together (the tests: mod.rs).

use crate::trace::{self, Run};

/// Row slot length and cycle, as ROWS sets them (whole nanoseconds, as
/// the agent computes them).
pub(super) const SLOT_NS: i128 = 100_000_000;
pub(super) const CYCLE_NS: i128 = 3 * SLOT_NS + 3 * SLOT_NS * 10 / 90;

/// A row's start in one cycle: its boundary on the TAI clock, and when it
/// started on n1 and on n2 (s).
pub(super) struct RowStart {
    pub(super) boundary: f64,
    pub(super) n1: f64,
    pub(super) n2: f64,
}

impl RowStart {
    pub(super) fn skew(&self) -> f64 {
        (self.n2 - self.n1).abs()
    }
}

/// For each cycle in which the job ran in its own row on both nodes, when
/// that row started on each: the first instant in the row that one of the
/// job's ranks was on the CPU, a run begun before the boundary (in the
/// open phase, or filling a free row) counting from the boundary.
pub(super) fn row_starts(a: &[Run], b: &[Run], row: u32) -> Vec<RowStart> {
    let firsts = |runs: &[Run]| {
        let mut by_cycle = std::collections::BTreeMap::new();
        for r in runs {
            let (from, to) = ((r.start * 1e9) as i128, (r.end * 1e9) as i128);
            let first = from.div_euclid(CYCLE_NS);
            for cycle in first..=to.div_euclid(CYCLE_NS) {
                let row_from = cycle * CYCLE_NS + row as i128 * SLOT_NS;
                let row_to = row_from + SLOT_NS;
                if from < row_to && to > row_from {
                    let at = from.max(row_from);
                    let e = by_cycle.entry(cycle).or_insert(at);
                    *e = (*e).min(at);
                }
            }
        }
        by_cycle
    };
    let (fa, fb) = (firsts(a), firsts(b));
    fa.iter()
        .filter_map(|(cycle, ta)| {
            Some(RowStart {
                boundary: (cycle * CYCLE_NS + row as i128 * SLOT_NS) as f64 / 1e9,
                n1: *ta as f64 / 1e9,
                n2: *fb.get(cycle)? as f64 / 1e9,
            })
        })
        .collect()
}

/// Ticks as lines of `tick cpu seconds` (runs_from_text skips them).
pub(super) fn ticks_to_text(ticks: &[(u32, f64)]) -> String {
    ticks
        .iter()
        .map(|(cpu, t)| format!("tick {cpu} {t:.9}\n"))
        .collect()
}

pub(super) fn ticks_from_text(text: &str) -> Vec<(u32, f64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.strip_prefix("tick ")?.split_whitespace().collect();
            Some((f.first()?.parse().ok()?, f.get(1)?.parse().ok()?))
        })
        .collect()
}

/// The share of row `row`'s time, over the whole cycles a trace covers,
/// in which `mine` (one job's ranks on one node) held the CPU.
pub(super) fn row_share(all: &[Run], mine: &[Run], row: u32) -> f64 {
    let ns = |t: f64| (t * 1e9) as i128;
    let from = all.iter().map(|r| ns(r.start)).min().unwrap_or(0);
    let to = all.iter().map(|r| ns(r.end)).max().unwrap_or(0);
    let cycles = (from.div_euclid(CYCLE_NS) + 1)..to.div_euclid(CYCLE_NS);
    if cycles.is_empty() {
        return 0.0;
    }
    let span = (cycles.end - cycles.start) * SLOT_NS;
    let mut held = 0;
    for cycle in cycles {
        let row_from = cycle * CYCLE_NS + row as i128 * SLOT_NS;
        let row_to = row_from + SLOT_NS;
        for r in mine {
            held += (ns(r.end).min(row_to) - ns(r.start).max(row_from)).max(0);
        }
    }
    held as f64 / span as f64
}

/// Runs as lines of `pid cpu start end`, as runs_from_text reads them.
pub(super) fn runs_to_text(runs: &[Run]) -> String {
    runs.iter()
        .map(|r| format!("{} {} {:.9} {:.9}\n", r.pid, r.cpu, r.start, r.end))
        .collect()
}

pub(super) fn runs_from_text(text: &str) -> Vec<Run> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(Run {
                pid: f.first()?.parse().ok()?,
                cpu: f.get(1)?.parse().ok()?,
                start: f.get(2)?.parse().ok()?,
                end: f.get(3)?.parse().ok()?,
            })
        })
        .collect()
}

/// Time both ranks of a job ran at once (s), from each node's trace on
/// its own TAI clock, and each one's run time.
pub(super) fn together(a: &[Run], b: &[Run]) -> (f64, f64, f64) {
    let spans = |r: &[Run]| trace::union(r.iter().map(|r| (r.start, r.end)).collect());
    let (sa, sb) = (spans(a), spans(b));
    (
        trace::total(&trace::intersect(&sa, &sb)),
        trace::total(&sa),
        trace::total(&sb),
    )
}
