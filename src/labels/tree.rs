// SPDX-License-Identifier: GPL-2.0-only
//! The agent's copy of the cgroup tree: every cgroup's labels and facts,
//! read once in full and then kept current one change at a time (the
//! changes come from watch.rs). On a node with thousands of job cgroups a
//! full walk costs tens of milliseconds of CPU under the same scheduler
//! the owners' jobs run under, so it is done only at start, when events
//! were lost, and as a rare safety net.
//!
//! Each cgroup's resolved class is kept beside it and worked out again
//! only below what changed: a cgroup's answer depends on its own facts
//! and its parent's answer alone (cgroups::resolve_one), so a job made
//! or removed costs its own subtree, not the node's thousands of
//! cgroups.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;

use super::cgroups::{self, Cgroup, Resolved};
use super::class::Class;
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
    /// Each cgroup's answer, by the same paths, as of the last resolve().
    resolved: BTreeMap<String, Resolved>,
    /// Roots of the subtrees read again since the last resolve().
    stale: BTreeSet<String>,
    /// The default class the answers were worked out with.
    resolved_with: Option<Class>,
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

    /// Every cgroup's answer as of the last resolve(), in path order.
    pub fn resolved(&self) -> impl Iterator<Item = &Resolved> + Clone {
        self.resolved.values()
    }

    /// Work out again the answers below every cgroup read again since the
    /// last call (all of them when `default` changed). Returns how many
    /// answers were made or dropped (a removed cgroup's answer goes: the
    /// stats forget its job by that).
    pub fn resolve(&mut self, default: Class) -> usize {
        if self.resolved_with != Some(default) {
            self.stale = BTreeSet::from([String::new()]);
            self.resolved_with = Some(default);
        }
        let stale = std::mem::take(&mut self.stale);
        let mut count = 0;
        for top in &stale {
            // Below a root resolved in this call already.
            let mut up = cgroups::parent_of(top);
            if std::iter::from_fn(|| {
                let p = up?;
                up = cgroups::parent_of(p);
                Some(p)
            })
            .any(|p| stale.contains(p))
            {
                continue;
            }
            count += remove_subtree(&mut self.resolved, top);
            for (rel, c) in subtree(&self.cgroups, top) {
                let parent = cgroups::parent_of(rel).and_then(|p| self.resolved.get(p));
                let r = cgroups::resolve_one(c, parent, default);
                self.resolved.insert(rel.clone(), r);
                count += 1;
            }
        }
        #[cfg(debug_assertions)]
        self.assert_same_as_whole_tree(default);
        count
    }

    /// The test build (what the guest tests run) holds every pass's kept
    /// answers to a whole-tree pass over the same facts: a change whose
    /// effect reached beyond the subtree it named would show here first.
    #[cfg(debug_assertions)]
    fn assert_same_as_whole_tree(&self, default: Class) {
        let whole = cgroups::resolve_all(self.cgroups.values(), default);
        let kept: Vec<&Resolved> = self.resolved.values().collect();
        if let Some((w, k)) = whole.iter().zip(&kept).find(|(w, k)| w != *k) {
            panic!("kept label answer differs from a whole-tree pass: {k:?} vs {w:?}");
        }
        assert_eq!(
            whole.len(),
            kept.len(),
            "kept label answers and a whole-tree pass differ in number"
        );
    }

    /// Read again what `dirty` names, as the filesystem has it now.
    pub fn refresh(&mut self, mount: &Path, cfg: &Config, dirty: &Dirty) {
        // A cgroup's change reaches everything that inherits from it.
        self.stale.insert(match dirty {
            Dirty::All => String::new(),
            Dirty::One(rel) | Dirty::Subtree(rel) => rel.clone(),
        });
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
                None => {
                    remove_subtree(&mut self.cgroups, rel);
                }
            },
            Dirty::Subtree(rel) => {
                remove_subtree(&mut self.cgroups, rel);
                for c in cgroups::scan_under(mount, rel, cfg) {
                    self.cgroups.insert(c.rel.clone(), c);
                }
            }
        }
    }
}

/// `rel` and every path below it, in path order. Descendants' keys lie
/// between "rel/" and "rel0" ('0' follows '/'), so this is one range.
fn subtree<'a, V>(map: &'a BTreeMap<String, V>, rel: &str) -> Vec<(&'a String, &'a V)> {
    if rel.is_empty() {
        return map.iter().collect();
    }
    let from = format!("{rel}/");
    let to = format!("{rel}0");
    map.get_key_value(rel)
        .into_iter()
        .chain(map.range::<str, _>((Bound::Included(from.as_str()), Bound::Excluded(to.as_str()))))
        .collect()
}

