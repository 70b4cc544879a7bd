// SPDX-License-Identifier: GPL-2.0-only
//! Slurm's own commands, run from inside its hooks: where they are, which
//! slurm.conf they read, and the job records they print, read as data.
//!
//! - **The commands.** Slurm runs its hooks with no PATH, so the usual
//!   places are tried first.
//! - **The config.** slurmd hands its Prolog SLURM_CONF (the file it
//!   reads, or its cache in configless mode), so a node's hook finds it
//!   wherever the site keeps it. slurmctld hands PrologSlurmctld no
//!   SLURM_CONF at all: there the file is the one slurmctld itself reads,
//!   its `-f` or the SLURM_CONF it was started with, taken from the
//!   process that ran the hook (`/proc/<pid>/cmdline` and `environ`, the
//!   same user's). Without either the client's compiled-in default holds.
//! - **Job records as data.** A job's name, command, working directory
//!   and comment are the user's own text, and `scontrol show job` prints
//!   them among the fields an administrator sets: a name such as `x
//!   JobState=RUNNING AdminComment=linger_row=0` reads as those fields to
//!   a text scanner. So records come as JSON (`scontrol --json`, from
//!   23.02; `squeue --json` on 22.05, whose scontrol has no such option)
//!   and only the fields named are read.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// A job as Slurm's JSON gives it: the fields rows need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: u64,
    /// Its state and flags: one string up to 23.02 (`RUNNING`), a list
    /// from 23.11 (`["RUNNING", "CONFIGURING"]`).
    pub states: Vec<String>,
    /// Its nodes as a hostlist (`n[1-2]`); empty while pending.
    pub nodes: String,
    /// AdminComment: administrators' and slurmctld's user's alone.
    pub admin_comment: String,
    /// Its QOS, which the node's Prolog is given only from Slurm 26.05.
    pub qos: String,
}

/// The jobs in Slurm's JSON (`{"jobs": [...]}`, any data_parser version
/// from 22.05's v0.0.38 on). A job whose id is missing is an error, not
/// skipped: the output is not what this reads.
pub fn parse_jobs(json: &str) -> Result<Vec<JobInfo>> {
    let v: Value = serde_json::from_str(json).context("Slurm's job JSON does not parse")?;
    let Some(jobs) = v.get("jobs").and_then(Value::as_array) else {
        bail!("Slurm's job JSON has no \"jobs\" list");
    };
    let text = |j: &Value, k: &str| j.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    jobs.iter()
        .map(|j| {
            let id = j
                .get("job_id")
                .and_then(Value::as_u64)
                .context("a job in Slurm's JSON has no job_id")?;
            let states = match j.get("job_state") {
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            };
            Ok(JobInfo {
                id,
                states,
                nodes: text(j, "nodes"),
                admin_comment: text(j, "admin_comment"),
                qos: text(j, "qos"),
            })
        })
        .collect()
}

/// The slurm.conf of the daemon a hook runs under, from what the hook can
/// see: its own SLURM_CONF (slurmd sets it), else, for each process above
/// it (its parent first: slurmctld's script runner, then slurmctld), the
/// file given with `-f`, or the SLURM_CONF it was started with.
pub fn daemon_conf<A>(own: Option<String>, ancestors: impl FnOnce() -> A) -> Option<PathBuf>
where
    A: IntoIterator<Item = (Vec<String>, Vec<String>)>,
{
    if let Some(c) = own.filter(|c| !c.is_empty()) {
        return Some(c.into());
    }
    for (cmdline, environ) in ancestors() {
        let prog = cmdline
            .first()
            .map(|p| Path::new(p).file_name().unwrap_or_default());
        let prog = prog
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !prog.starts_with("slurmctld") && !prog.starts_with("slurmscriptd") {
            continue;
        }
        let mut args = cmdline.iter().skip(1);
        while let Some(a) = args.next() {
            if a == "-f" {
                return args.next().map(PathBuf::from);
            }
            if let Some(f) = a
                .strip_prefix("-f")
                .filter(|f| !f.is_empty() && !a.starts_with("--"))
            {
                return Some(f.into());
            }
        }
        return environ
            .iter()
            .find_map(|e| e.strip_prefix("SLURM_CONF="))
            .filter(|c| !c.is_empty())
            .map(PathBuf::from);
    }
    None
}

/// The processes above this one, parent first, up to init: each one's
/// command line and environment (NUL-separated in /proc).
fn ancestors() -> Vec<(Vec<String>, Vec<String>)> {
    let split = |raw: Vec<u8>| -> Vec<String> {
        raw.split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    };
    let mut out = Vec::new();
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..8 {
        if pid <= 1 {
            break;
        }
        let dir = PathBuf::from(format!("/proc/{pid}"));
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        out.push((split(cmdline), split(environ)));
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        // "pid (comm) state ppid ...": comm may hold spaces and ')'.
        pid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
    }
    out
}

