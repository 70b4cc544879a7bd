// SPDX-License-Identifier: GPL-2.0-only
//! The stats schema: what the agent serves on its stats socket, what
//! `scx_linger stats --json` prints, and what `top` and the metrics
//! endpoint render. One JSON document per reading.
//!
//! Stability: fields are only ever added. A change that removes or
//! redefines a field bumps `schema`. Times are in seconds or
//! microseconds as their names say; "_total"-like fields (cpu_seconds,
//! runs, slots, the event counters) only grow while the agent runs;
//! "_now" fields are rates over the last `interval_s`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::labels::class::NR_CLASSES;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema: u32,
    /// When it was read, in ms since the Unix epoch.
    pub time_ms: u64,
    pub node: Node,
    pub machine: Machine,
    /// One per class, in labels::class::Class::ALL order.
    pub classes: Vec<ClassStats>,
    /// The scheduler's event counters (enum linger_stat), since load.
    pub events: BTreeMap<String, u64>,
    pub jobs: Vec<JobStats>,
    pub gangs: Vec<GangStats>,
    /// The gang slot tables, one per tier that has gangs.
    pub rotations: Vec<RotationView>,
    /// CPU use per second over the last minutes, oldest first. Served to
    /// `top`; empty in `stats` readings.
    #[serde(default)]
    pub history: Vec<HistoryPoint>,
    /// The agent's recent log lines (labels, gang tables, warnings).
    pub log: Vec<LogLine>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub hostname: String,
    pub kernel: String,
    pub cpus: u32,
    /// /sys/kernel/sched_ext/state and root/ops.
    pub state: String,
    pub scheduler: String,
    pub agent_pid: u32,
    pub agent_uptime_s: f64,
    pub loadavg: [f64; 3],
    /// Whether the BPF side accounts per class and job (--no-accounting).
    pub accounting: bool,
    /// How well the clock gang slots follow is synchronised; None where
    /// the agent may not read it.
    #[serde(default)]
    pub clock: Option<crate::node::ClockSync>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// What the "_now" figures cover.
    pub interval_s: f64,
    /// CPUs idle over the interval, from /proc/stat (idle + iowait).
    pub idle_cpus_now: f64,
    /// Guest CPU time / CPU time the primary classes left unused, over
    /// the interval: 1.0 means guests used every cycle primaries left.
    pub guest_harvest_now: Option<f64>,
    /// The same since the agent started.
    pub guest_harvest: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassStats {
    pub class: String,
    pub cpu_seconds: f64,
    pub cpus_now: f64,
    /// Times one of its tasks started running.
    pub runs: u64,
    /// Run delay (ready to running) over the interval.
    pub run_delay_mean_us_now: Option<f64>,
    pub run_delay_p50_us_now: Option<f64>,
    pub run_delay_p99_us_now: Option<f64>,
    /// Run delays since load: their sum, and bucket b counts delays in
    /// [2^b, 2^(b+1)) ns.
    pub run_delay_seconds: f64,
    pub run_delay_hist: Vec<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobStats {
    /// The job's cgroup id and path ("/" for the root cgroup).
    pub id: u64,
    pub path: String,
    pub class: String,
    /// Where the class comes from (a label, a config rule, ...).
    pub source: String,
    /// The Slurm job it is, when its cgroup is a Slurm job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_job_id: Option<u64>,
    pub cpu_seconds: f64,
    pub cpus_now: f64,
    pub threads_runnable: u64,
    pub threads_running: u64,
    /// Most of its threads on CPUs at once, at the agent's samples (one a
    /// second): the CPUs it needed at peak.
    pub cpus_max: u64,
    pub runs: u64,
    pub run_delay_p99_us: Option<f64>,
    /// A gang job on several nodes that has no cluster row here, and so
    /// runs as ordinary work (docs/operating.md, "rows").
    #[serde(default)]
    pub rowless: bool,
}

#[cfg(test)]
impl JobStats {
    /// A guest job that is Slurm job 42, for the views' unit tests.
    pub fn slurm_guest_42() -> Self {
        JobStats {
            path: "/system.slice/slurmstepd.scope/job_42".into(),
            class: "guest".into(),
            slurm_job_id: Some(42),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GangStats {
    pub path: String,
    pub class: String,
    /// The cluster row its job leads on every node it spans (the
    /// config's `[rows]`); None for a gang of this node only.
    #[serde(default)]
    pub row: Option<u32>,
    /// Members runnable now: its size, as admission counts it.
    pub size: u32,
    pub slots: u64,
    pub partial_starts: u64,
    pub displaced: u64,
    pub cpu_seconds: f64,
    /// CPU time other work ran on CPUs its slots left free.
    pub backfill_seconds: f64,
    pub skew_p50_us: Option<f64>,
    pub skew_p99_us: Option<f64>,
    pub switch_p50_us: Option<f64>,
    pub switch_p99_us: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RotationView {
    /// "gang" or "guest-gang".
    pub tier: String,
    pub cycle_ms: f64,
    pub open_ms: f64,
    /// Where the cycle stands now (CLOCK_TAI mod cycle).
    pub position_ms: f64,
    pub slots: Vec<SlotView>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlotView {
    pub start_ms: f64,
    pub len_ms: f64,
    pub gangs: Vec<String>,
    /// The cluster row it is (part of), where the config sets `[rows]`.
    #[serde(default)]
    pub row: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    pub time_ms: u64,
    /// CPUs busy per class (Class::ALL order), and idle.
    pub cpus: [f64; NR_CLASSES],
    pub idle: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub time_ms: u64,
    pub level: String,
    pub message: String,
}

/// A delay given in microseconds, in the unit that reads best.
pub fn fmt_delay_us(us: Option<f64>) -> String {
    match us {
        None => "-".into(),
        Some(v) if v >= 1e6 => format!("{:.1}s", v / 1e6),
        Some(v) if v >= 1e3 => format!("{:.1}ms", v / 1e3),
        Some(v) => format!("{v:.0}us"),
    }
}

/// Guest harvest: the share of the capacity primaries left unused that
/// guests used. `capacity_ns` is CPUs x wall time; None when primaries
/// left (almost) nothing.
pub fn harvest(guest_ns: f64, primary_ns: f64, capacity_ns: f64) -> Option<f64> {
    let left = capacity_ns - primary_ns;
    (left > capacity_ns * 0.001).then(|| (guest_ns / left).clamp(0.0, 1.0))
}

impl Node {
    /// Host, kernel, CPUs, load and the agent's uptime, in one line.
    pub fn summary(&self) -> String {
        format!(
            "{} {}, {} CPUs, load {:.2} {:.2} {:.2}, agent up {:.0} s",
            self.hostname,
            self.kernel,
            self.cpus,
            self.loadavg[0],
            self.loadavg[1],
            self.loadavg[2],
            self.agent_uptime_s
        )
    }
}

impl Snapshot {
    /// A class's figures by name.
    pub fn class(&self, name: &str) -> Option<&ClassStats> {
        self.classes.iter().find(|c| c.class == name)
    }

    /// The human-readable reading `scx_linger stats` prints.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let n = &self.node;
        let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0));
        let us = fmt_delay_us;
        out += &format!("{} ({}) on {}\n", n.scheduler, n.state, n.summary());
        if let Some(c) = &n.clock {
            out += &format!("clock: {}\n", c.describe());
        }
        out += &format!(
            "last {:.1} s: idle {:.2} CPUs, guest harvest {} (since start {})\n",
            self.machine.interval_s,
            self.machine.idle_cpus_now,
            pct(self.machine.guest_harvest_now),
            pct(self.machine.guest_harvest)
        );
        out += &format!(
            "{:<11} {:>9} {:>12} {:>10} {:>9} {:>9}\n",
            "class", "CPUs now", "CPU s total", "runs", "delay p50", "p99"
        );
        for c in &self.classes {
            out += &format!(
                "{:<11} {:>9.2} {:>12.2} {:>10} {:>9} {:>9}\n",
                c.class,
                c.cpus_now,
                c.cpu_seconds,
                c.runs,
                us(c.run_delay_p50_us_now),
                us(c.run_delay_p99_us_now)
            );
        }
        out += &format!(
            "{:<40} {:<10} {:>8} {:>10} {:>8} {:>8} {:>10}\n",
            "job", "class", "CPUs now", "CPU s", "threads", "CPUs max", "delay p99"
        );
        for j in &self.jobs {
            out += &format!(
                "{:<40} {:<10} {:>8.2} {:>10.2} {:>8} {:>8} {:>10}\n",
                j.path,
                j.class,
                j.cpus_now,
                j.cpu_seconds,
                j.threads_runnable,
                j.cpus_max,
                us(j.run_delay_p99_us)
            );
        }
        for g in &self.gangs {
            let row = g
                .row
                .map(|r| format!(", cluster row {r}"))
                .unwrap_or_default();
            out += &format!(
                "gang {} ({} threads{row}): {} slots, {} partial, skew p50 {} p99 {}, backfill {:.2} s\n",
                g.path,
                g.size,
                g.slots,
                g.partial_starts,
                us(g.skew_p50_us),
                us(g.skew_p99_us),
                g.backfill_seconds
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harvest_is_guest_use_of_what_primaries_left() {
        // 2 CPUs for 1 s; primaries used 0.5 s, guests 1.35 s of the 1.5 s left.
        assert_eq!(harvest(1.35e9, 0.5e9, 2e9), Some(0.9));
        // Nothing left over: no figure rather than a division by ~0.
        assert_eq!(harvest(0.0, 2e9, 2e9), None);
        // Clock skew between readings never gives more than 100%.
        assert_eq!(harvest(1.6e9, 0.5e9, 2e9), Some(1.0));
    }

    #[test]
    fn json_round_trips_and_older_readers_ignore_new_fields() {
        let mut s = Snapshot {
            schema: SCHEMA,
            ..Default::default()
        };
        s.classes.push(ClassStats {
            class: "guest".into(),
            cpu_seconds: 1.5,
            ..Default::default()
        });
        let text = serde_json::to_string(&s).unwrap();
        let back: Snapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["a_field_from_the_future"] = 1.into();
        assert!(serde_json::from_value::<Snapshot>(v).is_ok());
        assert!(s.text().contains("guest"));
        assert_eq!(fmt_delay_us(Some(16777.2)), "16.8ms");
        assert_eq!(fmt_delay_us(Some(4294967.0)), "4.3s");
        assert_eq!(fmt_delay_us(Some(262.0)), "262us");
        assert_eq!(fmt_delay_us(None), "-");
    }
}
