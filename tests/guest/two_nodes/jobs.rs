// SPDX-License-Identifier: GPL-2.0-only
//! The two-node jobs and how they start: each a rank per node, submitted
//! with `sbatch -N2`, their rounds let go at one moment once every rank
//! is up, beside whatever mix the nodes run meanwhile.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::*;

/// How long a job's ranks may take to start on both nodes. On n2's one
/// emulated CPU, while a node-local gang leads every row it has, the
/// Prolog, the agent and the step daemon are ordinary primary work: they
/// get the open phase and the relief budget (about 15% of the CPU), and
/// the step daemon has started up to a minute after Slurm's launch
/// request: its start-up is CPU-bound there, so relief's budget, not its
/// latency, decides it. The ranks' wall time counts from the go
/// (start_together), so this wait is in no figure but the last of the
/// test's line.
pub(super) const RANK_START: Duration = Duration::from_secs(240);

/// Submit a two-node job of one rank per node, whose rounds start when
/// `go` exists, each rank sleeping `idle_us` after each round and waiting
/// at most `start` for its peer and for the go; its id.
pub(super) fn submit(
    partition: &str,
    rounds: u64,
    idle_us: u64,
    start: Duration,
    go: &Path,
) -> u64 {
    sbatch(
        partition,
        "job",
        &format!(
            "srun {} --slurm --rounds {rounds} --iters 20000 --idle-us {idle_us} --meet-s {} --go {}",
            bench_bin("exchange").display(),
            start.as_secs(),
            go.display()
        ),
    )
}

