// SPDX-License-Identifier: GPL-2.0-only
//! Cluster rows for multi-node gang jobs, decided by the batch system.
//!
//! A parallel job's ranks on different nodes wait for each other at every
//! exchange, so its gang slot must come at the same moment on each of its
//! nodes. Every node cuts its primary gang cycle into the same rows (the
//! config's `[rows]`, gangs/table.rs), and each multi-node job holds one
//! row on all of its nodes: an Ousterhout matrix, a row per slot, a
//! column per node.
//!
//! One owner decides the rows: slurmctld, the one process that sees every
//! job and node. `scx_linger slurm row` runs as its PrologSlurmctld, once
//! per job before any of the job's nodes start it, and gives a job that
//! spans more than one node the row that the fewest running jobs sharing a
//! node with it hold (none, while there are rows enough). It keeps the
//! choice in the job's own record at the controller, its AdminComment,
//! which only Slurm's administrators (and slurmctld's user) may change,
//! and a node's Prolog (`slurm prolog`, slurm.rs) reads it back from
//! there into the job's record on the node. Nothing of ours talks to
//! other nodes, and nothing outlives the job: a row is free again when no
//! running job holds it.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::fcntl::{Flock, FlockArg};

use super::slurm_client::{self, JobInfo};

/// The token in a job's AdminComment that holds its row.
pub const ROW_TOKEN: &str = "linger_row=";

/// Expand a Slurm hostlist (`n[1-3,7],gpu[01-02]`) into host names.
pub fn expand_hostlist(list: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for item in split_top(list.trim())? {
        if item.is_empty() {
            continue;
        }
        let mut names = vec![String::new()];
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..]
                .find(']')
                .map(|c| open + c)
                .with_context(|| format!("hostlist {list:?}: '[' without ']'"))?;
            let prefix = &rest[..open];
            let mut next = Vec::new();
            for range in rest[open + 1..close].split(',') {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                let (a, b): (u64, u64) = (
                    lo.parse()
                        .with_context(|| format!("hostlist {list:?}: bad range {range:?}"))?,
                    hi.parse()
                        .with_context(|| format!("hostlist {list:?}: bad range {range:?}"))?,
                );
                if b < a || b - a > 100_000 {
                    bail!("hostlist {list:?}: bad range {range:?}");
                }
                for n in &names {
                    for i in a..=b {
                        next.push(format!("{n}{prefix}{i:0width$}", width = lo.len()));
                    }
                }
            }
            names = next;
            rest = &rest[close + 1..];
        }
        out.extend(names.into_iter().map(|n| format!("{n}{rest}")));
    }
    Ok(out)
}

/// Split a hostlist at the commas outside brackets.
fn split_top(list: &str) -> Result<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&list[from..i]);
                from = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            bail!("hostlist {list:?}: ']' without '['");
        }
    }
    parts.push(&list[from..]);
    Ok(parts)
}

