// SPDX-License-Identifier: GPL-2.0-only
//! The slot table's tests: numbers, rotations, cpusets, rows and the
//! filling order, run against the BPF side's own pure.h functions.

use super::*;
use crate::bpf::pure;

fn place(number: usize, rel: &str, tier: Class) -> GangPlace {
    GangPlace {
        number,
        rel: rel.into(),
        tier,
        slot: Duration::from_millis(100),
        cpus: None,
        llcs: 0,
        row: None,
    }
}

fn bound(number: usize, rel: &str, cpus: &[u32]) -> GangPlace {
    GangPlace {
        cpus: Some(cpus.to_vec()),
        ..place(number, rel, Class::Gang)
    }
}

fn label(id: u64, rel: &str) -> GangLabel {
    GangLabel {
        id,
        rel: rel.into(),
        class: Class::Gang,
        slot_ms: None,
        row: None,
    }
}

fn slot_names(t: &Table) -> Vec<Vec<String>> {
    t.tiers[0].slots.iter().map(|s| s.names.clone()).collect()
}

/// What the BPF side admits in the primary slot led by gang `lead`,
/// with `runnable` members of each gang (by number) runnable, filling
/// from gang `first`.
fn admitted(t: &Table, runnable: &[(usize, i64)], lead: usize, first: u32) -> u64 {
    let lead = 1u64 << lead;
    pure::admit_gangs(
        &t.to_bpf(),
        &counts(runnable),
        lead,
        t.tiers[0].gangs & !lead,
        first,
    )
}

