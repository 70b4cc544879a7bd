// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask test`: every check the project has, in the order that fails
//! fastest: formatting, lints, host unit tests, then the integration tests
//! (tests/guest) inside the sched_ext guest on each requested kernel.
//!
//! The closing line counts every test that ran, host and guest, and the
//! command fails if any step fails, if the guest cannot boot, or if a guest
//! run reports no test at all: a test that did not run never counts as
//! passed.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::paths::project_root;
use crate::progress::step;
use crate::setup::{deps, kernel};
use crate::shape::Shape;
use crate::vm::{self, VmArgs};

#[derive(clap::Args)]
pub struct TestArgs {
    /// Kernels to run the guest tests on (repeatable): `debian`, `lts-6.12`.
    #[arg(long = "kernel", default_values_t = vec!["debian".to_string()])]
    pub kernels: Vec<String>,
    /// Also build the 6.12 LTS kernel if needed and run the guest tests on
    /// it (about 20 min the first time on 2 cores, cached after).
    #[arg(long)]
    pub lts: bool,
    /// Virtual CPUs for the guest.
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// Only guest tests whose name contains this.
    #[arg(long)]
    pub filter: Option<String>,
    /// Skip fmt, clippy and host unit tests (for iterating on guest tests).
    #[arg(long)]
    pub guest_only: bool,
    /// How long the stress-ng soak runs in each guest, in seconds (the
    /// full five-minute soak: --soak 300; the short soak of
    /// tests/guest/soak.rs holds a heavier mix for longer)
    #[arg(long, default_value_t = 15)]
    pub soak: u64,
    /// How many cgroups the churn test creates and removes
    #[arg(long, default_value_t = 300)]
    pub churn: u64,
    /// How long the short soak (tests/guest/soak.rs) runs under
    /// scx_linger, in seconds; `cargo xtask soak` runs the full one.
    #[arg(long, default_value_t = 30)]
    pub day: u64,
    /// How many cgroups the soak's burst makes at once.
    #[arg(long, default_value_t = 100)]
    pub day_cgroups: u64,
    /// How many gang jobs the soak's burst makes.
    #[arg(long, default_value_t = 16)]
    pub day_gangs: u64,
    /// How many threads each of the soak's exit storms starts (2,000 in
    /// the full soak; the thread tests end 2,000 at once already).
    #[arg(long, default_value_t = 500)]
    pub day_storm: u64,
    /// The two-node pass also runs the mix without rows and under EEVDF,
    /// for the bench's comparison (about 5 minutes more).
    #[arg(long)]
    pub two_node_baselines: bool,
    /// The node-shaped pass: the tests where topology matters
    /// (tests/guest/node_shaped.rs) on a guest of this shape.
    #[arg(long, default_value = NODE_SHAPE)]
    pub node_shape: Shape,
    /// The many-CPU pass (tests/guest/many_cpus.rs) on this many vCPUs;
    /// 0 skips it.
    #[arg(long, default_value_t = 64)]
    pub many_cpus: u32,
}

/// The shape of the node-shaped pass, and of the verifier budget's guest.
pub const NODE_SHAPE: &str = "2s2c2t2n";

/// The guest passes: the tests of a module that needs a particular guest
/// run only in that guest, and every other test in the plain one.
const NODE_SHAPED: &str = "node_shaped::";
/// The soak (tests/guest/soak.rs): a short day in the first kernel's
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
    "lifecycle::loads_names_itself_and_unloads_on_sigterm",
    "lifecycle::sigkill_of_the_agent_falls_back_to_the_default_scheduler",
    "load::thousands_of_threads_in_every_class_all_keep_running",
    "load::stress_ng_as_primaries_and_guests_beside_a_gang_soaks_without_ejection",
];
/// On every kernel but the first, the node-shaped pass runs the verifier
/// budget only: the topology tests exercise the same BPF paths on each.
const NODE_SHAPED_EVERY_KERNEL: &str = "node_shaped::verifier::";
/// The second node's half of the two-node tests (tests/guest/two_nodes.rs).
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
            timeout: 1200,
            single_thread: false,
            peer: Some(PEER_TEST),
            first_kernel_only: true,
        });
    }
    out
}

/// Passed/failed counts summed from libtest's `test result:` lines.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    pub suites: u64,
}

impl Tally {
    /// Add one output line if it is a libtest summary.
    pub fn scan(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        self.suites += 1;
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(kind), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let n: u64 = n.parse().unwrap_or(0);
            match kind {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                _ => {}
            }
        }
    }
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

