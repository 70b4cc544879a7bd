// SPDX-License-Identifier: GPL-2.0-only
//! The cgroup2 tree as scx_linger sees it: where it is mounted, how an
//! operator's path names a cgroup in it, the labels on each cgroup, and the
//! class every cgroup ends up with.
//!
//! Labels live on the cgroups themselves as extended attributes, so they
//! survive an agent restart and other tools can read them. BPF cannot read
//! cgroup xattrs, so the agent scans the tree and hands the BPF side one
//! entry per cgroup (see bpf/classify.bpf.c for the other half).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use walkdir::WalkDir;

use crate::bpf::program::CpuLimit;
use crate::labels::class::{label_warnings, own_class, Class, Facts, Source};
use crate::labels::config::Config;
use crate::labels::slurm;

/// Root's label: needs CAP_SYS_ADMIN to set; wins over everything.
pub const TRUSTED_XATTR: &str = "trusted.scx_linger.class";
/// A delegated cgroup owner's label: can only demote to guest.
pub const USER_XATTR: &str = "user.scx_linger.class";
/// A gang's slot length in ms, beside the class label of the same namespace.
pub const TRUSTED_SLOT_XATTR: &str = "trusted.scx_linger.slot_ms";
pub const USER_SLOT_XATTR: &str = "user.scx_linger.slot_ms";
/// A multi-node gang job's cluster row (gangs/table.rs), as a batch
/// system other than Slurm sets it; root's namespace only.
pub const TRUSTED_ROW_XATTR: &str = "trusted.scx_linger.row";

/// Longest label value we read; a class name is a few bytes.
const MAX_LABEL_LEN: usize = 64;

/// The cgroup2 mount point, from /proc/self/mountinfo.
pub fn cgroup2_mount() -> Result<PathBuf> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    mount_from_mountinfo(&info).context(
        "no cgroup2 filesystem is mounted: mount one (mount -t cgroup2 none /sys/fs/cgroup)",
    )
}

pub fn mount_from_mountinfo(info: &str) -> Option<PathBuf> {
    info.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        Some(PathBuf::from(left.split_whitespace().nth(4)?))
    })
}

/// Turn an operator's cgroup argument into an absolute directory inside
/// the mount and its path relative to the mount. Accepts `job/a`,
/// `/job/a` (relative to the mount when it is not a host path inside it)
/// and `/sys/fs/cgroup/job/a`. Symlinks are resolved, and the result must
/// still be inside the mount.
pub fn resolve(mount: &Path, arg: &str) -> Result<(PathBuf, String)> {
    if arg.is_empty() {
        bail!("empty cgroup path: name a cgroup, e.g. jobs/42");
    }
    let arg_path = Path::new(arg);
    let candidate = if arg_path.is_absolute() && arg_path.starts_with(mount) {
        arg_path.to_path_buf()
    } else {
        let rel: PathBuf = arg_path
            .components()
            .filter(|c| !matches!(c, Component::RootDir))
            .collect();
        mount.join(rel)
    };
    let shown: String = arg.chars().take(200).collect();
    let real = std::fs::canonicalize(&candidate).map_err(|_| {
        anyhow::anyhow!(
            "cgroup {shown:?} not found under {}: create it first or check the path",
            mount.display()
        )
    })?;
    let mount_real = std::fs::canonicalize(mount).unwrap_or_else(|_| mount.to_path_buf());
    let Ok(rel) = real.strip_prefix(&mount_real) else {
        bail!(
            "{shown:?} is not inside the cgroup2 mount {}: name a cgroup there",
            mount.display()
        );
    };
    if !real.is_dir() || !real.join("cgroup.procs").exists() {
        bail!("{shown:?} is not a cgroup directory (no cgroup.procs)");
    }
    Ok((real.clone(), rel.to_string_lossy().into_owned()))
}

/// One cgroup and what is known about it.
#[derive(Debug, Clone)]
pub struct Cgroup {
    /// Path relative to the mount, "" for the root.
    pub rel: String,
    /// Cgroup id: the directory's inode number (= kernfs node id, what BPF
    /// reads as cgrp->kn->id).
    pub id: u64,
    pub facts: Facts,
    /// Its `cpu.max`, when that sets a limit (see CpuMax).
    pub cpu_max: Option<CpuMax>,
}

/// A cgroup's `cpu.max` limit: `quota_us` of CPU time in every
/// `period_us`. The BPF side enforces it (bpf/bandwidth.bpf.c); on a
/// kernel that passes the limit to the scheduler itself the agent's
/// reading is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuMax {
    pub quota_us: u64,
    pub period_us: u64,
}

