// SPDX-License-Identifier: GPL-2.0-only
//! The cluster the Slurm tests run: its node, munged, slurmctld and
//! slurmd as a site runs them, and what the tests read of its jobs (the
//! tests: mod.rs; what Slurm needs in this guest: mod.rs's header).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

pub(super) const ADDR: &str = "10.77.0.1";
pub(super) const RECORDS: &str = "/run/scx_linger/slurm";
pub(super) const METRICS_PORT: u16 = 9477;

/// The node's name: slurmctld runs only on the host SlurmctldHost names.
pub(super) fn node() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// The SPANK plugin, built by `cargo xtask test` (xtask/src/spank.rs).
pub(super) const SPANK_PLUGIN: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/target/slurm/linger_spank.so");

/// The config the hooks read, as a site installs it; removed again, so
/// that no other test's hooks see its rows.
pub(crate) struct SiteConfig;

pub(crate) const SITE_CONFIG: &str = "/etc/scx_linger/config.toml";

impl SiteConfig {
    pub(crate) fn install(text: &str) -> SiteConfig {
        fs::create_dir_all("/etc/scx_linger").unwrap();
        fs::write(SITE_CONFIG, text).unwrap();
        SiteConfig
    }
}

impl Drop for SiteConfig {
    fn drop(&mut self) {
        let _ = fs::remove_file(SITE_CONFIG);
    }
}

/// Where slurmd finds slurm.conf.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// A file of its own (`-f`), as with /etc/slurm/slurm.conf.
    File,
    /// Fetched from slurmctld (`--conf-server`, Slurm's configless mode).
    Configless,
}

pub(crate) struct Cluster {
    dir: PathBuf,
    daemons: Vec<Child>,
}

/// Run `cmd` with sh; its stdout, or the test fails with its output.
pub(crate) fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Once per boot: the address, munge's directories, the cgroups.
pub(super) fn prepare_node() {
    if Path::new("/run/linger-slurm-prepared").exists() {
        return;
    }
    // On loopback itself: glibc counts any address but 127.0.0.1 as
    // configured, and the LTS kernel we build has no dummy module.
    sh(&format!("ip addr replace {ADDR}/32 dev lo"));
    munge_and_cgroups();
    sh("touch /run/linger-slurm-prepared");
}

/// munged as the munge user in the foreground, started through `spawn`
/// (which keeps its output); returns once its socket is there.
pub(crate) fn start_munged(spawn: impl FnOnce(&mut Command) -> Child) -> Child {
    let child = spawn(
        Command::new("setpriv")
            .args(["--reuid=munge", "--regid=munge", "--init-groups"])
            .args(["munged", "--foreground", "--force"]),
    );
    assert!(
        wait_until(Duration::from_secs(10), || Path::new(
            "/run/munge/munge.socket.2"
        )
        .exists()),
        "munged did not start (its output is in the results folder)"
    );
    child
}

/// Start `cmd` in `system.slice/<unit>`, where systemd starts a site's
/// daemons (slurmd.service, munge.service, ...): the node's machinery, as
/// on a real node. The guest has no systemd, so the test places them.
pub(crate) fn as_service<'a>(cmd: &'a mut Command, unit: &str) -> &'a mut Command {
    use std::os::unix::process::CommandExt;
    let dir = Path::new(CGROUP_ROOT).join("system.slice").join(unit);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    let procs = dir.join("cgroup.procs");
    // SAFETY: the child only writes its pid to a file before it execs.
    unsafe {
        cmd.pre_exec(move || fs::write(&procs, std::process::id().to_string()));
    }
    cmd
}

/// What munged and slurmd need on a guest without systemd: munge's
/// directories, and `system.slice` with the controllers enabled down to it.
pub(crate) fn munge_and_cgroups() {
    sh("mkdir -p /run/munge /var/log/munge /var/lib/munge \
        && chown munge:munge /run/munge /var/log/munge /var/lib/munge");
    // cpuset and cpu are what binding and our accounting need; memory is
    // enabled where the kernel lets it (our 6.12 guest answers EIO).
    sh("mkdir -p /sys/fs/cgroup/system.slice \
        && for d in /sys/fs/cgroup /sys/fs/cgroup/system.slice; do \
             echo '+cpuset +cpu' > $d/cgroup.subtree_control \
             && { echo +memory > $d/cgroup.subtree_control || true; } || exit 1; \
           done");
}

impl Cluster {
    /// munged, slurmctld and slurmd, the agent's Prolog and Epilog, the
    /// SPANK plugin; returns once the node is idle.
    pub(crate) fn start() -> Cluster {
        Self::start_with(Layout::File)
    }