/// How long each stage of a run took, printed as it ends and again at
/// the close, so a slow CI run says where its time went.
#[derive(Default)]
struct Stages(Vec<(String, f64)>);

impl Stages {
    fn done(&mut self, name: &str, since: Instant) -> Instant {
        let secs = since.elapsed().as_secs_f64();
        step(&format!("stage {name}: {secs:.0} s"));
        self.0.push((name.to_string(), secs));
        Instant::now()
    }

    fn print(&self) {
        step("time per stage:");
        for (name, secs) in &self.0 {
            eprintln!("    {secs:>7.0} s  {name}");
        }
    }
}

pub fn run(args: &TestArgs) -> Result<i32> {
    let started = Instant::now();
    let mut stages = Stages::default();
    let mut t = Instant::now();
    deps::run()?;
    let mut kernels = args.kernels.clone();
    if args.lts && !kernels.iter().any(|k| k == "lts-6.12") {
        kernel::run(&kernel::KernelArgs {
            lts: Some("6.12".into()),
        })?;
        kernels.push("lts-6.12".into());
    }
    t = stages.done("packages and kernels", t);

    let mut tally = Tally::default();
    if !args.guest_only {
        step("cargo fmt --check");
        cargo(&["fmt", "--all", "--check"])?;
        step("cargo clippy -D warnings");
        // --all-targets skips tests marked `test = false`: name the guest
        // tests explicitly so they are linted too.
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ])?;
        cargo(&[
            "clippy", "--test", "guest", "--quiet", "--", "-D", "warnings",
        ])?;
        t = stages.done("fmt and clippy", t);
        step("host unit tests");
        let host = cargo_scanned(&["test", "--workspace"], &mut tally)?;
        if !host {
            bail!("host unit tests failed");
        }
        t = stages.done("host unit tests", t);
    }

    step("building the guest integration tests");
    let exe = build_guest_tests()?;
    every_kernel_test_exists(&exe)?;
    crate::spank::build()?;
    // The package the guest installs (tests/guest/package.rs), from the
    // debug build the other guest tests run.
    let deb = crate::package::build(true)?;
    lint_package(&deb)?;
    t = stages.done("guest test build and package", t);
    let mut failures = Vec::new();
    let mut oopses = 0;
    for (i, k) in kernels.iter().enumerate() {
        for pass in passes(args, i == 0) {
            if pass.first_kernel_only && i > 0 {
                continue;
            }
            // The guest script's environment is its own: pass the load
            // sizes on the command line.
            // Each test's time (libtest's --report-time, unstable in name
            // only: RUSTC_BOOTSTRAP lets a stable build print it), so a
            // slow pass says which tests its time went to.
            let mut cmd = vec![
                "env".into(),
                "RUSTC_BOOTSTRAP=1".into(),
                format!("SCX_LINGER_SOAK_SECS={}", args.soak),
                format!("SCX_LINGER_CHURN={}", args.churn),
                format!("SCX_LINGER_DAY_SECS={}", args.day),
                format!("SCX_LINGER_DAY_CGROUPS={}", args.day_cgroups),
                format!("SCX_LINGER_DAY_GANGS={}", args.day_gangs),
                format!("SCX_LINGER_DAY_STORM={}", args.day_storm),
                format!(
                    "SCX_LINGER_TWO_NODE_BASELINES={}",
                    u8::from(args.two_node_baselines)
                ),
                exe.to_string_lossy().into_owned(),
                "--test-threads=1".into(),
                "-Zunstable-options".into(),
                "--report-time".into(),
            ];
            cmd.extend(pass.filters.clone());
            for s in &pass.skip {
                cmd.extend(["--skip".to_string(), s.to_string()]);
            }
            // The second node runs its half of the pass's tests, with its
            // results (agent logs) in a folder of its own.
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
            // The emulator's int3 oops ends a boot now and then: boot
            // again for the tests that had not finished, and count it.
            let mut finished = Finished::default();
            let outcome = loop {
                let mut this = cmd.clone();
                for name in &finished.names {
                    this.extend(["--skip".to_string(), name.clone()]);
                }
                match vm::run(&VmArgs {
                    kernel: k.clone(),
                    topology: pass.topology,
                    cpus: pass.cpus,
                    mem: "2G".into(),
                    timeout: pass.timeout,
                    icount: false,
                    single_thread: pass.single_thread,
                    qemu_plugin: None,
                    peer: peer.clone(),
                    cmd: vec![vm::command_string(&this)],
                }) {
                    Err(e) if finished.oopses < OOPS_BOOTS => {
                        let Some(oops) = e.downcast_ref::<vm::EmulatorOops>() else {
                            return Err(e);
                        };
                        let output = std::fs::read_to_string(oops.dir.join("output.log"))
                            .unwrap_or_default();
                        finished.scan(&output);
                        finished.oopses += 1;
                        oopses += 1;
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
            if let Ok(figures) = std::fs::read_to_string(outcome.dir.join("figures.txt")) {
                step(&format!("figures measured on {what}:"));
                print!("{figures}");
            }
            let mut guest = Tally::default();
            let output = std::fs::read_to_string(outcome.dir.join("output.log"))?;
            output.lines().for_each(|l| guest.scan(l));
            let mut timed = Finished::default();
            timed.scan(&output);
            timed.secs.extend(finished.secs.iter().cloned());
            step(&format!("slowest tests on {what}:"));
            for (name, secs) in timed.slowest(8) {
                eprintln!("    {secs:>7.1} s  {name}");
            }
            step(&format!(
                "guest tests on {what}: {} passed, {} failed, exit {} ({:.0} s)",
                guest.passed,
                guest.failed,
                outcome.exit_code,
                outcome.elapsed.as_secs_f64()
            ));
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
            tally.passed += guest.passed + finished.passed;
            tally.failed += guest.failed + finished.failed;
            t = stages.done(&format!("guest tests, {what}"), t);
        }
    }

    stages.print();
    if oopses > 0 {
        step(&format!(
            "the emulator's int3 oops ended {oopses} boot(s); each was booted again for the tests left"
        ));
    }
    step(&format!(
        "all done in {:.1} min",
        started.elapsed().as_secs_f64() / 60.0
    ));
    // The closing line CI reads: every test that ran, host and guest.
    println!("{} passed, {} failed", tally.passed, tally.failed);
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(0)
}

/// Each test EVERY_KERNEL names is one the guest binary has: a renamed
/// test must not drop out of the later kernels' pass unseen.
fn every_kernel_test_exists(exe: &std::path::Path) -> Result<()> {
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
        bail!("EVERY_KERNEL (xtask/src/test.rs) names tests that do not exist: {missing:?}");
    }
    Ok(())
}

/// The package as Debian's lintian sees it: clean, but for what the
/// package's own overrides explain and the debug build's debug info (the
/// release package is stripped).
fn lint_package(deb: &std::path::Path) -> Result<()> {
    step("lintian");
    let out = Command::new("lintian")
        .args([
            "--fail-on",
            "error,warning",
            "--suppress-tags",
            "unstripped-binary-or-object",
        ])
        .arg(deb)
        .output()
        .context("running lintian (cargo xtask deps installs it)")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        bail!("lintian finds fault with {}:\n{text}", deb.display());
    }
    Ok(())
}

