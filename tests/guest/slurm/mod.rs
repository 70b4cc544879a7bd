// SPDX-License-Identifier: GPL-2.0-only
//! A real Slurm in the guest (Debian's 22.05: munged, slurmctld, slurmd with
//! the cgroup/v2, task/cgroup and proctrack/cgroup plugins and core
//! binding), jobs submitted with `sbatch`, and what the kernel says they
//! got: each job cgroup's own `cpu.stat`.
//!
//! What Slurm needs here without systemd as PID 1 (found in the guest; see
//! also docs/operating.md's Slurm section):
//! - `IgnoreSystemd=yes`, and `system.slice` made by hand with the cpuset,
//!   cpu and memory controllers enabled down to it, else task/cgroup binds
//!   nothing;
//! - an address of its own: the guest has only 127.0.0.1, and glibc's
//!   AI_ADDRCONFIG then refuses even numeric addresses ("Unable to
//!   resolve"), so loopback gets a second one;
//! - munged in the foreground with its run, log and lib directories made.
//!
//! The partitions are the Linger-Longer arrangement: `primary` never shares
//! a core between its jobs (OverSubscribe=FORCE:1), `guest` runs on the
//! cores primaries hold (FORCE:4).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::trace;

mod cluster;
pub(crate) use cluster::*;

