// SPDX-License-Identifier: GPL-2.0-only
//! Gangs: which cgroups are co-scheduled jobs, their numbers, and the slot
//! table the BPF side rotates through (bpf/gang.bpf.c is the other half).
//!
//! Everything here is policy without I/O, tested without a kernel:
//!
//! - **Numbers.** Each gang gets a number 0..64 (a bit in the BPF side's
//!   gang sets) that stays the same while its cgroup exists.
//! - **Size.** A gang's size is the most member threads that were runnable
//!   at once over the last few seconds, as the BPF side counts them: a
//!   runtime's sleeping helper threads do not count, its workers do.
//! - **Packing.** Per tier (primary gangs, guest gangs), gangs go into
//!   slots first-fit by decreasing size, in path order among equals:
//!   gangs share a slot when their members fit on the CPUs at once. A
//!   gang bound to a cpuset (Slurm's ConstrainCores, Kubernetes' static
//!   CPU manager) fits only on the CPUs of its cpuset the slot's other
//!   gangs leave: gangs bound to the same cores take turns, gangs on
//!   disjoint cores run together. A gang larger than its CPUs gets a slot
//!   of its own (it cannot run all at once; its members take turns, see
//!   bpf/gang.bpf.c). Slots come in the order of the first path in each,
//!   so the table depends only on the gangs' paths, sizes, cpusets and
//!   slot lengths: two nodes running the same jobs build the same table.
//! - **Filling.** A bound gang also joins every other slot whose gangs
//!   are all bound to cores disjoint from its own: nobody else could use
//!   its cores then, so it runs throughout instead of waiting its turn.
//! - **Conflicts.** BPF lends the CPUs a slot's gangs leave idle to other
//!   gangs by count (bpf/gang.bpf.c); counting is exact only where gangs
//!   may use any CPU. Two gangs bound to overlapping cores conflict, and
//!   BPF never lends to a gang that conflicts with one already admitted.
//! - **Cycle.** Slot lengths add up, then the primary tier's open phase
//!   (`open_pct` of the cycle) follows, in which ordinary primary work comes
//!   first. The cycle is capped at MAX_CYCLE so that no gang ever waits
//!   near the kernel's 30 s watchdog for its turn.
//! - **Clock.** Cycle k starts at CLOCK_TAI = k x cycle: rotation_at() in
//!   bpf/lib/pure.h, which the tests here run.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use crate::bpf::intf;
use crate::labels::class::Class;

pub const MAX_GANGS: usize = intf::linger_consts_LINGER_MAX_GANGS as usize;
pub const DEFAULT_OPEN_PCT: u32 = intf::LINGER_DEFAULT_OPEN_PCT;
/// Longest rotation; longer tables have their slots scaled down to fit.
pub const MAX_CYCLE: Duration = Duration::from_secs(10);
/// Size samples (one per rescan) a gang's size is the maximum of.
const SIZE_WINDOW: usize = 3;

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

/// Recent runnable high-water samples of each gang number.
#[derive(Debug, Default)]
pub struct Sizes {
    samples: HashMap<usize, VecDeque<u32>>,
}

impl Sizes {
    pub fn record(&mut self, number: usize, runnable: u32) {
        let s = self.samples.entry(number).or_default();
        s.push_back(runnable);
        while s.len() > SIZE_WINDOW {
            s.pop_front();
        }
    }

    /// Forget numbers that are no longer gangs.
    pub fn retain(&mut self, live: impl Fn(usize) -> bool) {
        self.samples.retain(|n, _| live(*n));
    }

    pub fn size(&self, number: usize) -> u32 {
        self.samples
            .get(&number)
            .and_then(|s| s.iter().max().copied())
            .unwrap_or(0)
    }
}

/// What packing needs to know about one gang.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GangLoad {
    pub number: usize,
    pub rel: String,
    pub tier: Class,
    pub slot: Duration,
    /// Runnable members (high-water over the size window).
    pub size: u32,
    /// The CPUs its cpuset allows, in order; None: any CPU of the node.
    pub cpus: Option<Vec<u32>>,
}

impl GangLoad {
    /// How many CPUs it may use on a node of `nr_cpus`.
    pub fn room(&self, nr_cpus: u32) -> u32 {
        self.cpus
            .as_ref()
            .map_or(nr_cpus, |c| (c.len() as u32).min(nr_cpus))
    }