pub fn cargo(args: &[&str]) -> Result<()> {
    let status = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project_root())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

/// Run cargo, echo its stdout and tally libtest summaries; true on success.
fn cargo_scanned(args: &[&str], tally: &mut Tally) -> Result<bool> {
    let mut child = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project_root())
        .stdout(Stdio::piped())
        .spawn()
        .context("running cargo")?;
    let stdout = child.stdout.take().expect("piped");
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        tally.scan(&line);
    }
    Ok(child.wait()?.success())
}

/// Build tests/guest (and the scx_linger binary and bench workloads it
/// runs) and return the test executable's path.
pub fn build_guest_tests() -> Result<PathBuf> {
    // The gang tests run the bench crate's workloads (barrier), optimised
    // like a real parallel job would be.
    cargo(&["build", "--release", "--quiet", "--package", "linger-bench"])?;
    let out = Command::new(env!("CARGO"))
        .args([
            "test",
            "--test",
            "guest",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(project_root())
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo test --no-run")?;
    if !out.status.success() {
        bail!("building the guest tests failed");
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "guest" {
            if let Some(exe) = msg["executable"].as_str() {
                return Ok(PathBuf::from(exe));
            }
        }
    }
    bail!("cargo did not report the guest test executable")
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

    #[test]
    fn tallies_libtest_summaries() {
        let mut t = Tally::default();
        t.scan("test result: ok. 8 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s");
        t.scan("test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 1 filtered out");
        t.scan("running 5 tests");
        assert_eq!(
            t,
            Tally {
                passed: 11,
                failed: 2,
                suites: 2
            }
        );
    }
}