/// The site's rule makes the `guest` partition's jobs guests: beside a
/// primary job on the same cores a guest job only harvests, by the job
/// cgroups' own cpu.stat, and both appear in the stats under their Slurm
/// job ids with the class and its source. A restart of the agent under
/// the running jobs changes none of it.
#[test]
fn a_guest_partition_job_only_harvests_beside_a_primary_job_across_an_agent_restart() {
    require_guest();
    let cfg = results_dir().join("slurm-site.toml");
    fs::write(
        &cfg,
        "[[slurm_rule]]\npartition = \"guest\"\nclass = \"guest\"\n",
    )
    .unwrap();
    let metrics_addr = format!("127.0.0.1:{METRICS_PORT}");
    let args = [
        "--config",
        cfg.to_str().unwrap(),
        "--metrics-addr",
        metrics_addr.as_str(),
    ];
    let agent = Agent::start(&args);
    let c = Cluster::start();
    let n = nr_cpus();
    // Long enough for both measurements and the restart between them on
    // a slow host; cancelled once measured.
    // The guest job first, alone, so that its script has forked its hogs
    // before the primary job's fill the node: a guest's script beside a
    // busy primary may never get that far, and the window must see the
    // guest's hogs spinning, not its script waiting to fork them.
    let guest = c.spin_job(&["-p", "guest"], n, 90);
    wait_hogs(&c, guest);
    let primary = c.spin_job(&["-p", "primary"], n, 90);
    wait_hogs(&c, primary);
    let s = shares(&c, &[primary, guest], Duration::from_secs(2));
    figure(&format!(
        "slurm: primary job {:.1}% of the node, guest job {:.1}% (sbatch, {n} CPUs, cgroup cpu.stat, 2 s)",
        s[0] * 100.0,
        s[1] * 100.0
    ));
    let p = stats_job(primary).expect("the primary job in the stats by its Slurm id");
    let g = stats_job(guest).expect("the guest job in the stats by its Slurm id");
    assert_eq!(p["class"], "primary", "{p}");
    assert_eq!(g["class"], "guest", "{g}");
    assert!(
        g["source"].as_str().unwrap().contains("partition=guest"),
        "{g}"
    );
    // And in the metrics, on the job's info series.
    let metrics = http_get(METRICS_PORT, "/metrics").expect("scraping /metrics");
    let info = format!("class=\"guest\",slurm_job_id=\"{guest}\"}} 1");
    let infos: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("scx_linger_job_info{"))
        .collect();
    assert!(
        infos.iter().any(|l| l.ends_with(&info)),
        "no scx_linger_job_info for job {guest} (job state now {:?}, its cgroup {:?}); the series: {infos:#?}",
        c.job_state(guest),
        job_cgroup(guest)
    );
    // Generous bounds for a loaded 2-core host; under EEVDF the two jobs
    // would split the CPUs about evenly.
    assert!(s[0] > 0.80, "primary job got {:.2} of the node", s[0]);
    assert!(s[1] < 0.10, "guest job got {:.2} beside the primary", s[1]);

    // A restart of the agent under the running jobs (what `systemctl
    // restart`, systemd's own restarts and a package upgrade do; the unit
    // keeps the runtime directory the records live in) keeps each in its
    // class: by the stats, and by the kernel.
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
    let record = Path::new(RECORDS).join(format!("{guest}.toml"));
    assert!(record.exists(), "the job's record went with the agent");
    // A record names the job's account and partition: root's alone, as
    // the Prolog writes it.
    {
        use std::os::unix::fs::MetadataExt;
        for (path, mode) in [(Path::new(RECORDS), 0o700), (record.as_path(), 0o600)] {
            let meta = std::fs::metadata(path).unwrap();
            assert_eq!(
                (meta.uid(), meta.mode() & 0o777),
                (0, mode),
                "{} is not root's alone",
                path.display()
            );
        }
    }
    let agent = Agent::start(&args);
    let again = wait_until(Duration::from_secs(20), || {
        stats_job(guest).is_some_and(|j| {
            j["class"] == "guest"
                && j["source"]
                    .as_str()
                    .is_some_and(|s| s.contains("partition=guest"))
        })
    });
    assert!(
        again,
        "after the restart job {guest} is {:?}",
        stats_job(guest)
    );
    let after = shares(&c, &[primary, guest], Duration::from_secs(2));
    figure(&format!(
        "slurm: after an agent restart, primary job {:.1}% of the node, guest job {:.1}%",
        after[0] * 100.0,
        after[1] * 100.0
    ));
    assert!(
        after[0] > 0.80 && after[1] < 0.10,
        "after the restart: {after:?}"
    );
    // The guest job cancelled while the primary job fills the node: its
    // step daemons are the node's machinery and its dying tasks go first,
    // so the cancel ends as one with the node to itself does (the primary
    // job's, next), far inside Slurm's UnkillableStepTimeout (60 s by
    // default), past which slurmd drains the node.
    let timed_cancel = |job: u64| {
        let t = Instant::now();
        cancel(&c, &[job]);
        t.elapsed().as_secs_f64()
    };
    let guest_cancel = timed_cancel(guest);
    let state = c.node_state();
    let primary_cancel = timed_cancel(primary);
    figure(&format!(
        "slurm: the guest job cancelled beside the running primary job was gone (no job, no cgroup) in {guest_cancel:.1} s, the primary job alone afterwards in {primary_cancel:.1} s ({:.2}x); the node {state}",
        guest_cancel / primary_cancel.max(1e-3)
    ));
    assert!(
        guest_cancel < 30.0 && !state.contains("drain"),
        "cancelling the guest job under primary load took {guest_cancel:.1} s and left the node {state}"
    );
    // The SPANK plugin held each job's first task until the agent had
    // handed BPF its class: no instruction of the guest ran as primary.
    assert_eq!(first_line(&c, guest), "guest");
    assert_eq!(first_line(&c, primary), "primary");
    assert_no_records_left();
    drop(c);
    drop(agent);
}

/// `sbatch --linger=guest` (the SPANK plugin) demotes a job with no site
/// rule; asking to be a gang is a promotion, ignored and said. When the
/// job is alone it takes the idle CPUs: a guest is not throttled.
#[test]
fn a_jobs_linger_request_demotes_it_and_never_promotes_it() {
    require_guest();
    let agent = Agent::start(&[]);
    let c = Cluster::start();
    let n = nr_cpus();
    let asked = c.spin_job(&["-p", "guest", "--linger=guest"], n, 60);
    let greedy = c.spin_job(&["-p", "guest", "--linger=gang"], 1, 60);
    // The primary job's hog must be running before the window opens, or
    // the guest rightly harvests its CPU meanwhile.
    wait_hogs(&c, greedy);
    let s = shares(&c, &[asked, greedy], Duration::from_secs(3));
    let a = stats_job(asked).expect("the --linger=guest job in the stats");
    let g = stats_job(greedy).expect("the --linger=gang job in the stats");
    assert_eq!(a["class"], "guest", "{a}");
    assert!(a["source"].as_str().unwrap().contains("--linger"), "{a}");
    assert_eq!(g["class"], "primary", "{g}");
    figure(&format!(
        "slurm --linger: guest job {:.0}% of the node beside a 1-thread primary job {:.0}%",
        s[0] * 100.0,
        s[1] * 100.0
    ));
    // The primary job's one hog has a CPU; the guest, not throttled,
    // harvests the other.
    assert!(s[0] > 0.2, "the --linger=guest job got {:.2}", s[0]);
    assert!(
        s[1] > 0.8 / n as f64,
        "the --linger=gang job got {:.2}",
        s[1]
    );
    let ls = agent_output(Command::new(AGENT).arg("ls"));
    let ls = String::from_utf8_lossy(&ls.stdout);
    assert!(ls.contains("--linger=gang ignored"), "{ls}");
    cancel(&c, &[asked, greedy]);
    assert_no_records_left();
    drop(c);
    drop(agent);
}

