// SPDX-License-Identifier: GPL-2.0-only
//! `scx_linger run --metrics-addr 127.0.0.1:9464`: the stats as a
//! Prometheus text endpoint (exposition format 0.0.4, which Prometheus
//! and promtool read), so one dashboard can watch every node.
//!
//! The figures are readings of counters the BPF side keeps, and its run
//! delay histograms arrive already bucketed (log2 ns), so they are
//! rendered from the latest reading here rather than mirrored into a
//! client library's instruments, which would have to re-derive deltas.
//! Names follow Prometheus conventions: base units (seconds), `_total`
//! for counters, `_ratio` for fractions. A job's or gang's series are
//! labelled by its cgroup path only (`cgroup`, `gang`), so that
//! relabelling it (guest to primary) continues the same series; its
//! class, and the Slurm job id where its path has one, are on an info
//! metric (`scx_linger_job_info`) to join on.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use log::warn;

use super::histogram;
use super::latest::Latest;
use super::sampler;
use super::schema::{GangStats, JobStats, Snapshot};

/// Label values escaped as the text format requires.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Builds the exposition text one metric family at a time.
struct Exposition(String);

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let labels = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", labels.join(","))
        };
        let _ = writeln!(self.0, "{name}{labels} {value}");
    }

    /// One metric family with one sample per item.
    fn each<T>(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        items: &[T],
        sample: impl Fn(&T) -> (Vec<(&'static str, String)>, f64),
    ) {
        if items.is_empty() {
            return;
        }
        self.family(name, kind, help);
        for it in items {
            let (labels, v) = sample(it);
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            self.sample(name, &labels, v);
        }
    }
}

/// The whole exposition for one reading; `restarts`: times the agent
/// loaded the scheduler again after the kernel ended it.
pub fn render(s: &Snapshot, restarts: u64) -> String {
    let mut e = Exposition(String::new());
    let n = &s.node;
    e.family(
        "scx_linger_info",
        "gauge",
        "The scheduler and the node (value is always 1).",
    );
    e.sample(
        "scx_linger_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("kernel", &n.kernel),
            ("scheduler", &n.scheduler),
            ("state", &n.state),
        ],
        1.0,
    );
    e.family(
        "scx_linger_enabled",
        "gauge",
        "1 while scx_linger is the kernel's sched_ext scheduler.",
    );
    let enabled = n.state == "enabled" && n.scheduler.starts_with("scx_linger");
    e.sample("scx_linger_enabled", &[], f64::from(u8::from(enabled)));
    e.family(
        "scx_linger_restarts_total",
        "counter",
        "Times the agent loaded the scheduler again after the kernel ended it.",
    );
    e.sample("scx_linger_restarts_total", &[], restarts as f64);
    e.family("scx_linger_cpus", "gauge", "CPUs online.");
    e.sample("scx_linger_cpus", &[], f64::from(n.cpus));

    let classes = &s.classes;
    e.each(
        "scx_linger_cpu_seconds_total",
        "counter",
        "CPU time of each class's tasks.",
        classes,
        |c| (vec![("class", c.class.clone())], c.cpu_seconds),
    );
    e.each(
        "scx_linger_runs_total",
        "counter",
        "Times a task of each class started running.",
        classes,
        |c| (vec![("class", c.class.clone())], c.runs as f64),
    );
    e.each(
        "scx_linger_cpus_busy",
        "gauge",
        "CPUs busy with each class over the last reading interval.",
        classes,
        |c| (vec![("class", c.class.clone())], c.cpus_now),
    );
    e.family(
        "scx_linger_run_delay_seconds",
        "histogram",
        "Time from ready to running, per class.",
    );
    for c in classes {
        let mut seen = 0u64;
        let last = c.run_delay_hist.len().saturating_sub(1);
        for (b, n) in c.run_delay_hist.iter().enumerate() {
            seen += n;
            // The last bucket also holds every delay above it: it has no
            // finite upper edge, only +Inf.
            if b == last {
                continue;
            }
            let le = format!("{}", histogram::upper_edge(b).as_secs_f64());
            e.sample(
                "scx_linger_run_delay_seconds_bucket",
                &[("class", &c.class), ("le", &le)],
                seen as f64,
            );
        }
        e.sample(
            "scx_linger_run_delay_seconds_bucket",
            &[("class", &c.class), ("le", "+Inf")],
            seen as f64,
        );
        e.sample(
            "scx_linger_run_delay_seconds_count",
            &[("class", &c.class)],
            seen as f64,
        );
        e.sample(
            "scx_linger_run_delay_seconds_sum",
            &[("class", &c.class)],
            c.run_delay_seconds,
        );
    }

    e.family(
        "scx_linger_idle_cpus",
        "gauge",
        "CPUs idle over the last reading interval (/proc/stat).",
    );
    e.sample("scx_linger_idle_cpus", &[], s.machine.idle_cpus_now);
    if let Some(h) = s.machine.guest_harvest_now {
        e.family(
            "scx_linger_guest_harvest_ratio",
            "gauge",
            "Guest CPU time over the CPU time primaries left unused, last interval.",
        );
        e.sample("scx_linger_guest_harvest_ratio", &[], h);
    }
    let events: Vec<(&String, &u64)> = s.events.iter().collect();
    e.each(
        "scx_linger_events_total",
        "counter",
        "Scheduler events (see enum linger_stat in bpf/intf.h).",
        &events,
        |(k, v)| (vec![("event", (*k).clone())], **v as f64),
    );

    let jobs = &s.jobs;
    e.each(
        "scx_linger_job_info",
        "gauge",
        "Each job's class, and its Slurm job id where it is a Slurm job's cgroup (value is always 1).",
        jobs,
        |j| {
            let mut labels = vec![("cgroup", j.path.clone()), ("class", j.class.clone())];
            if let Some(id) = j.slurm_job_id {
                labels.push(("slurm_job_id", id.to_string()));
            }
            (labels, 1.0)
        },
    );
    // "cgroup", not "job": Prometheus gives every scraped series its own
    // `job` label (the scrape job) and would rename ours exported_job.
    let job = |j: &JobStats| vec![("cgroup", j.path.clone())];
    e.each(
        "scx_linger_job_cpu_seconds_total",
        "counter",
        "CPU time of each job (labelled or top-level cgroup).",
        jobs,
        |j| (job(j), j.cpu_seconds),
    );
    e.each(
        "scx_linger_job_threads_runnable",
        "gauge",
        "Threads of each job that want a CPU now.",
        jobs,
        |j| (job(j), j.threads_runnable as f64),
    );
    e.each(
        "scx_linger_job_cpus_max",
        "gauge",
        "Most threads of each job that ran at once: its high-water mark of CPUs.",
        jobs,
        |j| (job(j), j.cpus_max as f64),
    );

    let gangs = &s.gangs;
    e.each(
        "scx_linger_gang_info",
        "gauge",
        "Each gang's class (value is always 1).",
        gangs,
        |g| {
            (
                vec![("gang", g.path.clone()), ("class", g.class.clone())],
                1.0,
            )
        },
    );
    let gang = |g: &GangStats| vec![("gang", g.path.clone())];
    e.each(
        "scx_linger_gang_slots_total",
        "counter",
        "Time slots each gang was given.",
        gangs,
        |g| (gang(g), g.slots as f64),
    );
    e.each(
        "scx_linger_gang_partial_starts_total",
        "counter",
        "Slots in which fewer members started than were runnable.",
        gangs,
        |g| (gang(g), g.partial_starts as f64),
    );
    e.each(
        "scx_linger_gang_backfill_seconds_total",
        "counter",
        "CPU time other work ran on CPUs each gang's slots left free.",
        gangs,
        |g| (gang(g), g.backfill_seconds),
    );
    // No sample for a gang whose skew is unknown yet (fewer than two
    // members started in any slot): 0 would read as perfect.
    let measured: Vec<&GangStats> = gangs.iter().filter(|g| g.skew_p99_us.is_some()).collect();
    e.each(
        "scx_linger_gang_skew_p99_seconds",
        "gauge",
        "99th percentile of the spread between a gang's first and last member starting in a slot (log2-histogram bucket edge).",
        &measured,
        |g| (gang(g), g.skew_p99_us.unwrap_or_default() / 1e6),
    );
    let _ = writeln!(e.0, "# EOF");
    e.0
}

