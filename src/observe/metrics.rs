// SPDX-License-Identifier: GPL-2.0-only
//! `scx_linger run --metrics-addr 127.0.0.1:9464`: the stats as a
//! Prometheus endpoint in the OpenMetrics text format, encoded by the
//! prometheus-client crate, so one dashboard can watch every node.
//!
//! The figures are readings of counters the BPF side keeps, and its run
//! delay histograms arrive already bucketed (log2 ns), so each scrape
//! encodes the latest reading as it is: the families here are
//! prometheus-client metrics that hold one reading's samples (Series,
//! Histograms), not instruments the agent updates as events happen,
//! which would have to re-derive deltas.
//! Names follow Prometheus conventions: base units (seconds), `_total`
//! for counters, `_ratio` for fractions. A job's or gang's series are
//! labelled by its cgroup path only (`cgroup`, `gang`), so that
//! relabelling it (guest to primary) continues the same series; its
//! class, and the Slurm job id where its path has one, are on an info
//! metric (`scx_linger_job_info`) to join on.

use std::fmt::Error as FmtError;

use anyhow::{Context, Result};
use log::warn;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::histogram;
use super::latest::Latest;
use super::sampler;
use super::schema::{JobStats, Snapshot};

/// A series' labels, in the order they are written.
type Labels = Vec<(String, String)>;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A sample's value: a count (written as an integer) or a measure.
#[derive(Debug, Clone, Copy)]
enum Value {
    Count(u64),
    Measure(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Count(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Measure(v)
    }
}

/// One family of gauges or counters as one reading has them: a value per
/// label set. A counter's samples get `_total` after the family's name.
#[derive(Debug)]
struct Series {
    kind: MetricType,
    samples: Vec<(Labels, Value)>,
}

impl Series {
    fn gauge<V: Into<Value>>(samples: Vec<(Labels, V)>) -> Series {
        Series {
            kind: MetricType::Gauge,
            samples: samples.into_iter().map(|(l, v)| (l, v.into())).collect(),
        }
    }