/// `sbatch -N2` of `script` (a rank per node) in `partition`, its output
/// in `<prefix>-<id>.out` in the results folder; the job's id.
pub(super) fn sbatch(partition: &str, prefix: &str, script: &str) -> u64 {
    let out = Command::new("sbatch")
        .env("SLURM_CONF", slurm_conf())
        .args([
            "--parsable",
            "-N2",
            "--ntasks-per-node=1",
            "-p",
            partition,
            "-o",
        ])
        .arg(results_dir().join(format!("{prefix}-%j.out")))
        .arg(format!("--wrap={script}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sbatch: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Wait for jobs to end; each job's wall time (its ranks' longest), s.
pub(super) fn wait_jobs(ids: &[u64], timeout: Duration) -> Vec<f64> {
    let dir = results_dir();
    let done = wait_until(timeout, || {
        ids.iter().all(|id| {
            fs::read_to_string(dir.join(format!("job-{id}.out")))
                .is_ok_and(|t| t.matches("wall_ms=").count() >= 2)
        })
    });
    let logs = || {
        ["slurmctld", "slurmd"]
            .iter()
            .map(|n| fs::read_to_string(dir.join(format!("n1-{n}.out"))).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        done,
        "jobs {ids:?} did not finish in {timeout:?}: {}",
        logs()
    );
    ids.iter()
        .map(|id| job_figure(*id, "wall_ms") / 1e3)
        .collect()
}

/// The largest of a finished job's ranks' `key=` figures (`wall_ms`,
/// `end_ms`: exchange's line).
pub(super) fn job_figure(id: u64, key: &str) -> f64 {
    let text = fs::read_to_string(results_dir().join(format!("job-{id}.out"))).unwrap_or_default();
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .filter_map(|v| v.parse::<f64>().ok())
        .fold(0.0, f64::max)
}

/// Submit `jobs` two-node jobs and start their rounds at one moment
/// (`start_together`), once `before_go` has set up whatever else the
/// nodes run meanwhile; the jobs and each node's ranks.
pub(super) fn submit_together(
    peer: &mut Peer,
    jobs: usize,
    rounds: u64,
    before_go: impl FnOnce(&mut Peer),
) -> (Vec<u64>, String, String) {
    submit_idle_together(peer, jobs, rounds, 0, RANK_START, before_go)
}

/// submit_together, each rank sleeping `idle_us` after each round, the
/// ranks given `start` to start on both nodes.
pub(super) fn submit_idle_together(
    peer: &mut Peer,
    jobs: usize,
    rounds: u64,
    idle_us: u64,
    start: Duration,
    before_go: impl FnOnce(&mut Peer),
) -> (Vec<u64>, String, String) {
    static PHASE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let phase = PHASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let go = results_dir().join(format!("go-{phase}"));
    let ids: Vec<u64> = (0..jobs)
        .map(|_| submit("gang", rounds, idle_us, start, &go))
        .collect();
    let (near, far) = start_together(peer, &ids, &go, start, before_go);
    (ids, near, far)
}

/// Wait until every rank of `ids` has started on both nodes (each waits
/// for `go` after meeting its peer), run `before_go`, then let them all
/// go. Waiting ranks sleep, so the listing is quick however busy the
/// nodes are; a job's step daemon can take minutes to start its rank
/// beside a local gang (RANK_START), and the jobs' rounds must still
/// overlap whole. `start`: how long the ranks may take.
pub(super) fn start_together(
    peer: &mut Peer,
    ids: &[u64],
    go: &Path,
    start: Duration,
    before_go: impl FnOnce(&mut Peer),
) -> (String, String) {
    let (mut near, mut far) = (String::new(), String::new());
    let started = wait_until(start, || {
        near.push_str(&sh(LIST_RANKS));
        far.push_str(&peer.must(&format!("sh {LIST_RANKS}")));
        ids.iter()
            .all(|id| !ranks_of(&near, *id).is_empty() && !ranks_of(&far, *id).is_empty())
    });
    assert!(
        started,
        "the ranks of jobs {ids:?} did not all start: n1 {near:?}, n2 {far:?}"
    );
    before_go(peer);
    fs::write(go, "").unwrap();
    (near, far)
}

/// Run `jobs` two-node jobs at once; the makespan (s).
pub(super) fn makespan(peer: &mut Peer, jobs: usize, rounds: u64) -> f64 {
    let (ids, _, _) = submit_together(peer, jobs, rounds, |_| {});
    wait_jobs(&ids, Duration::from_secs(300))
        .into_iter()
        .fold(0.0, f64::max)
}

/// n2's node-local gang: one spinning thread in a cgroup the agent's own
/// label makes a gang.
pub(super) fn start_local_gang(peer: &mut Peer) {
    peer.must(&format!(
        "sh mkdir -p /sys/fs/cgroup/t-local && {AGENT} tag t-local gang >/dev/null 2>&1; \
         sh -c 'echo $$ > /sys/fs/cgroup/t-local/cgroup.procs; exec {}' > /dev/null 2>&1 &",
        bench_bin("spin").display()
    ));
}

/// Its thread killed and its cgroup removed once empty: an empty gang
/// still leads rows on n2 alone, which later parts do not expect.
pub(super) fn stop_local_gang(peer: &mut Peer) {
    peer.must(
        "sh pkill -x spin; for i in $(seq 50); do rmdir /sys/fs/cgroup/t-local 2>/dev/null && break; sleep 0.1; done; true",
    );
}

/// Two jobs at once on different mixes, set up as the rows run sets them
/// up: n2's local gang and n1's guest start once every rank waits for
/// the go, since beside the local gang the step daemons' start-up gets
/// only the open phase, relief and the node's-machinery share of n2's
/// CPU (on this emulated CPU, 25-27 s past srun's 10 s wait for the
/// launch). The makespan (s).
pub(super) fn mixed_makespan(peer: &mut Peer, guest: &TestCgroup, rounds: u64) -> f64 {
    let mut g = None;
    let (ids, _, _) = submit_together(peer, 2, rounds, |peer| {
        start_local_gang(peer);
        g = Some(guest.spin(1));
        std::thread::sleep(Duration::from_secs(2));
    });
    let span = wait_jobs(&ids, Duration::from_secs(300))
        .into_iter()
        .fold(0.0, f64::max);
    stop_local_gang(peer);
    drop(g);
    span
}

/// The shell line that lists this node's ranks: `pid cgroup` per line.
pub(super) const LIST_RANKS: &str =
    "for p in $(pgrep -x exchange); do echo $p $(cat /proc/$p/cgroup); done";

/// Every thread of a node and its name, to read a trace with.
pub(super) const PS: &str = "ps -e -L -o tid=,comm=";

/// The ranks of job `id` in a LIST_RANKS listing.
pub(super) fn ranks_of(listing: &str, id: u64) -> Vec<i32> {
    let job = format!("/job_{id}/");
    listing
        .lines()
        .filter(|l| l.contains(&job))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}
