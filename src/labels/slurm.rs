// SPDX-License-Identifier: GPL-2.0-only
//! Slurm's jobs: which cgroups are job cgroups, and what Slurm says about a
//! job before its cgroup exists.
//!
//! Slurm's cgroup/v2 plugin puts job <id> in `.../slurmstepd.scope/job_<id>`
//! (`<NodeName>_slurmstepd.scope` in builds with multiple-slurmd support,
//! as Debian's), its steps below it. From 26.05 the directory is named by
//! the job's SLUID instead (`.../slurmstepd.scope/sEKNKTV3WPV500`) unless
//! cgroup.conf sets `CgroupJobIdPaths=yes`; a SLUID does not contain the
//! job id, so the Prolog, which 26.05 gives SLURM_JOB_SLUID, leaves
//! `<SLUID>.sluid` beside the record, holding the id. The Prolog runs before that cgroup
//! exists, so it cannot label it. Instead `scx_linger slurm prolog` records
//! the job's attributes in RECORD_DIR/<id>.toml: its partition, QOS and
//! account (for the site's `[[slurm_rule]]`s, config.rs) and what the user
//! asked for with `sbatch --linger` (the SPANK plugin passes it to the
//! Prolog as SPANK_LINGER). The agent reads a job cgroup's record when it
//! reads the cgroup, which it does the moment the cgroup appears
//! (watch.rs), and decides its class with every other label (class.rs).
//! `slurm epilog` removes the record: nothing is left behind.
//!
//! The record holds facts, not a class: the site's rules are applied by
//! the agent, so a config reload reaches running jobs too.
//!
//! Reading the cgroup on its inotify event races slurmstepd, which starts
//! the job's tasks a few milliseconds after making the cgroup. So once the
//! agent has handed BPF a job cgroup's class it leaves `<id>.applied`
//! beside the record, and the SPANK plugin, in each task before it execs
//! (`slurm wait`), waits for that mark: the job's first instruction runs
//! in its class. Without a record, or without a running agent, nobody
//! waits.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::slurm_rows;

/// Where the Prolog leaves job records (root's tmpfs: gone at reboot,
/// like the jobs).
pub const RECORD_DIR: &str = "/run/scx_linger/slurm";

/// What the Prolog knows about a job, as the agent reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobRecord {
    pub job_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `sbatch --linger=CLASS[:SLOT_MS]`, raw: it counts only as a
    /// demotion, as a user's own label does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// Slurm 26.05's SLUID for the job (SLURM_JOB_SLUID), which names its
    /// cgroup unless `CgroupJobIdPaths=yes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sluid: Option<String>,
    /// The cluster row slurmctld gave a multi-node job (slurm_rows.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<u32>,
    /// How many nodes the job spans (SLURM_JOB_NUM_NODES, else its
    /// SLURM_JOB_NODELIST counted): a job on more than one node is a gang
    /// here only with its row (cgroups.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
}

impl JobRecord {
    /// Does the job run on other nodes too?
    pub fn spans_nodes(&self) -> bool {
        self.nodes.is_some_and(|n| n > 1)
    }
}

impl JobRecord {
    /// The requested class and slot length, split (`guest-gang:200`).
    pub fn request_parts(&self) -> Option<(&str, Option<&str>)> {
        let r = self.request.as_deref()?.trim();
        Some(match r.split_once(':') {
            Some((c, ms)) => (c, Some(ms)),
            None => (r, None),
        })
    }
}

/// How a job's own cgroup is named below slurmstepd's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobDir<'a> {
    /// `job_<id>`: Slurm before 26.05, or `CgroupJobIdPaths=yes`.
    Id(u64),
    /// The job's SLUID: Slurm 26.05's default.
    Sluid(&'a str),
}

