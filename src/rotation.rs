// SPDX-License-Identifier: GPL-2.0-only
//! Keeping the BPF side's gang rotation in step with the gangs on the
//! node: number the gang labels, size each gang from what BPF counted,
//! pack them into a slot table (gang.rs) and hand it over; tell the
//! operator about gangs that cannot be co-scheduled.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use anyhow::Result;
use log::{debug, info, warn};

use crate::cgroups::Resolved;
use crate::gang::{self, GangLabel, GangLoad, Numbers, Sizes, Table};
use crate::report::{percentile_us, GangStats, RotationView, SlotView};
use crate::scheduler::{Label, Scheduler};

pub struct Rotation {
    numbers: Numbers,
    sizes: Sizes,
    gangs: Vec<GangLabel>,
    /// Gang number -> the size the current table was packed for.
    packed: HashMap<usize, u32>,
    default_slot: Duration,
    open_pct: u32,
    nr_cpus: u32,
    /// Gangs already reported as too big or as left out.
    warned_big: HashSet<u64>,
    warned_full: HashSet<u64>,
}

impl Rotation {
    pub fn new(default_slot: Duration, open_pct: u32) -> Rotation {
        Rotation {
            numbers: Numbers::default(),
            sizes: Sizes::default(),
            gangs: Vec::new(),
            packed: HashMap::new(),
            default_slot,
            open_pct,
            nr_cpus: online_cpus(),
            warned_big: HashSet::new(),
            warned_full: HashSet::new(),
        }
    }

    /// The cgrp_class entries for the cgroups with their own label, gangs
    /// numbered. A gang beyond the 64 the table holds runs as ordinary
    /// work of its tier (and is reported once).
    pub fn label_entries(&mut self, resolved: &[Resolved]) -> BTreeMap<u64, Label> {
        self.gangs = resolved
            .iter()
            .filter(|r| r.own && r.class.is_gang())
            .map(|r| GangLabel {
                id: r.id,
                rel: r.rel.clone(),
                class: r.class,
                slot_ms: r.slot_ms,
            })
            .collect();
        for rel in self.numbers.assign(&self.gangs) {
            if let Some(g) = self.gangs.iter().find(|g| g.rel == rel) {
                if self.warned_full.insert(g.id) {
                    warn!(
                        "gang /{rel}: the slot table is full ({} gangs): it runs as ordinary {} work until a gang ends",
                        gang::MAX_GANGS,
                        g.class.tier()
                    );
                }
            }
        }
        let live: HashSet<u64> = self.gangs.iter().map(|g| g.id).collect();
        self.warned_full.retain(|id| live.contains(id));
        self.warned_big.retain(|id| live.contains(id));
        resolved
            .iter()
            .filter(|r| r.own)
            .map(|r| {
                let gang = if r.class.is_gang() {
                    self.numbers.get(r.id).map_or(0, |n| n as u32 + 1)
                } else {
                    0
                };
                (
                    r.id,
                    Label {
                        class: r.class.tier(),
                        gang,
                    },
                )
            })
            .collect()
    }

    /// Whether any cgroup is labelled as a gang.
    pub fn has_gangs(&self) -> bool {
        !self.gangs.is_empty()
    }

    /// More members of a gang are runnable now than its slot was packed
    /// for (a job that just started, woke after an idle spell, or grew):
    /// worth repacking at once rather than at the next periodic rescan,
    /// since a gang sharing a slot it does not fit in is time-shared.
    pub fn needs_repack(&self, sched: &Scheduler) -> bool {
        self.gangs.iter().any(|g| {
            self.numbers.get(g.id).is_some_and(|n| {
                let packed = self.packed.get(&n).copied().unwrap_or(0);
                sched
                    .gang_stat(n)
                    .is_ok_and(|st| st.nr_runnable > i64::from(packed))
            })
        })
    }

    /// Size the gangs from BPF's counts, repack, and hand BPF the table if
    /// it changed.
    pub fn update(&mut self, sched: &mut Scheduler) -> Result<()> {
        let epoch = sched.gang_hw_epoch();
        let mut loads = Vec::with_capacity(self.gangs.len());
        for g in &self.gangs {
            let Some(n) = self.numbers.get(g.id) else {
                continue;
            };
            let st = sched.gang_stat(n)?;
            let now = st.nr_runnable.max(0) as u64;
            // No change since the period began: the count stood still.
            let hw = if st.hw_epoch == epoch {
                st.runnable_hw.max(now)
            } else {
                now
            };
            self.sizes.record(n, hw.min(u32::MAX as u64) as u32);
            debug!(
                "gang /{}: {} runnable now, {hw} at most since the last packing, sized {}",
                g.rel,
                st.nr_runnable,
                self.sizes.size(n)
            );
            loads.push(GangLoad {
                number: n,
                rel: g.rel.clone(),
                tier: g.class.tier(),
                slot: g
                    .slot_ms
                    .map_or(self.default_slot, |ms| Duration::from_millis(ms.into())),
                size: self.sizes.size(n),
            });
        }
        let numbers = &self.numbers;
        let gangs = &self.gangs;
        self.sizes
            .retain(|n| gangs.iter().any(|g| numbers.get(g.id) == Some(n)));
        sched.next_gang_hw_epoch()?;

        for big in gang::too_big(&loads, self.nr_cpus) {
            let id = self.gangs.iter().find(|g| g.rel == big.rel).map(|g| g.id);
            if id.is_some_and(|id| self.warned_big.insert(id)) {
                warn!(
                    "gang /{}: {} threads runnable at once but {} CPUs: it cannot be co-scheduled; it keeps a slot of its own, in which its threads take turns",
                    big.rel, big.size, self.nr_cpus
                );
            }
        }
        let table = gang::pack(&loads, self.nr_cpus, self.open_pct);
        self.packed = loads.iter().map(|l| (l.number, l.size)).collect();
        if sched.set_gang_table(&table)? {
            info!("gang table: {}", table.describe());
        }
        Ok(())
    }
}

