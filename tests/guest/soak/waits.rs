// SPDX-License-Identifier: GPL-2.0-only
//! The day's longest ready waits, from the kernel's own trace: by class,
//! and by what the day was doing meanwhile. A day under scx_linger runs
//! events its EEVDF part does not (the agent's loads and restarts, a CPU
//! taken offline, the cgroup burst), so its longest wait alone cannot be
//! read against EEVDF's: each window is also credited to the events that
//! ran during it, or to the mix alone, and the report reads like against
//! like.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::trace::record_ready_waits;

use super::day::CLASS_XATTR;

/// What a window in which no event ran is credited to.
pub(super) const MIX_ALONE: &str = "the mix alone";

/// The class a task's cgroup gives it, as the agent reads it: the
/// nearest labelled ancestor's; unlabelled work under the day's root is
/// primary, everything else the node's own ("system"). `seen` keeps each
/// cgroup's answer for one trace window: an exit storm's 2,000 threads
/// share one cgroup, whose ancestors' labels are then read once, not
/// once a thread.
pub(super) fn class_of(pid: i32, seen: &mut HashMap<String, String>) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let rel = text.lines().find_map(|l| l.strip_prefix("0::/"))?;
    if let Some(class) = seen.get(rel) {
        return Some(class.clone());
    }
    let class = if rel.starts_with("day/") || rel == "day" {
        let mut dir = PathBuf::from(CGROUP_ROOT).join(rel);
        let mut class = "primary".to_string();
        while dir != Path::new(CGROUP_ROOT) {
            if let Ok(Some(v)) = xattr::get(&dir, CLASS_XATTR) {
                class = String::from_utf8_lossy(&v).into_owned();
                break;
            }
            dir.pop();
        }
        class
    } else {
        "system".to_string()
    };
    seen.insert(rel.to_string(), class.clone());
    Some(class)
}

/// The day's events on the progress file's clock: each one's name, start
/// and end (none while it runs). A moment's event (a SIGHUP) starts and
/// ends at once.
#[derive(Default)]
pub(super) struct Events(Vec<(String, f64, Option<f64>)>);

impl Events {
    /// `what` begins `at` seconds into the day; its handle for end().
    pub(super) fn begin(&mut self, what: &str, at: f64) -> usize {
        self.0.push((what.to_string(), at, None));
        self.0.len() - 1
    }

    pub(super) fn end(&mut self, handle: usize, at: f64) {
        if let Some(e) = self.0.get_mut(handle) {
            e.2 = Some(at);
        }
    }