/// Runnable members per gang number, from (gang, count) pairs.
fn counts(runnable: &[(usize, i64)]) -> [i64; MAX_GANGS] {
    let mut counts = [0i64; MAX_GANGS];
    for &(g, n) in runnable {
        counts[g] = n;
    }
    counts
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
fn every_gang_leads_a_slot_of_its_own_in_path_order() {
    let gangs = vec![
        place(2, "job/c", Class::Gang),
        place(0, "job/a", Class::Gang),
        GangPlace {
            slot: Duration::from_millis(50),
            ..place(1, "job/b", Class::Gang)
        },
        place(5, "g/x", Class::GuestGang),
    ];
    let t = lay_out(&gangs, 4, 10, None, &[]);
    let p = &t.tiers[0];
    assert_eq!(
        slot_names(&t),
        vec![vec!["job/a"], vec!["job/b"], vec!["job/c"]]
    );
    let sets: Vec<u64> = p.slots.iter().map(|s| s.gangs).collect();
    assert_eq!(sets, vec![0b001, 0b010, 0b100]);
    assert_eq!(p.gangs, 0b111);
    assert_eq!(p.slots[2].start, Duration::from_millis(150));
    // 250 ms of slots + 10% open phase of the cycle.
    assert_eq!(p.open, Duration::from_nanos(27_777_777));
    assert_eq!(p.cycle, Duration::from_millis(250) + p.open);
    assert_eq!(t.tiers[1].slots.len(), 1);
    assert_eq!(
        t.tiers[1].open,
        Duration::ZERO,
        "guest gangs have no open phase"
    );
    assert!(
        t.describe().contains("[/job/a 100ms] [/job/b 50ms]"),
        "{}",
        t.describe()
    );
}

#[test]
fn gangs_that_fit_run_beside_the_lead_and_a_gang_that_outgrows_the_room_is_let_go() {
    // Two jobs of 8 workers on 16 CPUs. While job a's main thread is
    // still spawning, 9 of its threads are runnable: b does not fit
    // beside it, and must not time-share with it. Once the spawner
    // sleeps, both run in either slot: no polling, no repacking.
    let t = lay_out(
        &[place(0, "a", Class::Gang), place(1, "b", Class::Gang)],
        16,
        10,
        None,
        &[],
    );
    assert_eq!(admitted(&t, &[(0, 9), (1, 8)], 0, 1), 0b01);
    assert_eq!(admitted(&t, &[(0, 8), (1, 8)], 0, 1), 0b11);
    assert_eq!(admitted(&t, &[(0, 8), (1, 8)], 1, 0), 0b11);
    // An idle gang takes no room, and the lead runs even when idle.
    assert_eq!(admitted(&t, &[(0, 0), (1, 16)], 0, 1), 0b11);
    assert_eq!(admitted(&t, &[(0, 0), (1, 0)], 0, 1), 0b01);
    // The lead alone too big for the node still has its slot.
    assert_eq!(admitted(&t, &[(0, 20), (1, 1)], 0, 1), 0b01);
}

#[test]
fn gangs_bound_to_the_same_cores_take_turns_and_a_gang_alone_on_its_cores_runs_throughout() {
    // Two 2-thread gangs bound to CPUs 0-1, a third to 2-3, on 4 CPUs:
    // the ideal schedule alternates a and b while c runs always.
    let t = lay_out(
        &[
            bound(0, "a", &[0, 1]),
            bound(1, "b", &[0, 1]),
            bound(2, "c", &[2, 3]),
        ],
        4,
        10,
        None,
        &[],
    );
    assert_eq!(t.conflicts.get(&0), Some(&0b010));
    assert_eq!(t.conflicts.get(&2), None, "c shares its cores with nobody");
    let b = t.to_bpf();
    assert_eq!((b.cpus_of[0], b.cpus_of[2], b.cpus_of[3]), (2, 2, 0));
    let all = [(0, 2), (1, 2), (2, 2)];
    // Over two cycles (the filling order rotates by cycle), a and b
    // run equally often, never together, and c in every slot.
    let mut ran = [0; 3];
    for cycle in 0..2u64 {
        for lead in 0..3usize {
            let fill = t.tiers[0].gangs & !(1 << lead);
            let mask = admitted(
                &t,
                &all,
                lead,
                pure::admit_first(&t.to_bpf(), 0, fill, cycle),
            );
            assert_ne!(mask & 0b011, 0b011, "a and b together in slot {lead}");
            for (g, r) in ran.iter_mut().enumerate() {
                *r += (mask >> g & 1) as u32;
            }
        }
    }
    assert_eq!(ran, [3, 3, 6]);
}

#[test]
fn slurm_like_jobs_on_disjoint_and_overlapping_core_sets() {
    // 8 CPUs: j1 on 0-3 (4 threads), j2 on 2-5 (2), j3 on 6-7 (2),
    // j4 unbound (2).
    let t = lay_out(
        &[
            bound(0, "j1", &[0, 1, 2, 3]),
            bound(1, "j2", &[2, 3, 4, 5]),
            bound(2, "j3", &[6, 7]),
            place(3, "j4", Class::Gang),
        ],
        8,
        10,
        None,
        &[],
    );
    assert_eq!(t.conflicts.get(&0), Some(&0b0010));
    assert_eq!(t.conflicts.get(&3), None);
    let all = [(0, 4), (1, 2), (2, 2), (3, 2)];
    // j1 leads: j2 overlaps its cores; j3 and j4 fill the rest.
    assert_eq!(admitted(&t, &all, 0, 1), 0b1101);
    // j2 leads: j1 overlaps it; j3 and j4 fit.
    assert_eq!(admitted(&t, &all, 1, 0), 0b1110);
}

#[test]
fn a_gang_bigger_than_its_cpuset_is_too_big_for_its_own_cpus() {
    let t = lay_out(
        &[bound(0, "wide", &[0, 1]), bound(1, "other", &[2])],
        4,
        10,
        None,
        &[],
    );
    let all = [(0, 3), (1, 1)];
    // Leading, it takes its two CPUs and a gang on other cores fits
    // beside it; it never fills another gang's slot.
    assert_eq!(admitted(&t, &all, 0, 1), 0b11);
    assert_eq!(admitted(&t, &all, 1, 0), 0b10);
}

#[test]
fn a_gang_too_big_for_the_node_runs_in_the_slots_of_idle_gangs() {
    let gangs = [
        place(0, "big", Class::Gang),
        place(1, "idle1", Class::Gang),
        place(2, "idle2", Class::Gang),
    ];
    let t = lay_out(&gangs, 4, 10, None, &[]);
    // Six members on four CPUs: too big to fill beside a running
    // lead, but the idle gangs' slots would otherwise go to waste.
    assert_eq!(admitted(&t, &[(0, 6)], 1, 0), 0b011);
    assert_eq!(admitted(&t, &[(0, 6)], 2, 0), 0b101);
    // Once a lead has members to run, the big gang waits its turn.
    assert_eq!(admitted(&t, &[(0, 6), (1, 1)], 1, 0), 0b010);
    // Only the first stand-in: the room is then gone.
    let t = lay_out(
        &[
            place(0, "a", Class::Gang),
            place(1, "b", Class::Gang),
            place(2, "c", Class::Gang),
        ],
        4,
        10,
        None,
        &[],
    );
    assert_eq!(admitted(&t, &[(0, 6), (1, 5)], 2, 0), 0b101);
}

#[test]
fn the_table_depends_on_paths_not_on_numbers() {
    let a = vec![
        place(0, "x", Class::Gang),
        place(1, "y", Class::Gang),
        place(2, "z", Class::Gang),
    ];
    let b = vec![
        place(5, "z", Class::Gang),
        place(7, "x", Class::Gang),
        place(6, "y", Class::Gang),
    ];
    assert_eq!(
        slot_names(&lay_out(&a, 2, 10, None, &[])),
        slot_names(&lay_out(&b, 2, 10, None, &[]))
    );
    assert_eq!(
        lay_out(&a, 2, 10, None, &[]).tiers[0].cycle,
        lay_out(&b, 2, 10, None, &[]).tiers[0].cycle
    );
}

#[test]
fn long_tables_are_scaled_to_the_cycle_cap() {
    let gangs: Vec<GangPlace> = (0..60)
        .map(|i| GangPlace {
            slot: Duration::from_millis(1000),
            ..place(i, &format!("j{i:02}"), Class::Gang)
        })
        .collect();
    let t = lay_out(&gangs, 4, 50, None, &[]);
    assert!(t.tiers[0].cycle <= MAX_CYCLE, "{:?}", t.tiers[0].cycle);
    assert_eq!(t.tiers[0].slots.len(), 60);
}

#[test]
fn slot_boundaries_follow_the_clock() {
    let gangs = vec![place(0, "a", Class::Gang), place(1, "b", Class::Gang)];
    let r = &lay_out(&gangs, 2, 0, None, &[]).tiers[0];
    assert_eq!(r.cycle, Duration::from_millis(200));
    let ms = Duration::from_millis;
    // Any multiple of the cycle starts slot 0, on every node alike.
    let big = ms(1_700_000_000_000);
    // The BPF side's own rotation_at() (bpf/lib/pure.h), run here.
    let slot_at = |r: &Rotation, tai: Duration| {
        let t = Table {
            tiers: [r.clone(), Rotation::default()],
            nr_cpus: 2,
            ..Table::default()
        }
        .to_bpf();
        pure::rotation_at(&t.tiers[0], tai.as_nanos() as u64)
            .map(|(mask, open, left)| (mask, open, Duration::from_nanos(left)))
    };
    assert_eq!(slot_at(r, big), Some((0b01, false, ms(100))));
    assert_eq!(slot_at(r, big + ms(99)), Some((0b01, false, ms(1))));
    assert_eq!(slot_at(r, big + ms(100)), Some((0b10, false, ms(100))));
    assert_eq!(slot_at(r, big + ms(250)), Some((0b01, false, ms(50))));
    let with_open = &lay_out(&gangs, 2, 20, None, &[]).tiers[0];
    assert_eq!(with_open.cycle, ms(250));
    // The open phase runs one slot's gangs after ordinary work, each
    // slot's in turn: cycle 8,000 slot 0's, cycle 8,001 slot 1's.
    assert_eq!(
        slot_at(with_open, ms(2_000_000) + ms(210)),
        Some((0b01, true, ms(40)))
    );
    assert_eq!(
        slot_at(with_open, ms(2_000_000) + ms(460)),
        Some((0b10, true, ms(40)))
    );
    assert_eq!(slot_at(&Rotation::default(), big), None);
}

fn rows(count: u32) -> Rows {
    Rows {
        count,
        slot: Duration::from_millis(100),
        open_pct: 10,
    }
}

fn rowed(number: usize, rel: &str, row: u32) -> GangPlace {
    GangPlace {
        row: Some(row),
        ..place(number, rel, Class::Gang)
    }
}

/// (start ms, len ms, gangs) of each primary slot.
fn slots_ms(t: &Table) -> Vec<(u128, u128, u64)> {
    t.tiers[0]
        .slots
        .iter()
        .map(|s| (s.start.as_millis(), s.len.as_millis(), s.gangs))
        .collect()
}

#[test]
fn a_multi_node_job_leads_its_row_whatever_else_each_node_runs() {
    let m = rows(3);
    // Node 1 runs the two-node jobs x (row 0) and y (row 1) only;
    // node 2 runs them beside a gang of its own, numbered otherwise.
    let one = lay_out(&[rowed(0, "x", 0), rowed(1, "y", 1)], 2, 10, Some(&m), &[]);
    let two = lay_out(
        &[
            rowed(4, "y", 1),
            place(2, "local", Class::Gang),
            rowed(3, "x", 0),
        ],
        2,
        10,
        Some(&m),
        &[],
    );
    assert_eq!(
        slots_ms(&one),
        vec![(0, 100, 1 << 0), (100, 100, 1 << 1), (200, 100, 0)]
    );
    assert_eq!(
        slots_ms(&two),
        vec![(0, 100, 1 << 3), (100, 100, 1 << 4), (200, 100, 1 << 2)]
    );
    // 300 ms of rows and a 10% open phase, on both.
    assert_eq!(one.tiers[0].cycle, two.tiers[0].cycle);
    assert_eq!(one.tiers[0].cycle, Duration::from_nanos(333_333_333));
    // The BPF side's rotation_at() puts y's row at one moment on both.
    let cycle = one.tiers[0].cycle.as_nanos() as u64;
    let base = 1_700_000_000_000_000_000 / cycle * cycle + cycle;
    let row1 = |t: &Table| {
        pure::rotation_at(&t.to_bpf().tiers[0], base + 150_000_000).map(|(m, o, _)| (m, o))
    };
    assert_eq!(row1(&one), Some((1 << 1, false)));
    assert_eq!(row1(&two), Some((1 << 4, false)));
    assert!(
        two.describe().contains("[row 1: /y 100ms]") && one.describe().contains("(any gang)"),
        "{}",
        two.describe()
    );
}

#[test]
fn a_job_without_a_row_keeps_the_share_it_would_have_as_a_gang_as_open_phase() {
    let m = rows(3);
    let rowless = ["job_6".to_string(), "job_7".to_string()];
    // A node's own gang beside two multi-node jobs that got no row: each
    // of the three leads a free row, the jobs' rows open phase in which
    // the gang fills what ordinary work leaves.
    let t = lay_out(&[place(2, "local", Class::Gang)], 1, 10, Some(&m), &rowless);
    assert_eq!(
        slots_ms(&t),
        vec![(0, 100, 1 << 2), (100, 100, 1 << 2), (200, 100, 1 << 2)]
    );
    let open: Vec<bool> = t.tiers[0].slots.iter().map(|s| s.open).collect();
    assert_eq!(open, vec![false, true, true]);
    let cycle = t.tiers[0].cycle.as_nanos() as u64;
    let base = 1_700_000_000_000_000_000 / cycle * cycle + cycle;
    let at = |ms: u64| {
        pure::rotation_at(&t.to_bpf().tiers[0], base + ms * 1_000_000).map(|(m, o, _)| (m, o))
    };
    assert_eq!(at(50), Some((1 << 2, false)));
    assert_eq!(at(150), Some((1 << 2, true)));
    assert_eq!(at(250), Some((1 << 2, true)));
    assert!(
        t.describe().contains("[row 1: open: /job_6 100ms]"),
        "{}",
        t.describe()
    );
    // Rows held by jobs that have them stay theirs.
    let t = lay_out(
        &[rowed(0, "x", 0), place(1, "local", Class::Gang)],
        1,
        10,
        Some(&m),
        &rowless[..1],
    );
    let led: Vec<(u64, bool)> = t.tiers[0].slots.iter().map(|s| (s.gangs, s.open)).collect();
    assert_eq!(led, vec![(0b01, false), (0b10, false), (0b10, true)]);
    // Without rows, the open phase grows by a mean slot per such job:
    // here the gang's 100 ms, the jobs' 200 ms and 10% of the 100 ms.
    let t = lay_out(&[place(0, "local", Class::Gang)], 1, 10, None, &rowless);
    assert_eq!(t.tiers[0].open, Duration::from_nanos(211_111_111));
    assert_eq!(t.tiers[0].cycle, Duration::from_nanos(311_111_111));
}

#[test]
fn local_gangs_share_the_free_rows_and_cut_one_when_they_outnumber_them() {
    let m = rows(3);
    // One local gang leads every free row.
    let t = lay_out(
        &[rowed(0, "x", 1), place(1, "a", Class::Gang)],
        2,
        10,
        Some(&m),
        &[],
    );
    assert_eq!(
        slots_ms(&t),
        vec![(0, 100, 0b10), (100, 100, 0b01), (200, 100, 0b10)]
    );
    // Three local gangs, two free rows: the first row is cut in two.
    let t = lay_out(
        &[
            rowed(0, "x", 1),
            place(1, "a", Class::Gang),
            place(2, "b", Class::Gang),
            place(3, "c", Class::Gang),
        ],
        2,
        10,
        Some(&m),
        &[],
    );
    assert_eq!(
        slots_ms(&t),
        vec![
            (0, 50, 0b0010),
            (50, 50, 0b1000),
            (100, 100, 0b0001),
            (200, 100, 0b0100)
        ]
    );
    assert_eq!(t.tiers[0].gangs, 0b1111);
    // Every row held: the local gang leads none, but is scheduled.
    let t = lay_out(
        &[rowed(0, "x", 0), place(1, "a", Class::Gang)],
        2,
        10,
        Some(&rows(1)),
        &[],
    );
    assert_eq!(slots_ms(&t), vec![(0, 100, 0b01)]);
    assert_eq!(t.tiers[0].unled, vec!["a".to_string()]);
    assert_eq!(t.tiers[0].gangs, 0b11);
    // Two jobs given one row (more jobs than rows on a node) co-lead it;
    // a row beyond the matrix (a controller with another config) wraps.
    let t = lay_out(
        &[rowed(0, "x", 0), rowed(1, "y", 2)],
        2,
        10,
        Some(&rows(2)),
        &[],
    );
    assert_eq!(slots_ms(&t), vec![(0, 100, 0b11), (100, 100, 0)]);
    // Guest gangs keep their own path-order rotation.
    let t = lay_out(&[place(0, "g", Class::GuestGang)], 2, 10, Some(&m), &[]);
    assert_eq!(t.tiers[1].slots.len(), 1);
    assert!(t.tiers[0].slots.is_empty());
}

/// The gang admission starts from in `tier` in cycle `cycle`, among
/// `mask`'s, as the BPF side's admit_first() finds it.
fn first_gang(t: &Table, tier: usize, mask: u64, cycle: u64) -> usize {
    let b = t.to_bpf();
    b.order[pure::admit_first(&b, tier, mask, cycle) as usize] as usize
}

#[test]
fn admission_order_rotates_through_the_gangs_in_path_order() {
    // Numbered otherwise than their paths sort: the order is by path,
    // and gang k of it comes first in cycle k (mod their number). When
    // that gang leads the slot, the next digit of the cycle number (base
    // their number) draws again: cycle 1 draws b, then 1 / 3 = 0, a.
    let gangs: Vec<GangPlace> = [(7, "a"), (2, "b"), (5, "c")]
        .into_iter()
        .map(|(n, rel)| place(n, rel, Class::Gang))
        .collect();
    let t = lay_out(&gangs, 4, 10, None, &[]);
    let all = t.tiers[0].gangs;
    let firsts: Vec<usize> = (0..4).map(|c| first_gang(&t, 0, all, c)).collect();
    assert_eq!(firsts, [7, 2, 5, 7]);
    assert_eq!(first_gang(&t, 0, all & !(1 << 2), 1), 7);
    assert_eq!(first_gang(&t, 0, all & !(1 << 2), 7), 5);
    assert_eq!(first_gang(&t, 0, all & !(1 << 5), 2), 7);
    let b = t.to_bpf();
    assert_eq!(pure::admit_first(&b, 0, 0, 7), 0);
    // In each gang's slot, the other two come first equally often.
    for lead in [7, 2, 5] {
        let others = all & !(1 << lead);
        let mut firsts = [0u32; 8];
        for c in 0..81 {
            firsts[first_gang(&t, 0, others, c)] += 1;
        }
        let [x, y] = [7, 2, 5]
            .map(|g| firsts[g])
            .into_iter()
            .filter(|&n| n > 0)
            .collect::<Vec<_>>()[..]
        else {
            panic!("slot of {lead}: {firsts:?}");
        };
        assert!(x.abs_diff(y) <= 1, "slot of {lead}: {firsts:?}");
    }
    // Guest gangs follow the primaries in the BPF side's order.
    let t = lay_out(
        &[place(1, "p", Class::Gang), place(0, "g", Class::GuestGang)],
        4,
        10,
        None,
        &[],
    );
    assert_eq!(
        (first_gang(&t, 0, 0b10, 3), first_gang(&t, 1, 0b01, 3)),
        (1, 0)
    );
}

#[test]
fn nodes_that_number_the_same_jobs_otherwise_fill_a_free_row_alike() {
    // Two one-CPU nodes run the two-node jobs x (row 0) and y (row 1);
    // node 2 numbered them the other way round (a gang of its own came
    // and went first). Row 2 is led by nobody on either node: in every
    // cycle both fill it with the same job, and each job in an equal
    // share of the cycles (each its half of the row, as a fair scheduler
    // would give it).
    let m = rows(3);
    let one = lay_out(&[rowed(0, "x", 0), rowed(1, "y", 1)], 1, 10, Some(&m), &[]);
    let two = lay_out(&[rowed(5, "x", 0), rowed(3, "y", 1)], 1, 10, Some(&m), &[]);
    let filler = |t: &Table, cycle: u64| {
        let b = t.to_bpf();
        let fill = t.tiers[0].gangs;
        let runnable = counts(&[(0, 1), (1, 1), (3, 1), (5, 1)]);
        let first = pure::admit_first(&b, 0, fill, cycle);
        let mask = pure::admit_gangs(&b, &runnable, 0, fill, first);
        assert_eq!(mask.count_ones(), 1, "one job fits on one CPU");
        let g = mask.trailing_zeros() as usize;
        let slot = t.tiers[0].slots.iter().find(|s| s.gangs == 1 << g);
        slot.map(|s| s.names.join(",")).unwrap_or_default()
    };
    let one_fills: Vec<String> = (0..81).map(|c| filler(&one, c)).collect();
    let two_fills: Vec<String> = (0..81).map(|c| filler(&two, c)).collect();
    assert_eq!(one_fills, two_fills);
    assert_eq!(one_fills[..6], ["x", "y", "x", "x", "y", "y"]);
    let xs = one_fills.iter().filter(|f| *f == "x").count();
    assert_eq!(
        (xs, 81 - xs),
        (41, 40),
        "x fills the one cycle of 81 that all draws miss"
    );
    // With a gang of its own, l, node 2 leaves no row to nobody (l leads
    // row 2), and l comes first in x's row as often as y does.
    let l = place(2, "l", Class::Gang);
    let two = lay_out(
        &[rowed(5, "x", 0), rowed(3, "y", 1), l],
        1,
        10,
        Some(&m),
        &[],
    );
    assert!(two.tiers[0].slots.iter().all(|s| s.gangs != 0));
    let mut firsts = [0u32; 8];
    for c in 0..256 {
        firsts[first_gang(&two, 0, two.tiers[0].gangs & !(1 << 5), c)] += 1;
    }
    assert_eq!((firsts[3], firsts[2]), (128, 128), "y and l in x's row");
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
        place(3, "a", Class::Gang),
        GangPlace {
            cpus: Some(vec![0]),
            ..place(9, "g", Class::GuestGang)
        },
    ];
    let b = lay_out(&gangs, 2, 10, None, &[]).to_bpf();
    assert_eq!(b.tiers[0].nr_slots, 1);
    assert_eq!(b.tiers[0].slots[0].gangs, 1 << 3);
    assert_eq!(b.tiers[0].slots[0].len_ns, 100_000_000);
    assert_eq!(b.tiers[1].slots[0].gangs, 1 << 9);
    assert_eq!(b.tiers[1].gangs, 1 << 9);
    assert_eq!((b.nr_cpus, b.cpus_of[9], b.cpus_of[3]), (2, 1, 0));
}

