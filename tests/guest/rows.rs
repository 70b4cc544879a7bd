// SPDX-License-Identifier: GPL-2.0-only
//! Cluster rows (the config's `[rows]`): a multi-node gang job leads the
//! row its batch system gave it at the same CLOCK_TAI moment on every
//! node, whatever else each node runs. One node stands for all of them
//! here: the job's row is judged against the clock under two different
//! mixes of node-local gangs, from the kernel's sched_switch on the TAI
//! trace clock.

use std::time::Duration;

use crate::common::*;
use crate::gang::{job_threads, start_spinning};
use crate::trace::{self, Run};

/// The matrix the test's config sets: 3 rows of 100 ms and an open phase
/// of 10% of the cycle, in whole nanoseconds as the agent computes it.
const ROWS: i128 = 3;
const SLOT_NS: i128 = 100_000_000;
const CYCLE_NS: i128 = ROWS * SLOT_NS + ROWS * SLOT_NS * 10 / 90;
const ROW: i128 = 1;

/// `tids`' run time (s) in row ROW's window of each cycle, in the other
/// rows' windows, and in the open phase that ends each cycle.
fn time_by_window(runs: &[Run], tids: &[i32]) -> (f64, f64, f64) {
    let (mut own, mut other, mut open) = (0.0, 0.0, 0.0);
    for r in runs.iter().filter(|r| tids.contains(&r.pid)) {
        // Cut the run at the windows' edges, cycle by cycle.
        let (mut t, end) = ((r.start * 1e9) as i128, (r.end * 1e9) as i128);
        while t < end {
            let cycle = t.div_euclid(CYCLE_NS) * CYCLE_NS;
            let row = (t - cycle) / SLOT_NS;
            let edge = if row < ROWS {
                cycle + (row + 1) * SLOT_NS
            } else {
                cycle + CYCLE_NS
            };
            let upto = end.min(edge);
            let secs = (upto - t) as f64 / 1e9;
            match row {
                ROW => own += secs,
                r if r < ROWS => other += secs,
                _ => open += secs,
            }
            t = upto;
        }
    }
    (own, other, open)
}

#[test]
fn a_multi_node_jobs_row_keeps_its_moment_whatever_else_the_node_runs() {
    require_guest();
    assert_eq!(nr_cpus(), 2, "this test is written for 2 vCPUs");
    let cfg = results_dir().join("rows.toml");
    std::fs::write(&cfg, "[rows]\ncount = 3\nslot_ms = 100\nopen_pct = 10\n").unwrap();
    let agent = Agent::start(&["--config", cfg.to_str().unwrap()]);
    // The job, as a batch system other than Slurm marks it: a gang with
    // root's row label (Slurm's jobs get theirs from slurmctld).
    let job = TestCgroup::new("t-rows/job");
    tag(&job.rel, "gang");
    xattr_set(&job.path, "trusted.scx_linger.row", &ROW.to_string());
    let mut x = start_spinning(&job, 2);
    let tx = job_threads(&x, 2);

    let mut figures = Vec::new();
    let mut locals = Vec::new();
    // One node-local gang, then three: more than the two free rows, so
    // one of them is cut in two. Each mix would move the job's slot if
    // the node laid its gangs out on its own.
    for mix in [1, 3] {
        while locals.len() < mix {
            let cg = TestCgroup::new(&format!("t-rows/local{}", locals.len()));
            tag(&cg.rel, "gang");
            let child = start_spinning(&cg, 2);
            job_threads(&child, 2);
            locals.push((cg, child));
        }
        // Let the agent lay the new table out, then watch on the TAI clock.
        std::thread::sleep(Duration::from_secs(2));
        let (runs, stalled) = trace::record_switches_and_stalls(Duration::from_secs(2), "tai");
        // Where the host stalled a virtual CPU, the trace shows whatever
        // ran there running on (100 ms at a time on a loaded host), in or
        // out of the row: judge the rest.
        let runs = trace::clip(&runs, |t| !stalled.iter().any(|&(a, b)| a <= t && t < b));
        let (own, other, open) = time_by_window(&runs, &tx);
        assert!(
            own + other > 0.2,
            "the job hardly ran in the rows with {mix} local gang(s): {:.3} s",
            own + other
        );
        figures.push((mix, own, other, open, trace::total(&stalled)));
    }
    assert!(
        agent.output().contains("row 1: /t-rows/job"),
        "the gang table does not give the job row 1: {}",
        agent.output()
    );
    figure(&format!(
        "rows: a gang job in cluster row 1 of 3 (100 ms each, 2 threads, 2 CPUs), sched_switch on the TAI clock over 2 s: {}",
        figures
            .iter()
            .map(|(mix, own, other, open, stalled)| format!(
                "beside {mix} local gang(s) {:.1}% of its {:.2} s of CPU in the rows in its own ({:.2} s more in the open phase; {:.0} ms the host stalled a CPU left out)",
                own / (own + other) * 100.0,
                own + other,
                open,
                stalled * 1e3
            ))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    // Laid out node by node, its slot would come in path order, in a
    // cycle whose length follows the mix, and meet the row's window only
    // by chance. Judged on the rows alone: the open phase is every
    // gang's by design (docs/design.md, "Gangs"), the job's included.
    // What a run over its row's end leaves in the next is milliseconds a
    // cycle.
    for (mix, own, other, _, _) in &figures {
        let share = own / (own + other);
        assert!(
            share >= 0.9,
            "beside {mix} local gang(s) only {:.1}% of the job's CPU time in the rows fell in its own",
            share * 100.0
        );
    }
    for (_, mut child) in locals {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = x.kill();
    let _ = x.wait();
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}
