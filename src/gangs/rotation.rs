// SPDX-License-Identifier: GPL-2.0-only
//! Keeping the BPF side in step with the gangs on the node: number the
//! gang labels, turn every cgroup's resolved class into its label map
//! entry (with its gang's number), size each gang from what BPF counted,
//! pack them into a slot table (table.rs) and hand it over; tell the
//! operator about gangs that cannot be co-scheduled.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use log::{debug, info, warn};

use super::table::{self, GangLabel, GangLoad, GangRef, Numbers, Sizes, Table};
use crate::bpf::program::{LabelEntry, Scheduler};
use crate::labels::cgroups::Resolved;
use crate::labels::class::Class;
use crate::node;

pub struct Rotation {
    /// Where cgroup2 is mounted: gangs' cpusets are read from there.
    mount: PathBuf,
    numbers: Numbers,
    sizes: Sizes,
    gangs: Vec<GangLabel>,
    /// Gang number -> the size the current table was packed for.
    packed: HashMap<usize, u32>,
    default_slot: Duration,
    open_pct: u32,
    nr_cpus: u32,
    /// The table BPF rotates through now.
    table: Table,
    /// Gangs already reported as too big or as left out.
    warned_big: HashSet<u64>,
    warned_full: HashSet<u64>,
}

impl Rotation {
    pub fn new(mount: &Path, default_slot: Duration, open_pct: u32) -> Rotation {
        Rotation {
            mount: mount.to_path_buf(),
            numbers: Numbers::default(),
            sizes: Sizes::default(),
            gangs: Vec::new(),
            packed: HashMap::new(),
            default_slot,
            open_pct,
            nr_cpus: node::online_cpus(),
            table: Table::default(),
            warned_big: HashSet::new(),
            warned_full: HashSet::new(),
        }
    }

    /// The cgrp_class entries: one per cgroup, as labels/ resolved it,
    /// with gangs numbered (a gang's descendants carry its number). A
    /// gang beyond the 64 the table holds runs as ordinary work of its
    /// tier (and is reported once).
    pub fn label_entries(&mut self, resolved: &[Resolved]) -> BTreeMap<u64, LabelEntry> {
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
                        table::MAX_GANGS,
                        g.class.tier()
                    );
                }
            }
        }
        let live: HashSet<u64> = self.gangs.iter().map(|g| g.id).collect();
        self.warned_full.retain(|id| live.contains(id));
        self.warned_big.retain(|id| live.contains(id));
        let gang_of =
            |class: Class, origin: Option<u64>| match origin.and_then(|o| self.numbers.get(o)) {
                Some(n) if class.is_gang() => GangRef::of(n),
                _ => GangRef::NONE,
            };
        resolved
            .iter()
            .map(|r| {
                let entry = LabelEntry {
                    class: r.class.bpf_value(),
                    gang: gang_of(r.class, r.origin).0,
                    job: r.job,
                    heir_class: r.heir.class.bpf_value(),
                    heir_gang: gang_of(r.heir.class, r.heir.origin).0,
                    heir_job: r.heir.job.unwrap_or(0),
                };
                (r.id, entry)
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
                cpus: bound_cpus(&self.mount, &g.rel, self.nr_cpus),
            });
        }
        let numbers = &self.numbers;
        let gangs = &self.gangs;
        self.sizes
            .retain(|n| gangs.iter().any(|g| numbers.get(g.id) == Some(n)));
        sched.next_gang_hw_epoch()?;

        for big in table::too_big(&loads, self.nr_cpus) {
            let id = self.gangs.iter().find(|g| g.rel == big.rel).map(|g| g.id);
            if id.is_some_and(|id| self.warned_big.insert(id)) {
                warn!(
                    "gang /{}: {} threads runnable at once but {} CPUs{}: it cannot be co-scheduled; it keeps a slot of its own, in which its threads take turns",
                    big.rel,
                    big.size,
                    big.room(self.nr_cpus),
                    if big.cpus.is_some() { " in its cpuset" } else { "" }
                );
            }
        }
        let table = table::pack(&loads, self.nr_cpus, self.open_pct);
        self.packed = loads.iter().map(|l| (l.number, l.size)).collect();
        if table != self.table {
            sched.set_gang_table(&table.to_bpf())?;
            info!("gang table: {}", table.describe());
            self.table = table;
        }
        Ok(())
    }

    /// The table BPF rotates through now.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Every numbered gang: its label, number and current size.
    pub fn numbered(&self) -> impl Iterator<Item = (&GangLabel, usize, u32)> + '_ {
        self.gangs.iter().filter_map(|g| {
            let n = self.numbers.get(g.id)?;
            Some((g, n, self.sizes.size(n)))
        })
    }
}

/// The CPUs the cgroup `rel` may use when its cpuset (or its nearest
/// ancestor's: cgroup2 shows cpuset.cpus.effective only where the
/// controller is on) binds it to fewer than the node's `nr_cpus`; None
/// when it may use any.
fn bound_cpus(mount: &Path, rel: &str, nr_cpus: u32) -> Option<Vec<u32>> {
    let mut dir = Some(Path::new(rel));
    while let Some(d) = dir {
        if let Ok(list) = std::fs::read_to_string(mount.join(d).join("cpuset.cpus.effective")) {
            return node::cpulist(&list).filter(|c| !c.is_empty() && (c.len() as u32) < nr_cpus);
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::cgroups::{resolve_all, Cgroup};
    use crate::labels::class::Facts;

    #[test]
    fn every_cgroup_gets_an_entry_and_a_gangs_subtree_its_number() {
        let cg = |rel: &str, id, label: Option<&str>| Cgroup {
            rel: rel.into(),
            id,
            facts: Facts {
                trusted: label.map(str::to_string),
                ..Facts::default()
            },
        };
        let cgs = vec![
            cg("", 1, None),
            cg("mpi", 2, Some("gang")),
            cg("mpi/rank0", 3, None),
            cg("idle", 4, Some("guest")),
        ];
        let resolved = resolve_all(&cgs, Class::Primary);
        let mut rot = Rotation::new(Path::new("/sys/fs/cgroup"), Duration::from_millis(100), 10);
        let entries = rot.label_entries(&resolved);
        assert_eq!(entries.len(), 4);
        let gang = GangRef::of(0).0;
        assert_eq!(
            (entries[&2].class, entries[&2].gang),
            (Class::Gang.bpf_value(), gang)
        );
        assert_eq!((entries[&3].gang, entries[&3].job), (gang, 2));
        assert_eq!(entries[&3].heir_gang, gang);
        assert_eq!(entries[&4].gang, GangRef::NONE.0);
        // The root: primary itself, the default class for new top-level
        // cgroups, each its own job (0).
        assert_eq!(entries[&1].class, Class::Primary.bpf_value());
        assert_eq!(entries[&1].heir_job, 0);
    }
}