const NO_HOME: u32 = intf::linger_consts_LINGER_NO_HOME;

/// Homes after one admission of `admitted` with `runnable` members
/// (by gang number), on LLCs of `llc_cpus` CPUs, from `homes`.
fn homes_after(
    t: &Table,
    runnable: &[(usize, i64)],
    admitted: u64,
    llc_cpus: &[u32],
    homes: &mut [u32; MAX_GANGS],
) {
    pure::gang_homes(&t.to_bpf(), &counts(runnable), admitted, llc_cpus, homes);
}

#[test]
fn gangs_that_start_small_spread_over_the_llcs_and_keep_their_homes_as_they_grow() {
    let gangs = [place(0, "a", Class::Gang), place(1, "b", Class::Gang)];
    let t = lay_out(&gangs, 8, 10, None, &[]);
    let mut homes = [NO_HOME; MAX_GANGS];
    // Each job's first thread: most room, not the first LLC that fits.
    homes_after(&t, &[(0, 1), (1, 1)], 0b11, &[4, 4], &mut homes);
    assert_eq!((homes[0], homes[1]), (0, 1));
    for n in 2..=4 {
        homes_after(&t, &[(0, n), (1, n)], 0b11, &[4, 4], &mut homes);
        assert_eq!((homes[0], homes[1]), (0, 1), "at {n} members each");
    }
}

