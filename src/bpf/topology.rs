// SPDX-License-Identifier: GPL-2.0-only
//! Where each CPU sits, as the BPF side is told it: the last-level cache
//! whose queues it looks at first and that LLC's NUMA node (rodata,
//! before load: bpf/llc.bpf.c), and its SMT siblings (the cpu_topo map,
//! before attach: bpf/smt.bpf.c).
//!
//! Read once, at load. A node whose topology cannot be read is told it
//! has one LLC and no SMT: one queue per tier, siblings independent, and
//! the scheduler otherwise unchanged; that is said in one line.

use std::collections::{BTreeMap, BTreeSet};

use libbpf_rs::{MapCore, MapFlags};
use log::{info, warn};

use super::intf;
use super::skel::types::rodata;
use super::skel::BpfSkel;
use crate::node::{self, CpuPlace};

/// LLCs the BPF side keeps queues for (LINGER_MAX_LLCS).
const MAX_LLCS: usize = intf::linger_consts_LINGER_MAX_LLCS as usize;

/// The node as read from sysfs; None (said in one line) if unreadable.
pub fn read() -> Option<Vec<CpuPlace>> {
    match node::cpu_places() {
        Ok(p) if !p.is_empty() => Some(p),
        Ok(_) => {
            warn!("the CPU topology lists no CPUs: one queue per tier, SMT siblings treated as separate cores");
            None
        }
        Err(e) => {
            warn!("reading the CPU topology failed ({e:#}): one queue per tier, SMT siblings treated as separate cores");
            None
        }
    }
}

/// The BPF side's LLC numbering: each LLC gets the next index in the
/// order of its lowest CPU. scx_utils' ids are dense already; this keeps
/// the BPF side's numbering (and the fold below) from depending on how
/// it assigns them. A node with more LLCs than the BPF side has queues
/// folds them (index modulo LINGER_MAX_LLCS): several LLCs then share a
/// queue.
#[derive(Debug, PartialEq, Eq)]
pub struct LlcLayout {
    pub nr_llcs: u32,
    /// (CPU, its LLC's index).
    pub cpu_llc: Vec<(usize, u32)>,
    /// Each index's NUMA node (that of the first LLC folded onto it).
    pub llc_node: Vec<i32>,
}

pub fn llc_layout(places: &[CpuPlace]) -> LlcLayout {
    let mut lowest: BTreeMap<usize, usize> = BTreeMap::new();
    for p in places {
        let cpu = lowest.entry(p.llc).or_insert(p.cpu);
        *cpu = (*cpu).min(p.cpu);
    }
    let mut by_first: Vec<(usize, usize)> = lowest.into_iter().map(|(l, c)| (c, l)).collect();
    by_first.sort_unstable();
    let index: BTreeMap<usize, u32> = by_first
        .iter()
        .enumerate()
        .map(|(i, (_, llc))| (*llc, (i % MAX_LLCS) as u32))
        .collect();
    let nr_llcs = by_first.len().clamp(1, MAX_LLCS);
    let mut llc_node = vec![-1; nr_llcs];
    for p in places {
        let i = index[&p.llc] as usize;
        if llc_node[i] < 0 {
            llc_node[i] = i32::try_from(p.node).unwrap_or(-1);
        }
    }
    LlcLayout {
        nr_llcs: nr_llcs as u32,
        cpu_llc: places.iter().map(|p| (p.cpu, index[&p.llc])).collect(),
        llc_node,
    }
}

/// Queues per class: how many, and how many LLCs they serve.
#[derive(Debug, Clone, Copy)]
pub struct QueueLayout {
    pub per_class: u32,
    pub llcs: u32,
}

/// Write the LLC layout into rodata (before load: the verifier then sees
/// the LLC count as a constant). CPUs beyond the BPF side's arrays stay
/// on LLC 0. `per_llc` false: one queue per class for the whole node
/// (`run --queues node`), every CPU on LLC 0.
pub fn write_llcs(rodata: &mut rodata, places: &[CpuPlace], per_llc: bool) -> QueueLayout {
    let layout = llc_layout(places);
    let llcs = layout.nr_llcs;
    if !per_llc {
        // The one queue per class serves every node's CPUs: no node's
        // memory is nearer to all of them.
        rodata.nr_llcs = 1;
        rodata.llc_node[0] = -1;
        return QueueLayout { per_class: 1, llcs };
    }
    rodata.nr_llcs = layout.nr_llcs;
    for (cpu, llc) in layout.cpu_llc {
        if let Some(slot) = rodata.cpu_llc.get_mut(cpu) {
            *slot = llc;
        }
    }
    for (slot, node) in rodata.llc_node.iter_mut().zip(layout.llc_node) {
        *slot = node;
    }
    QueueLayout {
        per_class: llcs,
        llcs,
    }
}

/// The SMT policy the BPF side is given: `requested`, except on a node
/// where no CPU has a sibling (or whose topology could not be read),
/// which gets `share`: there is nothing to avoid, and the verifier then
/// drops the sibling lookups from every running() and kept slice.
pub fn smt_policy(
    places: &[CpuPlace],
    requested: intf::linger_smt_guests,
) -> intf::linger_smt_guests {
    if places.iter().all(|p| p.siblings.is_empty()) {
        intf::linger_smt_guests_LINGER_SMT_GUESTS_SHARE
    } else {
        requested
    }
}

