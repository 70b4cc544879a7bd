// SPDX-License-Identifier: GPL-2.0-only
//! Slurm's own answer beside rows, for the bench only (`--baselines`):
//! slurmctld's gang scheduling (`PreemptMode=GANG`) suspends and resumes
//! whole jobs, on every node they span at once, every
//! `SchedulerTimeSlice` (5 s here, the least it takes; 30 s by default).
//! It co-schedules a job's ranks perfectly at that grain, but what a
//! running job's ranks leave of their CPUs the suspended job cannot use.
//!
//! The same two two-node jobs on otherwise quiet nodes, in two mixes:
//! ranks that spin (compute, then an exchange they spin for) and ranks
//! that also wait off the CPU each round, about as long as they compute,
//! as ranks doing I/O do. Under scx_linger the jobs are gangs with rows;
//! beside Slurm's gang mode they run under EEVDF. n1 runs a guest meanwhile
//! that should take only what the jobs leave: a guest-class job under
//! scx_linger, the kernel's own idle class (`SCHED_IDLE`) beside Slurm's
//! gang mode.

use std::fs;
use std::process::{Child, Command};
use std::time::Duration;

use super::*;

/// Slurm's time slice, s: the least slurmctld accepts.
const SLICE_S: u32 = 5;
/// Each round's wait off the CPU: about a round's compute here.
const IO_US: u64 = 2500;

/// One mix's run: the jobs' makespan, and what n1's guest took of what
/// they left (its CPU time against that plus n1's idle time).
pub(super) struct Run {
    pub makespan_s: f64,
    pub harvest: f64,
}

pub(super) struct Figures {
    /// One job alone on quiet nodes under scx_linger, s: spinning ranks
    /// (passed in) and ranks that wait.
    pub alone_spin_s: f64,
    pub alone_io_s: f64,
    pub rows_spin: Run,
    pub rows_io: Run,
    pub gang_spin: Run,
    pub gang_io: Run,
}

/// Two jobs of `ranks` at once, with n1's guest in `guest` from the go
/// until they are done (`sched_idle`: the kernel's idle class for it).
fn pair(peer: &mut Peer, ranks: Ranks, guest: &TestCgroup, sched_idle: bool) -> Run {
    let mut g = None;
    let mut at_go = (0, 0);
    let (ids, _, _) = submit_together(peer, 2, ranks, |_| {
        let h = guest.spin(1);
        if sched_idle {
            for pid in h.pids() {
                sh(&format!("chrt --idle -p 0 {pid}"));
            }
        }
        g = Some(h);
        std::thread::sleep(Duration::from_secs(1));
        at_go = (
            usage_us(&guest.path).expect("the guest cgroup's cpu.stat"),
            idle_ns(),
        );
    });
    let makespan_s = wait_jobs(&ids, Duration::from_secs(300))
        .into_iter()
        .fold(0.0, f64::max);
    let guest_s = usage_us(&guest.path)
        .expect("the guest cgroup's cpu.stat")
        .saturating_sub(at_go.0) as f64
        / 1e6;
    let idle_s = idle_ns().saturating_sub(at_go.1) as f64 / 1e9;
    drop(g);
    Run {
        makespan_s,
        harvest: guest_s / (guest_s + idle_s).max(1e-9),
    }
}

/// slurmctld again with gang scheduling on, its slurm.conf read again by
/// both slurmd: `daemons` is n1's, slurmctld second (start_slurm()).
fn controller_in_gang_mode(daemons: &mut [Child]) {
    let conf = slurm_conf();
    let mut text = fs::read_to_string(&conf).unwrap();
    text.push_str(&format!("PreemptMode=GANG\nSchedulerTimeSlice={SLICE_S}\n"));
    fs::write(&conf, text).unwrap();
    let ctld = &mut daemons[1];
    // SAFETY: kill(2) touches no memory of ours.
    unsafe { libc::kill(ctld.id() as i32, libc::SIGTERM) };
    let _ = ctld.wait();
    *ctld = daemon(
        "slurmctld-gang",
        Command::new("slurmctld")
            .args(["-D", "-i", "-f"])
            .arg(&conf),
    );
    let scontrol = |args: &[&str]| {
        Command::new("scontrol")
            .env("SLURM_CONF", &conf)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    assert!(
        wait_until(Duration::from_secs(60), || scontrol(&["ping"])),
        "slurmctld did not come back in gang mode"
    );
    assert!(scontrol(&["reconfigure"]), "scontrol reconfigure failed");
    let idle = wait_until(Duration::from_secs(90), || {
        let out = Command::new("sinfo")
            .env("SLURM_CONF", &conf)
            .args(["-h", "-N", "-o", "%T"])
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&out.stdout).into_owned();
        t.lines().count() == 2 && t.lines().all(|l| l.trim() == "idle")
    });
    assert!(idle, "the nodes did not come back idle in gang mode");
}

/// Both mixes under the agents with `config` (a gang rule and `[rows]`),
/// then under Slurm's gang mode with the agents stopped. The agents must
/// be stopped when this starts; Slurm stays in gang mode after it.
pub(super) fn compare(
    peer: &mut Peer,
    daemons: &mut [Child],
    config: &str,
    rounds: u64,
    alone_spin_s: f64,
) -> Figures {
    let spin = Ranks::spinning(rounds);
    let io = Ranks {
        rounds,
        io_us: IO_US,
    };
    let guest = TestCgroup::new("t-gang-mode-guest");
    let agent = start_agents(peer, config);
    tag(&guest.rel, "guest");
    let alone_io_s = makespan(peer, 1, io);
    let rows_spin = pair(peer, spin, &guest, false);
    let rows_io = pair(peer, io, &guest, false);
    stop_agents(peer, agent);
    controller_in_gang_mode(daemons);
    let gang_spin = pair(peer, spin, &guest, true);
    let gang_io = pair(peer, io, &guest, true);
    Figures {
        alone_spin_s,
        alone_io_s,
        rows_spin,
        rows_io,
        gang_spin,
        gang_io,
    }
}

impl Figures {
    /// The bench's line: each mix's makespan against twice one job alone,
    /// rows against Slurm's gang mode, and the guest's harvest in each.
    pub(super) fn report(&self, rounds: u64) {
        let mix = |name: &str, alone: f64, rows: &Run, gang: &Run| {
            format!(
                "{name} (one job alone {alone:.2} s): rows {:.2}x, Slurm's gang mode {:.2}x of twice that (rows {:.2}x Slurm's makespan); n1's guest took {:.0}% / {:.0}% of what the jobs left",
                rows.makespan_s / (2.0 * alone),
                gang.makespan_s / (2.0 * alone),
                rows.makespan_s / gang.makespan_s,
                rows.harvest * 100.0,
                gang.harvest * 100.0
            )
        };
        figure(&format!(
            "two nodes beside Slurm's gang scheduling (PreemptMode=GANG, SchedulerTimeSlice={SLICE_S}, EEVDF, the guest SCHED_IDLE), 2 two-node jobs of {rounds} rounds on quiet nodes: {}; {}",
            mix("ranks that spin", self.alone_spin_s, &self.rows_spin, &self.gang_spin),
            mix(
                &format!("ranks that also wait {IO_US} us off the CPU each round"),
                self.alone_io_s,
                &self.rows_io,
                &self.gang_io
            ),
        ));
    }
}