impl CpuMax {
    /// The BPF side's entry for it: the limit, a period not yet begun.
    pub fn entry(&self) -> CpuLimit {
        CpuLimit {
            period_ns: self.period_us.saturating_mul(1000),
            quota_ns: self.quota_us.saturating_mul(1000),
            period_end: 0,
            used_ns: 0,
        }
    }

    /// `cpu.max` as the kernel writes it: "max 100000" (no limit) or
    /// "50000 100000". Anything else reads as no limit.
    pub fn parse(text: &str) -> Option<CpuMax> {
        let mut it = text.split_whitespace();
        let quota_us = it.next()?.parse().ok()?;
        let period_us = it.next()?.parse().ok()?;
        (period_us > 0 && quota_us > 0).then_some(CpuMax {
            quota_us,
            period_us,
        })
    }
}

/// A cgroup's effective class, where it came from, and what follows from
/// it for the BPF side (which decides none of this: bpf/classify.bpf.c).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub rel: String,
    pub id: u64,
    pub class: Class,
    pub source: Source,
    /// The class comes from this cgroup's own labels.
    pub own: bool,
    /// The cgroup whose own label gives the class (itself, or the
    /// ancestor it inherits from); None for the default and the root.
    pub origin: Option<u64>,
    /// The job its tasks' CPU time counts for: the origin, else its
    /// top-level cgroup (a slice, a job manager's root), else the root.
    pub job: u64,
    /// What a descendant the agent has not seen yet gets from it (its
    /// class, origin and job): the same as its own, but for the root,
    /// whose own class is always primary while an unseen top-level
    /// cgroup is a job of its own of the default class.
    pub heir: Heir,
    /// For a gang's own label: the slot length its label asks for.
    pub slot_ms: Option<u32>,
    /// For a primary gang's own cgroup: its job's cluster row.
    pub row: Option<u32>,
    /// Slurm job N's own cgroup, as Slurm made it.
    pub slurm_job: Option<u64>,
    /// A gang job on more than one node with no row in effect here: it
    /// runs as its tier's ordinary work, not slotted node by node.
    pub rowless: bool,
    /// The node's own machinery (is_machinery()): always primary, and
    /// beside gangs it takes a member's CPU as it wakes, within a budget
    /// (bpf/machinery.bpf.c). Its unseen descendants are too.
    pub machinery: bool,
    pub warnings: Vec<String>,
}

fn read_label(dir: &Path, name: &str) -> Option<String> {
    let raw = xattr::get(dir, name).ok().flatten()?;
    let raw = &raw[..raw.len().min(MAX_LABEL_LEN)];
    Some(String::from_utf8_lossy(raw).trim().to_string())
}

/// Scan every cgroup below the mount. Cgroups that vanish mid-scan (jobs
/// ending) are skipped, not errors.
pub fn scan(mount: &Path, cfg: &Config) -> Result<Vec<Cgroup>> {
    Ok(scan_under(mount, "", cfg))
}

/// Scan the cgroup `rel` (relative to the mount, "" for the root) and
/// everything below it, parents before their children. Cgroups removed
/// mid-walk are skipped; a missing `rel` gives nothing.
pub fn scan_under(mount: &Path, rel: &str, cfg: &Config) -> Vec<Cgroup> {
    let top = if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    };
    WalkDir::new(top)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .filter_map(|e| read_cgroup(mount, e.path(), cfg))
        .collect()
}

/// One cgroup directory's labels and facts; None if it is gone.
pub fn read_cgroup(mount: &Path, dir: &Path, cfg: &Config) -> Option<Cgroup> {
    let meta = std::fs::symlink_metadata(dir).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let rel = dir
        .strip_prefix(mount)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cpu_idle = cfg.honor_cpu_idle
        && std::fs::read_to_string(dir.join("cpu.idle")).is_ok_and(|s| s.trim() == "1");
    let slurm_job = slurm::job_id(&rel).filter(|_| slurm::is_made_by_root(dir));
    let record = slurm_job.and_then(|id| slurm::read_record(Path::new(slurm::RECORD_DIR), id));
    // A site rule on the Slurm job's attributes, else one on its path.
    let (rule, rule_slot) = match record.as_ref().and_then(|r| cfg.slurm_rule_for(r)) {
        Some(r) => (Some((r.class, r.describe.clone())), r.slot_ms),
        None => {
            let r = cfg.rule_for(&rel);
            (
                r.map(|r| (r.class, r.pattern.clone())),
                r.and_then(|r| r.slot_ms),
            )
        }
    };
    let request = record.as_ref().and_then(|r| r.request_parts());
    let facts = Facts {
        trusted: read_label(dir, TRUSTED_XATTR),
        user: read_label(dir, USER_XATTR),
        rule,
        cpu_idle,
        trusted_slot: read_label(dir, TRUSTED_SLOT_XATTR),
        user_slot: read_label(dir, USER_SLOT_XATTR),
        rule_slot,
        request: request.map(|(c, _)| c.to_string()),
        request_slot: request.and_then(|(_, ms)| ms.map(str::to_string)),
        slurm_job,
        trusted_row: read_label(dir, TRUSTED_ROW_XATTR),
        // A row is in effect only where this node's config has the rows.
        record_row: record
            .as_ref()
            .and_then(|r| r.row)
            .filter(|_| cfg.rows.is_some()),
        spans_nodes: record.as_ref().is_some_and(|r| r.spans_nodes()),
        delegated: meta.uid() != 0,
    };
    let cpu_max = std::fs::read_to_string(dir.join("cpu.max"))
        .ok()
        .and_then(|t| CpuMax::parse(&t));
    Some(Cgroup {
        rel,
        id: meta.ino(),
        facts,
        cpu_max,
    })
}

