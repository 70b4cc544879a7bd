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
use std::process::Command;

use anyhow::{bail, Context, Result};

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

/// A job as `scontrol show job -o` prints it: the fields rows need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownJob {
    pub id: u64,
    pub state: String,
    pub nodes: String,
    pub row: Option<u32>,
    /// AdminComment as it was, with our token taken out.
    pub admin_comment: String,
}

/// One line of `scontrol show job -o`. AdminComment is the last field
/// we read and may hold spaces; we keep our token at its start, so that
/// the row never depends on how the rest of it parses.
pub fn parse_shown_job(line: &str) -> Option<ShownJob> {
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
    };
    let id = field("JobId")?.parse().ok()?;
    let comment = line
        .find(" AdminComment=")
        .map(|at| &line[at + " AdminComment=".len()..])
        .map(|rest| {
            // The value runs to the next " Key=" (scontrol's next field).
            let end = rest
                .match_indices(' ')
                .find(|(i, _)| {
                    let word = rest[i + 1..].split_whitespace().next().unwrap_or("");
                    word.split_once('=').is_some_and(|(k, _)| {
                        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    }) && !word.starts_with(ROW_TOKEN)
                })
                .map_or(rest.len(), |(i, _)| i);
            &rest[..end]
        })
        .unwrap_or("");
    let comment = if comment == "(null)" { "" } else { comment };
    let row = comment
        .strip_prefix(ROW_TOKEN)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|r| r.parse().ok());
    let admin_comment = match row {
        Some(_) => comment
            .strip_prefix(ROW_TOKEN)
            .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
            .map(|r| r.trim_start_matches(';').trim_end().to_string())
            .unwrap_or_default(),
        None => comment.trim_end().to_string(),
    };
    Some(ShownJob {
        id,
        state: field("JobState").unwrap_or("").to_string(),
        nodes: field("NodeList").unwrap_or("").to_string(),
        row,
        admin_comment,
    })
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
/// suspended on its nodes.
fn holds_row(state: &str) -> bool {
    matches!(
        state,
        "RUNNING" | "CONFIGURING" | "SUSPENDED" | "STOPPED" | "COMPLETING"
    )
}

/// The rows held by the jobs in `shown` (the output of `scontrol show job
/// -o`), other than `job`, with their nodes.
pub fn held_rows(shown: &str, job: u64) -> Result<Vec<(Vec<String>, u32)>> {
    let mut out = Vec::new();
    for j in shown.lines().filter_map(parse_shown_job) {
        if j.id == job || !holds_row(&j.state) {
            continue;
        }
        if let Some(row) = j.row {
            out.push((expand_hostlist(&j.nodes)?, row));
        }
    }
    Ok(out)
}

/// Run `scontrol` with `args`; its stdout. Slurm runs its prologs with
/// no PATH, so the usual places are tried after PATH.
fn scontrol(args: &[&str]) -> Result<String> {
    let found = [
        "/usr/bin/scontrol",
        "/usr/local/bin/scontrol",
        "/opt/slurm/bin/scontrol",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
    .unwrap_or("scontrol");
    let out = Command::new(found)
        .args(args)
        .output()
        .with_context(|| format!("running {found} (is Slurm's client installed?)"))?;
    if !out.status.success() {
        bail!(
            "scontrol {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where concurrent PrologSlurmctlds take turns: the row one picks must
/// be in its job's record before the next one looks.
const LOCK: &str = "/run/lock/scx_linger-rows.lock";

/// `slurm row`, slurmctld's PrologSlurmctld: give job `job` its row if it
/// spans more than one node and the config sets `[rows]` (`rows`, their
/// count). Says what it did in one line.
pub fn assign(job: u64, rows: Option<u32>) -> Result<String> {
    let Some(count) = rows else {
        return Ok(format!(
            "job {job}: the config sets no [rows]: no cluster row to give"
        ));
    };
    // Without the lock the row is still chosen, but two jobs starting at
    // once may pick the same one: the line says so.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(LOCK)
        .and_then(|f| {
            nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| e.into())
        });
    let unlocked = match &lock {
        Ok(_) => String::new(),
        Err(e) => format!(" (without the lock {LOCK}: {e})"),
    };
    let shown = scontrol(&["show", "job", "-o"])?;
    let Some(me) = shown
        .lines()
        .filter_map(parse_shown_job)
        .find(|j| j.id == job)
    else {
        bail!("job {job} is not in `scontrol show job`");
    };
    // slurmctld runs it again for a job still starting when it restarts:
    // the job keeps its row.
    if let Some(row) = me.row {
        return Ok(format!("job {job} keeps cluster row {row}"));
    }
    let nodes = expand_hostlist(&me.nodes)?;
    if nodes.len() < 2 {
        return Ok(format!(
            "job {job} runs on one node: it needs no cluster row"
        ));
    }
    let row = choose_row(count, &nodes, &held_rows(&shown, job)?);
    let comment = admin_comment_with_row(row, &me.admin_comment);
    scontrol(&[
        "update",
        &format!("JobId={job}"),
        &format!("AdminComment={comment}"),
    ])?;
    drop(lock);
    Ok(format!(
        "job {job} holds cluster row {row} of {count} on {}{unlocked}",
        me.nodes
    ))
}

/// The row slurmctld gave job `job`, for a node's Prolog: None for a job
/// on one node (`num_nodes`, SLURM_JOB_NUM_NODES) or without `[rows]`.
pub fn row_of(job: u64, num_nodes: Option<u32>, rows: Option<u32>) -> Result<Option<u32>> {
    if rows.is_none() || num_nodes.is_some_and(|n| n < 2) {
        return Ok(None);
    }
    let shown = scontrol(&["show", "job", "-o", &job.to_string()])?;
    Ok(shown
        .lines()
        .filter_map(parse_shown_job)
        .find(|j| j.id == job)
        .and_then(|j| j.row))
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

    const SHOWN: &str = "JobId=7 JobName=a UserId=u(1000) JobState=RUNNING Reason=None NodeList=n[1-2] BatchHost=n1 AdminComment=linger_row=1;site note here Comment=linger_row=9\n\
JobId=8 JobName=b JobState=RUNNING NodeList=n[2-3] AdminComment=(null)\n\
JobId=9 JobName=c JobState=COMPLETED NodeList=n[1-2] AdminComment=linger_row=0\n\
JobId=10 JobName=d JobState=PENDING NodeList=(null)\n";

    #[test]
    fn jobs_rows_come_from_admin_comment_only() {
        let jobs: Vec<ShownJob> = SHOWN.lines().filter_map(parse_shown_job).collect();
        assert_eq!(jobs.len(), 4);
        assert_eq!((jobs[0].id, jobs[0].row), (7, Some(1)));
        assert_eq!(jobs[0].admin_comment, "site note here");
        assert_eq!(jobs[0].nodes, "n[1-2]");
        // A user's own Comment field is not a row.
        assert_eq!(jobs[1].row, None);
        assert_eq!(jobs[1].admin_comment, "");
        assert_eq!(
            admin_comment_with_row(2, &jobs[0].admin_comment),
            "linger_row=2;site note here"
        );
        assert_eq!(admin_comment_with_row(0, ""), "linger_row=0");
        // Finished jobs hold nothing; the job itself is left out.
        let held = held_rows(SHOWN, 8).unwrap();
        assert_eq!(held, vec![(vec!["n1".to_string(), "n2".to_string()], 1)]);
        assert!(held_rows(SHOWN, 7).unwrap().is_empty());
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