    /// The same with slurmd configless: started with `--conf-server` and
    /// no slurm.conf of its own, it fetches the config from slurmctld
    /// and keeps it in a cache of its spool, as many sites run nodes.
    pub(crate) fn start_configless() -> Cluster {
        Self::start_with(Layout::Configless)
    }

    fn start_with(layout: Layout) -> Cluster {
        prepare_node();
        assert!(
            Path::new(SPANK_PLUGIN).exists(),
            "{SPANK_PLUGIN} is missing: run the guest tests with `cargo xtask test`, which builds it"
        );
        // One directory per cluster: a failed test's logs stay for reading.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = results_dir().join(format!("slurm-{}-{n}", std::process::id()));
        // Slurm's state and spool on the guest's own tmpfs: slurmstepd
        // mmaps the batch script, which the shared results folder refuses.
        let local = PathBuf::from(format!("/run/linger-slurm-{n}"));
        for sub in [local.join("state"), local.join("spool"), dir.join("log")] {
            let _ = fs::remove_dir_all(&sub);
            fs::create_dir_all(sub).unwrap();
        }
        let d = dir.display();
        let l = local.display();
        // The package's hooks, at the paths its docs give slurm.conf.
        crate::package::installed();
        let hooks = match layout {
            Layout::File => {
                "Prolog=/usr/lib/scx_linger/slurm-prolog\nEpilog=/usr/lib/scx_linger/slurm-epilog\n"
                    .to_string()
            }
            // The other layout the docs give: the hooks as lines of the
            // site's own scripts. Each script also notes which slurm.conf
            // slurmd named to it, which the configless test checks.
            Layout::Configless => {
                for hook in ["prolog", "epilog"] {
                    let p = dir.join(format!("site-{hook}"));
                    fs::write(
                        &p,
                        format!(
                            "#!/bin/sh\necho \"$SLURM_CONF\" > {d}/log/{hook}-conf.$SLURM_JOB_ID\n\
                             /usr/lib/scx_linger/slurm-{hook}\n"
                        ),
                    )
                    .unwrap();
                    sh(&format!("chmod 755 {}", p.display()));
                }
                format!("Prolog={d}/site-prolog\nEpilog={d}/site-epilog\n")
            }
        };
        let cpus = nr_cpus();
        let node = node();
        fs::write(
            dir.join("slurm.conf"),
            format!(
                "ClusterName=linger\nSlurmctldHost={node}({ADDR})\nSlurmUser=root\nSlurmdUser=root\n\
                 AuthType=auth/munge\nStateSaveLocation={l}/state\nSlurmdSpoolDir={l}/spool\n\
                 SlurmctldPidFile={l}/ctld.pid\nSlurmdPidFile={l}/d.pid\n\
                 SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
                 ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\n\
                 SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nSchedulerType=sched/backfill\n\
                 PrologFlags=Contain\n{hooks}PlugStackConfig={d}/plugstack.conf\n\
                 MpiDefault=none\nReturnToService=2\nSlurmdTimeout=30\n{configless}\
                 NodeName={node} NodeAddr={ADDR} CPUs={cpus} State=UNKNOWN\n\
                 PartitionName=primary Nodes={node} Default=YES OverSubscribe=FORCE:1 MaxTime=INFINITE State=UP\n\
                 PartitionName=guest Nodes={node} OverSubscribe=FORCE:4 MaxTime=INFINITE State=UP\n\
                 PartitionName=parallel Nodes={node} OverSubscribe=FORCE:4 MaxTime=INFINITE State=UP\n",
                configless = match layout {
                    Layout::File => "",
                    Layout::Configless => "SlurmctldParameters=enable_configless\n",
                }
            ),
        )
        .unwrap();
        fs::write(
            dir.join("cgroup.conf"),
            "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\nConstrainCores=yes\n",
        )
        .unwrap();
        fs::write(
            dir.join("plugstack.conf"),
            // The plugin runs the installed binary, its default.
            format!("required {SPANK_PLUGIN}\n"),
        )
        .unwrap();
        let conf = dir.join("slurm.conf");
        // Each daemon's own output (what it says before its log is open).
        let spawn = |cmd: &mut Command| {
            let name = cmd.get_program().to_string_lossy().into_owned();
            let out = fs::File::create(dir.join(format!("log/{name}.out"))).unwrap();
            // A configless slurmd has no file to be pointed at.
            if layout == Layout::Configless && name == "slurmd" {
                cmd.env_remove("SLURM_CONF");
            } else {
                cmd.env("SLURM_CONF", &conf);
            }
            cmd.stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .unwrap()
        };
        let mut daemons = vec![start_munged(|c| spawn(as_service(c, "munge.service")))];
        daemons.push(spawn(as_service(
            Command::new("slurmctld")
                .args(["-D", "-i", "-f"])
                .arg(&conf),
            "slurmctld.service",
        )));
        let mut slurmd = Command::new("slurmd");
        slurmd.args(["-D", "-N", &node]);
        match layout {
            Layout::File => slurmd.arg("-f").arg(&conf),
            Layout::Configless => slurmd.args(["--conf-server", ADDR]),
        };
        daemons.push(spawn(as_service(&mut slurmd, "slurmd.service")));
        let c = Cluster { dir, daemons };
        let idle = wait_until(Duration::from_secs(60), || c.node_state() == "idle");
        assert!(
            idle,
            "the node is {:?}, not idle: {}",
            c.node_state(),
            c.logs()
        );
        c
    }

