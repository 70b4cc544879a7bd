// SPDX-License-Identifier: GPL-2.0-only
//! Scheduling classes and how a cgroup comes by one.
//!
//! This is the policy of who may label what, kept free of I/O so that it is
//! tested here without a kernel:
//!
//! - root's label (`trusted.scx_linger.class`) wins over everything;
//! - a config rule comes next;
//! - a user who owns a delegated cgroup may demote it to guest with
//!   `user.scx_linger.class`, but a `user.` label never promotes: it cannot
//!   make anything primary, and it cannot overrule root's label;
//! - a cgroup with `cpu.idle` = 1 (what systemd, runc and Kubernetes set
//!   for background work) is a guest unless labelled otherwise;
//! - anything else inherits from its parent; the root cgroup, which holds
//!   kernel threads and the system itself, is always primary.
//!
//! A gang (a parallel job whose threads are co-scheduled) is primary work;
//! a guest gang is co-scheduled too, but only in what primaries leave
//! idle, so for the who-may-label rules it counts as a guest.

use std::fmt;
use std::str::FromStr;

use crate::bpf::intf;

/// A scheduling class as operators label it: enum linger_class of
/// bpf/intf.h, whose values these are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum Class {
    Primary = intf::linger_class_LINGER_CLASS_PRIMARY,
    Guest = intf::linger_class_LINGER_CLASS_GUEST,
    /// A parallel job of primary work, co-scheduled in time slots.
    Gang = intf::linger_class_LINGER_CLASS_GANG,
    /// A parallel job co-scheduled in the capacity primaries leave idle.
    GuestGang = intf::linger_class_LINGER_CLASS_GUEST_GANG,
}

/// How many classes there are (LINGER_NR_CLASSES).
pub const NR_CLASSES: usize = intf::linger_class_LINGER_NR_CLASSES as usize;

impl Class {
    /// Every class, in enum linger_class order: the order of the BPF
    /// side's per-class accounting arrays.
    pub const ALL: [Class; NR_CLASSES] =
        [Class::Primary, Class::Guest, Class::Gang, Class::GuestGang];

    pub const NAMES: &'static str = "primary, guest, gang, guest-gang";

    /// Its enum linger_class value, as labels carry it to the BPF side.
    pub fn bpf_value(self) -> u32 {
        self as u32
    }

    /// Its index into the BPF side's per-class arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Primary or Guest: which of the two strict-priority tiers (bit 0
    /// of the class, LINGER_CLASS_TIER_MASK).
    pub fn tier(self) -> Class {
        if self as u32 & intf::linger_class_LINGER_CLASS_TIER_MASK == 0 {
            Class::Primary
        } else {
            Class::Guest
        }
    }

    /// Co-scheduled in time slots (LINGER_CLASS_GANG_BIT).
    pub fn is_gang(self) -> bool {
        self as u32 & intf::linger_class_LINGER_CLASS_GANG_BIT != 0
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Primary => "primary",
            Class::Guest => "guest",
            Class::Gang => "gang",
            Class::GuestGang => "guest-gang",
        }
    }
}

/// Default gang slot length (LINGER_DEFAULT_SLOT_MS).
pub const DEFAULT_SLOT_MS: u32 = intf::LINGER_DEFAULT_SLOT_MS;
/// Default share of the primary gang cycle left to ordinary work.
pub const DEFAULT_OPEN_PCT: u32 = intf::LINGER_DEFAULT_OPEN_PCT;
/// Accepted slot lengths: short enough to rotate within a second, long
/// enough that switching costs little (SCore-D: 1.4% at 1 s, more below).
pub const SLOT_MS_RANGE: std::ops::RangeInclusive<u64> = 10..=1000;

/// A gang's slot length as a label or rule gives it, checked.
pub fn check_slot_ms(ms: u64) -> anyhow::Result<u32> {
    if !SLOT_MS_RANGE.contains(&ms) {
        anyhow::bail!(
            "slot length {ms} ms is out of range: use {} to {} ms",
            SLOT_MS_RANGE.start(),
            SLOT_MS_RANGE.end()
        );
    }
    Ok(ms as u32)
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parse error for a class name: says which names exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClass(pub String);

impl fmt::Display for UnknownClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: String = self.0.chars().take(40).collect();
        write!(f, "unknown class {shown:?}: use one of {}", Class::NAMES)
    }
}

impl std::error::Error for UnknownClass {}

impl FromStr for Class {
    type Err = UnknownClass;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "primary" => Ok(Class::Primary),
            "guest" => Ok(Class::Guest),
            "gang" => Ok(Class::Gang),
            "guest-gang" => Ok(Class::GuestGang),
            _ => Err(UnknownClass(s.to_string())),
        }
    }
}

