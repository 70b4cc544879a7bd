// SPDX-License-Identifier: GPL-2.0-only
//! Gangs: which cgroups are co-scheduled jobs, their numbers, and the slot
//! table the BPF side rotates through (bpf/gang.bpf.c is the other half).
//!
//! Everything here is policy without I/O, tested without a kernel:
//!
//! - **Numbers.** Each gang gets a number 0..64 (a bit in the BPF side's
//!   gang sets) that stays the same while its cgroup exists.
//! - **Rotation.** Per tier (primary gangs, guest gangs), every gang leads
//!   one slot of its own, in path order, for the slot length its label
//!   asks. The table depends only on the gangs' paths, slot lengths and
//!   cpusets, never on what runs: two nodes running the same jobs build
//!   the same table, and it changes only when labels or cpusets do.
//! - **Admission is not here.** Which other gangs run beside a slot's
//!   lead (all that fit on the CPUs it leaves) is decided by the BPF side
//!   alone, from live runnable counts, at every change (admit_gangs() in
//!   bpf/lib/pure.h, whose tests run here). A gang's size is its members
//!   runnable now, as BPF counts them; nothing here measures or guesses
//!   it. One owner per decision: an earlier design packed slots here from
//!   polled high-water sizes while BPF re-admitted from live counts, and
//!   the two disagreed (a job's spawning thread made 8 workers count as 9,
//!   and the table flipped between packings).
//! - **Cpusets.** What BPF cannot see: how many CPUs each gang's cpuset
//!   allows (Slurm's ConstrainCores, Kubernetes' static CPU manager), and
//!   which gangs are bound to overlapping cores ("conflicts"). Gangs bound
//!   to the same cores then take turns, gangs on disjoint cores run
//!   together, and a gang with more runnable members than its cpuset's
//!   CPUs is too big for its own CPUs: it runs only in its own slot.
//! - **Cycle.** Slot lengths add up, then the primary tier's open phase
//!   (`open_pct` of the cycle) follows, in which ordinary primary work comes
//!   first. The cycle is capped at MAX_CYCLE so that no gang ever waits
//!   near the kernel's 30 s watchdog for its turn.
//! - **Clock.** Cycle k starts at CLOCK_TAI = k x cycle: rotation_at() in
//!   bpf/lib/pure.h, which the tests here run.
//! - **Rows.** Where the site's config sets the cluster's `[rows]`, the
//!   primary cycle is that matrix instead, the same on every node: row r
//!   is the slot at r x slot length. A multi-node job leads the row the
//!   batch system gave it (labels/slurm.rs); the node's other gangs share
//!   the rows no such job of this node holds, and a row nobody leads is
//!   a slot every gang may fill. Nothing a node runs moves another
//!   node's rows.
//! - **Jobs without a row.** A multi-node gang job that has no row here
//!   runs as ordinary work (labels/cgroups.rs), and keeps the share of
//!   the cycle it would have as a gang, as open phase: with rows, it
//!   shares the free rows with the node's own gangs and its rows are
//!   open slots; without, the open phase grows by a mean slot for it.
//!   Else the node's own gangs would leave it the open phase alone.
//! - **Filling order.** The order in which the BPF side lets other gangs
//!   fill a slot's spare CPUs, and whose turn is first in each cycle, is
//!   laid out here from paths and rows, so that nodes agree on it; gang
//!   numbers are each node's own.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::bpf::intf;
use crate::labels::class::Class;
use crate::labels::config::Rows;

pub const MAX_GANGS: usize = intf::linger_consts_LINGER_MAX_GANGS as usize;
/// Longest rotation; longer tables have their slots scaled down to fit.
pub const MAX_CYCLE: Duration = Duration::from_secs(10);

/// A gang as labels, task state and per-CPU state on the BPF side refer
/// to it (enum linger_gang_ref in bpf/intf.h): none, or a gang number.
/// The only Rust encoder and decoder of that encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GangRef(pub u32);

