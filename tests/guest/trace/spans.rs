// SPDX-License-Identifier: GPL-2.0-only
//! What a trace's runs add up to: intervals merged, intersected and
//! subtracted, who ran together, when a gang's periods began, and
//! percentiles. Plain arithmetic on what `trace` parsed, no kernel needed.

use super::Run;

/// The parts of `runs` at times where `keep` holds, sampled every 100 us
/// (runs are cut where `keep` changes, to that precision).
pub fn clip(runs: &[Run], keep: impl Fn(f64) -> bool) -> Vec<Run> {
    const STEP: f64 = 100e-6;
    let mut out = Vec::new();
    for r in runs {
        let mut t = r.start;
        let mut open: Option<f64> = None;
        while t < r.end {
            match (keep(t), open) {
                (true, None) => open = Some(t),
                (false, Some(s)) => {
                    out.push(Run {
                        start: s,
                        end: t,
                        ..*r
                    });
                    open = None;
                }
                _ => {}
            }
            t += STEP;
        }
        if let Some(s) = open {
            out.push(Run {
                start: s,
                end: r.end,
                ..*r
            });
        }
    }
    out
}

/// Merge overlapping intervals.
pub fn union(mut v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Where both `a` and `b` hold, for interval lists as `union` returns
/// them (sorted, disjoint): one sweep, as a trace of a busy gang has
/// thousands of runs per thread.
pub fn intersect(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (s, e) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        if s < e {
            out.push((s, e));
        }
        // The one that ends first meets nothing further in the other.
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// `a` less `b`, for interval lists as `union` returns them.
pub fn subtract(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for &(s, e) in a {
        let mut from = s;
        for &(bs, be) in b.iter().filter(|(bs, be)| *be > s && *bs < e) {
            if bs > from {
                out.push((from, bs));
            }
            from = from.max(be);
        }
        if from < e {
            out.push((from, e));
        }
    }
    out
}

pub fn total(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|(s, e)| e - s).sum()
}

/// When any of `tids` runs, and when all of them run at once.
pub fn any_and_all(runs: &[Run], tids: &[i32]) -> (f64, f64) {
    let per: Vec<Vec<(f64, f64)>> = tids
        .iter()
        .map(|t| {
            union(
                runs.iter()
                    .filter(|r| r.pid == *t)
                    .map(|r| (r.start, r.end))
                    .collect(),
            )
        })
        .collect();
    let any = union(per.iter().flatten().copied().collect());
    let all = per
        .iter()
        .skip(1)
        .fold(per.first().cloned().unwrap_or_default(), |acc, p| {
            intersect(&acc, p)
        });
    (total(&any), total(&all))
}

/// Seconds during which some thread of `a` and some thread of `b` ran at
/// the same time (on different CPUs).
pub fn overlap(runs: &[Run], a: &[i32], b: &[i32]) -> f64 {
    total(&overlap_spans(runs, a, b))
}

/// When some thread of `a` and some thread of `b` ran at the same time.
pub fn overlap_spans(runs: &[Run], a: &[i32], b: &[i32]) -> Vec<(f64, f64)> {
    let span = |tids: &[i32]| {
        union(
            runs.iter()
                .filter(|r| tids.contains(&r.pid))
                .map(|r| (r.start, r.end))
                .collect(),
        )
    };
    intersect(&span(a), &span(b))
}

/// The starts of `tids`' run periods: each maximal stretch during which
/// any of them runs begins a period; returns, per period, the times at
/// which each thread first started in it (threads that did not run in it
/// are left out).
pub fn period_starts(runs: &[Run], tids: &[i32]) -> Vec<Vec<f64>> {
    let any = union(
        runs.iter()
            .filter(|r| tids.contains(&r.pid))
            .map(|r| (r.start, r.end))
            .collect(),
    );
    // Gaps shorter than 1 ms (a member passing through the scheduler)
    // do not end a period.
    let mut periods: Vec<(f64, f64)> = Vec::new();
    for (s, e) in any {
        match periods.last_mut() {
            Some(last) if s - last.1 < 0.001 => last.1 = e,
            _ => periods.push((s, e)),
        }
    }
    periods
        .iter()
        .map(|&(ps, pe)| {
            tids.iter()
                .filter_map(|t| {
                    runs.iter()
                        .filter(|r| r.pid == *t && r.start >= ps && r.start < pe)
                        .map(|r| r.start)
                        .min_by(f64::total_cmp)
                })
                .collect()
        })
        .collect()
}

/// The p-th percentile (0..=100) of `v`.
pub fn percentile(v: &mut [f64], p: usize) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) * p / 100]
}