    /// Where the daemons' logs and the jobs' output go.
    pub(crate) fn log_dir(&self) -> PathBuf {
        self.dir.join("log")
    }

    /// The cluster's slurm.conf.
    pub(crate) fn conf(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    pub(crate) fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("SLURM_CONF", self.dir.join("slurm.conf"));
        c
    }

    pub(super) fn node_state(&self) -> String {
        let out = self
            .cmd("sinfo")
            .args(["-h", "-N", "-o", "%T"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Submit a batch job that spins `threads` CPU hogs for `secs`. Its
    /// first line writes the class the agent had applied to the job by
    /// then, if any (see first_line()).
    pub(crate) fn spin_job(&self, args: &[&str], threads: usize, secs: u32) -> u64 {
        self.submit(
            args,
            threads,
            &format!("timeout {secs} sh -c 'while :; do :; done'"),
        )
    }

    /// The same with a task that sleeps for `secs`: a job that must run,
    /// not load the node (the hooks' tests; spinning gangs would leave
    /// the test's own commands only relief and the open phase).
    pub(crate) fn sleep_job(&self, args: &[&str], secs: u32) -> u64 {
        self.submit(args, 1, &format!("sleep {secs}"))
    }

    /// sbatch a script that starts `tasks` copies of `task` in the
    /// background, marks them started (wait_hogs()) and waits for them.
    fn submit(&self, args: &[&str], tasks: usize, task: &str) -> u64 {
        let script = format!(
            "#!/bin/sh\necho \"applied: $(cat {RECORDS}/$SLURM_JOB_ID.applied 2>/dev/null)\"\n\
             for i in $(seq {tasks}); do {task} & done\n\
             : > {}/log/job-$SLURM_JOB_ID.hogs\nwait\n",
            self.dir.display()
        );
        let out = self
            .cmd("sbatch")
            .args(["--parsable", "-n", &tasks.to_string(), "-o"])
            .arg(self.dir.join("log/job-%j.out"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(script.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "sbatch {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.trim().split(';').next().unwrap().parse().unwrap()
    }

    /// The job's state as squeue shows it ("" once it has left the queue).
    pub(super) fn job_state(&self, id: u64) -> String {
        let out = self
            .cmd("squeue")
            .args(["-h", "-j", &id.to_string(), "-o", "%T"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub(super) fn logs(&self) -> String {
        let mut s = String::new();
        for f in ["slurmctld.log", "slurmd.log"] {
            let text = fs::read_to_string(self.dir.join("log").join(f)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            s += &format!(
                "\n--- {f}:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        s
    }
}

impl Drop for Cluster {
    /// Cancel every job and wait for Slurm to end them; then end what is
    /// left by cgroup: slurmstepd runs a job's tasks on its own, so a job
    /// whose kill request was still on its way when slurmd stopped would
    /// otherwise spin on as primary work through the tests that follow.
    fn drop(&mut self) {
        let _ = self.cmd("scancel").args(["--full", "-u", "root"]).status();
        wait_until(Duration::from_secs(15), || {
            self.cmd("squeue")
                .args(["-h", "-o", "%i"])
                .output()
                .is_ok_and(|o| o.stdout.is_empty())
        });
        for d in self.daemons.iter_mut().rev() {
            let _ = d.kill();
            let _ = d.wait();
        }
        kill_job_cgroups();
    }
}

/// Kill every process left in a Slurm job cgroup (cgroup.kill), and wait
/// until they are gone.
pub(super) fn kill_job_cgroups() {
    let jobs: Vec<PathBuf> = fs::read_dir("/sys/fs/cgroup/system.slice")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with("slurmstepd.scope")
        })
        .flat_map(|scope| fs::read_dir(scope.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("cgroup.kill").exists())
        .collect();
    for job in &jobs {
        let _ = fs::write(job.join("cgroup.kill"), "1");
    }
    wait_until(Duration::from_secs(10), || {
        jobs.iter().all(|j| {
            fs::read_to_string(j.join("cgroup.events")).map_or(true, |e| e.contains("populated 0"))
        })
    });
}

/// Job `id`'s own cgroup (found under whichever slurmstepd scope).
pub(crate) fn job_cgroup(id: u64) -> Option<PathBuf> {
    fs::read_dir("/sys/fs/cgroup/system.slice")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join(format!("job_{id}")))
        .find(|p| p.is_dir())
}

/// CPU time the kernel charged to a cgroup (`cpu.stat` usage_usec).
pub(super) fn usage_usec(cg: &Path) -> u64 {
    usage_us(cg).unwrap_or(0)
}

/// Wait until job `id`'s batch script has started all its hogs: on a
/// slow host that can be seconds after the job is RUNNING. Only for a job
/// that gets CPU time: a guest job's script beside a busy primary job may
/// never get that far.
pub(crate) fn wait_hogs(c: &Cluster, id: u64) {
    let started = wait_until(Duration::from_secs(60), || {
        c.dir.join(format!("log/job-{id}.hogs")).exists()
    });
    assert!(started, "job {id} did not start its hogs: {}", c.logs());
}

/// Wait until every job runs with its cgroup there and its hogs; then each job's CPU
/// time over `window`, as shares of the node's CPU time.
pub(super) fn shares(c: &Cluster, jobs: &[u64], window: Duration) -> Vec<f64> {
    let running = wait_until(Duration::from_secs(60), || {
        jobs.iter()
            .all(|&j| c.job_state(j) == "RUNNING" && job_cgroup(j).is_some())
    });
    assert!(running, "jobs {jobs:?} did not all start: {}", c.logs());
    // Every job's script has forked its hogs (a gang's script runs only
    // in its slots, seconds after Slurm calls the job running); then a
    // second for them to start spinning before the window opens.
    for &j in jobs {
        wait_hogs(c, j);
    }
    std::thread::sleep(Duration::from_secs(1));
    let cgs: Vec<PathBuf> = jobs
        .iter()
        .map(|&j| job_cgroup(j).unwrap_or_else(|| panic!("job {j} ended early: {}", c.logs())))
        .collect();
    let before: Vec<u64> = cgs.iter().map(|p| usage_usec(p)).collect();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let dt = t0.elapsed().as_secs_f64() * 1e6 * nr_cpus() as f64;
    let after: Vec<Option<u64>> = cgs.iter().map(|p| usage_us(p)).collect();
    // A job that ended inside the window took its cgroup, and its usage,
    // with it: a share of 0 that says nothing of the scheduler. The
    // test's own commands are slow beside spinning jobs on emulated CPUs,
    // so a job must spin well past the window (spin_job's secs).
    for (&j, a) in jobs.iter().zip(&after) {
        assert!(
            a.is_some(),
            "job {j} ended inside the {window:?} share window: give it a longer spin"
        );
    }
    after
        .iter()
        .zip(before)
        .map(|(a, b)| a.unwrap_or(0).saturating_sub(b) as f64 / dt)
        .collect()
}

pub(super) fn stats_jobs() -> Vec<serde_json::Value> {
    stats_json()["jobs"].as_array().cloned().unwrap_or_default()
}

pub(super) fn stats_job(slurm_id: u64) -> Option<serde_json::Value> {
    stats_jobs()
        .into_iter()
        .find(|j| j["slurm_job_id"].as_u64() == Some(slurm_id))
}

/// Cancel `jobs` and wait until they are gone: a test that measured a
/// long spin ends it once it has its figure.
pub(super) fn cancel(c: &Cluster, jobs: &[u64]) {
    let _ = c
        .cmd("scancel")
        .args(jobs.iter().map(|j| j.to_string()))
        .status();
    wait_gone(c, jobs);
}

pub(super) fn wait_gone(c: &Cluster, jobs: &[u64]) {
    let gone = wait_until(Duration::from_secs(60), || {
        jobs.iter()
            .all(|&j| c.job_state(j).is_empty() && job_cgroup(j).is_none())
    });
    assert!(gone, "jobs {jobs:?} did not end: {}", c.logs());
}

/// What job `id` found applied when its first line ran ("" for nothing).
pub(super) fn first_line(c: &Cluster, id: u64) -> String {
    let out = fs::read_to_string(c.dir.join(format!("log/job-{id}.out"))).unwrap_or_default();
    let line = out.lines().next().unwrap_or_default();
    line.strip_prefix("applied:")
        .unwrap_or_else(|| panic!("job {id} wrote {out:?}"))
        .trim()
        .to_string()
}

/// The Epilog removed every record (and mark) it was given.
pub(super) fn assert_no_records_left() {
    assert_eq!(
        records_left(),
        Vec::<String>::new(),
        "the Epilog leaves nothing"
    );
}

pub(super) fn records_left() -> Vec<String> {
    fs::read_dir(RECORDS)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