    /// The events that ran at some moment of `from..=to`, by name,
    /// joined; MIX_ALONE if none did.
    fn during(&self, from: f64, to: f64) -> String {
        let mut names: Vec<&str> = self
            .0
            .iter()
            .filter(|(_, start, end)| *start <= to && end.is_none_or(|e| e >= from))
            .map(|(name, _, _)| name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        if names.is_empty() {
            MIX_ALONE.to_string()
        } else {
            names.join(" + ")
        }
    }
}

/// A longest wait and who waited it, where.
pub(super) type Longest = (f64, String);

/// Longest ready waits by (phase, class), and by (phase, what ran, class).
#[derive(Default)]
pub(super) struct Waits {
    pub(super) longest: BTreeMap<(String, String), Longest>,
    pub(super) during: BTreeMap<(String, String, String), Longest>,
    pub(super) windows: u64,
}

/// Each class's longest wait under scx_linger against EEVDF's, as
/// `longest` gives them by phase and class; None where no class has both.
fn against(longest: &dyn Fn(&str, &str) -> Option<f64>) -> Option<String> {
    let l: Vec<String> = ["primary", "system", "guest", "gang", "guest-gang"]
        .iter()
        .filter_map(|c| {
            let (ours, eevdf) = (longest("scx_linger", c)?, longest("eevdf", c)?);
            Some(format!(
                "{c} {ours:.3} s / {eevdf:.3} s ({:.2}x)",
                ours / eevdf.max(1e-3)
            ))
        })
        .collect();
    (!l.is_empty()).then(|| l.join(", "))
}

fn keep_longest<K: Ord>(map: &mut BTreeMap<K, Longest>, key: K, secs: f64, who: &str) {
    let e = map.entry(key).or_insert((0.0, String::new()));
    if secs > e.0 {
        *e = (secs, who.to_string());
    }
}

impl Waits {
    /// The report's lines on what ran while tasks waited longest: a line
    /// for each phase and what ran; then, class by class, scx_linger's
    /// against EEVDF's for what both parts ran, and over the whole day.
    pub(super) fn report(&self) -> Vec<String> {
        let mut by_what: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
        for ((phase, what, class), (s, who)) in &self.during {
            by_what
                .entry((phase, what))
                .or_default()
                .push(format!("{class} {s:.3} s ({who})"));
        }
        let mut lines: Vec<String> = by_what
            .into_iter()
            .map(|((phase, what), waits)| {
                format!("longest waits during {what}, {phase}: {}", waits.join(", "))
            })
            .collect();
        // Like against like: each set of events both parts ran, then the
        // whole day (the events only scx_linger's part runs included).
        let whats: BTreeSet<&str> = self
            .during
            .keys()
            .filter(|(p, _, _)| p == "eevdf")
            .map(|(_, w, _)| w.as_str())
            .collect();
        for what in whats {
            let during = |phase: &str, class: &str| {
                self.during
                    .get(&(phase.into(), what.into(), class.into()))
                    .map(|l| l.0)
            };
            if let Some(l) = against(&during) {
                lines.push(format!(
                    "longest wait during {what}, scx_linger / EEVDF: {l}"
                ));
            }
        }
        let day =
            |phase: &str, class: &str| self.longest.get(&(phase.into(), class.into())).map(|l| l.0);
        if let Some(l) = against(&day) {
            lines.push(format!(
                "longest wait over the day, scx_linger / EEVDF: {l}"
            ));
        }
        lines
    }
}

/// Record ready waits in windows until `stop`, crediting each to the
/// phase `phase` names at the window's end and to the events that ran
/// during it, and naming that end in seconds since `day_start` (the
/// progress file's clock, which `events` is on too).
pub(super) fn trace_waits(
    stop: Arc<AtomicBool>,
    (phase, events): (Arc<Mutex<String>>, Arc<Mutex<Events>>),
    waits: Arc<Mutex<Waits>>,
    (day_start, window): (Instant, Duration),
    gap: Duration,
) {
    while !stop.load(Ordering::Relaxed) {
        let from = day_start.elapsed().as_secs_f64();
        let (seen, _) = record_ready_waits(|| std::thread::sleep(window));
        let at = day_start.elapsed().as_secs_f64();
        let phase = phase.lock().unwrap().clone();
        let what = events.lock().unwrap().during(from, at);
        let mut w = waits.lock().unwrap();
        w.windows += 1;
        let mut classes = HashMap::new();
        for r in seen {
            let class = class_of(r.pid, &mut classes).unwrap_or_else(|| "exited".into());
            // Who held its CPU, by class too: a gang's member, a guest.
            let labels: HashMap<i32, String> = r
                .held_by
                .iter()
                .take(3)
                .filter_map(|(pid, _, _)| Some((*pid, class_of(*pid, &mut classes)?)))
                .collect();
            let who = format!(
                "{} in the window to {at:.0} s",
                r.describe(|pid| labels.get(&pid).cloned())
            );
            keep_longest(&mut w.longest, (phase.clone(), class.clone()), r.secs, &who);
            keep_longest(
                &mut w.during,
                (phase.clone(), what.clone(), class),
                r.secs,
                &who,
            );
        }
        drop(w);
        let until = Instant::now() + gap;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