/// A configless node (slurmd started with `--conf-server`, no slurm.conf
/// of its own, as many sites run nodes): slurmd hands its Prolog the
/// config it fetched (its cache, as SLURM_CONF), and through it the hook
/// asks slurmctld what the environment lacks: a multi-node job's row
/// (or its QOS before Slurm 26.05; without accounting, as here, Slurm
/// gives jobs none). Run by hand as slurmd ran it, with two nodes in its
/// environment, the Prolog reaches slurmctld and finds no row, where an
/// unreadable config would have said it could not ask.
#[test]
fn on_a_configless_node_the_prolog_asks_slurmctld_through_the_fetched_config() {
    require_guest();
    let _site = SiteConfig::install("[rows]\ncount = 2\nslot_ms = 100\n");
    let agent = Agent::start(&["--config", SITE_CONFIG]);
    let c = Cluster::start_configless();
    let job = c.spin_job(&["-p", "primary"], 1, 60);
    wait_hogs(&c, job);
    let conf = fs::read_to_string(c.log_dir().join(format!("prolog-conf.{job}")))
        .unwrap_or_default()
        .trim()
        .to_string();
    assert!(
        conf.contains("conf-cache") && Path::new(&conf).exists(),
        "the Prolog of a configless slurmd was given SLURM_CONF={conf:?}, not slurmd's cache"
    );
    let out = agent_output(
        c.cmd(AGENT)
            .args(["slurm", "prolog"])
            .env("SLURM_CONF", &conf)
            .env("SLURM_JOB_ID", job.to_string())
            .env("SLURM_JOB_PARTITION", "primary")
            .env("SLURM_JOB_NUM_NODES", "2"),
    );
    let line = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    figure(&format!(
        "slurm, configless node: the Prolog was given SLURM_CONF={conf}; run with it for a two-node job: {}",
        line.trim()
    ));
    assert!(
        line.contains("without a cluster row") && !line.contains("from slurmctld:"),
        "the Prolog with a configless node's SLURM_CONF did not reach slurmctld: {line}{}",
        c.logs()
    );
    cancel(&c, &[job]);
    assert_no_records_left();
    drop(c);
    drop(agent);
}

/// Without the agent, jobs still run and the node is not drained: the
/// Prolog and Epilog succeed whether or not scx_linger runs. The same
/// primary and guest jobs as above split the node under the kernel's own
/// scheduler: the baseline for the figure above.
#[test]
fn jobs_run_and_the_node_stays_up_when_the_agent_is_not_running() {
    require_guest();
    assert_ne!(state(), "enabled", "another scheduler is still loaded");
    let c = Cluster::start();
    let n = nr_cpus();
    let primary = c.spin_job(&["-p", "primary"], n, 60);
    let guest = c.spin_job(&["-p", "guest", "--linger=guest"], n, 60);
    let s = shares(&c, &[primary, guest], Duration::from_secs(4));
    figure(&format!(
        "slurm without scx_linger (EEVDF): primary job {:.1}% of the node, guest job {:.1}%",
        s[0] * 100.0,
        s[1] * 100.0
    ));
    assert!(s[1] > 0.2, "the guest job got {:.2}: did it run?", s[1]);
    cancel(&c, &[primary, guest]);
    let job = c.spin_job(&["-p", "primary", "--linger=guest"], 1, 2);
    let started = wait_until(Duration::from_secs(60), || job_cgroup(job).is_some());
    assert!(started, "job {job} did not start: {}", c.logs());
    wait_gone(&c, &[job]);
    // Nothing applied and nothing waited for: the plugin lets it run.
    assert_eq!(first_line(&c, job), "");
    assert_eq!(c.node_state(), "idle", "{}", c.logs());
    assert_no_records_left();
}

