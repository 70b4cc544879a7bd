// SPDX-License-Identifier: GPL-2.0-only
//! The agent's copy of the cgroup tree: every cgroup's labels and facts,
//! read once in full and then kept current one change at a time (the
//! changes come from watch.rs). On a node with thousands of job cgroups a
//! full walk costs tens of milliseconds of CPU under the same scheduler
//! the owners' jobs run under, so it is done only at start, when events
//! were lost, and as a rare safety net.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use super::cgroups::{self, Cgroup};
use super::config::Config;

/// What changed in the tree, as paths relative to the mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dirty {
    /// A cgroup's own labels or `cpu.idle` changed: read it again.
    One(String),
    /// A cgroup appeared or went away, with everything below it.
    Subtree(String),
    /// Events were lost: read everything again.
    All,
}

#[derive(Debug, Default)]
pub struct Tree {
    /// By path relative to the mount ("" is the root).
    cgroups: BTreeMap<String, Cgroup>,
}

impl Tree {
    /// The whole tree, read now.
    pub fn scan(mount: &Path, cfg: &Config) -> Tree {
        let mut tree = Tree::default();
        tree.refresh(mount, cfg, &Dirty::All);
        tree
    }

    pub fn count(&self) -> usize {
        self.cgroups.len()
    }

    pub fn cgroups(&self) -> impl Iterator<Item = &Cgroup> {
        self.cgroups.values()
    }

    /// What to read again when the Prolog says a Slurm job's record is
    /// written (SIGUSR1): every Slurm job's own cgroup, the one a record
    /// belongs to. No cgroupfs event comes with a record, and the job's
    /// cgroup may have been read before it was there.
    pub fn slurm_job_dirs(&self) -> Vec<Dirty> {
        self.cgroups
            .keys()
            .filter(|rel| super::slurm::job_dir(rel).is_some())
            .map(|rel| Dirty::One(rel.clone()))
            .collect()
    }

    /// Read again what `dirty` names, as the filesystem has it now.
    pub fn refresh(&mut self, mount: &Path, cfg: &Config, dirty: &Dirty) {
        match dirty {
            Dirty::All => {
                self.cgroups = cgroups::scan_under(mount, "", cfg)
                    .into_iter()
                    .map(|c| (c.rel.clone(), c))
                    .collect();
            }
            Dirty::One(rel) => match cgroups::read_cgroup(mount, &mount.join(rel), cfg) {
                Some(c) => {
                    self.cgroups.insert(rel.clone(), c);
                }
                None => self.remove_subtree(rel),
            },
            Dirty::Subtree(rel) => {
                self.remove_subtree(rel);
                for c in cgroups::scan_under(mount, rel, cfg) {
                    self.cgroups.insert(c.rel.clone(), c);
                }
            }
        }
    }

    /// Forget `rel` and every cgroup below it. Descendants' keys lie
    /// between "rel/" and "rel0" ('0' follows '/'), so this is one range.
    fn remove_subtree(&mut self, rel: &str) {
        if rel.is_empty() {
            self.cgroups.clear();
            return;
        }
        self.cgroups.remove(rel);
        let from = format!("{rel}/");
        let to = format!("{rel}0");
        let below: Vec<String> = self
            .cgroups
            .range::<str, _>((Bound::Included(from.as_str()), Bound::Excluded(to.as_str())))
            .map(|(k, _)| k.clone())
            .collect();
        for k in below {
            self.cgroups.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn rels(t: &Tree) -> Vec<&str> {
        t.cgroups().map(|c| c.rel.as_str()).collect()
    }

    #[test]
    fn a_slurm_records_arrival_reads_again_only_the_jobs_own_cgroups() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path();
        let scope = "system.slice/slurmstepd.scope";
        for d in ["job_7/step_0/user", "job_8", "system"] {
            std::fs::create_dir_all(m.join(scope).join(d)).unwrap();
        }
        let t = Tree::scan(m, &Config::default());
        assert_eq!(
            t.slurm_job_dirs(),
            [
                Dirty::One(format!("{scope}/job_7")),
                Dirty::One(format!("{scope}/job_8"))
            ]
        );
    }

    #[test]
    fn follows_creations_removals_and_label_changes_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path();
        let cfg = Config::default();
        for d in ["a/b", "a/b/c", "a-x", "z"] {
            std::fs::create_dir_all(m.join(d)).unwrap();
        }
        let mut t = Tree::scan(m, &cfg);
        assert_eq!(rels(&t), ["", "a", "a-x", "a/b", "a/b/c", "z"]);

        // A subtree goes; its sibling with a name sharing the prefix stays.
        std::fs::remove_dir_all(m.join("a/b")).unwrap();
        std::fs::create_dir_all(m.join("a/n/m")).unwrap();
        t.refresh(m, &cfg, &Dirty::Subtree("a/b".into()));
        assert_eq!(rels(&t), ["", "a", "a-x", "z"]);
        t.refresh(m, &cfg, &Dirty::Subtree("a/n".into()));
        assert_eq!(rels(&t), ["", "a", "a-x", "a/n", "a/n/m", "z"]);

        // One cgroup read again: its id follows the directory.
        std::fs::remove_dir(m.join("z")).unwrap();
        std::fs::create_dir(m.join("z")).unwrap();
        t.refresh(m, &cfg, &Dirty::One("z".into()));
        let z = t.cgroups().find(|c| c.rel == "z").unwrap();
        assert_eq!(z.id, std::fs::metadata(m.join("z")).unwrap().ino());
        std::fs::remove_dir_all(m.join("a")).unwrap();
        t.refresh(m, &cfg, &Dirty::One("a".into()));
        assert_eq!(rels(&t), ["", "a-x", "z"]);
        assert_eq!(t.count(), 3);
    }
}
