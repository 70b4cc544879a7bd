// SPDX-License-Identifier: GPL-2.0-only
//! The guest passes of `cargo xtask test`: which guests boot and which
//! tests each runs, booting again after the emulator's int3 oops, and the
//! single-threaded passes two at a time.

use std::path::Path;
use std::time::Instant;

use std::process::Command;

use anyhow::{bail, Context, Result};

use super::{Stages, Tally, TestArgs};
use crate::progress::step;
use crate::shape::Shape;
use crate::vm::{self, VmArgs};

/// The guest passes: the tests of a module that needs a particular guest
/// run only in that guest, and every other test in the plain one.
const NODE_SHAPED: &str = "node_shaped::";
/// The soak (tests/guest/soak/): a short day in the first kernel's
/// plain pass (2 vCPUs, one host thread each: the agent loads beside the
/// day's load in seconds; on the single-threaded node-shaped guest it
/// takes 100-130 s, and as long again after each restart and hotplug),
/// the full one on 16 vCPUs under `cargo xtask soak`.
pub const SOAK: &str = "soak::";
const MANY_CPUS: &str = "many_cpus::";
const TWO_NODES: &str = "two_nodes::";
/// What the plain pass runs on every kernel but the first: the tests of
/// the paths that differ by kernel version. The BPF source is one for
/// every kernel; what differs is how the kernel feeds it and what it
/// offers: cpu.max (passed by 6.17+, read by the agent on 6.12), the
/// queue peek the wake-up, relief and keep-running paths use (iterated
/// where the kernel lacks it), the signal tracepoint a killed job's tasks
/// are found by, cgroup weights, partial mode, the exit path of
/// thousands of threads, stress-ng's policy switches in and out of
/// sched_ext, hotplug's restart and the fall-back on SIGKILL, and the
/// gang clock's timers. The verifier budget (node-shaped pass) loads every
/// program on each kernel. The rest checks the agent and the policy,
/// which the first kernel's pass covers.
const EVERY_KERNEL: &[&str] = &[
    "limits::cpu_max_holds_in_every_class_as_under_eevdf",
    "classes::guests_get_only_the_guard_trickle_under_full_primary_load",
    "classes::a_killed_guest_job_exits_promptly_under_full_primary_load",
    "classes::a_short_sleeper_does_not_wait_out_a_compute_jobs_slice",
    "classes::cgroup_cpu_weight_is_honoured_within_a_class",
    "classes::partial_mode_keeps_primaries_in_the_fair_class_and_guests_harvest",
    "gang::two_gangs_take_turns_together_on_the_clock",
    "gang::ordinary_work_gets_relief_while_gangs_fill_every_cpu",
    "faults::cpu_hotplug_restarts_the_scheduler_and_every_task_keeps_running",
    "faults::a_primary_on_a_cpu_a_real_time_task_takes_runs_elsewhere",
    "lifecycle::loads_names_itself_and_unloads_on_sigterm",
    "faults::sigkill_with_guests_and_gangs_then_a_restart_restores_every_class",
    "load::thousands_of_threads_in_every_class_all_keep_running",
    "load::stress_ng_as_primaries_and_guests_beside_a_gang_soaks_without_ejection",
];
/// On every kernel but the first, the node-shaped pass runs the verifier
/// budget only: the topology tests exercise the same BPF paths on each.
const NODE_SHAPED_EVERY_KERNEL: &str = "node_shaped::verifier::";
/// The second node's half of the two-node tests (tests/guest/two_nodes/).
const PEER_TEST: &str = "two_nodes::peer_node";

/// One boot of the guest tests: which guest, and which tests.
struct Pass {
    name: &'static str,
    cpus: u32,
    topology: Option<Shape>,
    /// libtest's filters: a test runs if its name contains any.
    filters: Vec<String>,
    skip: Vec<&'static str>,
    timeout: u64,
    /// One host thread for all vCPUs: see VmArgs::single_thread.
    single_thread: bool,
    /// A second guest beside the first, running this test.
    peer: Option<&'static str>,
    /// On the first kernel only: what it checks does not depend on the
    /// kernel's version.
    first_kernel_only: bool,
}

