// SPDX-License-Identifier: GPL-2.0-only
//! The config file (TOML): rules that map cgroup paths to classes, for
//! setups where jobs land in cgroups an operator does not tag one by one
//! (Kubernetes QoS slices, Slurm job cgroups). See examples/*.toml.
//!
//! A config either loads whole or not at all: every error names the file
//! and the field, and nothing of a bad config is applied.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::Deserialize;

use crate::labels::class::Class;
use crate::labels::slurm::JobRecord;

/// Where `run` and `ls` look when no `--config` is given.
pub const DEFAULT_PATH: &str = "/etc/scx_linger/config.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    default_class: Option<String>,
    #[serde(default)]
    honor_cpu_idle: Option<bool>,
    #[serde(default, rename = "rule")]
    rules: Vec<RawRule>,
    #[serde(default, rename = "slurm_rule")]
    slurm_rules: Vec<RawSlurmRule>,
    #[serde(default)]
    rows: Option<RawRows>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRows {
    count: u32,
    #[serde(default)]
    slot_ms: Option<u64>,
    #[serde(default)]
    open_pct: Option<u32>,
}

/// The cluster's slot matrix (`[rows]`): every node of the cluster cuts
/// its primary gang cycle into the same `count` rows of `slot` each, then
/// an open phase of `open_pct` of the cycle, on CLOCK_TAI, so that a
/// multi-node job given row r by the batch system (labels/slurm.rs) runs
/// at the same moment on each of its nodes whatever else each node runs.
/// The file must be the same on every node, and on the Slurm controller,
/// which hands the rows out. docs/design.md, "Gangs across nodes".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    pub count: u32,
    pub slot: std::time::Duration,
    pub open_pct: u32,
}

/// Most rows a cycle may have: every row is a slot of the table.
pub const MAX_ROWS: u32 = 16;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlurmRule {
    #[serde(default)]
    partition: Option<String>,
    #[serde(default)]
    qos: Option<String>,
    #[serde(default)]
    account: Option<String>,
    class: String,
    #[serde(default)]
    slot_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    cgroup: String,
    class: String,
    #[serde(default)]
    slot_ms: Option<u64>,
}

/// One rule: a glob over cgroup paths relative to the cgroup2 root.
#[derive(Debug, Clone)]
pub struct Rule {
    pub pattern: String,
    pub class: Class,
    /// Slot length for a gang rule (None: the agent's default).
    pub slot_ms: Option<u32>,
    matcher: GlobMatcher,
}

/// A site rule over Slurm jobs: every attribute it names must match (a
/// glob) what the Prolog recorded for the job (labels/slurm.rs).
#[derive(Debug, Clone)]
pub struct SlurmRule {
    /// How `ls` names it: `partition=scavenger qos=low`.
    pub describe: String,
    pub class: Class,
    pub slot_ms: Option<u32>,
    partition: Option<GlobMatcher>,
    qos: Option<GlobMatcher>,
    account: Option<GlobMatcher>,
}

impl SlurmRule {
    /// Does it name a QOS (which the Prolog then needs, however it gets it)?
    pub fn names_qos(&self) -> bool {
        self.qos.is_some()
    }

    fn matches(&self, job: &JobRecord) -> bool {
        let one = |m: &Option<GlobMatcher>, v: &Option<String>| match (m, v) {
            (None, _) => true,
            (Some(m), Some(v)) => m.is_match(v),
            (Some(_), None) => false,
        };
        one(&self.partition, &job.partition)
            && one(&self.qos, &job.qos)
            && one(&self.account, &job.account)
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// Class of cgroups no label reaches (the root cgroup stays primary).
    pub default_class: Class,
    /// Treat `cpu.idle` = 1 cgroups as guests unless labelled otherwise.
    pub honor_cpu_idle: bool,
    pub rules: Vec<Rule>,
    pub slurm_rules: Vec<SlurmRule>,
    /// The cluster's slot matrix; None: each node lays out its own gangs.
    pub rows: Option<Rows>,
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            default_class: Class::Primary,
            honor_cpu_idle: true,
            rules: Vec::new(),
            slurm_rules: Vec::new(),
            rows: None,
            path: None,
        }
    }
}