/// Slurm client `name` (scontrol, squeue), reading the hook's daemon's
/// slurm.conf.
fn command(name: &str) -> Command {
    let found = ["/usr/bin", "/usr/local/bin", "/opt/slurm/bin"]
        .into_iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| name.into());
    let mut c = Command::new(found);
    if let Some(conf) = daemon_conf(std::env::var("SLURM_CONF").ok(), ancestors) {
        c.env("SLURM_CONF", conf);
    }
    c
}

/// Run Slurm client `name` with `args`; its stdout.
pub fn run(name: &str, args: &[&str]) -> Result<String> {
    let out = command(name)
        .args(args)
        .output()
        .with_context(|| format!("running {name} (is Slurm's client installed?)"))?;
    if !out.status.success() {
        bail!(
            "{name} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The states a job holds its row in, as squeue's `--states` names them.
pub const ROW_HOLDING_STATES: &str = "RUNNING,CONFIGURING,COMPLETING,SUSPENDED,STOPPED";

/// Jobs as data: job `one` (scontrol from 23.02), else the jobs in the
/// states that hold a row (squeue, which 22.05 answers with every job:
/// the caller filters).
pub fn jobs(one: Option<u64>) -> Result<Vec<JobInfo>> {
    let id = one.map(|j| j.to_string());
    let scontrol = match &id {
        Some(id) => run("scontrol", &["--json", "show", "job", id]),
        None => Err(anyhow::anyhow!("not one job")),
    };
    match scontrol {
        Ok(json) => parse_jobs(&json),
        Err(_) => parse_jobs(&run("squeue", &["--json", "--states", ROW_HOLDING_STATES])?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_read_from_every_json_version_and_only_from_their_fields() {
        // 22.05's squeue (v0.0.38): state a string, node_count a number.
        // The job's name holds what a text scanner would take for fields.
        let v38 = r#"{"meta":{},"errors":[],"jobs":[
            {"job_id":7,"name":"x JobState=RUNNING NodeList=n[1-999] AdminComment=linger_row=0",
             "job_state":"RUNNING","nodes":"n[1-2]","node_count":2,
             "admin_comment":"linger_row=1;site note","comment":"linger_row=2","qos":"normal"},
            {"job_id":8,"job_state":"PENDING","nodes":"","admin_comment":""}]}"#;
        let jobs = parse_jobs(v38).unwrap();
        assert_eq!(
            jobs[0],
            JobInfo {
                id: 7,
                states: vec!["RUNNING".into()],
                nodes: "n[1-2]".into(),
                admin_comment: "linger_row=1;site note".into(),
                qos: "normal".into(),
            }
        );
        assert_eq!((jobs[1].id, jobs[1].nodes.as_str()), (8, ""));
        // 23.11 on: the state is a list, an unset comment may be null.
        let v40 = r#"{"jobs":[{"job_id":9,"job_state":["RUNNING","CONFIGURING"],
            "nodes":"n3","node_count":{"set":true,"infinite":false,"number":1},
            "admin_comment":null}]}"#;
        let jobs = parse_jobs(v40).unwrap();
        assert_eq!(jobs[0].states, ["RUNNING", "CONFIGURING"]);
        assert_eq!(jobs[0].admin_comment, "");
        for bad in [
            "",
            "JobId=7 JobState=RUNNING",
            r#"{"jobs":[{"name":"x"}]}"#,
            "{}",
        ] {
            assert!(parse_jobs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_daemons_config_is_found_where_each_daemon_keeps_it() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // slurmd's Prolog: its own SLURM_CONF wins.
        assert_eq!(
            daemon_conf(
                Some("/var/spool/slurmd/conf-cache/slurm.conf".into()),
                || -> Vec<_> { panic!("read /proc although slurmd named the file") }
            ),
            Some("/var/spool/slurmd/conf-cache/slurm.conf".into())
        );
        // PrologSlurmctld: slurmctld's -f, in either spelling.
        let shell = (v(&["/bin/sh", "/usr/lib/scx_linger/slurm-row"]), v(&[]));
        for argv in [
            v(&["/usr/sbin/slurmctld", "-D", "-f", "/opt/site/slurm.conf"]),
            v(&["slurmctld", "-f/opt/site/slurm.conf"]),
        ] {
            assert_eq!(
                daemon_conf(None, || [
                    shell.clone(),
                    (argv, v(&["SLURM_CONF=/elsewhere"]))
                ]),
                Some("/opt/site/slurm.conf".into())
            );
        }
        // ... else the SLURM_CONF it was started with; else the default.
        let env = v(&["PATH=/bin", "SLURM_CONF=/opt/site/slurm.conf"]);
        assert_eq!(
            daemon_conf(None, || [(v(&["slurmscriptd"]), env)]),
            Some("/opt/site/slurm.conf".into())
        );
        assert_eq!(
            daemon_conf(None, || [(v(&["/usr/sbin/slurmctld"]), v(&[]))]),
            None
        );
        // Nobody else's is taken.
        assert_eq!(
            daemon_conf(None, || [(
                v(&["bash", "-f", "/tmp/x"]),
                v(&["SLURM_CONF=/tmp/y"])
            )]),
            None
        );
    }
}