/// The passes `args` asks for. A --filter naming a test of a special
/// module (`node_shaped::...`) runs in that module's pass only.
fn passes(args: &TestArgs, first_kernel: bool) -> Vec<Pass> {
    let wants = |module: &str| args.filter.as_deref().is_none_or(|f| f.starts_with(module));
    let mut out = Vec::new();
    if args.filter.as_deref().is_none_or(|f| {
        !f.starts_with(NODE_SHAPED) && !f.starts_with(MANY_CPUS) && !f.starts_with(TWO_NODES)
    }) {
        let skip = vec![NODE_SHAPED, MANY_CPUS, TWO_NODES];
        let filters = match &args.filter {
            Some(f) => vec![f.clone()],
            None if first_kernel => vec![],
            None => EVERY_KERNEL.iter().map(|t| t.to_string()).collect(),
        };
        out.push(Pass {
            name: "plain",
            cpus: args.cpus,
            topology: None,
            filters,
            skip,
            timeout: 2400 + args.day * 2,
            single_thread: false,
            peer: None,
            first_kernel_only: false,
        });
    }
    if wants(NODE_SHAPED) {
        let all = if first_kernel {
            vec![NODE_SHAPED.to_string()]
        } else {
            vec![NODE_SHAPED_EVERY_KERNEL.to_string()]
        };
        out.push(Pass {
            name: "node-shaped",
            cpus: args.node_shape.cpus(),
            topology: Some(args.node_shape),
            filters: args.filter.clone().map_or(all, |f| vec![f]),
            skip: vec![],
            timeout: 1200,
            single_thread: true,
            peer: None,
            first_kernel_only: false,
        });
    }
    if args.many_cpus > 0 && wants(MANY_CPUS) {
        out.push(Pass {
            name: "many-CPU",
            cpus: args.many_cpus,
            topology: None,
            filters: vec![args.filter.clone().unwrap_or(MANY_CPUS.into())],
            skip: vec![],
            timeout: 900,
            single_thread: true,
            peer: None,
            // Loading on 64 CPUs is the agent's and the BPF side's
            // scaling; the node-shaped pass loads every program on each
            // kernel.
            first_kernel_only: true,
        });
    }
    // Rows across nodes are the agent's and Slurm's: one kernel is enough.
    if wants(TWO_NODES) {
        out.push(Pass {
            name: "two-node",
            cpus: 1,
            topology: None,
            filters: vec![args.filter.clone().unwrap_or(TWO_NODES.into())],
            skip: vec![],
            // The bench's baselines (Slurm's gang mode among them) take
            // about 20 minutes more here.
            timeout: if args.baselines { 2400 } else { 1200 },
            single_thread: false,
            peer: Some(PEER_TEST),
            first_kernel_only: true,
        });
    }
    out
}

/// Boots again a pass may have after the emulator's int3 oops ended one.
const OOPS_BOOTS: u32 = 2;

/// The tests a boot finished before the emulator ended it, from libtest's
/// `test NAME ... ok` / `... FAILED` lines (a boot cut short prints no
/// summary), so that the next boot skips them.
#[derive(Default)]
struct Finished {
    names: Vec<String>,
    passed: u64,
    failed: u64,
    oopses: u32,
    /// Each test's time, where libtest reported it.
    secs: Vec<(String, f64)>,
}

impl Finished {
    fn scan(&mut self, output: &str) {
        for line in output.lines() {
            let Some((name, result)) = line
                .strip_prefix("test ")
                .and_then(|rest| rest.split_once(" ... "))
            else {
                continue;
            };
            // `ok <12.345s>` under --report-time.
            let (verdict, secs) = match result.trim().split_once(" <") {
                Some((v, t)) => (v, t.trim_end_matches("s>").parse().ok()),
                None => (result.trim(), None),
            };
            match verdict {
                "ok" => self.passed += 1,
                "FAILED" => self.failed += 1,
                _ => continue,
            }
            self.names.push(name.to_string());
            if let Some(secs) = secs {
                self.secs.push((name.to_string(), secs));
            }
        }
    }

    /// The `n` tests that took longest, longest first.
    fn slowest(&self, n: usize) -> Vec<(String, f64)> {
        let mut v = self.secs.clone();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v.truncate(n);
        v
    }
}