impl Config {
    /// How many rules it has, of both kinds, as the log says it.
    pub fn describe_rules(&self) -> String {
        format!(
            "{} path rules, {} Slurm rules",
            self.rules.len(),
            self.slurm_rules.len()
        )
    }

    /// Load `explicit` (which must exist), else DEFAULT_PATH if it exists,
    /// else the defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Config> {
        match explicit {
            Some(p) => Self::from_file(p),
            None if Path::new(DEFAULT_PATH).exists() => Self::from_file(Path::new(DEFAULT_PATH)),
            None => Ok(Config::default()),
        }
    }

    pub fn from_file(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        let mut cfg = Self::parse(&text).with_context(|| format!("config {}", path.display()))?;
        cfg.path = Some(path.to_path_buf());
        Ok(cfg)
    }

    pub fn parse(text: &str) -> Result<Config> {
        // toml's messages span several lines; keep the first, which says
        // what is wrong and where.
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let msg = e
                .message()
                .lines()
                .next()
                .unwrap_or("invalid TOML")
                .to_string();
            match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].lines().count().max(1);
                    anyhow::anyhow!("line {line}: {msg}")
                }
                None => anyhow::anyhow!("{msg}"),
            }
        })?;
        let default_class = match raw.default_class.as_deref() {
            None => Class::Primary,
            Some(s) => s.parse().context("default_class")?,
        };
        if default_class.is_gang() {
            bail!("default_class = {default_class:?}: a gang is one job, tag its cgroup instead; use primary or guest");
        }
        let mut rules = Vec::new();
        for (i, r) in raw.rules.iter().enumerate() {
            let class: Class = r
                .class
                .parse()
                .with_context(|| format!("rule {} ({:?})", i + 1, r.cgroup))?;
            let pattern = r.cgroup.trim_matches('/').to_string();
            if pattern.is_empty() && class != Class::Primary {
                bail!(
                    "rule {} labels the root cgroup {class}: the root holds kernel threads and system services; label job cgroups instead",
                    i + 1
                );
            }
            let slot_ms = rule_slot(class, r.slot_ms)
                .with_context(|| format!("rule {} ({:?})", i + 1, r.cgroup))?;
            let glob: Glob = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .with_context(|| format!("rule {}: bad pattern {:?}", i + 1, r.cgroup))?;
            rules.push(Rule {
                pattern,
                class,
                slot_ms,
                matcher: glob.compile_matcher(),
            });
        }
        let slurm_rules = raw
            .slurm_rules
            .iter()
            .enumerate()
            .map(|(i, r)| slurm_rule(r).with_context(|| format!("slurm_rule {}", i + 1)))
            .collect::<Result<_>>()?;
        let rows = raw.rows.as_ref().map(rows).transpose().context("[rows]")?;
        Ok(Config {
            default_class,
            honor_cpu_idle: raw.honor_cpu_idle.unwrap_or(true),
            rules,
            slurm_rules,
            rows,
            path: None,
        })
    }

    /// The first site rule matching a Slurm job's record.
    pub fn slurm_rule_for(&self, job: &JobRecord) -> Option<&SlurmRule> {
        self.slurm_rules.iter().find(|r| r.matches(job))
    }

    /// The first rule matching a cgroup path (relative, no leading '/').
    pub fn rule_for(&self, rel_path: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matcher.is_match(rel_path))
    }
}

/// A rule's slot length: gangs only, within the bounds class.rs sets.
fn rule_slot(class: Class, slot_ms: Option<u64>) -> Result<Option<u32>> {
    match slot_ms {
        None => Ok(None),
        Some(_) if !class.is_gang() => {
            bail!("slot_ms applies to gangs only: drop it or make the class gang")
        }
        Some(ms) => Ok(Some(super::class::check_slot_ms(ms)?)),
    }
}

