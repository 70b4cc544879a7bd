// SPDX-License-Identifier: GPL-2.0-only
//! The scheduler's event counters as the agent sees them: the BPF side keeps
//! one array of counters per CPU (enum linger_stat in bpf/intf.h), and the
//! agent sums them and reports rates between two readings.

use crate::bpf::intf::*;

/// Number of counters the BPF side keeps per CPU.
pub const NR_STATS: usize = linger_stat_LINGER_NR_STATS as usize;

/// Totals over all CPUs, indexed by enum linger_stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters(pub [u64; NR_STATS]);

/// Display names, in enum linger_stat order.
const NAMES: [(linger_stat, &str); NR_STATS] = [
    (linger_stat_LINGER_STAT_DIRECT_IDLE, "direct_idle"),
    (linger_stat_LINGER_STAT_DIRECT_PINNED, "direct_pinned"),
    (linger_stat_LINGER_STAT_ENQ_PRIMARY, "enq_primary"),
    (linger_stat_LINGER_STAT_ENQ_GUEST, "enq_guest"),
    (linger_stat_LINGER_STAT_DISPATCH_PRIMARY, "dispatch_primary"),
    (linger_stat_LINGER_STAT_DISPATCH_GUEST, "dispatch_guest"),
    (linger_stat_LINGER_STAT_KICK_IDLE, "kick_idle"),
    (linger_stat_LINGER_STAT_PREEMPT_GUEST, "preempt_guest"),
    (linger_stat_LINGER_STAT_GUARD_GRANT, "guard_grant"),
    (linger_stat_LINGER_STAT_KEEP_PREV, "keep_prev"),
    (linger_stat_LINGER_STAT_CLASSIFY, "classify"),
    (linger_stat_LINGER_STAT_RECLASSIFY, "reclassify"),
    (linger_stat_LINGER_STAT_GANG_SWITCH, "gang_switch"),
    (linger_stat_LINGER_STAT_GANG_DISPATCH, "gang_dispatch"),
    (linger_stat_LINGER_STAT_GANG_KICK, "gang_kick"),
    (linger_stat_LINGER_STAT_GANG_NO_ROOM, "gang_no_room"),
    (linger_stat_LINGER_STAT_GANG_DISPLACED, "gang_displaced"),
    (linger_stat_LINGER_STAT_BACKFILL, "backfill"),
    (linger_stat_LINGER_STAT_GANG_RELIEF, "gang_relief"),
    (linger_stat_LINGER_STAT_AGE_RESCUE, "age_rescue"),
    (linger_stat_LINGER_STAT_WAKE_PREEMPT, "wake_preempt"),
    (linger_stat_LINGER_STAT_QUEUE_PREEMPT, "queue_preempt"),
    (linger_stat_LINGER_STAT_SMT_KICK, "smt_kick"),
    (linger_stat_LINGER_STAT_SMT_DECLINE, "smt_decline"),
    (linger_stat_LINGER_STAT_GANG_HOME_SWAP, "gang_home_swap"),
    (linger_stat_LINGER_STAT_BW_THROTTLE, "bw_throttle"),
    (linger_stat_LINGER_STAT_READER_GRANT, "reader_grant"),
    (linger_stat_LINGER_STAT_MACHINERY, "machinery"),
    (linger_stat_LINGER_STAT_GANG_PIN_SWAP, "gang_pin_swap"),
];

impl Counters {
    /// Sum the CPUs' own counters.
    pub fn sum_per_cpu(per_cpu: &[[u64; NR_STATS]]) -> Self {
        let mut total = [0u64; NR_STATS];
        for cpu in per_cpu {
            for (slot, v) in total.iter_mut().zip(cpu) {
                *slot += v;
            }
        }
        Counters(total)
    }

    /// Counts since `earlier` (counters only grow; a reset reads as zero).
    pub fn since(&self, earlier: &Counters) -> Counters {
        let mut d = [0u64; NR_STATS];
        for (i, slot) in d.iter_mut().enumerate() {
            *slot = self.0[i].saturating_sub(earlier.0[i]);
        }
        Counters(d)
    }

    /// Every counter with its name, in enum linger_stat order.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        NAMES
            .iter()
            .map(|(idx, name)| (*name, self.0[*idx as usize]))
    }

    /// One line of `name=value` pairs, for logs and the terminal.
    pub fn line(&self) -> String {
        self.named()
            .map(|(name, v)| format!("{name}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(vals: [u64; NR_STATS]) -> [u64; NR_STATS] {
        vals
    }

    #[test]
    fn names_cover_every_counter_in_order() {
        for (i, (idx, _)) in NAMES.iter().enumerate() {
            assert_eq!(*idx as usize, i);
        }
    }

    #[test]
    fn sums_cpus_and_diffs_readings() {
        let mut a = [0u64; NR_STATS];
        a[0] = 3;
        a[NR_STATS - 1] = 7;
        let total = Counters::sum_per_cpu(&[cpu(a), cpu(a)]);
        assert_eq!(total.0[0], 6);
        assert_eq!(total.0[NR_STATS - 1], 14);
        let later = Counters::sum_per_cpu(&[cpu(a), cpu(a), cpu(a)]);
        assert_eq!(later.since(&total).0[0], 3);
        assert_eq!(total.since(&later).0[0], 0);
        assert!(total.line().starts_with("direct_idle=6 "));
    }
}
