// SPDX-License-Identifier: GPL-2.0-only
//! `scx_linger tag`, `untag` and `ls`: how an operator labels job cgroups.
//!
//! Root writes `trusted.scx_linger.class`; anyone else may only write
//! `user.scx_linger.class` = guest on a cgroup they can write to (the kernel
//! checks that), which can demote a job but never promote one. After a
//! change we poke the running agent (SIGUSR1, pid from PID_FILE) so it
//! applies what changed without waiting; the agent also sees every label
//! change as a cgroupfs event (labels/watch.rs), which is how a user's
//! label reaches it (a user cannot signal a root process).

use std::io::ErrorKind;
use std::path::Path;

use anyhow::{bail, Result};
use nix::errno::Errno;

use super::agent;
use super::cgroups::{
    self, Resolved, TRUSTED_SLOT_XATTR, TRUSTED_XATTR, USER_SLOT_XATTR, USER_XATTR,
};
use super::class::Class;
use super::config::Config;
use crate::node::{self, Caps};

/// Which label a `tag` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    Trusted,
    User,
}

/// Root (CAP_SYS_ADMIN) labels with trusted.; everyone else with user.
pub fn default_namespace(caps: Caps) -> Namespace {
    if caps.has_sys_admin() {
        Namespace::Trusted
    } else {
        Namespace::User
    }
}

/// Check that a label may be written at all, before touching anything.
pub fn check_tag(ns: Namespace, class: Class) -> Result<()> {
    if ns == Namespace::User && class.tier() != Class::Guest {
        bail!(
            "only root can label a cgroup {class}: a user.-namespace label can only demote to guest or guest-gang (run as root, or tag it guest)"
        );
    }
    Ok(())
}

fn xattr_name(ns: Namespace) -> &'static str {
    match ns {
        Namespace::Trusted => TRUSTED_XATTR,
        Namespace::User => USER_XATTR,
    }
}

fn slot_xattr_name(ns: Namespace) -> &'static str {
    match ns {
        Namespace::Trusted => TRUSTED_SLOT_XATTR,
        Namespace::User => USER_SLOT_XATTR,
    }
}

/// Threads in a cgroup and all its descendants.
fn count_threads(dir: &Path) -> usize {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .filter_map(|e| std::fs::read_to_string(e.path().join("cgroup.threads")).ok())
        .map(|s| s.lines().count())
        .sum()
}

fn describe_io(e: &std::io::Error, what: &str, dir: &Path) -> anyhow::Error {
    match e.kind() {
        ErrorKind::PermissionDenied => anyhow::anyhow!(
            "no permission to {what} on {}: you need write access to the cgroup (root, or its delegated owner)",
            dir.display()
        ),
        _ => anyhow::anyhow!("cannot {what} on {}: {e}", dir.display()),
    }
}

pub fn tag(
    mount: &Path,
    cgroup: &str,
    class: &str,
    slot_ms: Option<u64>,
    ns: Namespace,
) -> Result<String> {
    let class: Class = class.parse()?;
    check_tag(ns, class)?;
    let slot_ms = match slot_ms {
        Some(_) if !class.is_gang() => {
            bail!("--slot-ms applies to gangs only: tag the cgroup gang or guest-gang, or drop it")
        }
        Some(ms) => Some(super::class::check_slot_ms(ms)?),
        None => None,
    };
    let (dir, rel) = cgroups::resolve(mount, cgroup)?;
    if rel.is_empty() {
        bail!("the root cgroup holds kernel threads and system services and is always primary: tag a job cgroup below it");
    }
    xattr::set(&dir, xattr_name(ns), class.name().as_bytes())
        .map_err(|e| describe_io(&e, "set a label", &dir))?;
    // The slot goes with the label; no --slot-ms means the default slot.
    match slot_ms {
        Some(ms) => xattr::set(&dir, slot_xattr_name(ns), ms.to_string().as_bytes())
            .map_err(|e| describe_io(&e, "set the slot length", &dir))?,
        None => match xattr::remove(&dir, slot_xattr_name(ns)) {
            Err(e) if e.raw_os_error() != Some(Errno::ENODATA as i32) => {
                return Err(describe_io(&e, "remove the slot length", &dir))
            }
            _ => {}
        },
    }
    agent::notify_agent();
    let mut msg = format!("/{rel}: {class} ({})", xattr_name(ns));
    if let Some(ms) = slot_ms {
        msg.push_str(&format!(", slot {ms} ms"));
    }
    let cpus = node::online_cpus() as usize;
    let threads = count_threads(&dir);
    if class.is_gang() && threads > cpus {
        msg.push_str(&format!(
            "\nwarning: /{rel} has {threads} threads and this node {cpus} CPUs: if more than {cpus} are runnable at once the gang cannot be co-scheduled, and its threads take turns in its slot"
        ));
    }
    Ok(msg)
}

pub fn untag(mount: &Path, cgroup: &str, caps: Caps) -> Result<String> {
    let (dir, rel) = cgroups::resolve(mount, cgroup)?;
    let mut names = vec![USER_XATTR, USER_SLOT_XATTR];
    if caps.has_sys_admin() {
        names.extend([TRUSTED_XATTR, TRUSTED_SLOT_XATTR]);
    }
    let mut removed = Vec::new();
    for name in names {
        match xattr::remove(&dir, name) {
            Ok(()) => removed.push(name),
            Err(e) if e.raw_os_error() == Some(Errno::ENODATA as i32) => {}
            Err(e) => return Err(describe_io(&e, "remove a label", &dir)),
        }
    }
    agent::notify_agent();
    Ok(if removed.is_empty() {
        format!("/{rel}: had no label")
    } else {
        format!("/{rel}: removed {}", removed.join(", "))
    })
}

/// The table `ls` prints: labelled cgroups (or all with `all`).
pub fn ls(mount: &Path, cfg: &Config, all: bool) -> Result<String> {
    let cgs = cgroups::scan(mount, cfg)?;
    let mut resolved: Vec<Resolved> = cgroups::resolve_all(&cgs, cfg.default_class);
    resolved.retain(|r| all || r.own || !r.warnings.is_empty());
    let width = resolved
        .iter()
        .map(|r| r.rel.chars().count() + 1)
        .max()
        .unwrap_or(6)
        .clamp(6, 60);
    let mut out = format!("{:<width$}  {:<10}  SOURCE\n", "CGROUP", "CLASS");
    for r in &resolved {
        let slot = r
            .slot_ms
            .map_or(String::new(), |ms| format!(", slot {ms} ms"));
        let machinery = if r.machinery {
            ", the node's machinery"
        } else {
            ""
        };
        out.push_str(&format!(
            "{:<width$}  {:<10}  {}{slot}{machinery}\n",
            format!("/{}", r.rel),
            r.class.name(),
            r.source
        ));
        for w in &r.warnings {
            out.push_str(&format!("{:<width$}  {:<10}  warning: {w}\n", "", ""));
        }
    }
    if resolved.is_empty() {
        out.push_str("(no labelled cgroups)\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_may_only_demote() {
        assert!(check_tag(Namespace::User, Class::Guest).is_ok());
        let e = check_tag(Namespace::User, Class::Primary)
            .unwrap_err()
            .to_string();
        assert!(e.contains("only root") && e.contains("demote"), "{e}");
        assert!(check_tag(Namespace::Trusted, Class::Primary).is_ok());
        assert!(check_tag(Namespace::User, Class::GuestGang).is_ok());
        assert!(check_tag(Namespace::User, Class::Gang).is_err());
    }
}