fn rows(r: &RawRows) -> Result<Rows> {
    if !(1..=MAX_ROWS).contains(&r.count) {
        bail!(
            "count = {}: use 1 to {MAX_ROWS} rows (about as many as multi-node jobs share a node)",
            r.count
        );
    }
    let slot_ms = super::class::check_slot_ms(
        r.slot_ms
            .unwrap_or(u64::from(super::class::DEFAULT_SLOT_MS)),
    )
    .context("slot_ms")?;
    let open_pct = r.open_pct.unwrap_or(super::class::DEFAULT_OPEN_PCT);
    if open_pct > 50 {
        bail!("open_pct = {open_pct}: use 0 to 50 (the share of the cycle left to ordinary work)");
    }
    Ok(Rows {
        count: r.count,
        slot: std::time::Duration::from_millis(u64::from(slot_ms)),
        open_pct,
    })
}

fn slurm_rule(r: &RawSlurmRule) -> Result<SlurmRule> {
    let class: Class = r.class.parse()?;
    let slot_ms = rule_slot(class, r.slot_ms)?;
    let mut describe = Vec::new();
    let mut glob = |what: &str, v: &Option<String>| -> Result<Option<GlobMatcher>> {
        let Some(v) = v else { return Ok(None) };
        describe.push(format!("{what}={v}"));
        let g = Glob::new(v).with_context(|| format!("bad {what} pattern {v:?}"))?;
        Ok(Some(g.compile_matcher()))
    };
    let partition = glob("partition", &r.partition)?;
    let qos = glob("qos", &r.qos)?;
    let account = glob("account", &r.account)?;
    if describe.is_empty() {
        bail!("names no partition, qos or account: a rule for every job is default_class");
    }
    Ok(SlurmRule {
        describe: describe.join(" "),
        class,
        slot_ms,
        partition,
        qos,
        account,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shipped_examples_and_the_packages_default() {
        let default = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/etc/config.toml");
        let cfg = Config::from_file(Path::new(default)).unwrap();
        assert!(cfg.rules.is_empty() && cfg.slurm_rules.is_empty());
        for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Config::from_file(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            }
        }
    }

    /// The kubelet's own layouts, both cgroup drivers (examples/kubernetes.toml).
    #[test]
    fn the_kubernetes_example_matches_the_kubelets_pod_cgroups() {
        let cfg = Config::from_file(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/kubernetes.toml"
        )))
        .unwrap();
        let class = |p: &str| cfg.rule_for(p).map(|r| r.class);
        for (path, want) in [
            (
                "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234_ab.slice",
                Some(Class::Guest),
            ),
            ("kubepods/besteffort/pod1234-ab", Some(Class::Guest)),
            (
                "kubepods.slice/kubepods-pod1234_ab.slice",
                Some(Class::Primary),
            ),
            (
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_ab.slice",
                Some(Class::Primary),
            ),
            ("kubepods/pod1234-ab", Some(Class::Primary)),
            ("kubepods/burstable/pod1234-ab", Some(Class::Primary)),
            // QoS slices and containers are not jobs: they inherit.
            ("kubepods.slice/kubepods-besteffort.slice", None),
            (
                "kubepods/besteffort/pod1234-ab/cri-containerd-9f.scope",
                None,
            ),
        ] {
            assert_eq!(class(path), want, "{path}");
        }
    }

    #[test]
    fn gang_rules_carry_their_slot() {
        let cfg = Config::parse(
            "[[rule]]\ncgroup = \"mpi/*\"\nclass = \"gang\"\nslot_ms = 200\n\
             [[rule]]\ncgroup = \"omp/*\"\nclass = \"guest-gang\"\n",
        )
        .unwrap();
        let r = cfg.rule_for("mpi/j1").unwrap();
        assert_eq!((r.class, r.slot_ms), (Class::Gang, Some(200)));
        let r = cfg.rule_for("omp/j2").unwrap();
        assert_eq!((r.class, r.slot_ms), (Class::GuestGang, None));
    }

    #[test]
    fn rules_match_paths_with_globs() {
        let cfg = Config::parse(
            r#"
            default_class = "primary"
            [[rule]]
            cgroup = "kubepods.slice/kubepods-besteffort.slice"
            class = "guest"
            [[rule]]
            cgroup = "/system.slice/slurmstepd.scope/job_*/"
            class = "guest"
            [[rule]]
            cgroup = "batch/**"
            class = "guest"
            "#,
        )
        .unwrap();
        let class = |p: &str| cfg.rule_for(p).map(|r| r.class);
        assert_eq!(
            class("kubepods.slice/kubepods-besteffort.slice"),
            Some(Class::Guest)
        );
        assert_eq!(class("kubepods.slice/kubepods-burstable.slice"), None);
        assert_eq!(
            class("system.slice/slurmstepd.scope/job_42"),
            Some(Class::Guest)
        );
        // `*` stays within one path component; descendants inherit instead.
        assert_eq!(class("system.slice/slurmstepd.scope/job_42/step_0"), None);
        assert_eq!(class("batch/a/b"), Some(Class::Guest));
    }

    #[test]
    fn bad_configs_are_rejected_whole_with_the_reason() {
        let err = |t: &str| format!("{:#}", Config::parse(t).unwrap_err());
        assert!(err(r#"default_class = "idle""#).contains("unknown class \"idle\""));
        let e = err("[[rule]]\ncgroup = \"a\"\nclass = \"best\"\n");
        assert!(e.contains("rule 1") && e.contains("unknown class"), "{e}");
        assert!(err("[[rule]]\ncgroup = \"a\"\n").contains("class"));
        assert!(err("colour = 1\n").contains("unknown field"));
        assert!(err("[[rule]]\ncgroup = \"a[\"\nclass = \"guest\"\n").contains("bad pattern"));
        assert!(err("this is not toml").contains("line 1"));
        let e = err("[[rule]]\ncgroup = \"/\"\nclass = \"guest\"\n");
        assert!(e.contains("root cgroup"), "{e}");
        let e = err("[[rule]]\ncgroup = \"/\"\nclass = \"gang\"\n");
        assert!(e.contains("root cgroup"), "{e}");
        assert!(err(r#"default_class = "gang""#).contains("tag its cgroup"));
        let e = err("[[rule]]\ncgroup = \"a\"\nclass = \"guest\"\nslot_ms = 50\n");
        assert!(e.contains("gangs only"), "{e}");
        let e = err("[[rule]]\ncgroup = \"a\"\nclass = \"gang\"\nslot_ms = 5\n");
        assert!(e.contains("rule 1") && e.contains("slot"), "{e}");
    }

    #[test]
    fn slurm_rules_match_every_attribute_they_name() {
        let cfg = Config::parse(
            r#"
            [[slurm_rule]]
            partition = "scavenger"
            qos = "low*"
            class = "guest"
            [[slurm_rule]]
            account = "mpi-*"
            class = "gang"
            slot_ms = 200
            "#,
        )
        .unwrap();
        let job = |p: Option<&str>, q: Option<&str>, a: Option<&str>| JobRecord {
            job_id: 1,
            partition: p.map(Into::into),
            qos: q.map(Into::into),
            account: a.map(Into::into),
            ..Default::default()
        };
        let rule = |j: &JobRecord| cfg.slurm_rule_for(j).map(|r| (r.class, r.slot_ms));
        assert_eq!(
            rule(&job(Some("scavenger"), Some("lowest"), None)),
            Some((Class::Guest, None))
        );
        // A rule on QOS never matches a job whose QOS the Prolog did not see.
        assert_eq!(rule(&job(Some("scavenger"), None, None)), None);
        assert_eq!(
            rule(&job(Some("batch"), None, Some("mpi-chem"))),
            Some((Class::Gang, Some(200)))
        );
        assert_eq!(cfg.slurm_rules[0].describe, "partition=scavenger qos=low*");
        let e = format!(
            "{:#}",
            Config::parse("[[slurm_rule]]\nclass = \"guest\"\n").unwrap_err()
        );
        assert!(
            e.contains("slurm_rule 1") && e.contains("default_class"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            Config::parse("[[slurm_rule]]\npartition = \"p\"\nclass = \"guest\"\nslot_ms = 100\n")
                .unwrap_err()
        );
        assert!(e.contains("gangs only"), "{e}");
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = Config::load(Some(Path::new("/nonexistent/linger.toml"))).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/linger.toml"));
    }
}
