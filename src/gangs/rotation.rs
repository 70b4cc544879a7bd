// SPDX-License-Identifier: GPL-2.0-only
//! Keeping the BPF side in step with the gangs on the node: number the
//! gang labels, turn every cgroup's resolved class into its label map
//! entry (with its gang's number), lay the gangs and their cpusets out
//! into a slot table (table.rs) and hand it over; tell the operator
//! about gangs that cannot be co-scheduled. Sizing and admission are the
//! BPF side's alone (bpf/gang.bpf.c): this only reads its counts.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use log::{debug, info, warn};

use super::table::{self, GangLabel, GangPlace, GangRef, Numbers, Table};
use crate::bpf::intf;
use crate::bpf::program::{LabelEntry, Scheduler};
use crate::labels::cgroups::Resolved;
use crate::labels::class::Class;
use crate::labels::config::Rows;
use crate::node;

pub struct Rotation {
    /// Where cgroup2 is mounted: gangs' cpusets are read from there.
    mount: PathBuf,
    numbers: Numbers,
    gangs: Vec<GangLabel>,
    /// Multi-node primary gang jobs running here as ordinary work for
    /// want of a row (labels/cgroups.rs): the table keeps their share.
    rowless: Vec<String>,
    /// Gangs seen with more members runnable than their CPUs at the last
    /// look: reported if they still are at the next (a job's spawning
    /// thread makes a gang look one too big for a moment).
    seen_big: HashSet<u64>,
    default_slot: Duration,
    open_pct: u32,
    /// The cluster's rows, from the config (reloaded with it).
    rows: Option<Rows>,
    nr_cpus: u32,
    /// Each CPU's LLC as the BPF side numbers them; empty: one LLC.
    cpu_llc: Vec<u32>,
    /// The table BPF rotates through now.
    table: Table,
    /// Gangs already reported as too big or as left out.
    warned_big: HashSet<u64>,
    warned_full: HashSet<u64>,
}

impl Rotation {
    pub fn new(mount: &Path, default_slot: Duration, open_pct: u32, cpu_llc: Vec<u32>) -> Rotation {
        Rotation {
            mount: mount.to_path_buf(),
            numbers: Numbers::default(),
            gangs: Vec::new(),
            rowless: Vec::new(),
            seen_big: HashSet::new(),
            default_slot,
            open_pct,
            rows: None,
            nr_cpus: node::online_cpus(),
            cpu_llc,
            table: Table::default(),
            warned_big: HashSet::new(),
            warned_full: HashSet::new(),
        }
    }