/// Where a cgroup's class came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `trusted.scx_linger.class`, set by root.
    Trusted,
    /// `user.scx_linger.class` = guest, set by the cgroup's owner.
    User,
    /// The Slurm job's own request (`sbatch --linger`, labels/slurm.rs).
    Request,
    /// A config rule, by its pattern.
    Config(String),
    /// `cpu.idle` = 1.
    CpuIdle,
    /// Nearest labelled ancestor, by its path.
    Inherited(String),
    /// No label anywhere above: the config's default class.
    Default,
    /// The root cgroup: always primary.
    Root,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Trusted => write!(f, "label (trusted.)"),
            Source::User => write!(f, "owner's label (user.)"),
            Source::Request => write!(f, "the job's --linger request"),
            Source::Config(p) => write!(f, "config rule {p:?}"),
            Source::CpuIdle => write!(f, "cpu.idle=1"),
            Source::Inherited(from) => write!(f, "inherited from /{from}"),
            Source::Default => write!(f, "default"),
            Source::Root => write!(f, "root cgroup"),
        }
    }
}

/// What is known about one cgroup before deciding its class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// `trusted.scx_linger.class`: absent, or the raw value.
    pub trusted: Option<String>,
    /// `user.scx_linger.class`: absent, or the raw value.
    pub user: Option<String>,
    /// The class of the first config rule matching the cgroup's path.
    pub rule: Option<(Class, String)>,
    /// `cpu.idle` reads 1.
    pub cpu_idle: bool,
    /// `trusted.scx_linger.slot_ms` / `user.scx_linger.slot_ms`: raw values.
    pub trusted_slot: Option<String>,
    pub user_slot: Option<String>,
    /// The slot length of the matching config rule, if it gives one.
    pub rule_slot: Option<u32>,
    /// The Slurm job's `--linger` request, class and slot (raw), from the
    /// Prolog's record: like a user label, it can only demote.
    pub request: Option<String>,
    pub request_slot: Option<String>,
    /// This is Slurm job N's own cgroup: a job of its own.
    pub slurm_job: Option<u64>,
    /// `trusted.scx_linger.row` (raw), else the cluster row slurmctld gave
    /// the Slurm job (slurm_rows.rs): root's and the batch system's only.
    pub trusted_row: Option<String>,
    pub record_row: Option<u32>,
    /// The Slurm job runs on other nodes too (the Prolog's record).
    pub spans_nodes: bool,
    /// Someone other than root owns the directory: a delegated subtree,
    /// which is its user's, never the node's machinery.
    pub delegated: bool,
}

/// The class a cgroup's own labels give it, if any (not inherited).
pub fn own_class(f: &Facts) -> Option<(Class, Source)> {
    if let Some(Ok(c)) = f.trusted.as_deref().map(Class::from_str) {
        return Some((c, Source::Trusted));
    }
    // A user label, or a job's own request, counts only as a demotion
    // (guest or guest-gang); the cgroup's owner's label comes first.
    let demotion = |raw: Option<&str>| match raw.map(Class::from_str) {
        Some(Ok(c)) if c.tier() == Class::Guest => Some(c),
        _ => None,
    };
    let user_demotion = demotion(f.user.as_deref())
        .map(|c| (c, Source::User))
        .or_else(|| demotion(f.request.as_deref()).map(|c| (c, Source::Request)));
    if let Some((class, pattern)) = &f.rule {
        if let (Some(u), Class::Primary) = (&user_demotion, class.tier()) {
            return Some(u.clone());
        }
        return Some((*class, Source::Config(pattern.clone())));
    }
    if user_demotion.is_some() {
        return user_demotion;
    }
    if f.cpu_idle {
        return Some((Class::Guest, Source::CpuIdle));
    }
    None
}