/// Every pass `args` asks for on each of `kernels`: the multi-threaded
/// ones one after another, each with the host's two cores; then the
/// single-threaded ones (one host thread each) two at a time, side by
/// side. Returns what failed and how many boots the emulator's oops ended.
pub(super) fn run_all(
    args: &TestArgs,
    exe: &Path,
    kernels: &[String],
    stages: &mut Stages,
    tally: &mut Tally,
    mut t: Instant,
) -> Result<(Vec<String>, u32)> {
    let mut failures = Vec::new();
    let mut oopses = 0;
    let mut in_turn = Vec::new();
    let mut side = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        for pass in passes(args, i == 0) {
            if pass.first_kernel_only && i > 0 {
                continue;
            }
            if pass.single_thread {
                side.push((k.clone(), pass));
            } else {
                in_turn.push((k.clone(), pass));
            }
        }
    }
    if side.len() == 1 {
        in_turn.append(&mut side);
    }
    let mut close = |r: PassResult, stages: &mut Stages, beside: &str| {
        tally.passed += r.passed;
        tally.failed += r.failed;
        oopses += r.oopses;
        failures.extend(r.failures);
        stages.record(&format!("guest tests, {}{beside}", r.what), r.secs);
    };
    for (k, pass) in &in_turn {
        let r = run_pass(args, exe, k, pass, false)?;
        print_pass(&r);
        close(r, stages, "");
        t = Instant::now();
    }
    if !side.is_empty() {
        for r in side_by_side(args, exe, &side)? {
            close(r, stages, " (side by side)");
        }
        stages.done("the single-threaded passes, side by side (wall)", t);
    }
    Ok((failures, oopses))
}

/// What one guest pass leaves for the close.
struct PassResult {
    what: String,
    /// The pass's own wall time, boots again after an oops included.
    secs: f64,
    passed: u64,
    failed: u64,
    failures: Vec<String>,
    oopses: u32,
    /// The guest's output where it was not echoed as it came.
    output: Option<String>,
    /// Figures, slowest tests and the counts, as printed at its end.
    report: String,
}

/// Boot `k` for `pass` (again, for the tests left, after the emulator's
/// int3 oops) and read its results.
/// `quiet`: the guest's output is kept for the result, not echoed.
fn run_pass(args: &TestArgs, exe: &Path, k: &str, pass: &Pass, quiet: bool) -> Result<PassResult> {
    let started = Instant::now();
    // The guest script's environment is its own: pass the load sizes on
    // the command line. Each test's time (libtest's --report-time,
    // unstable in name only: RUSTC_BOOTSTRAP lets a stable build print
    // it), so a slow pass says which tests its time went to.
    let mut cmd = vec![
        "env".into(),
        "RUSTC_BOOTSTRAP=1".into(),
        format!("SCX_LINGER_SOAK_SECS={}", args.soak),
        format!("SCX_LINGER_CHURN={}", args.churn),
        format!("SCX_LINGER_DAY_SECS={}", args.day),
        format!("SCX_LINGER_DAY_CGROUPS={}", args.day_cgroups),
        format!("SCX_LINGER_DAY_GANGS={}", args.day_gangs),
        format!("SCX_LINGER_DAY_STORM={}", args.day_storm),
        format!("SCX_LINGER_BASELINES={}", u8::from(args.baselines)),
        exe.to_string_lossy().into_owned(),
        "--test-threads=1".into(),
        "-Zunstable-options".into(),
        "--report-time".into(),
    ];
    cmd.extend(pass.filters.clone());
    for s in &pass.skip {
        cmd.extend(["--skip".to_string(), s.to_string()]);
    }
    // The second node runs its half of the pass's tests, with its results
    // (agent logs) in a folder of its own.
    let peer = pass.peer.map(|test| {
        vm::command_string(&[
            "sh".into(),
            "-c".into(),
            format!(
                "mkdir -p \"$SCX_LINGER_RESULTS/n2\" && SCX_LINGER_RESULTS=\"$SCX_LINGER_RESULTS/n2\" exec {} --test-threads=1 --ignored --exact {test}",
                exe.display()
            ),
        ])
    });
    let what = format!("{k}, {} pass", pass.name);
    // The emulator's int3 oops ends a boot now and then: boot again for
    // the tests that had not finished, and count it.
    let mut finished = Finished::default();
    let outcome = loop {
        let mut this = cmd.clone();
        for name in &finished.names {
            this.extend(["--skip".to_string(), name.clone()]);
        }
        let vm_args = VmArgs {
            kernel: k.to_string(),
            topology: pass.topology,
            cpus: pass.cpus,
            mem: "2G".into(),
            timeout: pass.timeout,
            icount: false,
            single_thread: pass.single_thread,
            qemu_plugin: None,
            peer: peer.clone(),
            cmd: vec![vm::command_string(&this)],
        };
        let booted = if quiet {
            vm::quietly(|| vm::run(&vm_args))
        } else {
            vm::run(&vm_args)
        };
        match booted {
            Err(e) if finished.oopses < OOPS_BOOTS => {
                let Some(oops) = e.downcast_ref::<vm::EmulatorOops>() else {
                    return Err(e);
                };
                let output =
                    std::fs::read_to_string(oops.dir.join("output.log")).unwrap_or_default();
                finished.scan(&output);
                finished.oopses += 1;
                step(&format!(
                    "{e}; booting again for the tests left ({} finished; boot {} of {})",
                    finished.names.len(),
                    finished.oopses + 1,
                    OOPS_BOOTS + 1
                ));
            }
            other => break other?,
        }
    };
    let mut report = String::new();
    if let Ok(figures) = std::fs::read_to_string(outcome.dir.join("figures.txt")) {
        report += &format!("==> figures measured on {what}:\n{figures}");
    }
    let mut guest = Tally::default();
    let output = std::fs::read_to_string(outcome.dir.join("output.log"))?;
    output.lines().for_each(|l| guest.scan(l));
    let mut timed = Finished::default();
    timed.scan(&output);
    timed.secs.extend(finished.secs.iter().cloned());
    report += &format!("==> slowest tests on {what}:\n");
    for (name, secs) in timed.slowest(8) {
        report += &format!("    {secs:>7.1} s  {name}\n");
    }
    report += &format!(
        "==> guest tests on {what}: {} passed, {} failed, exit {} ({:.0} s)\n",
        guest.passed,
        guest.failed,
        outcome.exit_code,
        outcome.elapsed.as_secs_f64()
    );
    let mut failures = Vec::new();
    if guest.suites == 0 || guest.passed + guest.failed == 0 {
        failures.push(format!("{what}: no guest test ran"));
    } else if outcome.exit_code != 0 || guest.failed > 0 {
        failures.push(format!("{what}: guest tests failed"));
    }
    if finished.failed > 0 {
        failures.push(format!(
            "{what}: guest tests failed before an emulator oops"
        ));
    }
    Ok(PassResult {
        what,
        secs: started.elapsed().as_secs_f64(),
        passed: guest.passed + finished.passed,
        failed: guest.failed + finished.failed,
        failures,
        oopses: finished.oopses,
        output: quiet.then_some(output),
        report,
    })
}

