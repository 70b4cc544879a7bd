// SPDX-License-Identifier: GPL-2.0-only
//! Tests where the node's shape matters: SMT siblings, caches, NUMA.
//! `cargo xtask test` runs this module only on a guest shaped like a node
//! (`--node-shape`, 2 sockets x 2 cores x 2 threads and 2 NUMA nodes by
//! default); elsewhere these tests fail, saying why.

use std::collections::BTreeMap;
use std::fs;
use std::process::{Child, Command};
use std::time::Duration;

use crate::common::*;
use crate::gang;
use crate::trace::{self, Run};

// The verifier budget is measured here: with more than one LLC the
// verifier walks the stealing paths (bpf/llc.bpf.c), which a node of one
// LLC prunes away.
#[path = "verifier.rs"]
mod verifier;

/// The other hardware threads of each CPU's core, from sysfs.
fn smt_siblings() -> BTreeMap<u32, Vec<u32>> {
    (0..nr_cpus() as u32)
        .map(|cpu| {
            let list = fs::read_to_string(format!(
                "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
            ))
            .unwrap_or_default();
            let sibs = cpulist(&list).into_iter().filter(|c| *c != cpu).collect();
            (cpu, sibs)
        })
        .collect()
}

/// The CPUs a kernel cpulist ("0-3,8") names.
fn cpulist(list: &str) -> Vec<u32> {
    list.trim()
        .split(',')
        .filter(|g| !g.is_empty())
        .flat_map(|g| {
            let (lo, hi) = g.split_once('-').unwrap_or((g, g));
            let (lo, hi): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
            lo..=hi
        })
        .collect()
}

fn require_smt() -> BTreeMap<u32, Vec<u32>> {
    require_guest();
    let sibs = smt_siblings();
    assert!(
        sibs.values().any(|s| !s.is_empty()),
        "this test needs SMT siblings: run it in the node-shaped pass (cargo xtask test --filter node_shaped::)"
    );
    sibs
}

/// A spinning process pinned to `cpu`.
fn pinned_spin(cg: &TestCgroup, cpu: u32) -> std::process::Child {
    spawn_in(
        cg,
        &format!("exec taskset -c {cpu} sh -c 'while :; do :; done'"),
    )
}

/// Per CPU, seconds during which a guest ran on it while a primary (any
/// task but the idle task and the guests) ran on one of its siblings.
fn guest_beside_primary(
    runs: &[Run],
    guests: &[i32],
    sibs: &BTreeMap<u32, Vec<u32>>,
) -> BTreeMap<u32, f64> {
    let spans = |cpu: u32, guest: bool| {
        trace::union(
            runs.iter()
                .filter(|r| r.cpu == cpu && r.pid != 0 && guests.contains(&r.pid) == guest)
                .map(|r| (r.start, r.end))
                .collect(),
        )
    };
    sibs.iter()
        .map(|(cpu, others)| {
            let on_sibs = trace::union(others.iter().flat_map(|s| spans(*s, false)).collect());
            (
                *cpu,
                trace::total(&trace::intersect(&spans(*cpu, true), &on_sibs)),
            )
        })
        .collect()
}

/// Seconds guests ran on `cpus`.
fn guest_time_on(runs: &[Run], guests: &[i32], cpus: &[u32]) -> f64 {
    runs.iter()
        .filter(|r| cpus.contains(&r.cpu) && guests.contains(&r.pid))
        .map(|r| r.end - r.start)
        .sum()
}

/// One run of the SMT scenario under `policy`: a primary pinned to the
/// first thread of every other core, guests on every CPU. Returns, from
/// sched_switch over `window`: guest seconds beside a primary per busy
/// core, and the share of the free cores' CPU time guests harvested.
fn smt_scenario(policy: &str, window: Duration) -> (f64, f64) {
    let sibs = smt_siblings();
    // Cores by their first CPU; every other one gets a primary.
    let mut cores: Vec<Vec<u32>> = Vec::new();
    for (cpu, others) in &sibs {
        if others.iter().all(|o| o > cpu) {
            let mut core = vec![*cpu];
            core.extend(others);
            cores.push(core);
        }
    }
    let busy: Vec<&Vec<u32>> = cores.iter().step_by(2).collect();
    let free: Vec<u32> = cores.iter().skip(1).step_by(2).flatten().copied().collect();

    let primary = TestCgroup::new("t-smt/primary");
    let guest = TestCgroup::new("t-smt/guest");
    let agent = Agent::start(&["--smt-guests", policy]);
    tag(&guest.rel, "guest");
    let prims: Vec<_> = busy.iter().map(|c| pinned_spin(&primary, c[0])).collect();
    let guests = guest.spin(nr_cpus());
    std::thread::sleep(Duration::from_secs(2));
    let runs = trace::record_whole_runs(window, "mono");
    assert_eq!(state(), "enabled", "ejected: {:?}", ejections(&dmesg()));
    let pids = guests.pids();
    let per_cpu = guest_beside_primary(&runs, &pids, &sibs);
    figure(&format!(
        "SMT {policy}: guest seconds beside a primary, by CPU: {per_cpu:.3?}"
    ));
    let beside = per_cpu.values().sum::<f64>() / busy.len() as f64;
    let harvest = guest_time_on(&runs, &pids, &free) / (free.len() as f64 * window.as_secs_f64());
    drop(guests);
    for mut p in prims {
        let _ = p.kill();
        let _ = p.wait();
    }
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
    (beside / window.as_secs_f64(), harvest)
}