/// One CPU's entry of the cpu_topo map (struct linger_cpu_topo); None
/// for ids that do not fit it, which then count as no siblings.
fn topo_entry(place: &CpuPlace) -> Option<intf::linger_cpu_topo> {
    let max = intf::linger_consts_LINGER_MAX_SMT_SIBLINGS as usize;
    let mut e = intf::linger_cpu_topo {
        core: place.core.try_into().ok()?,
        llc: place.llc.try_into().ok()?,
        node: place.node.try_into().ok()?,
        nr_siblings: place.siblings.len().min(max) as u32,
        siblings: [-1; intf::linger_consts_LINGER_MAX_SMT_SIBLINGS as usize],
    };
    for (slot, sib) in e.siblings.iter_mut().zip(&place.siblings) {
        *slot = (*sib).try_into().ok()?;
    }
    Some(e)
}

/// Tell the BPF side each CPU's SMT siblings, before it schedules
/// anything, and say the node's shape in one line.
pub fn write_siblings(
    skel: &BpfSkel,
    places: &[CpuPlace],
    queues: QueueLayout,
    smt_guests: intf::linger_smt_guests,
) {
    let mut written = 0;
    for place in places {
        let (Some(entry), Ok(cpu)) = (topo_entry(place), u32::try_from(place.cpu)) else {
            continue;
        };
        if skel
            .maps
            .cpu_topo
            .update(
                &cpu.to_ne_bytes(),
                bytemuck::bytes_of(&entry),
                MapFlags::ANY,
            )
            .is_ok()
        {
            written += 1;
        }
    }
    let smt = places
        .iter()
        .map(|p| p.siblings.len() + 1)
        .max()
        .unwrap_or(1);
    let cores = places.iter().map(|p| p.core).collect::<BTreeSet<_>>().len();
    let nodes = places.iter().map(|p| p.node).collect::<BTreeSet<_>>().len();
    let llcs = queues.llcs;
    info!(
        "topology: {written} CPUs on {cores} cores ({smt} thread(s) a core); {}; {}, {nodes} NUMA node(s)",
        if smt == 1 {
            "no SMT siblings to keep guests off"
        } else if smt_guests == intf::linger_smt_guests_LINGER_SMT_GUESTS_AVOID {
            "guests avoid busy cores' siblings"
        } else {
            "guests share busy cores' siblings"
        },
        if queues.per_class == llcs {
            format!("a queue per tier on each of {llcs} LLC(s)")
        } else {
            format!("one queue per tier for the node's {llcs} LLC(s)")
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(cpu: usize, siblings: Vec<usize>) -> CpuPlace {
        CpuPlace {
            cpu,
            core: cpu / 2,
            llc: 0,
            node: 1,
            siblings,
        }
    }

    fn on_llc(cpu: usize, llc: usize, node: usize) -> CpuPlace {
        CpuPlace {
            cpu,
            core: cpu,
            llc,
            node,
            siblings: vec![],
        }
    }

    #[test]
    fn a_topology_entry_names_the_cores_other_threads() {
        let e = topo_entry(&place(3, vec![2])).unwrap();
        assert_eq!((e.core, e.llc, e.node, e.nr_siblings), (1, 0, 1, 1));
        assert_eq!(e.siblings[0], 2);
        assert!(e.siblings[1..].iter().all(|s| *s == -1));
    }

    #[test]
    fn a_core_wider_than_the_entry_keeps_what_fits() {
        let max = intf::linger_consts_LINGER_MAX_SMT_SIBLINGS as usize;
        let e = topo_entry(&place(0, (1..=max + 3).collect())).unwrap();
        assert_eq!(e.nr_siblings as usize, max);
        assert_eq!(e.siblings[max - 1], max as i32);
    }

    #[test]
    fn a_node_without_smt_gets_share_whatever_was_asked() {
        let avoid = intf::linger_smt_guests_LINGER_SMT_GUESTS_AVOID;
        let share = intf::linger_smt_guests_LINGER_SMT_GUESTS_SHARE;
        let flat = [on_llc(0, 0, 0), on_llc(1, 0, 0)];
        assert_eq!(smt_policy(&flat, avoid), share);
        assert_eq!(smt_policy(&[], avoid), share);
        let pairs = [place(0, vec![1]), place(1, vec![0])];
        assert_eq!(smt_policy(&pairs, avoid), avoid);
        assert_eq!(smt_policy(&pairs, share), share);
    }

    #[test]
    fn llcs_are_numbered_densely_in_the_order_of_their_first_cpu() {
        // sysfs ids as an x86 guest gives them: the first CPU's cache id.
        let places = [
            on_llc(5, 4, 1),
            on_llc(0, 0, 0),
            on_llc(4, 4, 1),
            on_llc(1, 0, 0),
        ];
        let l = llc_layout(&places);
        assert_eq!(l.nr_llcs, 2);
        assert_eq!(l.cpu_llc, vec![(5, 1), (0, 0), (4, 1), (1, 0)]);
        assert_eq!(l.llc_node, vec![0, 1]);
    }

    #[test]
    fn more_llcs_than_queues_fold_and_none_reads_as_one() {
        let places: Vec<_> = (0..MAX_LLCS + 2)
            .map(|c| on_llc(c, c * 8, c / 32))
            .collect();
        let l = llc_layout(&places);
        assert_eq!(l.nr_llcs as usize, MAX_LLCS);
        assert_eq!(l.cpu_llc[MAX_LLCS + 1], (MAX_LLCS + 1, 1));
        assert!(l.cpu_llc.iter().all(|(_, i)| (*i as usize) < MAX_LLCS));
        assert_eq!(llc_layout(&[]).nr_llcs, 1);
    }
}
