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
    // work, in the deadline order that shares a CPU as EEVDF does.
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
mod tests {
    use super::*;

    fn cg(rel: &str, id: u64, trusted: Option<&str>, user: Option<&str>) -> Cgroup {
        Cgroup {
            rel: rel.into(),
            id,
            facts: Facts {
                trusted: trusted.map(str::to_string),
                user: user.map(str::to_string),
                ..Facts::default()
            },
            cpu_max: None,
        }
    }

    fn class_of<'a>(r: &'a [Resolved], rel: &str) -> &'a Resolved {
        r.iter().find(|x| x.rel == rel).unwrap()
    }

    #[test]
    fn cpu_max_reads_as_the_kernel_writes_it() {
        let half = CpuMax::parse("50000 100000\n").unwrap();
        assert_eq!((half.quota_us, half.period_us), (50000, 100000));
        assert_eq!(half.entry().quota_ns, 50_000_000);
        assert_eq!(half.entry().period_ns, 100_000_000);
        // "max" is no limit, and so is anything the kernel never writes.
        for text in ["max 100000", "", "50000", "0 100000", "50000 0", "x y"] {
            assert_eq!(CpuMax::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn finds_the_cgroup2_mount() {
        let info = "22 1 0:21 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw\n\
                    23 1 0:22 / /proc rw - proc proc rw\n";
        assert_eq!(
            mount_from_mountinfo(info),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(
            mount_from_mountinfo("23 1 0:22 / /proc rw - proc proc rw\n"),
            None
        );
    }

    #[test]
    fn descendants_inherit_unless_labelled() {
        let cgs = vec![
            cg("", 1, None, None),
            cg("jobs", 2, Some("guest"), None),
            cg("jobs/a", 3, None, None),
            cg("jobs/a/step", 4, None, None),
            cg("jobs/b", 5, Some("primary"), None),
            cg("system.slice", 6, None, None),
            cg("users/u1", 8, None, Some("guest")),
            cg("users", 7, None, None),
        ];
        let r = resolve_all(&cgs, Class::Primary);
        assert_eq!(class_of(&r, "").source, Source::Root);
        assert_eq!(class_of(&r, "jobs/a/step").class, Class::Guest);
        assert_eq!(
            class_of(&r, "jobs/a/step").source,
            Source::Inherited("jobs".into())
        );
        assert_eq!(class_of(&r, "jobs/b").class, Class::Primary);
        assert_eq!(class_of(&r, "system.slice").source, Source::Default);
        assert_eq!(class_of(&r, "users/u1").class, Class::Guest);
        let own: Vec<(u64, Class)> = r
            .iter()
            .filter(|x| x.own)
            .map(|x| (x.id, x.class))
            .collect();
        assert_eq!(own.len(), 3);
        assert!(own.contains(&(2, Class::Guest)) && own.contains(&(5, Class::Primary)));
    }

    #[test]
    fn default_class_applies_below_the_root_only() {
        let cgs = vec![cg("", 1, None, None), cg("svc", 2, None, None)];
        let r = resolve_all(&cgs, Class::Guest);
        assert_eq!(class_of(&r, "").class, Class::Primary);
        assert_eq!(class_of(&r, "svc").class, Class::Guest);
        assert!(r.iter().all(|x| !x.own), "the default is no label");
        // What a new top-level cgroup inherits before the agent sees it.
        assert_eq!(class_of(&r, "").heir.class, Class::Guest);
        assert_eq!(class_of(&r, "svc").heir.class, Class::Guest);
    }

    #[test]
    fn a_slurm_jobs_cgroup_is_a_job_of_its_own_and_its_request_only_demotes() {
        let scope = "system.slice/n1_slurmstepd.scope";
        let job = |rel: &str, id, slurm: u64, request: Option<&str>| Cgroup {
            facts: Facts {
                slurm_job: Some(slurm),
                request: request.map(Into::into),
                request_slot: Some("200".into()),
                ..Facts::default()
            },
            cpu_max: None,
            ..cg(rel, id, None, None)
        };
        let guest_slice = Cgroup {
            facts: Facts {
                rule: Some((Class::Guest, "system.slice".into())),
                ..Facts::default()
            },
            cpu_max: None,
            ..cg("system.slice", 2, None, None)
        };
        let cgs = vec![
            cg("", 1, None, None),
            guest_slice,
            cg(scope, 3, None, None),
            job(&format!("{scope}/job_7"), 4, 7, None),
            cg(&format!("{scope}/job_7/step_0"), 5, None, None),
            job(&format!("{scope}/job_8"), 6, 8, Some("guest-gang")),
            job(&format!("{scope}/job_9"), 7, 9, Some("gang")),
        ];
        let r = resolve_all(&cgs, Class::Primary);
        let at = |j: &str| class_of(&r, &format!("{scope}/{j}"));
        // Inheriting its class from system.slice, job 7 still counts alone.
        assert_eq!(
            (at("job_7").class, at("job_7").job, at("job_7").origin),
            (Class::Guest, 4, Some(2))
        );
        assert_eq!(at("job_7/step_0").job, 4);
        assert_eq!(
            (at("job_8").class, at("job_8").source.clone()),
            (Class::GuestGang, Source::Request)
        );
        assert_eq!(at("job_8").slot_ms, Some(200));
        // Asking to be a gang is a promotion: ignored, and said.
        assert_eq!(at("job_9").class, Class::Guest);
        assert!(
            at("job_9").warnings[0].contains("slurm_rule"),
            "{:?}",
            at("job_9").warnings
        );
    }

    #[test]
    fn a_gang_job_on_several_nodes_without_a_row_here_is_no_gang_here() {
        let scope = "system.slice/n1_slurmstepd.scope";
        let job = |id: u64, spans_nodes, record_row, class| Cgroup {
            facts: Facts {
                slurm_job: Some(id),
                rule: Some((class, "partition=gang".into())),
                spans_nodes,
                record_row,
                ..Facts::default()
            },
            cpu_max: None,
            ..cg(&format!("{scope}/job_{id}"), id, None, None)
        };
        let cgs = vec![
            cg("", 1, None, None),
            job(5, false, None, Class::Gang),
            job(6, true, Some(1), Class::Gang),
            job(7, true, None, Class::Gang),
            job(8, true, None, Class::GuestGang),
            cg(&format!("{scope}/job_7/step_0"), 70, None, None),
        ];
        let r = resolve_all(&cgs, Class::Primary);
        let at = |j: &str| class_of(&r, &format!("{scope}/{j}"));
        // One node: a gang of this node, as ever. Several, with a row: a
        // gang in its row.
        assert_eq!(
            (at("job_5").class, at("job_5").rowless),
            (Class::Gang, false)
        );
        assert_eq!((at("job_6").class, at("job_6").row), (Class::Gang, Some(1)));
        // Several nodes and no row: its tier's ordinary work, said once in
        // `ls`, and its steps with it.
        for (j, tier) in [("job_7", Class::Primary), ("job_8", Class::Guest)] {
            let x = at(j);
            assert_eq!((x.class, x.rowless, x.slot_ms), (tier, true, None), "{j}");
            assert!(
                x.warnings
                    .iter()
                    .any(|w| w.contains("without a cluster row")),
                "{:?}",
                x.warnings
            );
        }
        assert_eq!(at("job_7/step_0").class, Class::Primary);
        assert_eq!(at("job_7").slurm_job, Some(7));
    }

    #[test]
    fn a_job_cgroup_not_made_by_root_is_no_slurm_job() {
        use std::os::unix::fs::chown;
        let mount = tempfile::tempdir().unwrap();
        let job = mount.path().join("system.slice/n1_slurmstepd.scope/job_1");
        std::fs::create_dir_all(&job).unwrap();
        let read = || read_cgroup(mount.path(), &job, &Config::default()).unwrap();
        // The tests run as root, as the agent does: root's is Slurm's.
        if nix::unistd::geteuid().is_root() {
            assert_eq!(read().facts.slurm_job, Some(1));
            chown(&job, Some(1000), None).unwrap();
            assert_eq!(read().facts.slurm_job, None);
            chown(&job, Some(0), None).unwrap();
            chown(job.parent().unwrap(), Some(1000), None).unwrap();
            assert_eq!(read().facts.slurm_job, None);
        } else {
            assert_eq!(read().facts.slurm_job, None);
        }
    }

    #[test]
    fn a_gang_jobs_step_daemons_run_beside_it_not_in_it() {
        let scope = "system.slice/n1_slurmstepd.scope";
        let gang_job = Cgroup {
            facts: Facts {
                slurm_job: Some(7),
                rule: Some((Class::GuestGang, "partition=scavenger".into())),
                ..Facts::default()
            },
            cpu_max: None,
            ..cg(&format!("{scope}/job_7"), 4, None, None)
        };
        let cgs = vec![
            cg("", 1, None, None),
            cg("system.slice", 2, None, None),
            cg(scope, 3, None, None),
            gang_job,
            cg(&format!("{scope}/job_7/step_0"), 5, None, None),
            cg(&format!("{scope}/job_7/step_0/slurm"), 6, None, None),
            cg(&format!("{scope}/job_7/step_0/user"), 7, None, None),
            cg(&format!("{scope}/job_7/step_0/user/task_0"), 8, None, None),
            cg(&format!("{scope}/job_7/step_extern"), 9, None, None),
            cg(&format!("{scope}/job_7/step_extern/user"), 10, None, None),
            cg(
                &format!("{scope}/job_7/step_extern/user/task_special"),
                11,
                None,
                None,
            ),
        ];
        let r = resolve_all(&cgs, Class::Primary);
        let at = |j: &str| class_of(&r, &format!("{scope}/job_7{j}"));
        for task in ["", "/step_0", "/step_0/user/task_0"] {
            assert_eq!(at(task).class, Class::GuestGang, "{task:?}");
        }
        for helper in ["/step_extern", "/step_extern/user/task_special"] {
            let h = at(helper);
            // The job's tier, its CPU time still the job's.
            assert_eq!(
                (h.class, h.heir.class, h.job, h.machinery),
                (Class::Guest, Class::Guest, 4, false),
                "{helper}"
            );
        }
        // The step daemon is the node's machinery, whatever the job's
        // class: a guest job's slurmstepd must still answer a cancel under
        // full primary load. Its CPU time is still the job's.
        let d = at("/step_0/slurm");
        assert_eq!(
            (d.class, d.heir.class, d.job, d.machinery),
            (Class::Primary, Class::Primary, 4, true)
        );
    }

    #[test]
    fn the_nodes_machinery_is_its_services_and_step_daemons_and_nothing_a_user_owns() {
        let owned_by_user = |rel: &str, id| Cgroup {
            facts: Facts {
                delegated: true,
                ..Facts::default()
            },
            ..cg(rel, id, None, None)
        };
        let job = Cgroup {
            facts: Facts {
                slurm_job: Some(7),
                ..Facts::default()
            },
            ..cg("system.slice/slurmstepd.scope/job_7", 7, None, None)
        };
        let cgs = vec![
            cg("", 1, None, None),
            cg("init.scope", 2, None, None),
            cg("system.slice", 3, None, None),
            cg("system.slice/slurmd.service", 4, None, None),
            cg("system.slice/munge.service", 5, None, None),
            cg("system.slice/batch.service", 6, Some("guest"), None),
            job,
            cg("system.slice/slurmstepd.scope", 8, None, None),
            cg("system.slice/slurmstepd.scope/job_7/step_0", 9, None, None),
            cg(
                "system.slice/slurmstepd.scope/job_7/step_0/slurm",
                10,
                None,
                None,
            ),
            owned_by_user("system.slice/delegated.service", 11),
            cg("user.slice", 12, None, None),
            cg("user.slice/user-1000.slice", 13, None, None),
            cg("kubepods.slice", 14, None, None),
        ];
        // Whatever the default class: the services are the node's.
        let r = resolve_all(&cgs, Class::Guest);
        let m = |rel: &str| {
            let x = class_of(&r, rel);
            (x.machinery, x.class)
        };
        for rel in [
            "init.scope",
            "system.slice",
            "system.slice/slurmd.service",
            "system.slice/munge.service",
            "system.slice/slurmstepd.scope",
            "system.slice/slurmstepd.scope/job_7/step_0/slurm",
        ] {
            assert_eq!(m(rel), (true, Class::Primary), "{rel}");
        }
        assert!(
            !class_of(&r, "").machinery,
            "the root holds jobs without systemd"
        );
        for rel in [
            "system.slice/batch.service",
            "system.slice/slurmstepd.scope/job_7",
            "system.slice/slurmstepd.scope/job_7/step_0",
            "system.slice/delegated.service",
            "user.slice",
            "user.slice/user-1000.slice",
            "kubepods.slice",
        ] {
            assert_eq!(m(rel), (false, Class::Guest), "{rel}");
        }
        // A new service is the node's before the agent sees it; a new
        // top-level cgroup is not.
        assert!(!class_of(&r, "").heir.machinery);
        assert!(class_of(&r, "system.slice").heir.machinery);
    }

    #[test]
    fn jobs_are_the_labelled_cgroup_else_the_top_level_one() {
        let cgs = vec![
            cg("", 1, None, None),
            cg("jobs", 2, None, None),
            cg("jobs/42", 3, Some("guest"), None),
            cg("jobs/42/step_0", 4, None, None),
            cg("jobs/43", 5, None, None),
            cg("jobs/43/step_0", 6, None, None),
        ];
        let r = resolve_all(&cgs, Class::Primary);
        let job = |rel| class_of(&r, rel).job;
        let origin = |rel| class_of(&r, rel).origin;
        assert_eq!((job(""), origin("")), (1, None));
        assert_eq!((job("jobs"), origin("jobs")), (2, None));
        assert_eq!((job("jobs/42"), origin("jobs/42")), (3, Some(3)));
        assert_eq!(
            (job("jobs/42/step_0"), origin("jobs/42/step_0")),
            (3, Some(3))
        );
        // Unlabelled below the top level: the top-level cgroup's job.
        assert_eq!((job("jobs/43/step_0"), origin("jobs/43/step_0")), (2, None));
    }

    #[test]
    fn heirs_take_their_ancestors_class_but_the_roots_take_the_default() {
        let cgs = vec![
            cg("", 1, None, None),
            cg("batch", 2, Some("gang"), None),
            cg("batch/rank0", 3, None, None),
        ];
        let r = resolve_all(&cgs, Class::Guest);
        let root = class_of(&r, "");
        assert_eq!(root.class, Class::Primary);
        assert_eq!(
            root.heir,
            Heir {
                class: Class::Guest,
                origin: None,
                job: None,
                machinery: false,
            }
        );
        let rank = class_of(&r, "batch/rank0");
        assert_eq!((rank.class, rank.origin), (Class::Gang, Some(2)));
        assert_eq!(
            rank.heir,
            Heir {
                class: Class::Gang,
                origin: Some(2),
                job: Some(2),
                machinery: false,
            }
        );
    }

    #[test]
    fn resolves_operator_paths_inside_the_mount_only() {
        let mount = tempfile::tempdir().unwrap();
        let m = mount.path();
        std::fs::create_dir_all(m.join("jobs/my job ü")).unwrap();
        std::fs::write(m.join("jobs/my job ü/cgroup.procs"), "").unwrap();
        std::fs::create_dir_all(m.join("plain")).unwrap();
        let (abs, rel) = resolve(m, "jobs/my job ü").unwrap();
        assert_eq!(rel, "jobs/my job ü");
        assert!(abs.ends_with("jobs/my job ü"));
        assert_eq!(resolve(m, "/jobs/my job ü").unwrap().1, "jobs/my job ü");
        let full = m.join("jobs/my job ü");
        assert_eq!(
            resolve(m, full.to_str().unwrap()).unwrap().1,
            "jobs/my job ü"
        );

        let e = |a: &str| format!("{:#}", resolve(m, a).unwrap_err());
        assert!(e("nope").contains("not found"));
        assert!(e("").contains("empty"));
        assert!(e("plain").contains("not a cgroup"));
        assert!(e("../../../../etc").contains("not"));
        assert!(e(&"a/".repeat(3000)).len() < 400);

        std::os::unix::fs::symlink("/etc", m.join("jobs/escape")).unwrap();
        assert!(e("jobs/escape").contains("not inside the cgroup2 mount"));
    }
}