#[test]
fn smt_avoid_keeps_guests_off_busy_cores_siblings_and_share_does_not() {
    let sibs = require_smt();
    // Some 60 of the single-threaded emulator's 100 ms turns per vCPU.
    let window = Duration::from_secs(6);
    let (avoid_beside, avoid_harvest) = smt_scenario("avoid", window);
    let (share_beside, share_harvest) = smt_scenario("share", window);
    figure(&format!(
        "SMT ({} CPUs, {} thread(s) a core; primaries pinned on every other core, guests everywhere; sched_switch over {} s): \
         guest beside a primary on its core avoid {:.2}% / share {:.1}% of the time per busy core; \
         harvest of the free cores avoid {:.1}% / share {:.1}%",
        nr_cpus(),
        sibs.values().map(|s| s.len() + 1).max().unwrap_or(1),
        window.as_secs(),
        avoid_beside * 100.0,
        share_beside * 100.0,
        avoid_harvest * 100.0,
        share_harvest * 100.0,
    ));
    // avoid: only the starvation guard's grants (1 ms per CPU per 2 s)
    // and the time a kicked guest takes to leave. On hardware that is an
    // IPI's few microseconds; in single-threaded TCG a vCPU sees the kick
    // only at its next turn of the host thread (100 ms turns), so the
    // trace can show up to a few hundred ms of it.
    assert!(
        avoid_beside < 0.2 && avoid_beside < share_beside / 4.0,
        "under avoid, guests ran beside primaries {:.1}% of the time (share: {:.1}%)",
        avoid_beside * 100.0,
        share_beside * 100.0
    );
    // share: the sibling is just another CPU, and guests fill it; the
    // trace sees it (which is what makes the avoid figure mean anything).
    assert!(
        share_beside > 0.5,
        "under share, guests ran beside primaries only {:.1}% of the time: is the trace blind?",
        share_beside * 100.0
    );
    // Either way, guests harvest the cores no primary uses.
    for (policy, h) in [("avoid", avoid_harvest), ("share", share_harvest)] {
        assert!(
            h > 0.8,
            "under {policy}, guests harvested only {:.1}% of the free cores",
            h * 100.0
        );
    }
}

#[test]
fn the_agent_reads_the_node_shape_and_rejects_a_bad_smt_policy() {
    let sibs = require_smt();
    let agent = Agent::start(&[]);
    std::thread::sleep(Duration::from_secs(1));
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
    let threads = sibs.values().map(|s| s.len() + 1).max().unwrap();
    let want = format!(
        "topology: {} CPUs on {} cores ({threads} thread(s) a core); guests avoid",
        nr_cpus(),
        sibs.len() / threads
    );
    assert!(out.contains(&want), "expected {want:?} in:\n{out}");
    let want = format!("a queue per tier on each of {} LLC(s)", llcs().len());
    assert!(out.contains(&want), "expected {want:?} in:\n{out}");

    let bad = agent_output(Command::new(AGENT).args(["run", "--smt-guests", "sometimes"]));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success(), "a bad policy was accepted");
    assert!(
        err.contains("--smt-guests") && err.contains("avoid") && err.contains("share"),
        "the error does not name the flag and its values: {err}"
    );
}

/// The CPUs of each last-level cache, from sysfs (the highest cache level
/// each CPU lists).
fn llcs() -> std::collections::BTreeSet<Vec<u32>> {
    (0..nr_cpus())
        .filter_map(|cpu| {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cache");
            let last = fs::read_dir(&dir)
                .ok()?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("index"))
                .max_by_key(|n| {
                    fs::read_to_string(format!("{dir}/{n}/level"))
                        .ok()
                        .and_then(|l| l.trim().parse::<u32>().ok())
                })?;
            fs::read_to_string(format!("{dir}/{last}/shared_cpu_list"))
                .ok()
                .map(|l| cpulist(&l))
        })
        .collect()
}

/// Turn the cpuset controller on for `parent`'s children (and above it).
fn enable_cpusets(parent: &TestCgroup) {
    for dir in [std::path::Path::new(CGROUP_ROOT), parent.path.as_path()] {
        fs::write(dir.join("cgroup.subtree_control"), "+cpuset")
            .unwrap_or_else(|e| panic!("enabling cpuset under {}: {e}", dir.display()));
    }
}