/// The running threads (the spinning shells) of job `id`'s cgroup.
fn spinners(id: u64) -> Vec<i32> {
    let Some(cg) = job_cgroup(id) else {
        return Vec::new();
    };
    walkdir::WalkDir::new(cg)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "cgroup.threads")
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .flat_map(|t| {
            t.lines()
                .filter_map(|l| l.trim().parse::<i32>().ok())
                .collect::<Vec<_>>()
        })
        .filter(|tid| {
            let comm = fs::read_to_string(format!("/proc/{tid}/comm")).unwrap_or_default();
            let cmd = fs::read_to_string(format!("/proc/{tid}/cmdline")).unwrap_or_default();
            comm.trim() == "sh" && cmd.contains("while")
        })
        .collect()
}

/// The agent with a site rule that makes the `parallel` partition's jobs
/// gangs (written to `name` in the results dir, returned), and a cluster.
pub(crate) fn gang_partition(name: &str) -> (Agent, Cluster, PathBuf) {
    require_guest();
    let cfg = results_dir().join(name);
    fs::write(
        &cfg,
        "[[slurm_rule]]\npartition = \"parallel\"\nclass = \"gang\"\nslot_ms = 100\n",
    )
    .unwrap();
    let agent = Agent::start(&["--config", cfg.to_str().unwrap()]);
    (agent, Cluster::start(), cfg)
}

/// A site rule makes the `parallel` partition's jobs gangs: two such jobs
/// on the same cores take turns, each with its threads running together,
/// by the kernel's sched_switch trace. Then, in the same cluster, jobs
/// started with `srun` with their step daemons beside them starve no
/// task (srun_jobs_starve_no_task()).
#[test]
fn parallel_jobs_are_gangs_that_take_turns_and_no_task_starves_beside_them() {
    let (agent, c, cfg) = gang_partition("slurm-gangs.toml");
    let n = nr_cpus();
    let jobs = [
        c.spin_job(&["-p", "parallel"], n, 120),
        c.spin_job(&["-p", "parallel"], n, 120),
    ];
    let s = shares(&c, &jobs, Duration::from_secs(1));
    let v = stats_json();
    for j in jobs {
        let suffix = format!("/job_{j}");
        let g = v["gangs"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["path"].as_str().is_some_and(|p| p.ends_with(&suffix)))
            .unwrap_or_else(|| {
                let ls = agent_output(Command::new(AGENT).args(["ls", "--all"]));
                panic!(
                    "job {j} is not among the gangs: {v}\n{}",
                    String::from_utf8_lossy(&ls.stdout)
                )
            });
        assert_eq!(g["class"], "gang", "{g}");
    }
    let tids = jobs.map(spinners);
    assert!(
        tids.iter().all(|t| t.len() == n),
        "spinning threads per job: {tids:?}"
    );
    // The jobs frozen as the window closes (common::freeze()), thawed
    // once the trace is read.
    let cgs = jobs.map(|j| job_cgroup(j).unwrap_or_else(|| panic!("job {j} ended early")));
    let (runs, ()) = trace::record_switches_during("mono", || {
        std::thread::sleep(Duration::from_secs(3));
        cgs.iter().for_each(|cg| freeze(cg, true));
    });
    cgs.iter().for_each(|cg| freeze(cg, false));
    let together = tids.each_ref().map(|t| {
        let (any, all) = trace::any_and_all(&runs, t);
        all / any.max(1e-9)
    });
    let overlap = trace::overlap(&runs, &tids[0], &tids[1]);
    figure(&format!(
        "slurm gangs: 2 parallel jobs x {n} threads, members together {:.0}% / {:.0}% of their run time, jobs overlapping {:.2} s of 3 s, node shares {:.0}% / {:.0}%",
        together[0] * 100.0,
        together[1] * 100.0,
        overlap,
        s[0] * 100.0,
        s[1] * 100.0
    ));
    // Generous bounds for a loaded 2-core host running the vCPUs.
    assert!(
        together.iter().all(|t| *t > 0.6),
        "members together {together:?}"
    );
    assert!(
        overlap < 0.6,
        "the two gangs overlapped {overlap:.2} s of 3 s"
    );
    assert!(s.iter().all(|x| *x > 0.15), "each gang progresses: {s:?}");
    cancel(&c, &jobs);
    srun_jobs_starve_no_task(&agent, &c, &cfg);
    drop(c);
    drop(agent);
}