/// The row in an AdminComment: our token at its start.
pub fn row_in(admin_comment: &str) -> Option<u32> {
    admin_comment
        .strip_prefix(ROW_TOKEN)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// An AdminComment without our token: what the site had there.
pub fn without_row(admin_comment: &str) -> &str {
    match admin_comment.strip_prefix(ROW_TOKEN) {
        Some(r) => r
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start_matches(';')
            .trim_end(),
        None => admin_comment.trim_end(),
    }
}

/// The AdminComment that gives a job `row`, keeping what was there.
pub fn admin_comment_with_row(row: u32, kept: &str) -> String {
    if kept.is_empty() {
        format!("{ROW_TOKEN}{row}")
    } else {
        format!("{ROW_TOKEN}{row};{kept}")
    }
}

/// The row for a job on `nodes`, of `count`: the one the fewest of the
/// `others` (each job's nodes and row) sharing a node with it hold; the
/// lowest such row, so that jobs on disjoint nodes all start at row 0.
pub fn choose_row(count: u32, nodes: &[String], others: &[(Vec<String>, u32)]) -> u32 {
    let count = count.max(1) as usize;
    let mut load = vec![0u32; count];
    for (theirs, row) in others {
        if theirs.iter().any(|n| nodes.contains(n)) {
            load[*row as usize % count] += 1;
        }
    }
    let least = load.iter().copied().min().unwrap_or(0);
    load.iter().position(|&l| l == least).unwrap_or(0) as u32
}

/// Job states in which a job holds its row: it runs, or is being started
/// (PrologSlurmctld runs while it is CONFIGURING), or is stopped or
/// suspended on its nodes (slurm_client::ROW_HOLDING_STATES).
fn holds_row(states: &[String]) -> bool {
    states.iter().any(|s| {
        matches!(
            s.as_str(),
            "RUNNING" | "CONFIGURING" | "SUSPENDED" | "STOPPED" | "COMPLETING"
        )
    })
}

/// The rows held by `jobs` other than `job`, with their nodes.
pub fn held_rows(jobs: &[JobInfo], job: u64) -> Result<Vec<(Vec<String>, u32)>> {
    let mut out = Vec::new();
    for j in jobs.iter().filter(|j| j.id != job && holds_row(&j.states)) {
        if let Some(row) = row_in(&j.admin_comment) {
            out.push((expand_hostlist(&j.nodes)?, row));
        }
    }
    Ok(out)
}

/// Where concurrent PrologSlurmctlds take turns: the row one picks must
/// be in its job's record before the next one looks. A directory of
/// slurmctld's user's own (mode 0700, checked), in /run/lock, which
/// anyone may write: nobody else can open the lock inside it to hold it.
const LOCK_DIR: &str = "/run/lock/scx_linger-rows";

/// How long a PrologSlurmctld waits for the lock. slurmctld waits for its
/// PrologSlurmctld without a limit, the job in CONFIGURING meanwhile, so
/// past this the job gets its row without the lock, and the line says
/// so: at worst two jobs starting together share a row.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Take the rows lock within `wait`; why not, if not.
fn lock_rows(dir: &Path, wait: Duration) -> std::result::Result<Flock<std::fs::File>, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    let me = nix::unistd::geteuid().as_raw();
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a directory of uid {me} alone (uid {}, mode {:o}): remove it",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    let path = dir.join("lock");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let started = Instant::now();
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => return Ok(l),
            Err((f, _)) if started.elapsed() < wait => {
                file = f;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err((_, e)) => {
                return Err(format!(
                    "{} still held after {wait:?} ({e})",
                    path.display()
                ))
            }
        }
    }
}

/// How many nodes a job's hook (PrologSlurmctld, or a node's Prolog) is
/// told it has: SLURM_JOB_NUM_NODES, else its SLURM_JOB_NODELIST counted
/// (slurmctld sets that always).
pub fn nodes_in_env(var: impl Fn(&str) -> Option<String>) -> Option<usize> {
    if let Some(n) = var("SLURM_JOB_NUM_NODES").and_then(|n| n.trim().parse().ok()) {
        return Some(n);
    }
    expand_hostlist(&var("SLURM_JOB_NODELIST")?)
        .ok()
        .map(|n| n.len())
}