/// Forget `rel` and every path below it; how many there were.
fn remove_subtree<V>(map: &mut BTreeMap<String, V>, rel: &str) -> usize {
    let below: Vec<String> = subtree(map, rel)
        .into_iter()
        .map(|(k, _)| k.clone())
        .collect();
    for k in &below {
        map.remove(k);
    }
    below.len()
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

#[cfg(test)]
mod resolve_tests {
    use super::*;
    use crate::labels::class::Facts;

    fn cg(rel: &str, id: u64, trusted: Option<&str>, slurm_job: Option<u64>) -> Cgroup {
        Cgroup {
            rel: rel.into(),
            id,
            facts: Facts {
                trusted: trusted.map(str::to_string),
                slurm_job,
                ..Facts::default()
            },
            cpu_max: None,
        }
    }

    /// Random labels on a random tree, changed one cgroup or subtree at a
    /// time: the answers kept current below each change are always the
    /// answers of resolving the whole tree afresh.
    #[test]
    fn answers_resolved_below_each_change_equal_a_whole_tree_pass() {
        let labels = [
            None,
            None,
            Some("guest"),
            Some("gang"),
            Some("primary"),
            Some("nonsense"),
        ];
        let names = ["a", "a-x", "b", "job_7", "step_0", "slurm", "c"];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut tree = Tree::default();
        tree.cgroups.insert(String::new(), cg("", 1, None, None));
        tree.stale.insert(String::new());
        let mut id = 2;
        for round in 0..1000 {
            let rels: Vec<String> = tree.cgroups.keys().cloned().collect();
            let at = rels[next(rels.len())].clone();
            let dirty = match next(8) {
                // A new child (a job starting), labelled or not.
                0..=4 => {
                    let name = names[next(names.len())];
                    let rel = if at.is_empty() {
                        name.to_string()
                    } else {
                        format!("{at}/{name}")
                    };
                    let job = name.starts_with("job_").then_some(7);
                    tree.cgroups
                        .insert(rel.clone(), cg(&rel, id, labels[next(labels.len())], job));
                    id += 1;
                    Dirty::Subtree(rel)
                }
                // A label changed.
                5 | 6 => {
                    let c = tree.cgroups.get_mut(&at).unwrap();
                    c.facts.trusted = labels[next(labels.len())].map(str::to_string);
                    Dirty::One(at)
                }
                // A subtree removed (a job ending).
                _ if !at.is_empty() => {
                    remove_subtree(&mut tree.cgroups, &at);
                    Dirty::Subtree(at)
                }
                _ => Dirty::All,
            };
            tree.stale.insert(match &dirty {
                Dirty::All => String::new(),
                Dirty::One(r) | Dirty::Subtree(r) => r.clone(),
            });
            let default = if round % 97 == 0 {
                Class::Guest
            } else {
                Class::Primary
            };
            tree.resolve(default);
            let whole = cgroups::resolve_all(tree.cgroups.values(), default);
            let kept: Vec<&Resolved> = tree.resolved().collect();
            assert_eq!(
                kept,
                whole.iter().collect::<Vec<_>>(),
                "after {dirty:?} in round {round}"
            );
        }
        assert!(tree.count() > 20, "the tree grew: {}", tree.count());
    }

    #[test]
    fn a_change_resolves_its_own_subtree_only_and_a_removal_counts() {
        let mut tree = Tree::default();
        for (i, rel) in ["", "a", "a/b", "c", "c/d", "c/e"].iter().enumerate() {
            tree.cgroups
                .insert(rel.to_string(), cg(rel, i as u64 + 1, None, None));
        }
        tree.stale.insert(String::new());
        assert_eq!(tree.resolve(Class::Primary), 6);
        tree.cgroups
            .insert("c/f".into(), cg("c/f", 9, Some("guest"), None));
        tree.stale.insert("c/f".into());
        // Its answer is made (there was none to drop).
        assert_eq!(tree.resolve(Class::Primary), 1);
        // A label on c reaches its three children: four answers dropped,
        // four made; a new default, all seven of each.
        tree.stale.insert("c".into());
        tree.stale.insert("c/d".into());
        assert_eq!(tree.resolve(Class::Primary), 8);
        assert_eq!(tree.resolve(Class::Guest), 14);
        assert_eq!(tree.resolve(Class::Guest), 0);
        // A job that ends: its answers go, and that is a change.
        remove_subtree(&mut tree.cgroups, "a");
        tree.stale.insert("a".into());
        assert_eq!(tree.resolve(Class::Guest), 2);
        assert!(tree.resolved().all(|r| !r.rel.starts_with('a')));
    }
}