/// A pass's closing lines, with its guest's output first where that was
/// not echoed as it came.
fn print_pass(r: &PassResult) {
    if let Some(output) = &r.output {
        step(&format!("output of the guest tests on {}:", r.what));
        print!("{output}");
    }
    eprint!("{}", r.report);
}

/// Run single-threaded passes two at a time, each guest on a host core
/// of its own (a single-threaded guest keeps one busy: with two cores the
/// host fits two, and each pass's figures are relative to its own boot).
/// Each one's output and report are printed whole as it ends.
fn side_by_side(args: &TestArgs, exe: &Path, passes: &[(String, Pass)]) -> Result<Vec<PassResult>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..2u64 {
            let (next, results) = (&next, &results);
            scope.spawn(move || {
                // Two boots a moment apart, not in the same instant.
                std::thread::sleep(std::time::Duration::from_secs(worker * 2));
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((k, pass)) = passes.get(i) else {
                        break;
                    };
                    let r = run_pass(args, exe, k, pass, true);
                    if let Ok(r) = &r {
                        print_pass(r);
                    }
                    results.lock().unwrap().push(r);
                }
            });
        }
    });
    results.into_inner().unwrap().into_iter().collect()
}

/// Each test EVERY_KERNEL names is one the guest binary has: a renamed
/// test must not drop out of the later kernels' pass unseen.
pub(super) fn every_kernel_test_exists(exe: &std::path::Path) -> Result<()> {
    let out = Command::new(exe)
        .args(["--list", "--format=terse"])
        .output()
        .context("listing the guest tests")?;
    let list = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    let missing: Vec<&&str> = EVERY_KERNEL.iter().filter(|t| !names.contains(t)).collect();
    if !missing.is_empty() {
        bail!("EVERY_KERNEL (xtask/src/test/passes.rs) names tests that do not exist: {missing:?}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_cut_short_says_which_tests_finished() {
        let mut f = Finished::default();
        f.scan(
            "running 3 tests\ntest a::one ... ok\ntest a::two ... FAILED\ntest a::three ... \n[  197.1] Oops: int3",
        );
        assert_eq!(f.names, ["a::one", "a::two"]);
        assert_eq!((f.passed, f.failed), (1, 1));
    }

    #[test]
    fn reported_times_name_the_slowest_tests() {
        let mut f = Finished::default();
        f.scan("test a::one ... ok <1.500s>\ntest a::two ... FAILED <30.250s>\ntest a::three ... ok <7.000s>");
        assert_eq!((f.passed, f.failed), (2, 1));
        assert_eq!(
            f.slowest(2),
            [("a::two".to_string(), 30.25), ("a::three".to_string(), 7.0)]
        );
    }
}