    fn counter<V: Into<Value>>(samples: Vec<(Labels, V)>) -> Series {
        Series {
            kind: MetricType::Counter,
            samples: samples.into_iter().map(|(l, v)| (l, v.into())).collect(),
        }
    }
}

impl EncodeMetric for Series {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), FmtError> {
        let counter = matches!(self.kind, MetricType::Counter);
        for (labels, v) in &self.samples {
            let mut e = encoder.encode_family(labels)?;
            match (counter, v) {
                (true, Value::Count(n)) => e.encode_counter::<NoLabelSet, _, f64>(n, None)?,
                (true, Value::Measure(x)) => e.encode_counter::<NoLabelSet, _, f64>(x, None)?,
                (false, Value::Count(n)) => e.encode_gauge(n)?,
                (false, Value::Measure(x)) => e.encode_gauge(x)?,
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        match self.kind {
            MetricType::Counter => MetricType::Counter,
            _ => MetricType::Gauge,
        }
    }

    fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// One family of histograms, already bucketed: per label set, the sum, the
/// count, and each bucket's own count with its upper edge (the last one
/// +Inf); the encoder makes them cumulative.
#[derive(Debug, Default)]
struct Histograms(Vec<Bucketed>);

/// One histogram of a Histograms family.
#[derive(Debug, Default)]
struct Bucketed {
    labels: Labels,
    sum: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

impl EncodeMetric for Histograms {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), FmtError> {
        for h in &self.0 {
            encoder
                .encode_family(&h.labels)?
                .encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One sample per item that has a value, labelled `key` = its name: a
/// class's, a job's or a gang's series.
fn each<T, V: Into<Value>>(
    items: &[T],
    key: &str,
    name: impl for<'a> Fn(&'a T) -> &'a String,
    value: impl Fn(&T) -> Option<V>,
) -> Vec<(Labels, Value)> {
    items
        .iter()
        .filter_map(|it| Some((labels(&[(key, name(it))]), value(it)?.into())))
        .collect()
}

/// A run delay histogram as the BPF side buckets it (bpf/intf.h): bucket
/// b's upper edge, the last bucket also holding every delay above it, so
/// its edge is +Inf.
fn delay_buckets(hist: &[u64]) -> (u64, Vec<(f64, u64)>) {
    let last = hist.len().saturating_sub(1);
    let buckets: Vec<(f64, u64)> = hist
        .iter()
        .enumerate()
        .map(|(b, n)| {
            let edge = if b == last {
                f64::INFINITY
            } else {
                histogram::upper_edge(b).as_secs_f64()
            };
            (edge, *n)
        })
        .collect();
    (hist.iter().sum(), buckets)
}

/// The jobs whose series are exported: all of them, or the `max_jobs`
/// with the most CPU time (a total that only grows, so the set changes
/// slowly), heaviest first.
fn exported_jobs(jobs: &[JobStats], max_jobs: usize) -> Vec<&JobStats> {
    let mut v: Vec<&JobStats> = jobs.iter().collect();
    if v.len() > max_jobs {
        v.sort_by(|a, b| b.cpu_seconds.total_cmp(&a.cpu_seconds));
        v.truncate(max_jobs);
    }
    v
}

/// The whole exposition for one reading; `restarts`: times the agent
/// loaded the scheduler again after the kernel ended it; `max_jobs`: see
/// exported_jobs().
pub fn render(s: &Snapshot, restarts: u64, max_jobs: usize) -> String {
    let mut r = Registry::default();
    let n = &s.node;
    // Labels that change only when the node does: a series per boot, not
    // per state change (state is scx_linger_enabled's).
    r.register(
        "scx_linger_info",
        "The scheduler and the node (value is always 1)",
        Series::gauge(vec![(
            labels(&[
                ("version", env!("CARGO_PKG_VERSION")),
                ("kernel", &n.kernel),
            ]),
            1u64,
        )]),
    );
    let enabled = n.state == "enabled" && n.scheduler.starts_with("scx_linger");
    r.register(
        "scx_linger_enabled",
        "1 while scx_linger is the kernel's sched_ext scheduler",
        Series::gauge(vec![(Labels::new(), u64::from(enabled))]),
    );
    r.register(
        "scx_linger_restarts",
        "Times the agent loaded the scheduler again after the kernel ended it",
        Series::counter(vec![(Labels::new(), restarts)]),
    );
    r.register(
        "scx_linger_cpus",
        "CPUs online",
        Series::gauge(vec![(Labels::new(), u64::from(n.cpus))]),
    );
    // The clock gang slots follow, as the kernel sees it (adjtimex): no
    // sample where the agent may not read it.
    let clock = n.clock.as_ref();
    r.register(
        "scx_linger_clock_synchronised",
        "1 while a daemon (chrony, ptp4l) keeps the clock synchronised, as adjtimex reports",
        Series::gauge(
            clock
                .map(|c| (Labels::new(), u64::from(c.synchronised)))
                .into_iter()
                .collect(),
        ),
    );
    r.register(
        "scx_linger_clock_error_seconds",
        "The clock's estimated error (adjtimex esterror)",
        Series::gauge(
            clock
                .map(|c| (Labels::new(), c.est_error_us as f64 / 1e6))
                .into_iter()
                .collect(),
        ),
    );
    r.register(
        "scx_linger_clock_tai_offset_seconds",
        "TAI - UTC as the kernel has it: must be the same on every node of a multi-node gang job",
        Series::gauge(
            clock
                .map(|c| (Labels::new(), f64::from(c.tai_offset_s)))
                .into_iter()
                .collect(),
        ),
    );

    let classes = &s.classes;
    r.register(
        "scx_linger_cpu_seconds",
        "CPU time of each class's tasks",
        Series::counter(each(
            classes,
            "class",
            |c| &c.class,
            |c| Some(c.cpu_seconds),
        )),
    );
    r.register(
        "scx_linger_runs",
        "Times a task of each class started running",
        Series::counter(each(classes, "class", |c| &c.class, |c| Some(c.runs))),
    );
    r.register(
        "scx_linger_cpus_busy",
        "CPUs busy with each class over the last reading interval",
        Series::gauge(each(classes, "class", |c| &c.class, |c| Some(c.cpus_now))),
    );
    r.register(
        "scx_linger_run_delay_seconds",
        "Time from ready to running, per class",
        Histograms(
            classes
                .iter()
                .map(|c| {
                    let (count, buckets) = delay_buckets(&c.run_delay_hist);
                    Bucketed {
                        labels: labels(&[("class", &c.class)]),
                        sum: c.run_delay_seconds,
                        count,
                        buckets,
                    }
                })
                .collect(),
        ),
    );
    r.register(
        "scx_linger_idle_cpus",
        "CPUs idle over the last reading interval (/proc/stat)",
        Series::gauge(vec![(Labels::new(), s.machine.idle_cpus_now)]),
    );
    r.register(
        "scx_linger_guest_harvest_ratio",
        "Guest CPU time over the CPU time primaries left unused, last interval",
        Series::gauge(
            s.machine
                .guest_harvest_now
                .map(|h| (Labels::new(), h))
                .into_iter()
                .collect(),
        ),
    );
    r.register(
        "scx_linger_events",
        "Scheduler events (see enum linger_stat in bpf/intf.h)",
        Series::counter(
            s.events
                .iter()
                .map(|(k, v)| (labels(&[("event", k)]), *v))
                .collect(),
        ),
    );

    r.register(
        "scx_linger_jobs",
        "Jobs (labelled or top-level cgroups) on the node, exported or not",
        Series::gauge(vec![(Labels::new(), s.jobs.len() as u64)]),
    );
    r.register(
        "scx_linger_jobs_without_row",
        "Gang jobs on several nodes with no cluster row here, run as ordinary work (no PrologSlurmctld row, or a Prolog that could not ask slurmctld)",
        Series::gauge(vec![(
            Labels::new(),
            s.jobs.iter().filter(|j| j.rowless).count() as u64,
        )]),
    );
    let jobs = exported_jobs(&s.jobs, max_jobs);
    r.register(
        "scx_linger_job_info",
        "Each job's class, and its Slurm job id where it is a Slurm job's cgroup (value is always 1)",
        Series::gauge(
            jobs.iter()
                .map(|j| {
                    let mut l = labels(&[("cgroup", &j.path), ("class", &j.class)]);
                    if let Some(id) = j.slurm_job_id {
                        l.push(("slurm_job_id".into(), id.to_string()));
                    }
                    (l, 1u64)
                })
                .collect(),
        ),
    );
    // "cgroup", not "job": Prometheus gives every scraped series its own
    // `job` label (the scrape job) and would rename ours exported_job.
    r.register(
        "scx_linger_job_cpu_seconds",
        "CPU time of each job (labelled or top-level cgroup)",
        Series::counter(each(&jobs, "cgroup", |j| &j.path, |j| Some(j.cpu_seconds))),
    );
    r.register(
        "scx_linger_job_threads_runnable",
        "Threads of each job that want a CPU now",
        Series::gauge(each(
            &jobs,
            "cgroup",
            |j| &j.path,
            |j| Some(j.threads_runnable),
        )),
    );
    r.register(
        "scx_linger_job_cpus_max",
        "Most threads of each job seen on CPUs at once, at the agent's one-second samples: its high-water mark of CPUs",
        Series::gauge(each(&jobs, "cgroup", |j| &j.path, |j| Some(j.cpus_max))),
    );

    let gangs = &s.gangs;
    r.register(
        "scx_linger_gang_info",
        "Each gang's class (value is always 1)",
        Series::gauge(
            gangs
                .iter()
                .map(|g| (labels(&[("gang", &g.path), ("class", &g.class)]), 1u64))
                .collect(),
        ),
    );
    r.register(
        "scx_linger_gang_row",
        "The cluster row each multi-node gang job leads (the config's [rows]); none for a gang of this node only",
        Series::gauge(each(gangs, "gang", |g| &g.path, |g| g.row.map(u64::from))),
    );
    r.register(
        "scx_linger_gang_slots",
        "Time slots each gang was given",
        Series::counter(each(gangs, "gang", |g| &g.path, |g| Some(g.slots))),
    );
    r.register(
        "scx_linger_gang_partial_starts",
        "Slots in which fewer members started than were runnable",
        Series::counter(each(gangs, "gang", |g| &g.path, |g| Some(g.partial_starts))),
    );
    r.register(
        "scx_linger_gang_backfill_seconds",
        "CPU time other work ran on CPUs each gang's slots left free",
        Series::counter(each(
            gangs,
            "gang",
            |g| &g.path,
            |g| Some(g.backfill_seconds),
        )),
    );
    // No sample for a gang whose skew is unknown yet (fewer than two
    // members started in any slot): 0 would read as perfect.
    r.register(
        "scx_linger_gang_skew_p99_seconds",
        "99th percentile of the spread between a gang's first and last member starting in a slot (log2-histogram bucket edge)",
        Series::gauge(each(gangs, "gang", |g| &g.path, |g| g.skew_p99_us.map(|us| us / 1e6))),
    );
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &r) {
        warn!("metrics: encoding the reading failed: {e}");
    }
    out
}

/// Serve the latest reading at http://`addr`/metrics on a thread of its
/// own. A bind failure stops the start: the operator asked for it.
pub fn serve(addr: &str, latest: Latest, max_jobs: usize) -> Result<()> {
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
                    ("/metrics", Some(s)) => tiny_http::Response::from_string(render(
                        &s,
                        latest.restarts(),
                        max_jobs,
                    ))
                    .with_header(
                        "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"
                            .parse::<tiny_http::Header>()
                            .expect("a valid header"),
                    ),
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
            row: Some(2),
            ..Default::default()
        });
        s.node.clock = Some(crate::node::ClockSync {
            synchronised: true,
            est_error_us: 250,
            max_error_us: 1000,
            tai_offset_s: 37,
        });
        let text = render(&s, 3, 1000);
        assert!(
            text.contains("scx_linger_gang_row{gang=\"/mpi\"} 2"),
            "{text}"
        );
        assert!(text.contains("scx_linger_clock_synchronised 1"));
        assert!(text.contains("scx_linger_clock_error_seconds 0.00025"));
        assert!(text.contains("scx_linger_clock_tai_offset_seconds 37.0"));
        assert!(text.contains("scx_linger_cpu_seconds_total{class=\"guest\"} 2.5"));
        assert!(text.contains("scx_linger_enabled 1"));
        assert!(text.contains("scx_linger_restarts_total 3"));
        // Cumulative buckets: 0, 3, then the last (which also holds all
        // above it) only as +Inf = count = 4.
        assert!(text.contains("scx_linger_run_delay_seconds_bucket{le=\"4e-9\",class=\"gang\"} 3"));
        assert!(!text.contains("le=\"8e-9\""), "{text}");
        assert!(text.contains("scx_linger_run_delay_seconds_bucket{le=\"+Inf\",class=\"gang\"} 4"));
        assert!(text.contains("scx_linger_run_delay_seconds_count{class=\"gang\"} 4"));
        // The node's info carries nothing that changes while it runs.
        assert!(!text.contains("state="), "{text}");
        assert!(text.contains("cgroup=\"/odd \\\"job\\\"\\\\x\""));
        // A job's series carry its path only; its class and Slurm job id
        // are on the info metric, so a relabel continues the series.
        assert!(text.contains(
            "scx_linger_job_cpu_seconds_total{cgroup=\"/system.slice/slurmstepd.scope/job_42\"} 0.0"
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

    #[test]
    fn per_job_series_are_capped_to_the_heaviest_jobs() {
        let mut s = Snapshot::default();
        for (i, cpu) in [3.0, 1.0, 2.0].into_iter().enumerate() {
            s.jobs.push(JobStats {
                path: format!("/j{i}"),
                cpu_seconds: cpu,
                ..Default::default()
            });
        }
        s.jobs[1].rowless = true;
        let text = render(&s, 0, 2);
        assert!(text.contains("scx_linger_jobs 3"), "{text}");
        assert!(text.contains("scx_linger_jobs_without_row 1"), "{text}");
        assert!(text.contains("cgroup=\"/j0\"") && text.contains("cgroup=\"/j2\""));
        assert!(!text.contains("cgroup=\"/j1\""), "{text}");
        let none = render(&s, 0, 0);
        assert!(!none.contains("scx_linger_job_info{"), "{none}");
        assert!(none.contains("scx_linger_jobs 3"));
    }

    /// Gang series need no cap of their own: six a gang, and a node holds
    /// at most MAX_GANGS gangs at once (the BPF side's numbers; further
    /// gang cgroups wait for one and have no figures until then).
    #[test]
    fn gang_series_are_bounded_by_the_gangs_a_node_numbers() {
        let mut s = Snapshot::default();
        for i in 0..crate::gangs::table::MAX_GANGS {
            s.gangs.push(GangStats {
                path: format!("/g{i}"),
                skew_p99_us: Some(1.0),
                row: Some(0),
                ..Default::default()
            });
        }
        let text = render(&s, 0, 0);
        let gang_series = text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains("{gang=\""))
            .count();
        assert_eq!(gang_series, 6 * crate::gangs::table::MAX_GANGS, "{text}");
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
            row: Some(0),
            ..Default::default()
        });
        s.node.clock = Some(crate::node::ClockSync::default());
        let text = render(&s, 0, 1000);
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