    /// The cgrp_class entries: one per cgroup, as labels/ resolved it,
    /// with gangs numbered (a gang's descendants carry its number). A
    /// gang beyond the 64 the table holds runs as ordinary work of its
    /// tier (and is reported once).
    pub fn label_entries<'a>(
        &mut self,
        resolved: impl Iterator<Item = &'a Resolved> + Clone,
    ) -> BTreeMap<u64, LabelEntry> {
        self.gangs = resolved
            .clone()
            .filter(|r| r.own && r.class.is_gang())
            .map(|r| GangLabel {
                id: r.id,
                rel: r.rel.clone(),
                class: r.class,
                slot_ms: r.slot_ms,
                row: r.row,
            })
            .collect();
        self.rowless = resolved
            .clone()
            .filter(|r| r.rowless && r.class == Class::Primary)
            .map(|r| r.rel.clone())
            .collect();
        self.rowless.sort();
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
            .map(|r| {
                let entry = LabelEntry {
                    class: r.class.bpf_value(),
                    gang: gang_of(r.class, r.origin).0,
                    job: r.job,
                    heir_class: r.heir.class.bpf_value(),
                    heir_gang: gang_of(r.heir.class, r.heir.origin).0,
                    heir_job: r.heir.job.unwrap_or(0),
                    machinery: r.machinery.into(),
                    heir_machinery: r.heir.machinery.into(),
                };
                (r.id, entry)
            })
            .collect()
    }

    /// The cluster's rows as the config now gives them; true if that
    /// changes the table's shape (the caller lays it out again).
    pub fn set_rows(&mut self, rows: Option<Rows>) -> bool {
        if rows == self.rows {
            return false;
        }
        match rows {
            Some(r) => info!(
                "cluster rows: {} of {} ms, open phase {}% of the cycle: multi-node gang jobs lead their row on every node",
                r.count,
                r.slot.as_millis(),
                r.open_pct
            ),
            None => info!("no cluster rows: gangs are laid out node by node"),
        }
        self.rows = rows;
        true
    }

    /// The cluster row `g` leads: its job's row where the config sets
    /// `[rows]` (wrapped to their count, as the table does).
    pub fn row_in_effect(&self, g: &GangLabel) -> Option<u32> {
        let rows = self.rows?;
        g.row
            .filter(|_| g.class == Class::Gang)
            .map(|r| r % rows.count.max(1))
    }

    /// Whether any cgroup is labelled as a gang.
    pub fn has_gangs(&self) -> bool {
        !self.gangs.is_empty()
    }

    /// Lay the gangs out with their cpusets (read again: a job manager
    /// may change them), hand BPF the table if it changed, and report
    /// gangs too big for the CPUs they may use.
    pub fn update(&mut self, sched: &mut Scheduler) -> Result<()> {
        let mut places = Vec::with_capacity(self.gangs.len());
        let mut big_now = HashSet::new();
        for g in &self.gangs {
            let Some(number) = self.numbers.get(g.id) else {
                continue;
            };
            let cpus = bound_cpus(&self.mount, &g.rel, self.nr_cpus);
            let place = GangPlace {
                number,
                llcs: cpus.as_deref().map_or(0, |c| llcs_of(c, &self.cpu_llc)),
                rel: g.rel.clone(),
                tier: g.class.tier(),
                slot: g
                    .slot_ms
                    .map_or(self.default_slot, |ms| Duration::from_millis(ms.into())),
                cpus,
                row: g.row,
            };
            let runnable = sched.gang_stat(number)?.nr_runnable.max(0) as u64;
            let room = place.room(self.nr_cpus);
            debug!("gang /{}: {runnable} runnable, {room} CPUs", g.rel);
            if runnable > u64::from(room) {
                big_now.insert(g.id);
                if self.seen_big.contains(&g.id) && self.warned_big.insert(g.id) {
                    warn!(
                        "gang /{}: {runnable} threads runnable at once but {room} CPUs{}: it cannot be co-scheduled; it keeps a slot of its own, in which its threads take turns",
                        g.rel,
                        if place.cpus.is_some() { " in its cpuset" } else { "" }
                    );
                }
            }
            places.push(place);
        }
        self.seen_big = big_now;
        let table = table::lay_out(
            &places,
            self.nr_cpus,
            self.open_pct,
            self.rows.as_ref(),
            &self.rowless,
        );
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

    /// Every numbered gang: its label and number.
    pub fn numbered(&self) -> impl Iterator<Item = (&GangLabel, usize)> + '_ {
        self.gangs
            .iter()
            .filter_map(|g| Some((g, self.numbers.get(g.id)?)))
    }
}

/// The LLCs `cpus` are in, a bit per LLC as the BPF side numbers them
/// (`cpu_llc`, by CPU); 0 (any) on a node of one LLC.
fn llcs_of(cpus: &[u32], cpu_llc: &[u32]) -> u64 {
    cpus.iter()
        .filter_map(|&c| cpu_llc.get(c as usize))
        .fold(0, |m, &l| {
            m | 1u64 << (l % intf::linger_consts_LINGER_MAX_LLCS)
        })
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
            cpu_max: None,
        };
        let cgs = vec![
            cg("", 1, None),
            cg("mpi", 2, Some("gang")),
            cg("mpi/rank0", 3, None),
            cg("idle", 4, Some("guest")),
        ];
        let resolved = resolve_all(&cgs, Class::Primary);
        let mut rot = Rotation::new(
            Path::new("/sys/fs/cgroup"),
            Duration::from_millis(100),
            10,
            Vec::new(),
        );
        let entries = rot.label_entries(resolved.iter());
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