impl Rotation {
    /// Each gang's figures, from its BPF counters and histograms.
    pub fn gang_stats(&self, sched: &Scheduler) -> Vec<GangStats> {
        let mut out = Vec::new();
        for g in &self.gangs {
            let Some(n) = self.numbers.get(g.id) else {
                continue;
            };
            let Ok(st) = sched.gang_stat(n) else {
                continue;
            };
            out.push(GangStats {
                path: format!("/{}", g.rel),
                class: g.class.to_string(),
                size: self.sizes.size(n),
                slots: st.slots,
                partial_starts: st.partial,
                displaced: st.displaced,
                cpu_seconds: st.cpu_ns as f64 / 1e9,
                backfill_seconds: st.backfill_ns as f64 / 1e9,
                skew_p50_us: percentile_us(&st.skew_hist, 50),
                skew_p99_us: percentile_us(&st.skew_hist, 99),
                switch_p50_us: percentile_us(&st.switch_hist, 50),
                switch_p99_us: percentile_us(&st.switch_hist, 99),
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// One line per gang for the log: slots, partial starts, skew and
    /// switch latency, members' CPU time.
    pub fn summary(&self, sched: &Scheduler) -> Vec<String> {
        let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
        self.gang_stats(sched)
            .iter()
            .map(|g| {
                let partial_pct = if g.slots > 0 {
                    g.partial_starts as f64 * 100.0 / g.slots as f64
                } else {
                    0.0
                };
                format!(
                    "gang {}: {} slots, {} partial starts ({partial_pct:.2}%), {} members displaced, skew p50 <{} us p99 <{} us, boundary to first member p50 <{} us p99 <{} us, cpu {:.2} s, backfill {:.2} s",
                    g.path,
                    g.slots,
                    g.partial_starts,
                    g.displaced,
                    us(g.skew_p50_us),
                    us(g.skew_p99_us),
                    us(g.switch_p50_us),
                    us(g.switch_p99_us),
                    g.cpu_seconds,
                    g.backfill_seconds
                )
            })
            .collect()
    }
}

/// The slot tables as the stats show them, with where each cycle stands
/// at CLOCK_TAI `tai`.
pub fn rotation_views(table: &Table, tai: Duration) -> Vec<RotationView> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    table
        .tiers
        .iter()
        .zip(["gang", "guest-gang"])
        .filter(|(rot, _)| !rot.cycle.is_zero())
        .map(|(rot, tier)| RotationView {
            tier: tier.into(),
            cycle_ms: ms(rot.cycle),
            open_ms: ms(rot.open),
            position_ms: (tai.as_nanos() % rot.cycle.as_nanos()) as f64 / 1e6,
            slots: rot
                .slots
                .iter()
                .map(|s| SlotView {
                    start_ms: ms(s.start),
                    len_ms: ms(s.len),
                    gangs: s.names.iter().map(|n| format!("/{n}")).collect(),
                })
                .collect(),
        })
        .collect()
}

/// CPUs online now (the gang packing's capacity).
pub fn online_cpus() -> u32 {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| count_cpulist(&s))
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
}

/// How many CPUs a kernel cpulist ("0-3,8,10-11") names; None if it is
/// not one. Read every second, so parsed by hand: scx_utils'
/// read_cpulist builds a regex on every call, which made this most of
/// what the agent did each second.
pub fn count_cpulist(list: &str) -> Option<u32> {
    let mut n = 0u32;
    for group in list.trim().trim_end_matches('\0').split(',') {
        let (lo, hi) = match group.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?),
            None => {
                let cpu = group.parse::<u32>().ok()?;
                (cpu, cpu)
            }
        };
        n = n.checked_add(hi.checked_sub(lo)?.checked_add(1)?)?;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::count_cpulist;

    #[test]
    fn cpulists_are_counted_as_the_kernel_writes_them() {
        assert_eq!(count_cpulist("0\n"), Some(1));
        assert_eq!(count_cpulist("0-3"), Some(4));
        assert_eq!(count_cpulist("0-3,8,10-11\n"), Some(7));
        assert_eq!(count_cpulist("0-1\0"), Some(2));
        for bad in ["", "x", "3-1", "0-", "1,,2", "0-4294967295,1-4294967295"] {
            assert_eq!(count_cpulist(bad), None, "{bad:?}");
        }
    }
}