/// `slurm row`, slurmctld's PrologSlurmctld: give job `job` its row if it
/// spans more than one node (`nodes`) and the config sets `[rows]`
/// (`rows`, their count). A job on one node (its environment says)
/// returns at once, before the config, the lock or any question to
/// slurmctld. Says what it did in one line.
pub fn assign(
    job: u64,
    nodes: Option<usize>,
    rows: impl FnOnce() -> Result<Option<u32>>,
) -> Result<String> {
    if nodes.is_some_and(|n| n < 2) {
        return Ok(format!(
            "job {job} runs on one node: it needs no cluster row"
        ));
    }
    let Some(count) = rows()? else {
        return Ok(format!(
            "job {job}: the config sets no [rows]: no cluster row to give; a job on several nodes runs as ordinary work there, not a gang"
        ));
    };
    let lock = lock_rows(Path::new(LOCK_DIR), LOCK_WAIT);
    let unlocked = match &lock {
        Ok(_) => String::new(),
        Err(e) => format!(" (without the lock: {e})"),
    };
    let jobs = slurm_client::jobs(None)?;
    let Some(me) = jobs.iter().find(|j| j.id == job) else {
        bail!("job {job} is not among Slurm's running jobs");
    };
    // slurmctld runs it again for a job still starting when it restarts:
    // the job keeps its row.
    if let Some(row) = row_in(&me.admin_comment) {
        return Ok(format!("job {job} keeps cluster row {row}"));
    }
    let nodes = expand_hostlist(&me.nodes)?;
    if nodes.len() < 2 {
        return Ok(format!(
            "job {job} runs on one node: it needs no cluster row"
        ));
    }
    let row = choose_row(count, &nodes, &held_rows(&jobs, job)?);
    let comment = admin_comment_with_row(row, without_row(&me.admin_comment));
    slurm_client::run(
        "scontrol",
        &[
            "update",
            &format!("JobId={job}"),
            &format!("AdminComment={comment}"),
        ],
    )?;
    drop(lock);
    Ok(format!(
        "job {job} holds cluster row {row} of {count} on {}{unlocked}",
        me.nodes
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> Vec<String> {
        expand_hostlist(list).unwrap()
    }

    #[test]
    fn hostlists_expand_as_slurm_writes_them() {
        assert_eq!(names("n1"), ["n1"]);
        assert_eq!(names("n[1-3]"), ["n1", "n2", "n3"]);
        assert_eq!(
            names("n[1,3],gpu[08-10]"),
            ["n1", "n3", "gpu08", "gpu09", "gpu10"]
        );
        assert_eq!(names("r[1-2]-n[1-2]"), ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]);
        assert_eq!(names("a,b"), ["a", "b"]);
        assert!(names("").is_empty());
        for bad in ["n[1-", "n1]", "n[3-1]", "n[a-b]"] {
            assert!(expand_hostlist(bad).is_err(), "{bad}");
        }
    }

    fn job(id: u64, state: &str, nodes: &str, admin_comment: &str) -> JobInfo {
        JobInfo {
            id,
            states: vec![state.into()],
            nodes: nodes.into(),
            admin_comment: admin_comment.into(),
            qos: String::new(),
        }
    }

    #[test]
    fn jobs_rows_come_from_admin_comment_only() {
        let jobs = [
            job(7, "RUNNING", "n[1-2]", "linger_row=1;site note here"),
            job(8, "RUNNING", "n[2-3]", ""),
            job(9, "COMPLETED", "n[1-2]", "linger_row=0"),
            job(10, "PENDING", "", "site note"),
        ];
        assert_eq!(row_in(&jobs[0].admin_comment), Some(1));
        assert_eq!(without_row(&jobs[0].admin_comment), "site note here");
        assert_eq!((row_in(""), without_row("")), (None, ""));
        assert_eq!(row_in("note linger_row=3"), None, "only at the start");
        assert_eq!(without_row("site note"), "site note");
        assert_eq!(
            admin_comment_with_row(2, without_row(&jobs[0].admin_comment)),
            "linger_row=2;site note here"
        );
        assert_eq!(admin_comment_with_row(0, ""), "linger_row=0");
        // Finished jobs hold nothing; the job itself is left out.
        let held = held_rows(&jobs, 8).unwrap();
        assert_eq!(held, vec![(vec!["n1".to_string(), "n2".to_string()], 1)]);
        assert!(held_rows(&jobs, 7).unwrap().is_empty());
    }

    #[test]
    fn a_one_node_job_is_known_from_its_environment() {
        let env = |pairs: &[(&str, &str)]| {
            let m: std::collections::HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            move |k: &str| m.get(k).cloned()
        };
        assert_eq!(nodes_in_env(env(&[("SLURM_JOB_NUM_NODES", "1")])), Some(1));
        assert_eq!(
            nodes_in_env(env(&[("SLURM_JOB_NODELIST", "n[1-3]")])),
            Some(3)
        );
        assert_eq!(nodes_in_env(env(&[])), None);
        // Neither the lock nor slurmctld is asked for it.
        let line = assign(7, Some(1), || panic!("read the config")).unwrap();
        assert!(line.contains("one node"), "{line}");
    }

    #[test]
    fn the_rows_lock_is_its_users_alone_and_never_waited_for_past_its_limit() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rows");
        let held = lock_rows(&dir, Duration::ZERO).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // Held elsewhere: given up after the wait, and said.
        let started = Instant::now();
        let e = lock_rows(&dir, Duration::from_millis(100)).unwrap_err();
        assert!(e.contains("still held"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(held);
        assert!(lock_rows(&dir, Duration::ZERO).is_ok());
        // A directory others may write in is no lock of ours.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = lock_rows(&dir, Duration::ZERO).unwrap_err();
        assert!(e.contains("remove it"), "{e}");
    }

    #[test]
    fn a_job_takes_the_row_fewest_of_its_neighbours_hold() {
        let n = |l: &str| names(l);
        // Alone, or beside jobs on other nodes: row 0.
        assert_eq!(choose_row(4, &n("n[1-2]"), &[]), 0);
        assert_eq!(choose_row(4, &n("n[1-2]"), &[(n("n[3-4]"), 0)]), 0);
        // Sharing n2 with a job in row 0 and n1 with one in row 1: row 2.
        let others = [(n("n[2-3]"), 0), (n("n[0-1]"), 1), (n("n9"), 2)];
        assert_eq!(choose_row(4, &n("n[1-2]"), &others), 2);
        // Every row taken: the least shared one.
        let full = [(n("n1"), 0), (n("n1"), 0), (n("n2"), 1)];
        assert_eq!(choose_row(2, &n("n[1-2]"), &full), 1);
    }
}
