// SPDX-License-Identifier: GPL-2.0-only
//! The machine the agent runs on, as every other folder asks about it:
//! how many CPUs are online, where each sits (core, LLC, NUMA node),
//! what the calling process may do, and CLOCK_TAI (the clock gang slots
//! are aligned to across nodes) with how well it is synchronised.
//!
//! Owns nothing but these readings; imports nothing of the project.

use std::fs;
use std::time::Duration;

use nix::time::{clock_gettime, ClockId};
use serde::{Deserialize, Serialize};

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

/// The kernel's view of the clock's synchronisation (adjtimex(2), read
/// only): what decides whether gang slots on CLOCK_TAI start at the same
/// moment on every node of a multi-node job. chrony and ptp4l keep it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockSync {
    /// A synchronisation daemon disciplines the clock (STA_UNSYNC clear
    /// and the kernel's clock state not TIME_ERROR).
    pub synchronised: bool,
    /// The daemon's estimate of the clock's error, in microseconds.
    pub est_error_us: u64,
    /// Its bound on the error, in microseconds.
    pub max_error_us: u64,
    /// TAI - UTC, in seconds: 0 unless chrony (`leapsectz`) or ptp4l sets
    /// it. Nodes that differ put their slots whole seconds apart.
    pub tai_offset_s: i32,
}

const STA_UNSYNC: i32 = 0x0040;
const TIME_ERROR: i32 = 5;

/// The clock's synchronisation state; None where adjtimex is refused
/// (a seccomp filter such as systemd's ProtectClock=yes).
pub fn clock_sync() -> Option<ClockSync> {
    // SAFETY: modes = 0 only reads; the kernel fills the struct we own.
    let mut tx: nix::libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { nix::libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    Some(ClockSync {
        synchronised: tx.status & STA_UNSYNC == 0 && state != TIME_ERROR,
        est_error_us: tx.esterror.max(0) as u64,
        max_error_us: tx.maxerror.max(0) as u64,
        tai_offset_s: tx.tai,
    })
}

impl ClockSync {
    /// One line for the log and `stats`.
    pub fn describe(&self) -> String {
        format!(
            "{}, estimated error {} us (at most {} us), TAI-UTC {} s",
            if self.synchronised {
                "synchronised"
            } else {
                "not synchronised"
            },
            self.est_error_us,
            self.max_error_us,
            self.tai_offset_s
        )
    }

    /// Why it is not good enough for slots of `slot` on several nodes:
    /// unsynchronised, or an error estimate over a tenth of a slot (two
    /// nodes each that far off cut a fifth of the slot).
    pub fn fault_for(&self, slot: Duration) -> Option<String> {
        let limit = slot.as_micros() as u64 / 10;
        if !self.synchronised {
            Some("the clock is not synchronised: multi-node gang jobs meet in their rows only by chance; run chrony or ptp4l (docs/operating.md, \"Clocks\")".into())
        } else if self.est_error_us > limit {
            Some(format!(
                "the clock's estimated error ({} us) is over a tenth of a row's slot ({limit} us): multi-node gang jobs lose that much of each slot; see docs/operating.md, \"Clocks\"",
                self.est_error_us
            ))
        } else {
            None
        }
    }
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
    fn clock_faults_name_the_cause() {
        let good = ClockSync {
            synchronised: true,
            est_error_us: 500,
            max_error_us: 9000,
            tai_offset_s: 37,
        };
        let slot = Duration::from_millis(100);
        assert_eq!(good.fault_for(slot), None);
        let loose = ClockSync {
            est_error_us: 20_000,
            ..good
        };
        assert!(loose.fault_for(slot).unwrap().contains("20000 us"));
        let free = ClockSync {
            synchronised: false,
            ..good
        };
        assert!(free.fault_for(slot).unwrap().contains("not synchronised"));
        assert!(good.describe().contains("TAI-UTC 37 s"));
        // The machine's own clock is readable (no seccomp filter here).
        assert!(clock_sync().is_some());
    }

    #[test]
    fn parses_cap_eff() {
        let caps = Caps::parse_status("Name:\tx\nCapEff:\t000001ffffffffff\n").unwrap();
        assert!(caps.has(CAP_BPF) && caps.has(CAP_SYS_ADMIN));
        assert!(Caps::parse_status("Name:\tx\n").is_none());
    }
}