/// What a one-task job of the `parallel` partition runs under `srun`: a
/// rank that computes and reports a line every few milliseconds, so that
/// its step daemon and the `srun` client wake as they do for a real
/// job's output.
const CHATTY_RANK: &str =
    "while :; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo step; done";

/// More gang jobs than CPUs, started with `srun` as users start them:
/// each job's cgroup holds its rank, its step daemon (`slurmstepd`) and,
/// under `step_extern`, Slurm's own helper, while the `srun` clients wait
/// outside any job. No task the kernel sees waits for a CPU longer than
/// the design's bound, and the scheduler is never ejected.
fn srun_jobs_starve_no_task(agent: &Agent, c: &Cluster, cfg: &Path) {
    let jobs = nr_cpus() + 2;
    let mut clients: Vec<Child> = (0..jobs)
        .map(|_| {
            c.cmd("srun")
                .args(["-p", "parallel", "-n1", "--", "sh", "-c", CHATTY_RANK])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting srun")
        })
        .collect();
    let started = wait_until(Duration::from_secs(60), || {
        stats_jobs()
            .iter()
            .filter(|j| j["slurm_job_id"].as_u64().is_some() && j["class"] == "gang")
            .count()
            >= jobs
    });
    assert!(
        started,
        "the {jobs} srun jobs never all ran as gangs: {}",
        c.logs()
    );
    let window = Duration::from_secs(12);
    // The jobs frozen as the window closes, thawed once the trace is read
    // (common::freeze()).
    let cgs: Vec<PathBuf> = stats_jobs()
        .iter()
        .filter_map(|j| j["slurm_job_id"].as_u64())
        .filter_map(job_cgroup)
        .collect();
    let (waits, ()) = trace::record_ready_waits(|| {
        std::thread::sleep(window);
        cgs.iter().for_each(|cg| freeze(cg, true));
    });
    cgs.iter().for_each(|cg| freeze(cg, false));
    let worst: Vec<String> = waits
        .iter()
        .take(8)
        .map(|w| format!("{}[{}] {:.3} s", w.comm, w.pid, w.secs))
        .collect();
    figure(&format!(
        "slurm: {jobs} one-task srun gang jobs on {} CPUs for {} s: longest ready waits {}",
        nr_cpus(),
        window.as_secs(),
        worst.join(", ")
    ));
    // A gang is its job's tasks: the step daemons run beside it.
    let ls =
        agent_output(Command::new(AGENT).args(["ls", "--all", "--config", cfg.to_str().unwrap()]));
    let ls = String::from_utf8_lossy(&ls.stdout).into_owned();
    let classes = |part: &str| -> Vec<String> {
        ls.lines()
            .filter(|l| {
                l.split_whitespace()
                    .next()
                    .is_some_and(|p| p.contains(part))
            })
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect()
    };
    let (daemons, tasks) = (classes("/step_0/slurm"), classes("/step_0/user/task_"));
    assert!(
        daemons.len() == jobs && daemons.iter().all(|c| c == "primary"),
        "step daemons: {daemons:?}\n{ls}"
    );
    assert!(
        tasks.len() == jobs && tasks.iter().all(|c| c == "gang"),
        "tasks: {tasks:?}\n{ls}"
    );
    let ejected = ejections(&dmesg());
    assert!(
        ejected.is_empty(),
        "ejected: {ejected:?}\n{}",
        agent.output()
    );
    assert_eq!(state(), "enabled", "{}", agent.output());
    // The design's bound for any task: a quarter of the watchdog's
    // timeout plus one look of the age guard; 10 s leaves room for a
    // loaded host.
    assert!(
        waits.first().is_none_or(|w| w.secs < 10.0),
        "a task waited too long for a CPU: {worst:?}"
    );
    for cl in clients.iter_mut() {
        let _ = cl.kill();
        let _ = cl.wait();
    }
}