    /// Bound to cores that overlap `other`'s, both of them bound.
    fn conflicts_with(&self, other: &GangLoad) -> bool {
        match (&self.cpus, &other.cpus) {
            (Some(a), Some(b)) => a.iter().any(|c| b.binary_search(c).is_ok()),
            _ => false,
        }
    }
}

/// One slot being packed: its gangs, how many CPUs they take, and which
/// CPUs its bound gangs were given.
struct Bin<'a> {
    members: Vec<&'a GangLoad>,
    taken: u32,
    bound: BTreeSet<u32>,
}

impl<'a> Bin<'a> {
    fn new() -> Self {
        Bin {
            members: Vec::new(),
            taken: 0,
            bound: BTreeSet::new(),
        }
    }

    /// Put `g` in if its members fit beside the others'; false if not.
    /// A bound gang takes the first of its CPUs nobody took here.
    fn try_add(&mut self, g: &'a GangLoad, nr_cpus: u32) -> bool {
        if self.taken + g.size > nr_cpus && !self.members.is_empty() {
            return false;
        }
        if let Some(cpus) = &g.cpus {
            let free: Vec<u32> = cpus
                .iter()
                .copied()
                .filter(|c| !self.bound.contains(c))
                .collect();
            if (free.len() as u32) < g.size && !self.members.is_empty() {
                return false;
            }
            self.bound.extend(free.into_iter().take(g.size as usize));
        }
        self.taken += g.size;
        self.members.push(g);
        true
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slot {
    pub start: Duration,
    pub len: Duration,
    pub gangs: u64,
    /// Paths of its gangs, for the log.
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rotation {
    pub cycle: Duration,
    pub open: Duration,
    pub gangs: u64,
    pub slots: Vec<Slot>,
}

/// Rotation per tier: [primary gangs, guest gangs].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    pub tiers: [Rotation; 2],
    /// The CPUs the gangs were packed for.
    pub nr_cpus: u32,
    /// Per gang number, the gangs bound to cores overlapping its own.
    pub conflicts: BTreeMap<usize, u64>,
}

/// Pack gangs into slots (see the module comment). `open_pct` is the share
/// of the primary cycle left for ordinary primary work.
pub fn pack(gangs: &[GangLoad], nr_cpus: u32, open_pct: u32) -> Table {
    let mut table = Table {
        nr_cpus,
        ..Table::default()
    };
    for (t, tier) in [Class::Primary, Class::Guest].into_iter().enumerate() {
        let mut these: Vec<&GangLoad> = gangs
            .iter()
            .filter(|g| g.tier.tier() == tier && g.size > 0 && g.number < MAX_GANGS)
            .collect();
        these.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.rel.cmp(&b.rel)));
        // First fit, decreasing; a gang too big for its CPUs goes alone.
        let mut bins: Vec<Bin> = Vec::new();
        for &g in &these {
            let fits_own = g.size <= g.room(nr_cpus);
            if !fits_own || !bins.iter_mut().any(|b| b.try_add(g, nr_cpus)) {
                let mut b = Bin::new();
                b.try_add(g, nr_cpus);
                bins.push(b);
            }
        }
        // Filling: bound gangs join slots whose gangs are all bound to
        // other cores (sorted as above, so the table stays deterministic).
        for b in bins.iter_mut() {
            for &g in &these {
                let disjoint = g.cpus.is_some()
                    && g.size <= g.room(nr_cpus)
                    && b.members
                        .iter()
                        .all(|m| m.cpus.is_some() && !m.conflicts_with(g) && m.number != g.number);
                if disjoint {
                    b.try_add(g, nr_cpus);
                }
            }
        }
        for b in &mut bins {
            b.members.sort_by(|a, b| a.rel.cmp(&b.rel));
        }
        bins.sort_by(|a, b| a.members[0].rel.cmp(&b.members[0].rel));
        let mut rot = Rotation::default();
        let mut start = Duration::ZERO;
        for Bin { members, .. } in &bins {
            let len = members.iter().map(|g| g.slot).max().unwrap_or_default();
            let gangs = members.iter().fold(0u64, |m, g| m | 1 << g.number);
            rot.gangs |= gangs;
            rot.slots.push(Slot {
                start,
                len,
                gangs,
                names: members.iter().map(|g| g.rel.clone()).collect(),
            });
            start += len;
        }
        fit_cycle(&mut rot, start);
        if t == 0 && !rot.slots.is_empty() {
            let pct = open_pct.min(50);
            rot.open = rot.cycle * pct / (100 - pct);
            rot.cycle += rot.open;
        }
        table.tiers[t] = rot;
    }
    for g in gangs.iter().filter(|g| g.number < MAX_GANGS) {
        let with = gangs
            .iter()
            .filter(|h| h.number < MAX_GANGS && h.number != g.number && g.conflicts_with(h))
            .fold(0u64, |m, h| m | 1 << h.number);
        if with != 0 {
            table.conflicts.insert(g.number, with);
        }
    }
    table
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

/// Gangs too big to run all at once on the CPUs they may use.
pub fn too_big(gangs: &[GangLoad], nr_cpus: u32) -> Vec<&GangLoad> {
    gangs.iter().filter(|g| g.size > g.room(nr_cpus)).collect()
}

impl Table {
    /// The table as the BPF side's struct linger_gang_table.
    pub fn to_bpf(&self) -> intf::linger_gang_table {
        // SAFETY: the struct is plain integers; all-zero is a valid value.
        let mut out: intf::linger_gang_table = unsafe { std::mem::zeroed() };
        out.nr_cpus = self.nr_cpus;
        for (&g, &with) in &self.conflicts {
            if let Some(slot) = out.conflicts.get_mut(g) {
                *slot = with;
            }
        }
        for (t, rot) in self.tiers.iter().enumerate() {
            let dst = &mut out.tiers[t];
            dst.cycle_ns = rot.cycle.as_nanos() as u64;
            dst.open_ns = rot.open.as_nanos() as u64;
            dst.gangs = rot.gangs;
            dst.nr_slots = rot.slots.len().min(MAX_GANGS) as u32;
            for (i, s) in rot.slots.iter().take(MAX_GANGS).enumerate() {
                dst.slots[i].start_ns = s.start.as_nanos() as u64;
                dst.slots[i].len_ns = s.len.as_nanos() as u64;
                dst.slots[i].gangs = s.gangs;
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
                .map(|s| format!("[{} {}ms]", s.names.join(" + /"), s.len.as_millis()))
                .collect();
            let open = if rot.open.is_zero() {
                String::new()
            } else {
                format!(" + open {}ms", rot.open.as_millis())
            };
            parts.push(format!(
                "{tier}: cycle {}ms: /{}{open}",
                rot.cycle.as_millis(),
                slots.join(" /")
            ));
        }
        if parts.is_empty() {
            "no gangs with runnable members".to_string()
        } else {
            parts.join("; ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::pure;

    fn load(number: usize, rel: &str, tier: Class, size: u32) -> GangLoad {
        GangLoad {
            number,
            rel: rel.into(),
            tier,
            slot: Duration::from_millis(100),
            size,
            cpus: None,
        }
    }

    fn label(id: u64, rel: &str) -> GangLabel {
        GangLabel {
            id,
            rel: rel.into(),
            class: Class::Gang,
            slot_ms: None,
        }
    }

    #[test]
    fn numbers_are_stable_and_reused() {
        let mut n = Numbers::default();
        assert!(n.assign(&[label(10, "b"), label(11, "a")]).is_empty());
        assert_eq!((n.get(11), n.get(10)), (Some(0), Some(1)));
        // "a" goes, "c" comes: "b" keeps 1, "c" reuses 0.
        n.assign(&[label(10, "b"), label(12, "c")]);
        assert_eq!((n.get(10), n.get(12), n.get(11)), (Some(1), Some(0), None));
        let many: Vec<GangLabel> = (0..70)
            .map(|i| label(100 + i, &format!("g{i:02}")))
            .collect();
        let left = n.assign(&many);
        assert_eq!(left.len(), 70 - MAX_GANGS);
        assert!(left.contains(&"g69".to_string()));
    }

    #[test]
    fn sizes_are_the_recent_high_water() {
        let mut s = Sizes::default();
        for v in [4, 1, 2, 2] {
            s.record(3, v);
        }
        assert_eq!(s.size(3), 2, "the 4 fell out of the window");
        assert_eq!(s.size(9), 0);
    }

    #[test]
    fn gangs_that_fit_share_a_slot_and_big_ones_go_alone() {
        let gangs = vec![
            load(0, "job/a", Class::Gang, 2),
            load(1, "job/b", Class::Gang, 2),
            load(2, "job/c", Class::Gang, 1),
            load(3, "job/huge", Class::Gang, 9),
            load(4, "idle", Class::Gang, 0),
            load(5, "g/x", Class::GuestGang, 1),
        ];
        let t = pack(&gangs, 4, 10);
        let p = &t.tiers[0];
        // Largest first: huge fills a slot alone, a and b fill the next,
        // c needs a third; slots are then ordered by path.
        let sets: Vec<u64> = p.slots.iter().map(|s| s.gangs).collect();
        assert_eq!(sets, vec![0b011, 0b100, 0b1000]);
        assert_eq!(p.gangs, 0b1111, "the idle gang has no slot");
        assert_eq!(p.slots[1].start, Duration::from_millis(100));
        // 300 ms of slots + 10% open phase of the cycle.
        assert_eq!(p.open, Duration::from_nanos(33_333_333));
        assert_eq!(p.cycle, Duration::from_millis(300) + p.open);
        assert_eq!(t.tiers[1].slots.len(), 1);
        assert_eq!(
            t.tiers[1].open,
            Duration::ZERO,
            "guest gangs have no open phase"
        );
        assert_eq!(too_big(&gangs, 4).len(), 1);
        assert!(
            t.describe().contains("[job/a + /job/b 100ms]"),
            "{}",
            t.describe()
        );
    }

    fn bound(number: usize, rel: &str, size: u32, cpus: &[u32]) -> GangLoad {
        GangLoad {
            cpus: Some(cpus.to_vec()),
            ..load(number, rel, Class::Gang, size)
        }
    }

    fn slot_names(t: &Table) -> Vec<Vec<String>> {
        t.tiers[0].slots.iter().map(|s| s.names.clone()).collect()
    }

    #[test]
    fn gangs_bound_to_the_same_cores_take_turns_and_a_gang_alone_on_its_cores_runs_throughout() {
        // Two 2-thread gangs bound to CPUs 0-1, a third to 2-3, on 4 CPUs:
        // the ideal schedule alternates a and b while c runs always.
        let gangs = vec![
            bound(0, "a", 2, &[0, 1]),
            bound(1, "b", 2, &[0, 1]),
            bound(2, "c", 2, &[2, 3]),
        ];
        let t = pack(&gangs, 4, 10);
        assert_eq!(slot_names(&t), vec![vec!["a", "c"], vec!["b", "c"]]);
        assert_eq!(t.conflicts.get(&0), Some(&0b010));
        assert_eq!(t.conflicts.get(&1), Some(&0b001));
        assert_eq!(t.conflicts.get(&2), None, "c shares its cores with nobody");
        let b = t.to_bpf();
        assert_eq!(
            (b.conflicts[0], b.conflicts[1], b.conflicts[2]),
            (0b010, 0b001, 0)
        );
    }

    #[test]
    fn slurm_like_jobs_on_disjoint_and_overlapping_core_sets() {
        // 8 CPUs: j1 on 0-3 (4 threads), j2 on 2-5 (2), j3 on 6-7 (2),
        // j4 unbound (2). j1 takes 0-3; j2 then fits on 4-5 beside it;
        // j3 on 6-7; j4 finds no CPU left in that slot.
        let gangs = vec![
            bound(0, "j1", 4, &[0, 1, 2, 3]),
            bound(1, "j2", 2, &[2, 3, 4, 5]),
            bound(2, "j3", 2, &[6, 7]),
            load(3, "j4", Class::Gang, 2),
        ];
        let t = pack(&gangs, 8, 10);
        assert_eq!(slot_names(&t), vec![vec!["j1", "j2", "j3"], vec!["j4"]]);
        // j3's cores are its own in the first slot; in j4's slot an
        // unbound gang may be anywhere, so j3 is not filled in there.
        assert_eq!(t.conflicts.get(&0), Some(&0b0010));
        assert_eq!(t.conflicts.get(&3), None);
    }

    #[test]
    fn a_gang_bigger_than_its_cpuset_is_too_big_for_its_own_cpus() {
        let gangs = vec![bound(0, "wide", 3, &[0, 1]), bound(1, "other", 1, &[2])];
        assert_eq!(too_big(&gangs, 4).len(), 1, "3 threads on 2 CPUs");
        let t = pack(&gangs, 4, 10);
        // Alone on its own cores; a gang on other cores runs beside it.
        assert_eq!(slot_names(&t), vec![vec!["other", "wide"]]);
    }

    #[test]
    fn the_table_depends_on_paths_not_on_numbers() {
        let a = vec![
            load(0, "x", Class::Gang, 2),
            load(1, "y", Class::Gang, 2),
            load(2, "z", Class::Gang, 2),
        ];
        let b = vec![
            load(5, "z", Class::Gang, 2),
            load(7, "x", Class::Gang, 2),
            load(6, "y", Class::Gang, 2),
        ];
        let names = |t: Table| -> Vec<Vec<String>> {
            t.tiers[0].slots.iter().map(|s| s.names.clone()).collect()
        };
        assert_eq!(names(pack(&a, 2, 10)), names(pack(&b, 2, 10)));
        assert_eq!(
            pack(&a, 2, 10).tiers[0].cycle,
            pack(&b, 2, 10).tiers[0].cycle
        );
    }

    #[test]
    fn long_tables_are_scaled_to_the_cycle_cap() {
        let gangs: Vec<GangLoad> = (0..60)
            .map(|i| GangLoad {
                slot: Duration::from_millis(1000),
                ..load(i, &format!("j{i:02}"), Class::Gang, 4)
            })
            .collect();
        let t = pack(&gangs, 4, 50);
        assert!(t.tiers[0].cycle <= MAX_CYCLE, "{:?}", t.tiers[0].cycle);
        assert_eq!(t.tiers[0].slots.len(), 60);
    }

    #[test]
    fn slot_boundaries_follow_the_clock() {
        let gangs = vec![load(0, "a", Class::Gang, 2), load(1, "b", Class::Gang, 2)];
        let r = &pack(&gangs, 2, 0).tiers[0];
        assert_eq!(r.cycle, Duration::from_millis(200));
        let ms = Duration::from_millis;
        // Any multiple of the cycle starts slot 0, on every node alike.
        let big = ms(1_700_000_000_000);
        // The BPF side's own rotation_at() (bpf/lib/pure.h), run here.
        let slot_at = |r: &Rotation, tai: Duration| {
            let t = Table {
                tiers: [r.clone(), Rotation::default()],
                nr_cpus: 2,
                conflicts: BTreeMap::new(),
            }
            .to_bpf();
            pure::rotation_at(&t.tiers[0], tai.as_nanos() as u64)
                .map(|(mask, open, left)| (mask, open, Duration::from_nanos(left)))
        };
        assert_eq!(slot_at(r, big), Some((0b01, false, ms(100))));
        assert_eq!(slot_at(r, big + ms(99)), Some((0b01, false, ms(1))));
        assert_eq!(slot_at(r, big + ms(100)), Some((0b10, false, ms(100))));
        assert_eq!(slot_at(r, big + ms(250)), Some((0b01, false, ms(50))));
        let with_open = &pack(&gangs, 2, 20).tiers[0];
        assert_eq!(with_open.cycle, ms(250));
        // The open phase runs the next slot's gangs after ordinary work.
        assert_eq!(
            slot_at(with_open, ms(2_000_000) + ms(210)),
            Some((0b01, true, ms(40)))
        );
        assert_eq!(slot_at(&Rotation::default(), big), None);
    }

    #[test]
    fn admission_order_rotates_through_the_active_gangs() {
        // The BPF side's own admit_first(): the k-th active gang in cycle
        // k (mod their number), so every gang is first in some cycles.
        let mask = 0b1010_0100u64;
        let firsts: Vec<u32> = (0..4).map(|c| pure::admit_first(mask, c)).collect();
        assert_eq!(firsts, [2, 5, 7, 2]);
        assert_eq!(pure::admit_first(0, 7), 0);
    }

    #[test]
    fn gang_refs_leave_zero_for_none() {
        // Zero-filled BPF state must read as "no gang".
        assert_eq!(GangRef::default(), GangRef::NONE);
        assert_eq!(GangRef::NONE.0, 0);
        for n in [0, 1, MAX_GANGS - 1] {
            assert_ne!(GangRef::of(n), GangRef::NONE);
        }
        assert_ne!(GangRef::of(0), GangRef::of(1));
    }

    #[test]
    fn the_bpf_table_carries_every_slot() {
        let gangs = vec![
            load(3, "a", Class::Gang, 1),
            load(9, "g", Class::GuestGang, 2),
        ];
        let b = pack(&gangs, 2, 10).to_bpf();
        assert_eq!(b.tiers[0].nr_slots, 1);
        assert_eq!(b.tiers[0].slots[0].gangs, 1 << 3);
        assert_eq!(b.tiers[0].slots[0].len_ns, 100_000_000);
        assert_eq!(b.tiers[1].slots[0].gangs, 1 << 9);
        assert_eq!(b.tiers[1].gangs, 1 << 9);
        // Admission in a crowded slot counts members against this.
        assert_eq!(b.nr_cpus, 2);
    }
}
