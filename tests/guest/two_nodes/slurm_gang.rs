// SPDX-License-Identifier: GPL-2.0-only
//! Beside the field's own answer: Slurm's gang scheduling
//! (`PreemptMode=GANG`), in which slurmctld suspends and resumes whole
//! jobs every `SchedulerTimeSlice` (30 s by default), on the same
//! two-node jobs in the same boot. It co-schedules a job's ranks
//! perfectly at its granularity, and leaves idle whatever CPU time the
//! running job's ranks do not use; rows lend that time to the other
//! rows' gangs and to guests (back-fill).
//!
//! Two mixes, each two two-node jobs on both nodes and a spinning guest
//! on n1: the spinning ranks of the other figures, and half-idle ranks
//! that sleep after each round as long as a round takes alone (a rank
//! waiting on I/O between its exchanges) and block on their peer's
//! message rather than spin. Under EEVDF and under Slurm's gang mode the
//! agents are stopped and the guest's cgroup is `cpu.idle` (systemd's
//! `CPUWeight=idle`), the kernel's own way to take only idle cycles. The
//! bench's only (`--baselines`): nothing here is judged.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;

/// slurm.conf's lines for Slurm's gang scheduling, its time slice at the
/// default (the partition already lets four jobs share a node's CPUs),
/// with slurmctld's log of its slices (which job it suspends and resumes,
/// when).
const GANG_MODE: &str = "PreemptMode=GANG\nDebugFlags=Gang\n";

/// How long a job's ranks may take to start under Slurm's gang mode. A
/// job that Slurm suspends as it starts refuses its `srun` a step
/// ("step creation temporarily disabled"), and srun tries again only
/// after waiting for word from slurmctld for SlurmctldTimeout (120 s by
/// default) plus up to 9 s: two such waits are past RANK_START, and a
/// retry may meet the job suspended again. Spans count from the go, so
/// this wait is in no figure.
const GANG_RANK_START: Duration = Duration::from_secs(600);

/// One run of a mix: from the go until the last rank ended, and what n1's
/// guest and idle time got over it; and how long after their submission
/// every job's ranks were up (the go waits for that).
#[derive(Clone, Copy)]
struct Span {
    secs: f64,
    guest_s: f64,
    idle_s: f64,
    up_s: f64,
}

/// Run `jobs` two-node jobs of `rounds` rounds, their ranks sleeping
/// `idle_us` after each round, with the guest spinning on n1 from the go
/// (its cgroup `cpu.idle` where `idle_policy`), the ranks given `start`
/// to start on both nodes. The span counts to the last
/// rank's end on its own clock (rank 0 is on n1, rank 1 on n2, which
/// chrony keeps within a millisecond of it): a job Slurm suspended at
/// the go starts its rounds, and its own wall time, only when resumed.
fn span(
    peer: &mut Peer,
    guest: &TestCgroup,
    jobs: usize,
    rounds: u64,
    idle_us: u64,
    idle_policy: bool,
    start: Duration,
) -> Span {
    let mut g = None;
    let mut at_go = (0.0, 0, 0);
    let submitted = std::time::Instant::now();
    let mut up_s = 0.0;
    // The cgroup, not its task: under EEVDF a SCHED_IDLE task is idle
    // only within its own group, whose entity competes at its weight.
    let cpu_idle = guest.path.join("cpu.idle");
    fs::write(&cpu_idle, if idle_policy { "1" } else { "0" }).unwrap();
    let (ids, _, _) = submit_idle_together(peer, jobs, rounds, idle_us, start, |_| {
        up_s = submitted.elapsed().as_secs_f64();
        g = Some(guest.spin(1));
        at_go = (
            unix_ms(),
            usage_us(&guest.path).expect("the guest cgroup's cpu.stat"),
            idle_ns(),
        );
    });
    wait_jobs(&ids, Duration::from_secs(600));
    let end = ids
        .iter()
        .map(|&id| job_figure(id, "end_ms"))
        .fold(0.0, f64::max);
    let guest_s = usage_us(&guest.path)
        .expect("the guest cgroup's cpu.stat")
        .saturating_sub(at_go.1) as f64
        / 1e6;
    let idle_s = idle_ns().saturating_sub(at_go.2) as f64 / 1e9;
    drop(g);
    fs::write(&cpu_idle, "0").unwrap();
    Span {
        secs: (end - at_go.0) / 1e3,
        guest_s,
        idle_s,
        up_s,
    }
}

fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1e3
}

/// slurm.conf again with `extra`, applied by `scontrol reconfigure`
/// (slurmctld starts or stops its gang scheduler there, and every slurmd
/// reads the same file again), once no job is left in the queue.
fn reconfigure(extra: &str) {
    let slurm = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .env("SLURM_CONF", slurm_conf())
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    };
    assert!(
        wait_queue_empty(Duration::from_secs(120)),
        "jobs still in slurmctld's queue after 120 s"
    );
    write_slurm_conf(extra);
    let o = slurm("scontrol", &["reconfigure"]);
    assert!(
        o.status.success(),
        "scontrol reconfigure: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    wait_nodes_idle();
}

/// The two mixes under the agents with `with_rows`, under EEVDF, and
/// under Slurm's gang mode (turned on for it, and off again at the end). `round_s`: one round of a spinning job alone under
/// EEVDF, which is how long a half-idle rank sleeps after each round. The
/// agents must be stopped when this starts; they are again when it
/// returns.
pub(super) fn compare(
    peer: &mut Peer,
    with_rows: &str,
    guest: &TestCgroup,
    rounds: u64,
    round_s: f64,
) {
    let idle_us = (round_s * 1e6).round() as u64;
    let half_alone = span(peer, guest, 1, rounds, idle_us, true, RANK_START).secs;
    let half_eevdf = span(peer, guest, 2, rounds, idle_us, true, RANK_START);
    let agent = start_agents(peer, with_rows);
    let spin_rows = span(peer, guest, 2, rounds, 0, false, RANK_START);
    let half_rows = span(peer, guest, 2, rounds, idle_us, false, RANK_START);
    stop_agents(peer, agent);
    reconfigure(GANG_MODE);
    let spin_gang = span(peer, guest, 2, rounds, 0, true, GANG_RANK_START);
    let half_gang = span(peer, guest, 2, rounds, idle_us, true, GANG_RANK_START);
    reconfigure("");
    let show = |s: Span| {
        format!(
            "{:.2} s (guest {:.2} s, idle {:.2} s, ranks up {:.0} s after submission)",
            s.secs, s.guest_s, s.idle_s, s.up_s
        )
    };
    figure(&format!(
        "two nodes, beside Slurm's gang scheduling (PreemptMode=GANG, 30 s slices), 2 two-node jobs on both nodes and a guest on n1, spans from the go to the last rank's end: spinning ranks, rows vs Slurm's gang mode {:.2}x (rows {}, Slurm gang {}); half-idle ranks (sleeping {idle_us} us after each round, one job alone {half_alone:.2} s under EEVDF), rows vs Slurm's gang mode {:.2}x (rows {}, Slurm gang {}, EEVDF {}); the guest's cgroup cpu.idle under EEVDF and Slurm's gang mode",
        spin_rows.secs / spin_gang.secs,
        show(spin_rows),
        show(spin_gang),
        half_rows.secs / half_gang.secs,
        show(half_rows),
        show(half_gang),
        show(half_eevdf),
    ));
}
