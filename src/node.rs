// SPDX-License-Identifier: GPL-2.0-only
//! The machine the agent runs on, as every other folder asks about it:
//! how many CPUs are online, what the calling process may do, and
//! CLOCK_TAI (the clock gang slots are aligned to across nodes).
//!
//! Owns nothing but these readings; imports nothing of the project.

use std::fs;
use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// Linux capability numbers (include/uapi/linux/capability.h).
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_BPF: u32 = 39;

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
        for bad in ["", "x", "3-1", "0-", "1,,2", "0-4294967295,1-4294967295"] {
            assert_eq!(count_cpulist(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parses_cap_eff() {
        let caps = Caps::parse_status("Name:\tx\nCapEff:\t000001ffffffffff\n").unwrap();
        assert!(caps.has(CAP_BPF) && caps.has(CAP_SYS_ADMIN));
        assert!(Caps::parse_status("Name:\tx\n").is_none());
    }
}
