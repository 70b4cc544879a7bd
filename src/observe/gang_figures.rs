// SPDX-License-Identifier: GPL-2.0-only
//! Each gang's figures as the operator sees them: slots, partial starts,
//! members displaced, skew and switch latency (read from the BPF side's
//! per-gang counters and histograms), and the slot tables with where each
//! cycle stands now.

use std::time::Duration;

use super::histogram;
use super::schema::{GangStats, RotationView, SlotView};
use crate::bpf::program::Scheduler;
use crate::gangs::rotation::Rotation;
use crate::gangs::table::Table;
use crate::labels::class::Class;

/// Each gang's figures, from its BPF counters and histograms.
pub fn gang_stats(rotation: &Rotation, sched: &Scheduler) -> Vec<GangStats> {
    let mut out = Vec::new();
    for (g, n) in rotation.numbered() {
        let Ok(st) = sched.gang_stat(n) else {
            continue;
        };
        out.push(GangStats {
            path: format!("/{}", g.rel),
            class: g.class.to_string(),
            row: rotation.row_in_effect(g),
            size: st.nr_runnable.max(0) as u32,
            slots: st.slots,
            partial_starts: st.partial,
            displaced: st.displaced,
            cpu_seconds: st.cpu_ns as f64 / 1e9,
            backfill_seconds: st.backfill_ns as f64 / 1e9,
            skew_p50_us: histogram::percentile_us(&st.skew_hist, 50),
            skew_p99_us: histogram::percentile_us(&st.skew_hist, 99),
            switch_p50_us: histogram::percentile_us(&st.switch_hist, 50),
            switch_p99_us: histogram::percentile_us(&st.switch_hist, 99),
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// One line per gang for the log: slots, partial starts, skew and
/// switch latency, members' CPU time.
pub fn summary(rotation: &Rotation, sched: &Scheduler) -> Vec<String> {
    let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
    gang_stats(rotation, sched)
        .iter()
        .map(|g| {
            let partial_pct = if g.slots > 0 {
                g.partial_starts as f64 * 100.0 / g.slots as f64
            } else {
                0.0
            };
            format!(
                "gang {}: {} slots, {} partial starts ({partial_pct:.2}%), {} members displaced, skew p50 <{} us p99 <{} us, boundary to first member p50 <{} us p99 <{} us, cpu {:.2} s, backfill {:.2} s",
                g.path,
                g.slots,
                g.partial_starts,
                g.displaced,
                us(g.skew_p50_us),
                us(g.skew_p99_us),
                us(g.switch_p50_us),
                us(g.switch_p99_us),
                g.cpu_seconds,
                g.backfill_seconds
            )
        })
        .collect()
}

/// The slot tables as the stats show them, with where each cycle stands
/// at CLOCK_TAI `tai`.
pub fn rotation_views(table: &Table, tai: Duration) -> Vec<RotationView> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    table
        .tiers
        .iter()
        .zip([Class::Gang, Class::GuestGang])
        .filter(|(rot, _)| !rot.cycle.is_zero())
        .map(|(rot, tier)| RotationView {
            tier: tier.name().into(),
            cycle_ms: ms(rot.cycle),
            open_ms: ms(rot.open),
            position_ms: (tai.as_nanos() % rot.cycle.as_nanos()) as f64 / 1e6,
            slots: rot
                .slots
                .iter()
                .map(|s| SlotView {
                    start_ms: ms(s.start),
                    len_ms: ms(s.len),
                    gangs: s.names.iter().map(|n| format!("/{n}")).collect(),
                    row: s.row,
                })
                .collect(),
        })
        .collect()
}