/// What a not yet seen descendant inherits (see Resolved::heir).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heir {
    pub class: Class,
    pub origin: Option<u64>,
    /// None: the descendant's own top-level cgroup.
    pub job: Option<u64>,
    /// The node's machinery: a new service below system.slice is; a new
    /// top-level cgroup (the root's heir) is not.
    pub machinery: bool,
}

pub fn parent_of(rel: &str) -> Option<&str> {
    if rel.is_empty() {
        None
    } else {
        Some(rel.rsplit_once('/').map_or("", |(p, _)| p))
    }
}

/// Effective class of every cgroup: its own label, else its nearest
/// labelled ancestor's, else the default; the root is always primary.
/// With it, each cgroup's job and what its unseen descendants inherit:
/// every rule of who is what lives in resolve_one(), and the BPF side
/// only looks the answers up. The answers come in path order.
pub fn resolve_all<'a>(
    cgroups: impl IntoIterator<Item = &'a Cgroup>,
    default: Class,
) -> Vec<Resolved> {
    // Parents before children: a path sorts after every prefix of it, so
    // path order is enough (the tree's own order: this sort then finds
    // the slice sorted and costs one comparison per cgroup).
    let mut order: Vec<&Cgroup> = cgroups.into_iter().collect();
    order.sort_by(|a, b| a.rel.cmp(&b.rel));
    let mut at: HashMap<&str, usize> = HashMap::with_capacity(order.len());
    let mut out: Vec<Resolved> = Vec::with_capacity(order.len());
    for c in order {
        let parent = parent_of(&c.rel).and_then(|p| at.get(p)).map(|&i| &out[i]);
        let r = resolve_one(c, parent, default);
        at.insert(&c.rel, out.len());
        out.push(r);
    }
    out
}

/// One cgroup's class, job and heir, from its own facts and its parent's
/// answer (None for the root, or a parent that vanished mid-scan). A
/// cgroup's answer depends on nothing else, so a change to one cgroup
/// needs only its subtree resolved again (tree.rs).
pub fn resolve_one(c: &Cgroup, parent: Option<&Resolved>, default: Class) -> Resolved {
    let own = if c.rel.is_empty() {
        None
    } else {
        own_class(&c.facts)
    };
    let (class, source) = if c.rel.is_empty() {
        (Class::Primary, Source::Root)
    } else if let Some((cl, src)) = own.clone() {
        (cl, src)
    } else {
        match parent {
            None => (default, Source::Default),
            Some(p) => match &p.source {
                Source::Root | Source::Default => (default, Source::Default),
                Source::Inherited(from) => (p.class, Source::Inherited(from.clone())),
                _ => (p.class, Source::Inherited(p.rel.clone())),
            },
        }
    };
    // The node's own machinery is primary whatever the default class:
    // the services the node and its jobs run on, not a job.
    let machinery = is_machinery(c, &source, parent);
    let class = if machinery { Class::Primary } else { class };
    // A gang is its job's tasks: Slurm's own helpers inside the job
    // (its step daemons, the extern step) run as ordinary work of the
    // job's tier, so that they neither count in the gang's size nor
    // wait for its slot. An explicit label on them still holds.
    let class = match source {
        Source::Inherited(_) if class.is_gang() && slurm::is_job_helper(&c.rel) => class.tier(),
        _ => class,
    };
    let mut warnings = label_warnings(&c.facts);
    let slot_ms = match (&own, class.is_gang()) {
        (Some((_, src)), true) => own_slot_ms(&c.facts, src, &mut warnings),
        _ => None,
    };
    let row = match (&own, class) {
        (Some(_), Class::Gang) => own_row(&c.facts, &mut warnings),
        _ => None,
    };
    // A job on several nodes runs well as a gang only where its slot
    // comes at the same moment on each of them, which a row gives. Laid
    // out node by node its ranks would meet by chance (33-50x its ideal
    // on two nodes), so without a row here it runs as its tier's ordinary
    // work, in the deadline order that shares a CPU as EEVDF does, and
    // the gang table keeps the share of the cycle it would have as a
    // gang as open phase (gangs/table.rs), so that the node's own gangs
    // do not take it.
    let rowless = own.is_some() && class.is_gang() && c.facts.spans_nodes && row.is_none();
    let class = if rowless {
        warnings.push(format!(
            "{class} job on more than one node without a cluster row here (no [rows] in the config, or none from the controller's `scx_linger slurm row`): runs as ordinary {} work, not a gang",
            class.tier()
        ));
        class.tier()
    } else {
        class
    };
    let slot_ms = slot_ms.filter(|_| !rowless);
    let parent_is_root = parent_of(&c.rel) == Some("");
    let tie = parent.map(|p| (p.origin, p.job));
    let (origin, job) = match (&source, tie) {
        (Source::Root, _) => (None, c.id),
        // A Slurm job's cgroup is a job of its own, whatever its class
        // (else every unlabelled job counts as system.slice).
        (Source::Inherited(_), Some((origin, _))) if c.facts.slurm_job.is_some() => (origin, c.id),
        (Source::Default, _) if c.facts.slurm_job.is_some() => (None, c.id),
        (Source::Inherited(_), Some(tie)) => tie,
        // Unlabelled: a job of its own at the top level, its top-level
        // ancestor's below.
        (Source::Default, Some((_, job))) if !parent_is_root => (None, job),
        (Source::Inherited(_) | Source::Default, _) => (None, c.id),
        _ => (Some(c.id), c.id),
    };
    let heir = if source == Source::Root {
        Heir {
            class: default,
            origin: None,
            job: None,
            machinery: false,
        }
    } else {
        Heir {
            class,
            origin,
            job: Some(job),
            machinery,
        }
    };
    Resolved {
        rel: c.rel.clone(),
        id: c.id,
        class,
        own: own.is_some(),
        source,
        origin,
        job,
        heir,
        slot_ms,
        row,
        slurm_job: c.facts.slurm_job,
        rowless,
        machinery,
        warnings,
    }
}