impl GangRef {
    pub const NONE: GangRef = GangRef(intf::linger_gang_ref_LINGER_GANG_NONE);

    pub fn of(number: usize) -> GangRef {
        GangRef(number as u32 + intf::linger_gang_ref_LINGER_GANG_REF_BASE)
    }
}

/// A gang as the labels describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GangLabel {
    pub id: u64,
    pub rel: String,
    /// Class::Gang or Class::GuestGang.
    pub class: Class,
    pub slot_ms: Option<u32>,
    /// The cluster row its job holds (multi-node jobs).
    pub row: Option<u32>,
}

/// Stable gang numbers for cgroup ids.
#[derive(Debug, Default)]
pub struct Numbers {
    by_id: BTreeMap<u64, usize>,
}

impl Numbers {
    /// Number every gang in `gangs` (keeping existing numbers), free the
    /// numbers of gangs that are gone. Returns the gangs that found no
    /// free number (more than MAX_GANGS at once).
    pub fn assign(&mut self, gangs: &[GangLabel]) -> Vec<String> {
        let live: HashMap<u64, &GangLabel> = gangs.iter().map(|g| (g.id, g)).collect();
        self.by_id.retain(|id, _| live.contains_key(id));
        let mut used = [false; MAX_GANGS];
        for &n in self.by_id.values() {
            used[n] = true;
        }
        let mut left_out = Vec::new();
        let mut sorted: Vec<&GangLabel> = gangs.iter().collect();
        sorted.sort_by(|a, b| a.rel.cmp(&b.rel));
        for g in sorted {
            if self.by_id.contains_key(&g.id) {
                continue;
            }
            match used.iter().position(|u| !u) {
                Some(n) => {
                    used[n] = true;
                    self.by_id.insert(g.id, n);
                }
                None => left_out.push(g.rel.clone()),
            }
        }
        left_out
    }

    pub fn get(&self, id: u64) -> Option<usize> {
        self.by_id.get(&id).copied()
    }
}

/// What the rotation needs to know about one gang.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GangPlace {
    pub number: usize,
    pub rel: String,
    pub tier: Class,
    pub slot: Duration,
    /// The CPUs its cpuset allows, in order; None: any CPU of the node.
    pub cpus: Option<Vec<u32>>,
    /// The LLCs those CPUs are in (bit per LLC as the BPF side numbers
    /// them); 0: any.
    pub llcs: u64,
    /// The cluster row the batch system gave its job (multi-node jobs).
    pub row: Option<u32>,
}

impl GangPlace {
    /// How many CPUs it may use on a node of `nr_cpus`.
    pub fn room(&self, nr_cpus: u32) -> u32 {
        self.cpus
            .as_ref()
            .map_or(nr_cpus, |c| (c.len() as u32).min(nr_cpus))
    }