/// A SLUID as Slurm prints it: `s` and 13 upper-case base-32 characters.
fn is_sluid(name: &str) -> bool {
    name.len() == 14
        && name.starts_with('s')
        && name[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

/// The slice Slurm's cgroup/v2 plugin puts slurmstepd's scope in, with
/// systemd (a transient scope) or without it (`IgnoreSystemd=yes`, a
/// directory it makes itself): a constant of the plugin, not a setting.
pub const SLURM_SLICE: &str = "system.slice";

/// The name of a job's own cgroup; None for its steps and for every other
/// cgroup. Only where Slurm makes one: `system.slice/<scope>/<job>`, the
/// scope a direct child of the slice. A user's delegated subtree
/// (`user@.service`, a service with `Delegate=`) lies elsewhere, so a
/// `x_slurmstepd.scope/job_1` made there names no job; is_made_by_root()
/// checks the owner too.
pub fn job_dir(rel: &str) -> Option<JobDir<'_>> {
    let (parent, name) = rel.rsplit_once('/')?;
    let (slice, scope) = parent.rsplit_once('/')?;
    if slice != SLURM_SLICE
        || (scope != "slurmstepd.scope" && !scope.ends_with("_slurmstepd.scope"))
    {
        return None;
    }
    if is_sluid(name) {
        return Some(JobDir::Sluid(name));
    }
    let id = name.strip_prefix("job_")?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok().map(JobDir::Id)
}

/// Is `rel` (or an ancestor of it) one of the cgroups Slurm keeps inside a
/// job for its own helpers, not for the job's tasks: a step's daemon
/// (`<job>/step_<n>/slurm`, where slurmstepd runs) or the extern step
/// (`<job>/step_extern`, which holds the job's placeholder process and
/// whatever `pam_slurm_adopt` adopts)? The tasks themselves run under
/// `<job>/step_<n>/user/`.
pub fn is_job_helper(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    (1..parts.len()).any(|i| {
        let job = parts[..i].join("/");
        job_dir(&job).is_some()
            && match parts[i..] {
                ["step_extern", ..] => true,
                [step, "slurm", ..] => step.starts_with("step_"),
                _ => false,
            }
    })
}

/// Is `rel` a step's daemon, `<job>/step_<n>/slurm`, where slurmstepd runs
/// for every step (the batch and extern steps' too)? Slurm's own, whatever
/// the job: the node's machinery (bpf/machinery.bpf.c). Unlike the
/// helpers above, not the extern step's `user/` part, which holds what
/// `pam_slurm_adopt` adopts: the user's own sessions.
pub fn is_step_daemon(rel: &str) -> bool {
    let Some((step, daemon)) = rel.rsplit_once('/') else {
        return false;
    };
    let Some((job, step)) = step.rsplit_once('/') else {
        return false;
    };
    daemon == "slurm" && step.starts_with("step_") && job_dir(job).is_some()
}

/// The Slurm job id of a job's own cgroup, either naming: a SLUID through
/// the alias its Prolog left in `dir` (None without one).
pub fn job_id_in(dir: &Path, rel: &str) -> Option<u64> {
    match job_dir(rel)? {
        JobDir::Id(id) => Some(id),
        JobDir::Sluid(sluid) => std::fs::read_to_string(sluid_path(dir, sluid))
            .ok()?
            .trim()
            .parse()
            .ok(),
    }
}

/// job_id_in() with the records where the Prolog leaves them.
pub fn job_id(rel: &str) -> Option<u64> {
    job_id_in(Path::new(RECORD_DIR), rel)
}

/// Did root make the job cgroup at `dir` and its scope? slurmstepd runs as
/// root and makes both; the kernel gives a cgroup its creator's owner, and
/// a delegated subtree is its user's. A job cgroup owned by anyone else is
/// not Slurm's, whatever its path says, and takes no job's record.
pub fn is_made_by_root(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let root = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == 0);
    root(dir) && dir.parent().is_some_and(root)
}

fn sluid_path(dir: &Path, sluid: &str) -> PathBuf {
    dir.join(format!("{sluid}.sluid"))
}

fn record_path(dir: &Path, job_id: u64) -> PathBuf {
    dir.join(format!("{job_id}.toml"))
}

fn applied_path(dir: &Path, job_id: u64) -> PathBuf {
    dir.join(format!("{job_id}.applied"))
}

/// After BPF has the classes of `jobs` (job id, class name): mark each
/// recorded job whose mark is missing. Best effort: a mark that cannot be
/// written only makes `slurm wait` give up after its limit.
pub fn mark_applied<'a>(dir: &Path, jobs: impl Iterator<Item = (u64, &'a str)>) {
    for (id, class) in jobs {
        let mark = applied_path(dir, id);
        if record_path(dir, id).exists() && !mark.exists() {
            let _ = std::fs::write(mark, class);
        }
    }
}

