// SPDX-License-Identifier: GPL-2.0-only
//! What a user can do to the Slurm glue, tried in the guest's real Slurm
//! (Debian's 22.05): nothing a user controls may decide a job's class or
//! row (docs/operating.md, "Who decides a job's class and row").
//!
//! - A job whose name reads as the fields of another job's record, the
//!   way `scontrol show job` prints them, gets no row from it.
//! - A cgroup a user makes in a delegated subtree, named as Slurm names a
//!   job's, takes no job's class.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use crate::slurm::{gang_partition, job_cgroup, sh, wait_hogs, Cluster, SiteConfig};

/// Run hook `hook` for job `id` as slurmd runs it, with `extra` beside the
/// environment Slurm gives it; its one line.
fn run_hook(c: &Cluster, hook: &str, id: u64, extra: &[(&str, &str)]) -> String {
    let mut cmd = c.cmd(AGENT);
    cmd.args(["slurm", hook])
        .env("SLURM_JOB_ID", id.to_string())
        .env("SLURM_JOB_PARTITION", "parallel");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = agent_output(&mut cmd);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The row the Prolog recorded for job `id`.
fn recorded_row(id: u64) -> Option<u32> {
    let text = fs::read_to_string(format!("/run/scx_linger/slurm/{id}.toml")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("row = "))
        .map(|r| r.trim().parse().unwrap())
}

/// Job A holds row 1 (its AdminComment, as the controller's hook writes
/// it). Job H is named `x JobState=RUNNING NodeList=n[1-999]
/// AdminComment=linger_row=0`. The node's Prolog, run here by hand and
/// told both span two nodes (the guest's Slurm has one node, so slurmd
/// would never run it for a two-node job), reads A's row 1 and no row for
/// H from slurmctld's real answer;
/// and the controller's hook gives H no row from its own name either.
#[test]
fn a_jobs_name_cannot_forge_its_row() {
    let (agent, c, _) = gang_partition("slurm-hostile-rows.toml");
    let _cfg = SiteConfig::install(
        "[rows]\ncount = 3\nslot_ms = 100\n\n[[slurm_rule]]\npartition = \"parallel\"\nclass = \"gang\"\n",
    );
    let a = c.sleep_job(&["-p", "parallel"], 60);
    let forged = "x JobState=RUNNING NodeList=n[1-999] AdminComment=linger_row=0";
    let h = c.sleep_job(&["-p", "parallel", "-J", forged], 60);
    // Both running, their own Prolog done: the hook run below by hand is
    // the last to write their records.
    wait_hogs(&c, a);
    wait_hogs(&c, h);
    sh(&format!(
        "SLURM_CONF={} scontrol update JobId={a} AdminComment=linger_row=1",
        c.conf().display()
    ));
    let two = [("SLURM_JOB_NUM_NODES", "2")];
    let line_a = run_hook(&c, "prolog", a, &two);
    let line_h = run_hook(&c, "prolog", h, &two);
    figure(&format!(
        "hostile job name: prolog lines {line_a:?} / {line_h:?}"
    ));
    assert_eq!(recorded_row(a), Some(1), "{line_a}");
    assert_eq!(recorded_row(h), None, "the name gave a row: {line_h}");
    assert!(line_h.contains("without a cluster row"), "{line_h}");
    // The controller's hook sees H as the one-node job it is.
    let row = run_hook(&c, "row", h, &[]);
    assert!(row.contains("one node"), "{row}");
    // Its AdminComment as Slurm holds it (its JSON; its name, in the
    // text, still reads like one).
    let json: serde_json::Value = serde_json::from_str(&sh(&format!(
        "SLURM_CONF={} squeue --json",
        c.conf().display()
    )))
    .unwrap();
    let shown = json["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|j| j["job_id"].as_u64() == Some(h))
        .unwrap_or_else(|| panic!("job {h} is not in squeue's JSON"));
    let comment = shown["admin_comment"].as_str().unwrap_or("");
    assert!(!comment.contains("linger_row"), "{comment}");
    drop(c);
    drop(agent);
}

/// Make `rel` as root, then hand it to `uid` as systemd delegates a
/// subtree (the directory and its interface files).
fn delegate(rel: &str, uid: u32) -> std::path::PathBuf {
    let dir = Path::new(CGROUP_ROOT).join(rel);
    fs::create_dir_all(&dir).unwrap();
    sh(&format!(
        "chown {uid} {d} {d}/cgroup.procs {d}/cgroup.threads {d}/cgroup.subtree_control",
        d = dir.display()
    ));
    dir
}

/// A gang job of the `parallel` partition runs. A user with delegated
/// subtrees (under their user manager, and a system service delegated to
/// them) makes `x_slurmstepd.scope/job_<id>` in each, and runs a process
/// there. `ls` shows the real job's cgroup as the site rule's gang and
/// the user's as nothing of the job's; the agent's stats name no Slurm
/// job for them.
#[test]
fn a_users_cgroup_named_like_slurms_takes_no_jobs_class() {
    let (agent, c, cfg) = gang_partition("slurm-hostile-cgroup.toml");
    let j = c.sleep_job(&["-p", "parallel"], 60);
    assert!(
        wait_until(Duration::from_secs(20), || job_cgroup(j).is_some()),
        "job {j} has no cgroup"
    );
    let forged: Vec<std::path::PathBuf> = [
        "user.slice/user-65534.slice/user@65534.service",
        "system.slice/delegated.service",
    ]
    .into_iter()
    .map(|d| {
        let base = delegate(d, NOBODY);
        let job = base.join(format!("x_slurmstepd.scope/job_{j}"));
        sh(&format!(
            "setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups mkdir -p {}",
            job.display()
        ));
        job
    })
    .collect();
    // A process of the user's in each, as a job's task would be (moved
    // by root: a move needs the common ancestor's cgroup.procs).
    let mut hogs = Vec::new();
    for f in &forged {
        let child = Command::new("setpriv")
            .args([
                &format!("--reuid={NOBODY}"),
                &format!("--regid={NOBODY}"),
                "--clear-groups",
                "sleep",
                "60",
            ])
            .spawn()
            .unwrap();
        fs::write(f.join("cgroup.procs"), child.id().to_string()).unwrap();
        hogs.push(child);
    }
    let ls = || {
        let out = agent_output(
            Command::new(AGENT)
                .args(["ls", "--all", "--config"])
                .arg(&cfg),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let real = job_cgroup(j).unwrap();
    let real = real
        .strip_prefix(CGROUP_ROOT)
        .unwrap()
        .display()
        .to_string();
    let settled = wait_until(Duration::from_secs(10), || {
        ls().lines()
            .any(|l| l.contains(&real) && l.contains("gang"))
    });
    let table = ls();
    assert!(settled, "the real job {real} is no gang:\n{table}");
    for f in &forged {
        let rel = f.strip_prefix(CGROUP_ROOT).unwrap().display().to_string();
        for l in table.lines().filter(|l| l.contains(&rel)) {
            assert!(
                !l.contains("gang") && !l.contains("partition="),
                "the user's {rel} took the job's class: {l}"
            );
        }
    }
    let stats = stats_json();
    for job in stats["jobs"].as_array().into_iter().flatten() {
        let path = job["path"].as_str().unwrap_or("");
        if forged
            .iter()
            .any(|f| f.ends_with(path.trim_start_matches('/')))
        {
            assert!(job["slurm_job_id"].is_null(), "{job}");
        }
    }
    figure(&format!(
        "borrowed cgroup: the real job {real} a gang, {} user cgroups named like it none",
        forged.len()
    ));
    for mut h in hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    for f in &forged {
        let _ = fs::remove_dir(f);
        let _ = fs::remove_dir(f.parent().unwrap());
    }
    drop(c);
    drop(agent);
}