/// Is `c` the node's own machinery: what the node and every job's start
/// run on, rather than a job? `init.scope` and `system.slice` and what
/// lies below them, unlabelled, outside Slurm's job cgroups (slurmd,
/// munged, chronyd, sshd, this agent); and each step's daemon inside a
/// Slurm job (slurmstepd), whatever the job's class. Never a cgroup
/// someone other than root owns: a delegated subtree is its user's,
/// wherever it is. Not the root cgroup: under systemd it holds kernel
/// threads alone, which the BPF side counts as machinery itself, and on
/// a node without systemd everything starts there, jobs too.
fn is_machinery(c: &Cgroup, source: &Source, parent: Option<&Resolved>) -> bool {
    if c.rel.is_empty() || c.facts.delegated {
        return false;
    }
    if slurm::is_step_daemon(&c.rel) {
        return true;
    }
    if c.facts.slurm_job.is_some() || *source != Source::Default {
        return false;
    }
    match parent {
        Some(p) if p.rel.is_empty() => c.rel == "system.slice" || c.rel == "init.scope",
        Some(p) => p.machinery,
        None => false,
    }
}

/// A primary gang's cluster row: root's label, else what slurmctld gave
/// the Slurm job. Guest gangs have none: they run only on what primaries
/// leave, which no two nodes have at the same moment.
fn own_row(f: &Facts, warnings: &mut Vec<String>) -> Option<u32> {
    match f.trusted_row.as_deref().map(str::parse::<u32>) {
        Some(Ok(r)) => Some(r),
        Some(Err(_)) => {
            let shown: String = f
                .trusted_row
                .iter()
                .flat_map(|r| r.chars())
                .take(20)
                .collect();
            warnings.push(format!(
                "row {shown:?} ignored: a row is a number, 0 to the config's [rows] count - 1"
            ));
            f.record_row
        }
        None => f.record_row,
    }
}

/// A gang's slot length from the same place as its class label; a value
/// that does not parse is reported and the default used.
fn own_slot_ms(f: &Facts, source: &Source, warnings: &mut Vec<String>) -> Option<u32> {
    let raw = match source {
        Source::Trusted => f.trusted_slot.as_deref(),
        Source::User => f.user_slot.as_deref(),
        Source::Request => f.request_slot.as_deref(),
        Source::Config(_) => return f.rule_slot,
        _ => None,
    }?;
    match raw
        .parse::<u64>()
        .map_err(anyhow::Error::from)
        .and_then(super::class::check_slot_ms)
    {
        Ok(ms) => Some(ms),
        Err(e) => {
            let shown: String = raw.chars().take(20).collect();
            warnings.push(format!(
                "slot_ms {shown:?} ignored ({e:#}): the default slot applies"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests;