/// How long a task waits for the agent before it runs anyway.
pub const WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `slurm wait`: return once the agent has applied job `job_id`'s class,
/// at once when there is nothing to wait for (no record, no agent), or
/// after WAIT_LIMIT. Says which, for slurmd's log.
pub fn wait_applied(dir: &Path, job_id: u64, agent_runs: impl Fn() -> bool) -> Result<String> {
    if !record_path(dir, job_id).exists() {
        return Ok(format!("job {job_id} has no record: nothing to wait for"));
    }
    let started = std::time::Instant::now();
    loop {
        if let Ok(class) = std::fs::read_to_string(applied_path(dir, job_id)) {
            return Ok(format!("job {job_id} runs as {class}"));
        }
        if !agent_runs() {
            return Ok(format!("job {job_id}: scx_linger is not running"));
        }
        if started.elapsed() >= WAIT_LIMIT {
            bail!(
                "job {job_id} starts before scx_linger applied its class (waited {WAIT_LIMIT:?}): is the agent stuck? see `journalctl -u scx_linger`"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The record the Prolog left for `job_id`; None if there is none (or it
/// is unreadable: a job without a record runs by the other rules).
pub fn read_record(dir: &Path, job_id: u64) -> Option<JobRecord> {
    let text = std::fs::read_to_string(record_path(dir, job_id)).ok()?;
    let rec: JobRecord = toml::from_str(&text).ok()?;
    (rec.job_id == job_id).then_some(rec)
}

/// A job's record from the Prolog's environment. SPANK_LINGER is the
/// request the SPANK plugin passed on; SLURM_JOB_QOS and SLURM_JOB_ACCOUNT
/// are absent from older Slurms' Prolog environment (22.05 sets only the
/// partition), and rules on them then do not match.
/// `hook` is the command that asks, for the one line that says where it
/// belongs when it runs outside Slurm.
pub fn record_from_env(hook: Hook, var: impl Fn(&str) -> Option<String>) -> Result<JobRecord> {
    let Some(raw) = var("SLURM_JOB_ID") else {
        bail!("SLURM_JOB_ID is not set: {}", hook.belongs());
    };
    let job_id = raw.trim().parse().map_err(|_| {
        anyhow::anyhow!(
            "SLURM_JOB_ID={raw:?} is not a job number: {}",
            hook.belongs()
        )
    })?;
    let nonempty = |k: &str| {
        var(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    Ok(JobRecord {
        job_id,
        partition: nonempty("SLURM_JOB_PARTITION"),
        qos: nonempty("SLURM_JOB_QOS"),
        account: nonempty("SLURM_JOB_ACCOUNT"),
        request: nonempty("SPANK_LINGER"),
        // Anything else is not a name Slurm gives a cgroup: no alias.
        sluid: nonempty("SLURM_JOB_SLUID").filter(|s| is_sluid(s)),
        row: None,
        // As the controller's hook counts them: a Slurm that does not set
        // SLURM_JOB_NUM_NODES in the Prolog's environment still names the
        // nodes, and a one-node job then still asks slurmctld nothing.
        nodes: slurm_rows::nodes_in_env(nonempty).and_then(|n| u32::try_from(n).ok()),
    })
}

/// Write `text` to `path` whole (a reader never sees half of it), root's
/// alone: a record names the job's account and partition, and only root
/// (the agent, and `slurm wait` in the SPANK plugin's privileged hook)
/// reads it.
fn write_whole(dir: &Path, path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(text.as_bytes())?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Write a record, and its SLUID alias first: the agent, woken by the
/// job's cgroup, finds the id before it looks for the record.
pub fn write_record(dir: &Path, rec: &JobRecord) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)))
        .with_context(|| format!("creating {}", dir.display()))?;
    if let Some(sluid) = &rec.sluid {
        write_whole(dir, &sluid_path(dir, sluid), &rec.job_id.to_string())?;
    }
    let text = toml::to_string(rec).context("encoding the job record")?;
    write_whole(dir, &record_path(dir, rec.job_id), &text)
}

/// Remove a job's record, mark and SLUID alias; what is already gone is
/// no error.
pub fn remove_record(dir: &Path, job_id: u64) -> Result<()> {
    let alias = read_record(dir, job_id)
        .and_then(|r| r.sluid)
        .map(|s| sluid_path(dir, &s));
    for path in [applied_path(dir, job_id), record_path(dir, job_id)]
        .into_iter()
        .chain(alias)
    {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", path.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Which end of a job the hook runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Hook {
    /// Slurm's Prolog: record the job before its cgroup exists.
    Prolog,
    /// Slurm's Epilog: remove the record.
    Epilog,
    /// slurmctld's PrologSlurmctld: give a multi-node job its cluster row
    /// (the config's `[rows]`; slurm_rows.rs).
    Row,
    /// In each task before it runs (the SPANK plugin): wait until the
    /// agent has applied the job's class.
    Wait,
}

impl Hook {
    /// Where the command belongs, for a run outside it.
    fn belongs(self) -> &'static str {
        match self {
            Hook::Prolog => "run `scx_linger slurm prolog` as Slurm's Prolog (slurm.conf: Prolog=)",
            Hook::Epilog => "run `scx_linger slurm epilog` as Slurm's Epilog (slurm.conf: Epilog=)",
            Hook::Wait => "`scx_linger slurm wait` runs in a job's task, from the SPANK plugin (plugstack.conf)",
            Hook::Row => "run `scx_linger slurm row` as slurmctld's PrologSlurmctld (slurm.conf: PrologSlurmctld=)",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Hook::Prolog => "prolog",
            Hook::Epilog => "epilog",
            Hook::Wait => "wait",
            Hook::Row => "row",
        }
    }
}

/// What the config asks of the hooks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HookNeeds {
    /// The count of the cluster's `[rows]`, if it sets them.
    pub rows: Option<u32>,
    /// A `[[slurm_rule]]` names a QOS.
    pub qos: bool,
}

/// What the Prolog's environment lacks and the config needs, asked of
/// slurmctld in one question about this job alone: a multi-node job's row
/// (never in the environment), and its QOS where Slurm is older than
/// 26.05, which is the first to give it to the Prolog. A job on one node
/// with its QOS at hand, or a config that needs neither, asks nothing.
/// Says in a few words what is missing, for the Prolog's line.
fn complete_record(rec: &mut JobRecord, needs: impl FnOnce() -> Result<HookNeeds>) -> String {
    let needs = match needs() {
        Ok(n) => n,
        Err(e) => return format!(" (no cluster row or QOS: {e:#})"),
    };
    let want_row = needs.rows.is_some() && rec.nodes.is_none_or(|n| n >= 2);
    let want_qos = needs.qos && rec.qos.is_none();
    let mut note = String::new();
    if want_row || want_qos {
        let asked = super::slurm_client::jobs(Some(rec.job_id)).and_then(|jobs| {
            jobs.into_iter()
                .find(|j| j.id == rec.job_id)
                .with_context(|| format!("slurmctld does not list job {}", rec.job_id))
        });
        match asked {
            Ok(job) => {
                if want_row {
                    rec.row = slurm_rows::row_in(&job.admin_comment);
                }
                if want_qos {
                    rec.qos = Some(job.qos).filter(|q| !q.is_empty());
                }
            }
            Err(e) => note = format!(" (no cluster row or QOS from slurmctld: {e:#})"),
        }
    }
    if rec.spans_nodes() && rec.row.is_none() {
        note += &format!(
            "; on {} nodes without a cluster row, it runs here as ordinary work, not a gang",
            rec.nodes.unwrap_or(0)
        );
    }
    note
}

/// `scx_linger slurm prolog|epilog`, in the environment slurmd gives the
/// script; says in one line what it did. After the Prolog the agent is
/// poked, in case the job's cgroup is there already (a later Slurm, or
/// PrologFlags without Contain). `needs` reads what the config asks of
/// the hooks, for those that need it (not `wait`, which runs before
/// every task).
pub fn run_hook(
    hook: Hook,
    dir: &Path,
    needs: impl FnOnce() -> Result<HookNeeds>,
) -> Result<String> {
    let rec = record_from_env(hook, |k| std::env::var(k).ok())?;
    match hook {
        Hook::Wait => wait_applied(dir, rec.job_id, || {
            super::agent::agent_pid(Path::new(super::agent::PID_FILE)).is_some()
        }),
        Hook::Prolog => {
            let mut rec = rec;
            let note = complete_record(&mut rec, needs);
            write_record(dir, &rec)?;
            super::agent::notify_agent();
            let row = rec
                .row
                .map(|r| format!(", cluster row {r}"))
                .unwrap_or_default();
            Ok(format!(
                "recorded Slurm job {}{row} for scx_linger{note}",
                rec.job_id
            ))
        }
        Hook::Row => slurm_rows::assign(
            rec.job_id,
            slurm_rows::nodes_in_env(|k| std::env::var(k).ok()),
            || needs().map(|n| n.rows),
        ),
        Hook::Epilog => {
            remove_record(dir, rec.job_id)?;
            Ok(format!("removed Slurm job {}'s record", rec.job_id))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn step_daemons_and_the_extern_step_are_helpers_and_tasks_are_not() {
        let job = "system.slice/n1_slurmstepd.scope/job_42";
        for helper in [
            "step_0/slurm",
            "step_batch/slurm",
            "step_extern",
            "step_extern/user/task_special",
        ] {
            assert!(is_job_helper(&format!("{job}/{helper}")), "{helper}");
        }
        for task in [
            "",
            "/step_0",
            "/step_0/user/task_0",
            "/step_batch/user/task_special",
        ] {
            assert!(!is_job_helper(&format!("{job}{task}")), "{task:?}");
        }
        assert!(!is_job_helper(
            "system.slice/other.scope/job_42/step_0/slurm"
        ));
        assert!(!is_job_helper("jobs/step_extern"));
    }

    #[test]
    fn the_prologs_node_count_falls_back_to_the_node_list() {
        let count = |env: &[(&str, &str)]| {
            let env: std::collections::HashMap<&str, &str> = env.iter().copied().collect();
            record_from_env(Hook::Prolog, |k| env.get(k).map(|v| v.to_string()))
                .unwrap()
                .nodes
        };
        let job = ("SLURM_JOB_ID", "7");
        assert_eq!(count(&[job, ("SLURM_JOB_NUM_NODES", "2")]), Some(2));
        assert_eq!(count(&[job, ("SLURM_JOB_NODELIST", "n1")]), Some(1));
        assert_eq!(count(&[job, ("SLURM_JOB_NODELIST", "n[1-3],m2")]), Some(4));
        assert_eq!(count(&[job]), None);
    }

    #[test]
    fn step_daemons_are_the_slurm_cgroups_of_each_step_only() {
        let job = "system.slice/n1_slurmstepd.scope/job_42";
        for d in ["step_0/slurm", "step_batch/slurm", "step_extern/slurm"] {
            assert!(is_step_daemon(&format!("{job}/{d}")), "{d}");
        }
        for other in [
            "step_0",
            "step_0/user/task_0",
            "step_extern/user/task_special",
            "step_0/slurm/x",
            "slurm",
        ] {
            assert!(!is_step_daemon(&format!("{job}/{other}")), "{other}");
        }
        assert!(!is_step_daemon(
            "user.slice/x_slurmstepd.scope/job_1/step_0/slurm"
        ));
    }

    #[test]
    fn job_cgroups_of_both_builds_are_recognised_and_nothing_else() {
        assert_eq!(job_id("system.slice/slurmstepd.scope/job_42"), Some(42));
        assert_eq!(
            job_id("system.slice/node7_slurmstepd.scope/job_42"),
            Some(42)
        );
        assert_eq!(job_id("system.slice/slurmstepd.scope/job_42/step_0"), None);
        assert_eq!(job_id("system.slice/slurmstepd.scope/slurmd"), None);
        assert_eq!(job_id("slurm/uid_1000/job_7"), None);
        assert_eq!(job_id("system.slice/slurmstepd.scope/job_"), None);
        assert_eq!(job_id("system.slice/slurmstepd.scope/job_4x"), None);
        assert_eq!(job_id("job_1"), None);
        // Only as a direct child of Slurm's slice: not in a user's
        // delegated subtree, nor below another service.
        for forged in [
            "user.slice/user-1000.slice/user@1000.service/x_slurmstepd.scope/job_1",
            "system.slice/foo.service/x_slurmstepd.scope/job_1",
            "x_slurmstepd.scope/job_1",
        ] {
            assert_eq!(job_id(forged), None, "{forged}");
            assert!(!is_job_helper(&format!("{forged}/step_extern")), "{forged}");
        }
        assert_eq!(job_id(""), None);
    }

    #[test]
    fn slurm_26_05_job_cgroups_named_by_sluid_are_found_through_the_prologs_alias() {
        let scope = "system.slice/slurmstepd.scope";
        let job = format!("{scope}/sEKNKTV3WPV500");
        assert_eq!(job_dir(&job), Some(JobDir::Sluid("sEKNKTV3WPV500")));
        assert_eq!(job_dir(&format!("{job}/step_0")), None);
        assert_eq!(job_dir(&format!("{scope}/system")), None);
        assert_eq!(job_dir(&format!("{scope}/sEKNKTV3WPV50")), None);
        assert_eq!(job_dir(&format!("{scope}/seknktv3wpv500")), None);
        assert_eq!(job_dir("user.slice/sEKNKTV3WPV500"), None);

        let env: HashMap<&str, &str> = [
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_SLUID", "sEKNKTV3WPV500"),
        ]
        .into();
        let rec = record_from_env(Hook::Prolog, |k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(rec.sluid.as_deref(), Some("sEKNKTV3WPV500"));
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Before the Prolog ran, a SLUID says nothing.
        assert_eq!(job_id_in(d, &job), None);
        write_record(d, &rec).unwrap();
        assert_eq!(job_id_in(d, &job), Some(42));
        assert_eq!(job_id_in(d, &format!("{scope}/job_42")), Some(42));
        assert_eq!(read_record(d, 42), Some(rec));
        remove_record(d, 42).unwrap();
        assert_eq!(job_id_in(d, &job), None);
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0);

        // A value that is no SLUID makes no alias (nor a path outside).
        let bad = record_from_env(Hook::Prolog, |k| match k {
            "SLURM_JOB_ID" => Some("7".into()),
            "SLURM_JOB_SLUID" => Some("../../etc/x".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(bad.sluid, None);
    }

    #[test]
    fn the_prolog_environment_becomes_a_record_and_back() {
        let env: HashMap<&str, &str> = [
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_PARTITION", "scavenger"),
            ("SLURM_JOB_QOS", ""),
            ("SPANK_LINGER", "guest-gang:200"),
        ]
        .into();
        let rec = record_from_env(Hook::Prolog, |k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(rec.partition.as_deref(), Some("scavenger"));
        assert_eq!((rec.qos.as_deref(), rec.account.as_deref()), (None, None));
        assert_eq!(rec.request_parts(), Some(("guest-gang", Some("200"))));
        assert_eq!(rec.nodes, None);

        let dir = tempfile::tempdir().unwrap();
        write_record(dir.path(), &rec).unwrap();
        assert_eq!(read_record(dir.path(), 42), Some(rec));
        assert_eq!(read_record(dir.path(), 43), None);
        remove_record(dir.path(), 42).unwrap();
        remove_record(dir.path(), 42).unwrap();
        assert_eq!(read_record(dir.path(), 42), None);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_task_waits_for_the_agents_mark_only_when_there_is_one_to_wait_for() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let msg = wait_applied(d, 7, || true).unwrap();
        assert!(msg.contains("no record"), "{msg}");
        write_record(
            d,
            &JobRecord {
                job_id: 7,
                ..Default::default()
            },
        )
        .unwrap();
        let msg = wait_applied(d, 7, || false).unwrap();
        assert!(msg.contains("not running"), "{msg}");
        mark_applied(d, [(7, "guest"), (8, "primary")].into_iter());
        let msg = wait_applied(d, 7, || true).unwrap();
        assert!(msg.contains("runs as guest"), "{msg}");
        // No record for job 8: no mark either.
        assert!(!applied_path(d, 8).exists());
        remove_record(d, 7).unwrap();
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0);
    }

    #[test]
    fn outside_a_prolog_the_command_says_where_it_belongs() {
        let e = record_from_env(Hook::Prolog, |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Prolog="), "{e}");
        let e = record_from_env(Hook::Epilog, |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("slurm epilog") && e.contains("Epilog="), "{e}");
        let e = record_from_env(Hook::Wait, |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("SPANK"), "{e}");
        let e = record_from_env(Hook::Prolog, |k| (k == "SLURM_JOB_ID").then(|| "x".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a job number"), "{e}");
    }
}
