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
//!   gangs share a slot when their sizes add up to at most the CPUs. A
//!   gang larger than the CPUs gets a slot of its own (it cannot run all at
//!   once; its members take turns, see bpf/gang.bpf.c). Slots come in the
//!   order of the first path in each, so the table depends only on the
//!   gangs' paths, sizes and slot lengths: two nodes running the same jobs
//!   build the same table.
//! - **Cycle.** Slot lengths add up, then the primary tier's open phase
//!   (`open_pct` of the cycle) follows, in which ordinary primary work comes
//!   first. The cycle is capped at MAX_CYCLE so that no gang ever waits
//!   near the kernel's 30 s watchdog for its turn.
//! - **Clock.** Cycle k starts at CLOCK_TAI = k x cycle: rotation_at() in
//!   bpf/lib/pure.h, which the tests here run.

use std::collections::{BTreeMap, HashMap, VecDeque};
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
        // First fit, decreasing: (room left, members).
        let mut bins: Vec<(u32, Vec<&GangLoad>)> = Vec::new();
        for g in these {
            match bins.iter_mut().find(|(room, _)| *room >= g.size) {
                Some((room, members)) => {
                    *room -= g.size;
                    members.push(g);
                }
                None => bins.push((nr_cpus.saturating_sub(g.size), vec![g])),
            }
        }
        for (_, members) in &mut bins {
            members.sort_by(|a, b| a.rel.cmp(&b.rel));
        }
        bins.sort_by(|a, b| a.1[0].rel.cmp(&b.1[0].rel));
        let mut rot = Rotation::default();
        let mut start = Duration::ZERO;
        for (_, members) in &bins {
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

/// Gangs too big to run all at once on `nr_cpus`.
pub fn too_big(gangs: &[GangLoad], nr_cpus: u32) -> Vec<&GangLoad> {
    gangs.iter().filter(|g| g.size > nr_cpus).collect()
}

impl Table {
    /// The table as the BPF side's struct linger_gang_table.
    pub fn to_bpf(&self) -> intf::linger_gang_table {
        // SAFETY: the struct is plain integers; all-zero is a valid value.
        let mut out: intf::linger_gang_table = unsafe { std::mem::zeroed() };
        out.nr_cpus = self.nr_cpus;
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