#[test]
fn a_gang_bigger_than_any_llc_has_no_home_until_it_fits_one_then_keeps_it() {
    let t = lay_out(&[place(0, "big", Class::Gang)], 8, 10, None, &[]);
    let mut homes = [NO_HOME; MAX_GANGS];
    // The thread that spawned five workers still counts.
    homes_after(&t, &[(0, 5)], 0b1, &[4, 4], &mut homes);
    assert_eq!(homes[0], NO_HOME);
    homes_after(&t, &[(0, 4)], 0b1, &[4, 4], &mut homes);
    assert_eq!(homes[0], 0);
    // Once homed, a moment too big for any LLC (its launcher counted
    // again) does not strand the members already running at home.
    homes_after(&t, &[(0, 5)], 0b1, &[4, 4], &mut homes);
    assert_eq!(homes[0], 0);
}

#[test]
fn a_gang_whose_home_fills_up_moves_and_one_left_out_keeps_its_home() {
    let gangs = [
        place(0, "a", Class::Gang),
        place(1, "b", Class::Gang),
        place(2, "c", Class::Gang),
    ];
    let t = lay_out(&gangs, 8, 10, None, &[]);
    let mut homes = [NO_HOME; MAX_GANGS];
    homes_after(&t, &[(0, 2), (1, 2)], 0b011, &[4, 4], &mut homes);
    assert_eq!((homes[0], homes[1]), (0, 1));
    // c comes in with 2: both LLCs have 2 CPUs left; c takes the first.
    homes_after(&t, &[(0, 2), (1, 2), (2, 2)], 0b111, &[4, 4], &mut homes);
    assert_eq!((homes[0], homes[1], homes[2]), (0, 1, 0));
    // a grows to 3: it keeps LLC 0 (gang order), which has 1 CPU left
    // for c, so c moves to LLC 1.
    homes_after(&t, &[(0, 3), (1, 2), (2, 2)], 0b111, &[4, 4], &mut homes);
    assert_eq!((homes[0], homes[1], homes[2]), (0, 1, 1));
    // c is left out of the next slot: it keeps its home for later.
    homes_after(&t, &[(0, 3), (1, 2), (2, 2)], 0b011, &[4, 4], &mut homes);
    assert_eq!(homes[2], 1);
}

#[test]
fn a_bound_gang_is_homed_only_in_the_llcs_its_cpuset_touches() {
    let mut g = bound(0, "bound", &[4, 5]);
    g.llcs = 0b10;
    let t = lay_out(&[g, place(1, "free", Class::Gang)], 8, 10, None, &[]);
    assert_eq!(t.llcs_of.get(&0), Some(&0b10));
    let mut homes = [NO_HOME; MAX_GANGS];
    homes_after(&t, &[(0, 2), (1, 3)], 0b11, &[4, 4], &mut homes);
    // The bound gang is on LLC 1 even though LLC 0 had more room; the
    // free one then takes LLC 0, where there is more room left.
    assert_eq!((homes[0], homes[1]), (1, 0));
}
