// SPDX-License-Identifier: GPL-2.0-only
//! An independent observer of who ran where and when: the kernel's
//! `sched_switch` tracepoint through tracefs, turned into per-CPU run
//! intervals. The gang tests judge co-scheduling from this, not from the
//! scheduler's own counters.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

const TRACEFS: &str = "/sys/kernel/tracing";

/// One task from `start` to `end` (seconds on the trace clock), on one
/// CPU: a CPU's runs never overlap, which the analysis relies on.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub pid: i32,
    pub start: f64,
    pub end: f64,
}

fn write(name: &str, value: &str) {
    fs::write(Path::new(TRACEFS).join(name), value)
        .unwrap_or_else(|e| panic!("writing {value:?} to {TRACEFS}/{name}: {e}"));
}

fn mount_tracefs() {
    if !Path::new(TRACEFS).join("trace").exists() {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "cannot mount tracefs at {TRACEFS}: the gang tests need sched_switch"
        );
    }
}

/// Record sched_switch for `window` with trace clock `clock` ("mono",
/// "tai", ...) and return the run intervals seen.
pub fn record_switches(window: Duration, clock: &str) -> Vec<Run> {
    mount_tracefs();
    write("tracing_on", "0");
    write("trace_clock", clock);
    write("buffer_size_kb", "8192");
    write("events/sched/sched_switch/enable", "1");
    write("trace", "");
    write("tracing_on", "1");
    std::thread::sleep(window);
    write("tracing_on", "0");
    let text = fs::read_to_string(Path::new(TRACEFS).join("trace")).expect("reading the trace");
    write("events/sched/sched_switch/enable", "0");
    write("trace_clock", "local");
    runs_from_trace(&text)
}

/// Parse `trace` text: each sched_switch ends prev's run on that CPU and
/// starts next's.
pub fn runs_from_trace(text: &str) -> Vec<Run> {
    let mut open: HashMap<u32, (i32, f64)> = HashMap::new();
    let mut runs = Vec::new();
    for line in text.lines() {
        let Some((head, event)) = line.split_once(": sched_switch: ") else {
            continue;
        };
        let Some(cpu) = head
            .split('[')
            .nth(1)
            .and_then(|r| r.split(']').next())
            .and_then(|c| c.trim().parse::<u32>().ok())
        else {
            continue;
        };
        let Some(ts) = head
            .split_whitespace()
            .last()
            .and_then(|t| t.trim_end_matches(':').parse::<f64>().ok())
        else {
            continue;
        };
        let Some(next_pid) = event
            .split("next_pid=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some((pid, start)) = open.insert(cpu, (next_pid, ts)) {
            runs.push(Run {
                pid,
                start,
                end: ts,
            });
        }
    }
    runs
}

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

/// Thread ids of a process.
pub fn threads_of(pid: u32) -> Vec<i32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Merge overlapping intervals.
fn union(mut v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
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

fn intersect(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for &(s1, e1) in a {
        for &(s2, e2) in b {
            let (s, e) = (s1.max(s2), e1.min(e2));
            if s < e {
                out.push((s, e));
            }
        }
    }
    union(out)
}

fn total(v: &[(f64, f64)]) -> f64 {
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
    let span = |tids: &[i32]| {
        union(
            runs.iter()
                .filter(|r| tids.contains(&r.pid))
                .map(|r| (r.start, r.end))
                .collect(),
        )
    };
    total(&intersect(&span(a), &span(b)))
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
