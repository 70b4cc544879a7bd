// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's own progress whatever scx_linger's classes hold back:
//! work the kernel needs done before anything else can go on must not
//! wait on a starved guest. Judged from the kernel's side: how long a
//! system call that waits for an RCU grace period takes, and how long a
//! fork or a cgroup write waits for the cgroup locks.

use std::process::Child;
use std::time::{Duration, Instant};

use crate::common::*;

/// membarrier(2)'s MEMBARRIER_CMD_GLOBAL: returns once an RCU grace
/// period has passed (it calls synchronize_rcu()).
const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;

/// A guest preempted inside an RCU read-side critical section holds up
/// every grace period on the node until it runs again. Under full primary
/// load a guest runs only on the starvation guard's trickle, a guard
/// slice every few seconds, so one such guest would make every
/// synchronize_rcu() wait seconds, and a reader that needs a few slices
/// to get out makes the kernel report an RCU stall (21 s), on which it
/// ends the scheduler. Readers get reader grants (bpf/guard.bpf.c).
#[test]
fn rcu_grace_periods_end_promptly_while_starved_guests_are_inside_readers() {
    require_guest();
    let p = nr_cpus();
    let primary = TestCgroup::new("t-rcu/primary");
    let guest = TestCgroup::new("t-rcu/guest");
    let agent = Agent::start(&[]);
    tag(&guest.rel, "guest");
    let _prim = primary.spin(p);
    // Guests that live inside RCU read-side sections: a path walk in RCU
    // mode holds rcu_read_lock() from its first component to its last,
    // and the shell's own `[` walks this one (1,000 components, tmpfs)
    // without a fork.
    let deep = std::path::PathBuf::from("/dev/shm/t-rcu").join("a/".repeat(1000));
    std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("mkdir {}: {e}", deep.display()));
    let script = format!("while :; do [ -d {} ]; done", deep.display());
    let readers: Vec<Child> = (0..2 * p).map(|_| spawn_in(&guest, &script)).collect();
    // And one that never enters the kernel: reader grants must leave the
    // starvation guard's grants to it as before.
    let spinner = guest.spin(1);
    std::thread::sleep(Duration::from_secs(2));

    // Longer than RCU's stall timeout (21 s).
    let window = Duration::from_secs(22);
    let g0 = usage_us(&guest.path).unwrap_or(0);
    let s0 = spinner.runtimes();
    let end = Instant::now() + window;
    let (mut worst, mut total, mut n) = (Duration::ZERO, Duration::ZERO, 0u32);
    while Instant::now() < end {
        let t = Instant::now();
        // SAFETY: a system call with plain integer arguments.
        let rc = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0) };
        assert_eq!(rc, 0, "membarrier: {}", std::io::Error::last_os_error());
        let took = t.elapsed();
        worst = worst.max(took);
        total += took;
        n += 1;
    }
    let s1 = spinner.runtimes();
    let share = (usage_us(&guest.path).unwrap_or(0) - g0) as f64 * 1e3
        / (p as f64 * window.as_nanos() as f64);
    figure(&format!(
        "grace periods beside {p} CPU-bound primaries and {} starved guests walking paths: \
         {n}, mean {:.1} ms, longest {:.0} ms; guests ran {:.2}% of the CPUs",
        2 * p,
        total.as_secs_f64() * 1e3 / f64::from(n.max(1)),
        worst.as_secs_f64() * 1e3,
        share * 100.0
    ));
    assert_eq!(state(), "enabled", "ejected: {:?}", ejections(&dmesg()));
    // Reader grants reach 4 readers on 2 CPUs within two intervals
    // (0.5 s); a reader left to the guard's trickle waits for its turn
    // among the guests at one grant per CPU per 2 s (13-15 s measured).
    assert!(
        worst < Duration::from_secs(4),
        "a grace period took {worst:?}: a reader waited in the guest queue"
    );
    // ...and a guest that lives in readers still only gets a trickle: a
    // tick per CPU per reader grant interval (250 ms) at most, beside the
    // guard's (0.35% measured).
    assert!(
        share < 0.03,
        "guests took {:.2}% of the CPUs",
        share * 100.0
    );
    assert!(
        all_progressed(&s0, &s1),
        "the guest outside the kernel got no guard grant: {s0:?} -> {s1:?}"
    );
    drop(readers);
    drop(guest);
    let _ = std::fs::remove_dir_all("/dev/shm/t-rcu");
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// A job that moves itself into its cgroup (`echo $$ > cgroup.procs`, as
/// job scripts and launchers do) is inside that write, holding
/// cgroup_mutex and cgroup_threadgroup_rwsem, when it lands in a guest
/// cgroup. Were it preempted there as a guest under full primary load, it
/// would wait for the starvation guard's trickle with the locks held, and
/// every fork (cgroup_can_fork) and every cgroup write on the node would
/// wait with it. Judged from the kernel's side: how long `mkdir` of a
/// cgroup and a fork-exec-wait of `true` take meanwhile.
#[test]
fn forks_and_cgroup_writes_never_wait_behind_a_job_moving_itself_into_a_guest_cgroup() {
    require_guest();
    let p = nr_cpus();
    // As on a node whose service manager or batch system uses the cpu
    // controller.
    let _ = std::fs::write(format!("{CGROUP_ROOT}/cgroup.subtree_control"), "+cpu");
    let primary = TestCgroup::new("t-move/primary");
    let guest = TestCgroup::new("t-move/guest");
    let agent = Agent::start(&[]);
    tag(&guest.rel, "guest");
    let _prim = primary.spin(p);
    std::thread::sleep(Duration::from_secs(1));

    let probe = guest.path.parent().unwrap().join("probe");
    let window = Duration::from_secs(10);
    let end = Instant::now() + window;
    let (mut movers, mut worst, mut probes) = (Vec::new(), Duration::ZERO, 0u32);
    while Instant::now() < end {
        // A job that moves itself into the guest cgroup, then computes.
        movers.push(spawn_in(&guest, "while :; do :; done"));
        for _ in 0..5 {
            let t = Instant::now();
            std::fs::create_dir(&probe)
                .unwrap_or_else(|e| panic!("mkdir {}: {e}", probe.display()));
            std::fs::remove_dir(&probe)
                .unwrap_or_else(|e| panic!("rmdir {}: {e}", probe.display()));
            let ok = std::process::Command::new("true")
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "true failed");
            worst = worst.max(t.elapsed());
            probes += 1;
        }
    }
    let moved = wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(guest.path.join("cgroup.procs"))
            .is_ok_and(|t| t.lines().count() == movers.len())
    });
    figure(&format!(
        "cgroup moves: {} jobs moved themselves into a guest cgroup beside {p} CPU-bound primaries in {} s; \
         {probes} cgroup mkdir/rmdir + fork/exec/wait meanwhile, longest {:.0} ms",
        movers.len(),
        window.as_secs(),
        worst.as_secs_f64() * 1e3
    ));
    assert!(moved, "not every job reached the guest cgroup");
    assert_eq!(state(), "enabled", "ejected: {:?}", ejections(&dmesg()));
    // A probe is a few ms of a primary's work; the guard's trickle reaches
    // one starved guest per CPU every 2 s.
    assert!(
        worst < Duration::from_secs(1),
        "a fork or cgroup write waited {worst:?} behind a guest holding the cgroup locks"
    );
    drop(movers);
    drop(guest);
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}