    /// Bound to cores that overlap `other`'s, both of them bound.
    fn conflicts_with(&self, other: &GangPlace) -> bool {
        match (&self.cpus, &other.cpus) {
            (Some(a), Some(b)) => a.iter().any(|c| b.binary_search(c).is_ok()),
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slot {
    pub start: Duration,
    pub len: Duration,
    pub gangs: u64,
    /// Paths of its gangs, for the log.
    pub names: Vec<String>,
    /// The cluster row it is (part of), on a node with `[rows]`.
    pub row: Option<u32>,
    /// Open phase: the share of a job that runs as ordinary work in a
    /// gang's stead (`names`), which ordinary work takes first and
    /// `gangs` fill.
    pub open: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rotation {
    pub cycle: Duration,
    pub open: Duration,
    pub gangs: u64,
    pub slots: Vec<Slot>,
    /// Gangs that lead no slot: every row is held by a multi-node job of
    /// this node. They run only where they fit beside a slot's lead.
    pub unled: Vec<String>,
    /// The order in which the tier's gangs fill the CPUs a slot's lead
    /// leaves: (gang number, turn), by turn. In cycle k filling starts at
    /// the gang whose turn is drawn from k and `turns` (admit_first() in
    /// bpf/lib/pure.h: each gang that may fill a slot is first in an
    /// equal share of cycles). Turns come from paths, or cluster rows, which
    /// every node running a job agrees on; never from gang numbers.
    pub order: Vec<(usize, u32)>,
    pub turns: u32,
}

/// Rotation per tier: [primary gangs, guest gangs].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    pub tiers: [Rotation; 2],
    /// The node's CPUs, which admission shares among the gangs.
    pub nr_cpus: u32,
    /// Per gang number bound to fewer CPUs than the node's, how many.
    pub cpus_of: BTreeMap<usize, u32>,
    /// Per gang number, the gangs bound to cores overlapping its own.
    pub conflicts: BTreeMap<usize, u64>,
    /// Per gang number bound to some of the node's LLCs only, which.
    pub llcs_of: BTreeMap<usize, u64>,
}

/// Lay the gangs out into a rotation per tier (see the module comment).
/// `open_pct` is the share of the primary cycle left for ordinary
/// primary work; `rows`, the cluster's matrix, replaces both the path
/// order and `open_pct` for the primary tier. `rowless`: the paths of
/// this node's multi-node primary gang jobs that run as ordinary work
/// for want of a cluster row; each has the share of the cycle it would
/// have as a gang, as open phase.
pub fn lay_out(
    gangs: &[GangPlace],
    nr_cpus: u32,
    open_pct: u32,
    rows: Option<&Rows>,
    rowless: &[String],
) -> Table {
    let mut table = Table {
        nr_cpus,
        ..Table::default()
    };
    let gangs: Vec<&GangPlace> = gangs.iter().filter(|g| g.number < MAX_GANGS).collect();
    for (t, tier) in [Class::Primary, Class::Guest].into_iter().enumerate() {
        let mut these: Vec<&GangPlace> = gangs
            .iter()
            .copied()
            .filter(|g| g.tier.tier() == tier)
            .collect();
        these.sort_by(|a, b| a.rel.cmp(&b.rel));
        if let (0, Some(rows), false) = (t, rows, these.is_empty()) {
            table.tiers[t] = lay_out_rows(&these, rowless, rows);
            continue;
        }
        let mut rot = Rotation::default();
        let mut start = Duration::ZERO;
        for (turn, g) in these.iter().enumerate() {
            rot.order.push((g.number, turn as u32));
            rot.gangs |= 1 << g.number;
            rot.slots.push(Slot {
                start,
                len: g.slot,
                gangs: 1 << g.number,
                names: vec![g.rel.clone()],
                row: None,
                open: false,
            });
            start += g.slot;
        }
        rot.turns = rot.order.len() as u32;
        fit_cycle(&mut rot, start);
        if t == 0 && !rot.slots.is_empty() {
            let pct = open_pct.min(50);
            rot.open = rot.cycle * pct / (100 - pct);
            // A rowless job's share: what a gang's mean slot would be.
            let mean = rot.cycle / rot.slots.len() as u32;
            rot.open +=
                (mean * rowless.len() as u32).min(MAX_CYCLE.saturating_sub(rot.cycle + rot.open));
            rot.cycle += rot.open;
        }
        table.tiers[t] = rot;
    }
    for g in &gangs {
        if g.cpus.is_some() {
            table.cpus_of.insert(g.number, g.room(nr_cpus));
        }
        if g.llcs != 0 {
            table.llcs_of.insert(g.number, g.llcs);
        }
        let with = gangs
            .iter()
            .filter(|h| h.number != g.number && g.conflicts_with(h))
            .fold(0u64, |m, h| m | 1 << h.number);
        if with != 0 {
            table.conflicts.insert(g.number, with);
        }
    }
    table
}

/// The primary tier on the cluster's matrix (see the module comment).
/// `gangs` are in path order. Rows led by nobody on this node stay slots
/// of their own, led by no gang: the rotation's boundaries must be the
/// matrix's on every node.
fn lay_out_rows(gangs: &[&GangPlace], rowless: &[String], rows: &Rows) -> Rotation {
    let count = rows.count.max(1) as usize;
    let mut held = vec![(0u64, Vec::new()); count];
    let mut local = Vec::new();
    let mut rot = Rotation::default();
    for g in gangs {
        rot.gangs |= 1 << g.number;
        match g.row {
            Some(r) => {
                let h = &mut held[r as usize % count];
                h.0 |= 1 << g.number;
                h.1.push(g.rel.clone());
            }
            None => local.push(*g),
        }
    }
    // The free rows, shared among the node's own jobs in turn: the local
    // gangs, then the multi-node jobs that run here as ordinary work for
    // want of a row (`rowless`), each of which would hold a row of its
    // own had it one. Share i of S leads free row j when j = i mod S;
    // with more shares than free rows, a row is cut into equal slots for
    // the shares it gets. A rowless job's share is open phase, so that
    // beside a local gang it has what a fair scheduler gives it.
    let local_mask = local.iter().fold(0u64, |m, g| m | 1 << g.number);
    let mut sharers: Vec<Share> = local.iter().map(|g| Share::Gang(g)).collect();
    sharers.extend(rowless.iter().map(Share::Rowless));
    let free: Vec<usize> = (0..count).filter(|&r| held[r].0 == 0).collect();
    let mut shares: Vec<Vec<&Share>> = vec![Vec::new(); count];
    if free.is_empty() {
        rot.unled = local.iter().map(|g| g.rel.clone()).collect();
    } else if sharers.len() <= free.len() {
        for (j, &r) in free.iter().enumerate() {
            if let Some(s) = sharers.get(j % sharers.len().max(1)) {
                shares[r].push(s);
            }
        }
    } else {
        for (i, s) in sharers.iter().enumerate() {
            shares[free[i % free.len()]].push(s);
        }
    }
    for r in 0..count {
        let start = rows.slot * r as u32;
        let row = Some(r as u32);
        if held[r].0 != 0 || shares[r].is_empty() {
            rot.slots.push(Slot {
                start,
                len: rows.slot,
                gangs: held[r].0,
                names: std::mem::take(&mut held[r].1),
                row,
                open: false,
            });
            continue;
        }
        let n = shares[r].len() as u32;
        for (k, share) in shares[r].iter().enumerate() {
            let from = rows.slot * k as u32 / n;
            let to = rows.slot * (k as u32 + 1) / n;
            let (gangs, name, open) = match share {
                Share::Gang(g) => (1u64 << g.number, g.rel.clone(), false),
                Share::Rowless(rel) => (local_mask, (*rel).clone(), true),
            };
            rot.slots.push(Slot {
                start: start + from,
                len: to - from,
                gangs,
                names: vec![name],
                row,
                open,
            });
        }
    }
    // Filling order: the multi-node jobs by row (then path), which every
    // node they run on agrees on, their turns their rows; the node's own
    // gangs after them, a turn each, so that they come first as often as
    // a job does. A node leaves a row to nobody only when it has no gangs
    // of its own (they would lead it), so there the turns are the
    // matrix's size on every node, and nodes that run the same jobs start
    // filling such a row with the same one in every cycle.
    let mut order: Vec<(u32, &str, usize)> = gangs
        .iter()
        .filter_map(|g| g.row.map(|r| (r % count as u32, g.rel.as_str(), g.number)))
        .collect();
    order.sort();
    let turn = |i: usize| count as u32 + i as u32;
    order.extend(
        local
            .iter()
            .enumerate()
            .map(|(i, g)| (turn(i), g.rel.as_str(), g.number)),
    );
    rot.order = order.into_iter().map(|(turn, _, g)| (g, turn)).collect();
    rot.turns = turn(local.len());
    let slots = rows.slot * count as u32;
    let pct = rows.open_pct.min(50);
    rot.open = slots * pct / (100 - pct);
    rot.cycle = slots + rot.open;
    rot
}

/// Who leads a share of a free row.
enum Share<'a> {
    Gang(&'a GangPlace),
    /// A multi-node job of this node without a row (its path).
    Rowless(&'a String),
}

/// Scale slots down so that the whole cycle (with up to 50% open phase)
/// stays within MAX_CYCLE; sets `rot.cycle` to the sum of the slots.
fn fit_cycle(rot: &mut Rotation, total: Duration) {
    let budget = MAX_CYCLE / 2;
    if total <= budget {
        rot.cycle = total;
        return;
    }
    let mut start = Duration::ZERO;
    for s in &mut rot.slots {
        s.len = (s.len * budget.as_millis() as u32 / total.as_millis().max(1) as u32)
            .max(Duration::from_millis(1));
        s.start = start;
        start += s.len;
    }
    rot.cycle = start;
}

impl Table {
    /// The table as the BPF side's struct linger_gang_table.
    pub fn to_bpf(&self) -> intf::linger_gang_table {
        // SAFETY: the struct is plain integers; all-zero is a valid value.
        let mut out: intf::linger_gang_table = unsafe { std::mem::zeroed() };
        out.nr_cpus = self.nr_cpus;
        for (&g, &n) in &self.cpus_of {
            if let Some(slot) = out.cpus_of.get_mut(g) {
                *slot = n;
            }
        }
        for (&g, &with) in &self.conflicts {
            if let Some(slot) = out.conflicts.get_mut(g) {
                *slot = with;
            }
        }
        for (&g, &llcs) in &self.llcs_of {
            if let Some(slot) = out.llcs_of.get_mut(g) {
                *slot = llcs;
            }
        }
        let order = self.tiers.iter().flat_map(|rot| &rot.order);
        for (i, &(g, turn)) in order.take(MAX_GANGS).enumerate() {
            out.order[i] = g as u32;
            out.turn_of[i] = turn;
            out.nr_order = i as u32 + 1;
        }
        for (t, rot) in self.tiers.iter().enumerate() {
            let dst = &mut out.tiers[t];
            dst.cycle_ns = rot.cycle.as_nanos() as u64;
            dst.open_ns = rot.open.as_nanos() as u64;
            dst.gangs = rot.gangs;
            dst.turns = rot.turns;
            dst.open_slots = 0;
            dst.nr_slots = rot.slots.len().min(MAX_GANGS) as u32;
            for (i, s) in rot.slots.iter().take(MAX_GANGS).enumerate() {
                dst.slots[i].start_ns = s.start.as_nanos() as u64;
                dst.slots[i].len_ns = s.len.as_nanos() as u64;
                dst.slots[i].gangs = s.gangs;
                dst.open_slots |= u64::from(s.open) << i;
            }
        }
        out
    }

    /// One line per tier for the log.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (rot, tier) in self.tiers.iter().zip(["gangs", "guest gangs"]) {
            if rot.slots.is_empty() {
                continue;
            }
            let slots: Vec<String> = rot
                .slots
                .iter()
                .map(|s| {
                    let row = s.row.map(|r| format!("row {r}: ")).unwrap_or_default();
                    let who = if s.open {
                        format!("open: /{}", s.names.join(" + /"))
                    } else if s.names.is_empty() {
                        "(any gang)".to_string()
                    } else {
                        format!("/{}", s.names.join(" + /"))
                    };
                    format!("[{row}{who} {}ms]", s.len.as_millis())
                })
                .collect();
            let open = if rot.open.is_zero() {
                String::new()
            } else {
                format!(" + open {}ms", rot.open.as_millis())
            };
            let unled = if rot.unled.is_empty() {
                String::new()
            } else {
                format!(" (leading no row: /{})", rot.unled.join(" /"))
            };
            parts.push(format!(
                "{tier}: cycle {}ms: {}{open}{unled}",
                rot.cycle.as_millis(),
                slots.join(" ")
            ));
        }
        if parts.is_empty() {
            "no gangs".to_string()
        } else {
            parts.join("; ")
        }
    }
}

#[cfg(test)]
mod tests;