/// A gang job of `threads` spinning-barrier threads bound to `cpus`.
fn bound_gang(
    parent: &TestCgroup,
    name: &str,
    cpus: &str,
    threads: usize,
) -> (TestCgroup, Child, Vec<i32>) {
    let cg = TestCgroup::new(&format!("{}/{name}", parent.rel));
    fs::write(cg.path.join("cpuset.cpus"), cpus)
        .unwrap_or_else(|e| panic!("binding {} to CPUs {cpus}: {e}", cg.rel));
    tag(&cg.rel, "gang");
    let job = gang::start_spinning(&cg, threads);
    let tids = gang::job_threads(&job, threads);
    (cg, job, tids)
}

#[test]
fn gangs_bound_to_the_same_cores_take_turns_and_one_alone_on_its_cores_runs_throughout() {
    require_smt();
    let parent = TestCgroup::new("t-cs");
    enable_cpusets(&parent);
    let agent = Agent::start(&[]);
    // The case: a and b bound to CPUs 0-1, c to 2-3. The right
    // schedule alternates a and b, while c runs all the time.
    let (_ca, mut a, ta) = bound_gang(&parent, "a", "0-1", 2);
    let (_cb, mut b, tb) = bound_gang(&parent, "b", "0-1", 2);
    let (_cc, mut c, tc) = bound_gang(&parent, "c", "2-3", 2);
    // Sizes settle once the threads that spawned the workers sleep.
    std::thread::sleep(Duration::from_secs(5));
    let window = Duration::from_secs(4);
    let runs = trace::record_whole_runs(window, "mono");
    for job in [&mut a, &mut b, &mut c] {
        assert!(job.try_wait().unwrap().is_none(), "a gang job ended early");
    }
    let secs = window.as_secs_f64();
    let (any_a, _) = trace::any_and_all(&runs, &ta);
    let (any_b, _) = trace::any_and_all(&runs, &tb);
    let (any_c, _) = trace::any_and_all(&runs, &tc);
    let mixed = trace::overlap(&runs, &ta, &tb) / secs;
    let table = agent.output();
    figure(&format!(
        "cpuset gangs ({} CPUs, single-threaded TCG; sched_switch over {} s): a and b on CPUs 0-1 ran {:.0}% / {:.0}% of the time, together {:.1}%; c alone on 2-3 ran {:.0}%",
        nr_cpus(),
        window.as_secs(),
        any_a / secs * 100.0,
        any_b / secs * 100.0,
        mixed * 100.0,
        any_c / secs * 100.0
    ));
    for j in [a, b, c] {
        let mut j = j;
        let _ = j.kill();
        let _ = j.wait();
    }
    assert_eq!(state(), "enabled", "ejected: {:?}", ejections(&dmesg()));
    // Taking turns: the two gangs on the same cores are never admitted
    // together (what is left is the moment a slot boundary takes).
    assert!(
        mixed < 0.1,
        "gangs bound to the same cores ran together {:.1}% of the time\n{table}",
        mixed * 100.0
    );
    assert!(
        any_a / secs > 0.2 && any_b / secs > 0.2,
        "a gang on the shared cores hardly ran: {:.0}% / {:.0}%\n{table}",
        any_a / secs * 100.0,
        any_b / secs * 100.0
    );
    // Nobody else may use CPUs 2-3: c never waits for a turn.
    assert!(
        any_c / secs > 0.8,
        "the gang alone on its cores ran only {:.0}% of the time\n{table}",
        any_c / secs * 100.0
    );
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// Queues per LLC (bpf/llc.bpf.c): primaries that all queue on one LLC
/// spread to every other LLC's CPUs, and take them from the guests
/// there: strict priority holds across queues. Judged by schedstat.
#[test]
fn primaries_queued_on_one_llc_take_the_other_llcs_cpus_from_guests() {
    let llcs = llcs();
    assert!(
        llcs.len() >= 2,
        "this test needs a guest with 2 or more LLCs (--node-shape), found {llcs:?}"
    );
    let list = |cpus: &[u32]| {
        cpus.iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let first = list(llcs.iter().next().unwrap());
    let all = list(&(0..nr_cpus() as u32).collect::<Vec<_>>());
    let taskset = |pids: &[i32], cpus: &str| {
        for pid in pids {
            let ok = Command::new("taskset")
                .args(["-a", "-p", "-c", cpus, &pid.to_string()])
                .stdout(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "taskset -p -c {cpus} {pid} failed");
        }
    };

    let primary = TestCgroup::new("t-llc/primary");
    let guest = TestCgroup::new("t-llc/guest");
    // share: guests may run beside primaries' siblings, so any guest
    // time left on the second LLC would be the queues' doing, not SMT's.
    let agent = Agent::start(&["--smt-guests", "share"]);
    tag(&guest.rel, "guest");
    let guests = guest.spin(nr_cpus());
    std::thread::sleep(Duration::from_secs(1));
    // One primary per CPU, all on the first LLC: they queue on its DSQ.
    let prims = primary.spin(nr_cpus());
    taskset(&prims.pids(), &first);
    std::thread::sleep(Duration::from_secs(1));
    // Free to go anywhere; each still waits on the first LLC's queue.
    taskset(&prims.pids(), &all);
    std::thread::sleep(Duration::from_secs(1));

    let window = Duration::from_secs(4);
    let guests_before = total_runtime(&guests);
    let prim_cpus = cpu_share(&prims, window);
    let guest_cpus = (total_runtime(&guests) - guests_before) as f64 / window.as_nanos() as f64;
    figure(&format!(
        "LLC queues: {} primaries queued on LLC {first} of {} LLCs took {prim_cpus:.2} of {} CPUs; guests {guest_cpus:.3}",
        nr_cpus(),
        llcs.len(),
        nr_cpus()
    ));
    assert_eq!(state(), "enabled", "ejected: {:?}", ejections(&dmesg()));
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
    assert!(
        prim_cpus >= 0.85 * nr_cpus() as f64,
        "primaries had {prim_cpus:.2} of {} CPUs: another LLC's CPUs did not take them",
        nr_cpus()
    );
    assert!(
        guest_cpus <= 0.05 * nr_cpus() as f64,
        "guests ran {guest_cpus:.3} CPUs while primaries waited on another LLC's queue"
    );
}

/// Gang homes (bpf/gang.bpf.c): two gangs that fit side by side, each in
/// one LLC, run each in an LLC of its own rather than a member of each in
/// the other's. Judged from sched_switch: the share of each gang's run
/// time spent in the LLC where it ran most.
#[test]
fn gangs_that_fit_in_an_llc_each_run_in_one() {
    let llcs: Vec<Vec<u32>> = llcs().into_iter().collect();
    assert!(
        llcs.len() >= 2,
        "this test needs a guest with 2 or more LLCs (--node-shape), found {llcs:?}"
    );
    let per_llc = llcs.iter().map(Vec::len).min().unwrap();
    let llc_of = |cpu: u32| llcs.iter().position(|l| l.contains(&cpu));
    let parent = TestCgroup::new("t-home");
    let agent = Agent::start(&[]);
    let mut jobs = Vec::new();
    for name in ["a", "b"] {
        let cg = TestCgroup::new(&format!("{}/{name}", parent.rel));
        tag(&cg.rel, "gang");
        let job = gang::start_spinning(&cg, per_llc);
        let tids = gang::job_threads(&job, per_llc);
        jobs.push((cg, job, tids));
    }
    // Sizes settle once the threads that spawned the workers sleep, and
    // a few slots pass.
    std::thread::sleep(Duration::from_secs(5));
    let window = Duration::from_secs(4);
    let runs = trace::record_whole_runs(window, "mono");
    let mut shares = Vec::new();
    for (_, job, tids) in &mut jobs {
        assert!(job.try_wait().unwrap().is_none(), "a gang job ended early");
        let mut by_llc = vec![0.0; llcs.len()];
        for r in runs.iter().filter(|r| tids.contains(&r.pid)) {
            if let Some(l) = llc_of(r.cpu) {
                by_llc[l] += r.end - r.start;
            }
        }
        let total: f64 = by_llc.iter().sum();
        let most = by_llc.iter().cloned().fold(0.0, f64::max);
        assert!(total > 0.0, "a gang never ran in the window");
        shares.push(most / total);
    }
    let table = agent.output();
    figure(&format!(
        "gang homes ({} CPUs in {} LLCs, 2 gangs of {per_llc}, sched_switch over {} s): share of each gang's run time in its main LLC {:.0}% / {:.0}%",
        nr_cpus(),
        llcs.len(),
        window.as_secs(),
        shares[0] * 100.0,
        shares[1] * 100.0
    ));
    for (_, mut job, _) in jobs {
        let _ = job.kill();
        let _ = job.wait();
    }
    assert_eq!(state(), "enabled", "ejected: {:?}", ejections(&dmesg()));
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
    // Without homes each gang would keep one of its 4 members in the
    // other's LLC all the time (75%); without home swaps a spinning member
    // placed before its gang had a home would stay out. With both
    // (gang_run.bpf.c) every member runs at home; the bound leaves room
    // for a swap that waits a slice or two on a loaded host.
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    assert!(
        mean > 0.9,
        "the gangs ran {:.0}% of their time in one LLC (a member out of its home stays out): {shares:.2?}\n{table}",
        mean * 100.0
    );
}
