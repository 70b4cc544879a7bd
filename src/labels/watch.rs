// SPDX-License-Identifier: GPL-2.0-only
//! The cgroup tree's changes as they happen, from inotify on cgroupfs, so
//! the agent sleeps while the tree is quiet (the agent runs as a primary:
//! a periodic full walk is CPU that an owner's waking task waits behind).
//!
//! What the kernel reports on cgroupfs, and what each event means here:
//! - `mkdir`/`rmdir` of a cgroup: IN_CREATE/IN_DELETE with IN_ISDIR in its
//!   parent's watch: the subtree is read again (tree.rs).
//! - A label set or removed (`setxattr`, as `tag` and `setfattr` do):
//!   IN_ATTRIB on the cgroup's own watch (and its parent's): the cgroup is
//!   read again.
//! - A write to `cpu.idle` or `cpu.max`: IN_MODIFY named so in the
//!   cgroup's watch (the first may change its class, the second its CPU
//!   limit). Other files' writes (`cgroup.procs`, the kernel's own
//!   `cgroup.events` notifications) are not label changes and are dropped.
//! - The event queue overflowed: everything is read again.
//!
//! Each watch costs one of the user's `fs.inotify.max_user_watches`. When
//! one cannot be had the agent says so in one line and goes back to
//! periodic full rescans (session.rs), which need no watches.
//!
//! nix's inotify binding is used as it is (no crate adds a tree walk this
//! needs: new directories must be watched before they are read, so that
//! nothing created meanwhile is missed).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use log::debug;
use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, InotifyEvent, WatchDescriptor};
use walkdir::WalkDir;

use super::tree::Dirty;

/// What the watcher tells the run loop.
#[derive(Debug)]
pub enum Change {
    /// These parts of the tree changed.
    Dirty(Vec<Dirty>),
    /// Some cgroups cannot be watched: their changes would go unseen
    /// without periodic rescans. Says why and what fixes it.
    Blind(String),
}

fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_ONLYDIR
}

struct Watcher {
    fd: Inotify,
    mount: PathBuf,
    /// Watch -> cgroup path relative to the mount.
    dirs: HashMap<WatchDescriptor, String>,
    /// The limit was hit and said so; further misses are not repeated.
    blind: bool,
}

impl Watcher {
    /// Watch `rel` and every directory below it; a watch that cannot be
    /// had is returned as the reason, once.
    fn watch_subtree(&mut self, rel: &str) -> Option<String> {
        let top = self.mount.join(rel);
        let mut why = None;
        for entry in WalkDir::new(top).follow_links(false).into_iter().flatten() {
            if !entry.file_type().is_dir() {
                continue;
            }
            match self.fd.add_watch(entry.path(), mask()) {
                Ok(wd) => {
                    let rel = entry
                        .path()
                        .strip_prefix(&self.mount)
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    self.dirs.insert(wd, rel);
                }
                // Removed since the walk saw it: nothing to watch.
                Err(Errno::ENOENT | Errno::ENOTDIR) => {}
                Err(e) if !self.blind => {
                    self.blind = true;
                    why = Some(if e == Errno::ENOSPC {
                        format!(
                            "cannot watch more than {} cgroups (fs.inotify.max_user_watches): raise it (sysctl fs.inotify.max_user_watches=1048576) for event-driven labels; until then the agent rescans every cgroup periodically",
                            self.dirs.len()
                        )
                    } else {
                        format!(
                            "cannot watch cgroup {} ({e}): the agent rescans every cgroup periodically",
                            entry.path().display()
                        )
                    });
                }
                Err(_) => {}
            }
        }
        why
    }

    /// What one batch of events means for the tree.
    fn interpret(&mut self, events: Vec<InotifyEvent>) -> (Vec<Dirty>, Option<String>) {
        let mut dirty: Vec<Dirty> = Vec::new();
        let mut why = None;
        let mut add = |d: Dirty| {
            if !dirty.contains(&d) {
                dirty.push(d);
            }
        };
        for ev in events {
            let m = ev.mask;
            if m.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                add(Dirty::All);
                continue;
            }
            if m.contains(AddWatchFlags::IN_IGNORED) {
                self.dirs.remove(&ev.wd);
                // A map keeps its capacity: after a burst of cgroups it
                // would hold the burst's table for the agent's life.
                if self.dirs.len() * 4 < self.dirs.capacity() && self.dirs.capacity() > 1024 {
                    self.dirs.shrink_to_fit();
                }
                continue;
            }
            let Some(dir) = self.dirs.get(&ev.wd).cloned() else {
                continue;
            };
            let child = ev.name.as_deref().map(|n| join(&dir, n));
            let is_dir = m.contains(AddWatchFlags::IN_ISDIR);
            match child {
                None if m.contains(AddWatchFlags::IN_ATTRIB) => add(Dirty::One(dir)),
                None => {}
                Some(c) if is_dir && m.contains(AddWatchFlags::IN_CREATE) => {
                    // Watch first, then read: a cgroup made below it
                    // meanwhile is seen by the read or by its own event.
                    why = why.or(self.watch_subtree(&c));
                    add(Dirty::Subtree(c));
                }
                Some(c)
                    if is_dir
                        && m.intersects(
                            AddWatchFlags::IN_DELETE
                                | AddWatchFlags::IN_MOVED_FROM
                                | AddWatchFlags::IN_MOVED_TO,
                        ) =>
                {
                    // A renamed cgroup keeps its watches but not their
                    // paths: read everything again.
                    if m.intersects(AddWatchFlags::IN_MOVED_FROM | AddWatchFlags::IN_MOVED_TO) {
                        add(Dirty::All);
                    } else {
                        add(Dirty::Subtree(c));
                    }
                }
                Some(c) if is_dir && m.contains(AddWatchFlags::IN_ATTRIB) => add(Dirty::One(c)),
                Some(_)
                    if ev.name.as_deref() == Some(OsStr::new("cpu.idle"))
                        || ev.name.as_deref() == Some(OsStr::new("cpu.max")) =>
                {
                    add(Dirty::One(dir))
                }
                Some(_) => {}
            }
        }
        if dirty.contains(&Dirty::All) {
            // Paths may have moved: watch afresh what exists now.
            for wd in std::mem::take(&mut self.dirs).into_keys() {
                let _ = self.fd.rm_watch(wd);
            }
            self.blind = false;
            why = why.or(self.watch_subtree(""));
            dirty = vec![Dirty::All];
        }
        (dirty, why)
    }
}