/// Serve the latest reading at http://`addr`/metrics on a thread of its
/// own. A bind failure stops the start: the operator asked for it.
pub fn serve(addr: &str, latest: Latest) -> Result<()> {
    let server = tiny_http::Server::http(addr)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| {
            format!("cannot serve metrics on {addr}: pick a free address with --metrics-addr")
        })?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for req in server.incoming_requests() {
                // Whether the scheduler runs now (as the scrape arrives),
                // not at the last reading: none is taken while the agent
                // waits out a restart's back-off.
                let live = sampler::sched_ext_now();
                let reading = latest.get().map(|mut s| {
                    (s.node.state, s.node.scheduler) = live;
                    s
                });
                let resp = match (req.url(), reading) {
                    ("/metrics", Some(s)) => {
                        tiny_http::Response::from_string(render(&s, latest.restarts())).with_header(
                            "Content-Type: text/plain; version=0.0.4; charset=utf-8"
                                .parse::<tiny_http::Header>()
                                .expect("a valid header"),
                        )
                    }
                    ("/metrics", None) => {
                        tiny_http::Response::from_string("no reading yet\n").with_status_code(503)
                    }
                    _ => tiny_http::Response::from_string("see /metrics\n").with_status_code(404),
                };
                if let Err(e) = req.respond(resp) {
                    warn!("metrics: answering a scrape failed: {e}");
                }
            }
        })
        .context("starting the metrics thread")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::class::Class;
    use crate::observe::schema::{ClassStats, GangStats, JobStats};

    #[test]
    fn renders_counters_histograms_and_escaped_labels() {
        let mut s = Snapshot::default();
        s.node.state = "enabled".into();
        s.node.scheduler = "scx_linger_1.0".into();
        for c in Class::ALL.map(Class::name) {
            s.classes.push(ClassStats {
                class: c.into(),
                cpu_seconds: 2.5,
                run_delay_hist: vec![0, 3, 1],
                ..Default::default()
            });
        }
        s.jobs.push(JobStats {
            path: "/odd \"job\"\\x".into(),
            class: "guest".into(),
            cpu_seconds: 1.0,
            ..Default::default()
        });
        s.jobs.push(JobStats::slurm_guest_42());
        s.gangs.push(GangStats {
            path: "/mpi".into(),
            class: "gang".into(),
            ..Default::default()
        });
        let text = render(&s, 3);
        assert!(text.contains("scx_linger_cpu_seconds_total{class=\"guest\"} 2.5"));
        assert!(text.contains("scx_linger_enabled 1"));
        assert!(text.contains("scx_linger_restarts_total 3"));
        // Cumulative buckets: 0, 3, then the last (which also holds all
        // above it) only as +Inf = count = 4.
        assert!(text
            .contains("scx_linger_run_delay_seconds_bucket{class=\"gang\",le=\"0.000000004\"} 3"));
        assert!(!text.contains("le=\"0.000000008\""), "{text}");
        assert!(text.contains("scx_linger_run_delay_seconds_bucket{class=\"gang\",le=\"+Inf\"} 4"));
        assert!(text.contains("scx_linger_run_delay_seconds_count{class=\"gang\"} 4"));
        assert!(text.contains("cgroup=\"/odd \\\"job\\\"\\\\x\""));
        // A job's series carry its path only; its class and Slurm job id
        // are on the info metric, so a relabel continues the series.
        assert!(text.contains(
            "scx_linger_job_cpu_seconds_total{cgroup=\"/system.slice/slurmstepd.scope/job_42\"} 0"
        ));
        assert!(text.contains("scx_linger_job_info{cgroup=\"/system.slice/slurmstepd.scope/job_42\",class=\"guest\",slurm_job_id=\"42\"} 1"));
        assert!(text.contains("scx_linger_gang_info{gang=\"/mpi\",class=\"gang\"} 1"));
        assert!(text.contains("scx_linger_gang_slots_total{gang=\"/mpi\"} 0"));
        // An unknown skew is no sample, not 0.
        assert!(
            !text.contains("scx_linger_gang_skew_p99_seconds{"),
            "{text}"
        );
        // Every family is announced once, before its samples.
        let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        let mut unique = types.clone();
        unique.dedup();
        assert_eq!(types.len(), unique.len());
        assert!(text.ends_with("# EOF\n"));
    }

    /// Every scx_linger metric the shipped dashboard and alert rules
    /// (deploy/) query is one render() emits: renaming a metric here
    /// fails until they follow.
    #[test]
    fn the_shipped_dashboard_and_alerts_query_only_metrics_we_export() {
        let mut s = Snapshot::default();
        s.classes.push(ClassStats {
            class: "primary".into(),
            run_delay_hist: vec![1, 2, 3],
            ..Default::default()
        });
        s.machine.guest_harvest_now = Some(0.9);
        s.events.insert("direct_idle".into(), 1);
        s.jobs.push(JobStats::default());
        s.gangs.push(GangStats {
            skew_p99_us: Some(100.0),
            ..Default::default()
        });
        let text = render(&s, 0);
        let exported: std::collections::HashSet<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(['{', ' ']).next())
            .collect();
        for (file, body) in [
            (
                "deploy/grafana/scx_linger-dashboard.json",
                include_str!("../../deploy/grafana/scx_linger-dashboard.json"),
            ),
            (
                "deploy/prometheus/scx_linger-alerts.yml",
                include_str!("../../deploy/prometheus/scx_linger-alerts.yml"),
            ),
        ] {
            let mut used = 0;
            for (i, _) in body.match_indices("scx_linger_") {
                let name: String = body[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                used += 1;
                assert!(
                    exported.contains(name.as_str()),
                    "{file} queries {name}, which is not exported"
                );
            }
            assert!(used >= 3, "{file} queries almost nothing");
        }
        serde_json::from_str::<serde_json::Value>(include_str!(
            "../../deploy/grafana/scx_linger-dashboard.json"
        ))
        .expect("the dashboard is JSON");
    }
}
