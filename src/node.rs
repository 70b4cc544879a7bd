// SPDX-License-Identifier: GPL-2.0-only
//! The machine the agent runs on, as every other folder asks about it:
//! how many CPUs are online, where each sits (core, LLC, NUMA node),
//! what the calling process may do, and CLOCK_TAI (the clock gang slots
//! are aligned to across nodes).
//!
//! Owns nothing but these readings; imports nothing of the project.

use std::fs;
use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// Linux capability numbers (include/uapi/linux/capability.h).
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_BPF: u32 = 39;

/// CPUs online now (what gang admission shares out).
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
    for (lo, hi) in cpu_ranges(list)? {
        n = n.checked_add(hi.checked_sub(lo)?.checked_add(1)?)?;
    }
    Some(n)
}

/// The CPUs a kernel cpulist names, in order; None if it is not one.
pub fn cpulist(list: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for (lo, hi) in cpu_ranges(list)? {
        if hi < lo || hi - lo >= MAX_CPULIST {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    Some(cpus)
}

/// No machine has more CPUs than this; a list naming more is not one.
const MAX_CPULIST: u32 = 1 << 16;

fn cpu_ranges(list: &str) -> Option<Vec<(u32, u32)>> {
    let list = list.trim().trim_end_matches('\0');
    if list.is_empty() {
        return Some(Vec::new());
    }
    list.split(',')
        .map(|group| match group.split_once('-') {
            Some((lo, hi)) => Some((lo.parse().ok()?, hi.parse().ok()?)),
            None => group.parse().ok().map(|cpu| (cpu, cpu)),
        })
        .collect()
}

/// The effective capability set of a process, as the bit mask in the
/// `CapEff:` line of /proc/<pid>/status.
#[derive(Debug, Clone, Copy)]
pub struct Caps(pub u64);

impl Caps {
    /// The calling process's effective capabilities; none if unreadable.
    pub fn current() -> Self {
        fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| Self::parse_status(&s))
            .unwrap_or(Caps(0))
    }

    fn parse_status(status: &str) -> Option<Self> {
        let hex = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))?
            .trim();
        u64::from_str_radix(hex, 16).ok().map(Caps)
    }

    pub fn has(self, cap: u32) -> bool {
        self.0 & (1u64 << cap) != 0
    }

    /// May set `trusted.` xattrs and load schedulers' struct_ops.
    pub fn has_sys_admin(self) -> bool {
        self.has(CAP_SYS_ADMIN)
    }
}

/// Where one CPU sits: ids unique on the machine, as scx_utils numbers
/// them, and the other hardware threads of its core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPlace {
    pub cpu: usize,
    pub core: usize,
    pub llc: usize,
    pub node: usize,
    pub siblings: Vec<usize>,
}

/// Every online CPU's place, from sysfs through scx_utils' topology.
pub fn cpu_places() -> anyhow::Result<Vec<CpuPlace>> {
    let topo = scx_utils::Topology::new()?;
    Ok(topo
        .all_cpus
        .values()
        .map(|c| CpuPlace {
            cpu: c.id,
            core: c.core_id,
            llc: c.llc_id,
            node: c.node_id,
            siblings: topo
                .all_cores
                .get(&c.core_id)
                .map(|core| core.cpus.keys().copied().filter(|s| *s != c.id).collect())
                .unwrap_or_default(),
        })
        .collect())
}

/// CLOCK_TAI now, where the gang slots are aligned (zero if unreadable).
pub fn tai_now() -> Duration {
    clock_gettime(ClockId::CLOCK_TAI).map_or(Duration::ZERO, Duration::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_are_counted_as_the_kernel_writes_them() {
        assert_eq!(count_cpulist("0\n"), Some(1));
        assert_eq!(count_cpulist("0-3"), Some(4));
        assert_eq!(count_cpulist("0-3,8,10-11\n"), Some(7));
        assert_eq!(count_cpulist("0-1\0"), Some(2));
        for bad in ["x", "3-1", "0-", "1,,2", "0-4294967295,1-4294967295"] {
            assert_eq!(count_cpulist(bad), None, "{bad:?}");
        }
        assert_eq!(cpulist("0-2,8\n"), Some(vec![0, 1, 2, 8]));
        assert_eq!(cpulist("\n"), Some(vec![]), "an empty cpuset names no CPU");
        for bad in ["x", "3-1", "0-", "1,,2", "0-4294967295"] {
            assert_eq!(cpulist(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parses_cap_eff() {
        let caps = Caps::parse_status("Name:\tx\nCapEff:\t000001ffffffffff\n").unwrap();
        assert!(caps.has(CAP_BPF) && caps.has(CAP_SYS_ADMIN));
        assert!(Caps::parse_status("Name:\tx\n").is_none());
    }
}