/// Problems with a cgroup's labels that `ls` reports: a label that does
/// not parse, or a user label that tries to promote.
pub fn label_warnings(f: &Facts) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(Err(e)) = f.trusted.as_deref().map(Class::from_str) {
        w.push(format!("trusted. label ignored: {e}"));
    }
    match f.user.as_deref().map(Class::from_str) {
        Some(Err(e)) => w.push(format!("user. label ignored: {e}")),
        Some(Ok(c)) if c.tier() == Class::Primary => w.push(format!(
            "user. label \"{c}\" ignored: user labels can only demote to guest or guest-gang"
        )),
        _ => {}
    }
    match f.request.as_deref().map(Class::from_str) {
        Some(Err(e)) => w.push(format!("--linger request ignored: {e}")),
        Some(Ok(c)) if c.tier() == Class::Primary => w.push(format!(
            "--linger={c} ignored: a job can only ask to be guest or guest-gang; the site's [[slurm_rule]]s grant more"
        )),
        _ => {}
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(trusted: Option<&str>, user: Option<&str>, rule: Option<Class>, idle: bool) -> Facts {
        Facts {
            trusted: trusted.map(str::to_string),
            user: user.map(str::to_string),
            rule: rule.map(|c| (c, "pat".to_string())),
            cpu_idle: idle,
            ..Facts::default()
        }
    }

    #[test]
    fn slot_lengths_are_checked() {
        assert_eq!(check_slot_ms(100).unwrap(), 100);
        assert!(check_slot_ms(9)
            .unwrap_err()
            .to_string()
            .contains("10 to 1000"));
        assert!(check_slot_ms(u64::MAX).is_err());
    }

    #[test]
    fn classes_are_the_bpf_vocabulary_in_its_order() {
        for (i, c) in Class::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(c.name().parse::<Class>(), Ok(*c));
        }
        assert_eq!(Class::ALL.len(), NR_CLASSES);
        assert_eq!(Class::Gang.tier(), Class::Primary);
        assert_eq!(Class::GuestGang.tier(), Class::Guest);
        assert!(Class::Gang.is_gang() && Class::GuestGang.is_gang());
        assert!(!Class::Primary.is_gang() && !Class::Guest.is_gang());
        assert_eq!(
            Class::Guest.bpf_value(),
            intf::linger_tier_LINGER_TIER_GUEST
        );
    }

    #[test]
    fn parses_class_names_and_rejects_others() {
        assert_eq!("guest".parse(), Ok(Class::Guest));
        assert_eq!(" primary\n".parse(), Ok(Class::Primary));
        let e = "gust".parse::<Class>().unwrap_err().to_string();
        assert!(
            e.contains("\"gust\"") && e.contains("primary, guest"),
            "{e}"
        );
        assert!("".parse::<Class>().is_err());
        let long = "x".repeat(10_000);
        assert!(long.parse::<Class>().unwrap_err().to_string().len() < 120);
    }

    #[test]
    fn trusted_label_wins_over_everything() {
        let f = facts(Some("primary"), Some("guest"), Some(Class::Guest), true);
        assert_eq!(own_class(&f), Some((Class::Primary, Source::Trusted)));
        let f = facts(Some("guest"), None, Some(Class::Primary), false);
        assert_eq!(own_class(&f), Some((Class::Guest, Source::Trusted)));
    }

    #[test]
    fn user_label_demotes_but_never_promotes() {
        assert_eq!(
            own_class(&facts(None, Some("guest"), None, false)),
            Some((Class::Guest, Source::User))
        );
        assert_eq!(own_class(&facts(None, Some("primary"), None, false)), None);
        assert_eq!(
            own_class(&facts(None, Some("primary"), Some(Class::Guest), false))
                .unwrap()
                .0,
            Class::Guest
        );
        assert_eq!(
            own_class(&facts(None, Some("guest"), Some(Class::Primary), false)),
            Some((Class::Guest, Source::User))
        );
        assert_eq!(
            own_class(&facts(None, Some("primary"), None, true)),
            Some((Class::Guest, Source::CpuIdle))
        );
        let w = label_warnings(&facts(None, Some("primary"), None, false));
        assert!(w[0].contains("only demote"), "{w:?}");
    }

    #[test]
    fn config_rule_beats_cpu_idle() {
        assert_eq!(
            own_class(&facts(None, None, Some(Class::Primary), true))
                .unwrap()
                .0,
            Class::Primary
        );
        assert_eq!(
            own_class(&facts(None, None, None, true)),
            Some((Class::Guest, Source::CpuIdle))
        );
        assert_eq!(own_class(&Facts::default()), None);
    }

    #[test]
    fn a_bad_trusted_value_is_ignored_and_reported() {
        let f = facts(Some("gang?"), None, None, true);
        assert_eq!(own_class(&f), Some((Class::Guest, Source::CpuIdle)));
        assert!(label_warnings(&f)[0].contains("trusted."));
    }

    #[test]
    fn gangs_parse_and_a_user_may_only_make_a_guest_gang() {
        assert_eq!("gang".parse(), Ok(Class::Gang));
        assert_eq!("guest-gang".parse(), Ok(Class::GuestGang));
        assert_eq!(
            own_class(&facts(None, Some("guest-gang"), None, false)),
            Some((Class::GuestGang, Source::User))
        );
        assert_eq!(own_class(&facts(None, Some("gang"), None, false)), None);
        assert!(label_warnings(&facts(None, Some("gang"), None, false))[0].contains("only demote"));
        assert_eq!(
            own_class(&facts(None, Some("guest-gang"), Some(Class::Gang), false)),
            Some((Class::GuestGang, Source::User))
        );
    }
}