fn join(dir: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if dir.is_empty() {
        name.into_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Watch the tree under `mount` and hand each batch of changes to `send`
/// from a thread of its own, until `send` returns false. Fails only if
/// inotify itself cannot be had; a watch limit is reported as
/// `Change::Blind` through `send`.
pub fn spawn(mount: &Path, mut send: impl FnMut(Change) -> bool + Send + 'static) -> Result<()> {
    let fd = Inotify::init(InitFlags::IN_CLOEXEC).context("inotify_init")?;
    let mut w = Watcher {
        fd,
        mount: mount.to_path_buf(),
        dirs: HashMap::new(),
        blind: false,
    };
    let first = w.watch_subtree("");
    debug!("watching {} cgroups", w.dirs.len());
    std::thread::Builder::new()
        .name("cgroup-watch".into())
        .spawn(move || {
            if let Some(why) = first {
                if !send(Change::Blind(why)) {
                    return;
                }
            }
            loop {
                let events = match w.fd.read_events() {
                    Ok(ev) => ev,
                    Err(Errno::EINTR) => continue,
                    Err(e) => {
                        send(Change::Blind(format!(
                            "reading cgroup events failed ({e}): the agent rescans every cgroup periodically"
                        )));
                        return;
                    }
                };
                let (dirty, why) = w.interpret(events);
                if let Some(why) = why {
                    if !send(Change::Blind(why)) {
                        return;
                    }
                }
                if !dirty.is_empty() && !send(Change::Dirty(dirty)) {
                    return;
                }
            }
        })
        .context("starting the cgroup watch thread")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Changes until `want` is among them (or a second passes).
    fn until(rx: &mpsc::Receiver<Change>, want: &Dirty) -> Vec<Dirty> {
        let mut seen = Vec::new();
        while let Ok(c) = rx.recv_timeout(Duration::from_secs(1)) {
            if let Change::Dirty(d) = c {
                seen.extend(d);
                if seen.contains(want) {
                    break;
                }
            }
        }
        seen
    }

    #[test]
    fn reports_new_and_removed_directories_and_label_changes() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().to_path_buf();
        std::fs::create_dir(m.join("a")).unwrap();
        let (tx, rx) = mpsc::channel();
        spawn(&m, move |c| tx.send(c).is_ok()).unwrap();

        std::fs::create_dir(m.join("a/b")).unwrap();
        let want = Dirty::Subtree("a/b".into());
        assert!(until(&rx, &want).contains(&want));
        // The new directory is watched: a child of it is seen too.
        std::fs::create_dir(m.join("a/b/c")).unwrap();
        let want = Dirty::Subtree("a/b/c".into());
        assert!(until(&rx, &want).contains(&want));
        // A file named cpu.idle written: the cgroup is read again; other
        // files are not label changes.
        std::fs::write(m.join("a/cgroup.procs"), "1").unwrap();
        std::fs::write(m.join("a/cpu.idle"), "1").unwrap();
        let want = Dirty::One("a".into());
        let seen = until(&rx, &want);
        assert_eq!(seen, [want], "{seen:?}");
        // And cpu.max: the cgroup's limit is read again.
        std::fs::write(m.join("a/cpu.max"), "50000 100000").unwrap();
        let want = Dirty::One("a".into());
        let seen = until(&rx, &want);
        assert_eq!(seen, [want], "{seen:?}");
        // Attribute change on a directory (as setxattr makes).
        let want = Dirty::One("a/b".into());
        let perm = std::fs::metadata(m.join("a/b")).unwrap().permissions();
        std::fs::set_permissions(m.join("a/b"), perm).unwrap();
        assert!(until(&rx, &want).contains(&want));
        std::fs::remove_dir(m.join("a/b/c")).unwrap();
        let want = Dirty::Subtree("a/b/c".into());
        assert!(until(&rx, &want).contains(&want));
    }
}
