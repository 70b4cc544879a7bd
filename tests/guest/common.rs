// SPDX-License-Identifier: GPL-2.0-only
//! Helpers for tests that load the real scheduler: start and stop the agent,
//! read what the kernel says about sched_ext, and run workloads whose
//! progress we measure from the kernel's own accounting (/proc schedstat,
//! /proc/stat), never from the scheduler's counters.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub const AGENT: &str = env!("CARGO_BIN_EXE_scx_linger");
const SCHED_EXT: &str = "/sys/kernel/sched_ext";

/// Fail at once, loudly, when not in the guest: these tests need a kernel
/// with sched_ext and root, and must never pass by doing nothing.
pub fn require_guest() {
    assert!(
        PathBuf::from(SCHED_EXT).is_dir(),
        "this kernel has no sched_ext: run these tests with `cargo xtask test`, which boots the guest"
    );
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the guest tests run as root: use `cargo xtask test`"
    );
    // Every test starts here: from now on dmesg() shows this test's kernel
    // messages only, so the faults an earlier test staged on purpose (an
    // ejection, a hotplug) are not taken for this test's.
    let last = kernel_log()
        .lines()
        .filter_map(log_time)
        .fold(0.0, f64::max);
    *DMESG_MARK.lock().unwrap() = last;
    // The kernel reports hung tasks ten times a boot and then falls
    // silent: a baseline or an earlier test that spent them would leave
    // this test's hung tasks unreported. -1: report every one. A kernel
    // without the detector has no such file and no such reports.
    let _ = fs::write("/proc/sys/kernel/hung_task_warnings", "-1");
    // The guest's /etc is a copy-on-write view of the host's: with the
    // package installed there (the README's Install section), every agent
    // a test starts without --config would read the host's config. Gone
    // from this boot's view once, before the first test.
    static HOST_CONFIG_HIDDEN: std::sync::Once = std::sync::Once::new();
    HOST_CONFIG_HIDDEN.call_once(|| {
        let _ = fs::remove_dir_all("/etc/scx_linger");
        let _ = fs::remove_file("/etc/default/scx_linger");
    });
}

/// Timestamp (s since boot) of the last kernel message before this test.
static DMESG_MARK: std::sync::Mutex<f64> = std::sync::Mutex::new(0.0);

/// The time of a kernel log line, `[  149.476997] ...`.
fn log_time(line: &str) -> Option<f64> {
    line.trim_start()
        .strip_prefix('[')?
        .split(']')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// The kernel's log as `dmesg` prints it (`[secs] message` a line), read
/// from /dev/kmsg in this process: running `dmesg` for it between the
/// day's steps (soak.rs) on a busy emulated node took up to 84 s a call.
fn kernel_log() -> String {
    use std::os::unix::fs::OpenOptionsExt;
    let mut kmsg = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .expect("opening /dev/kmsg");
    let mut out = String::new();
    // One record a read: "level,seq,usecs,flags;message", then lines of
    // key=value (each begins with a space) that dmesg does not print.
    let mut buf = vec![0u8; 8192];
    loop {
        match kmsg.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                let Some((head, msg)) = rec.split_once(';') else {
                    continue;
                };
                let usecs: u64 = head
                    .split(',')
                    .nth(2)
                    .and_then(|u| u.parse().ok())
                    .unwrap_or(0);
                let msg = msg.lines().next().unwrap_or("");
                out.push_str(&format!(
                    "[{:5}.{:06}] {msg}\n",
                    usecs / 1_000_000,
                    usecs % 1_000_000
                ));
            }
            // EPIPE: a record was overwritten before it was read; go on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            // EAGAIN: the end of the log.
            Err(_) => break,
        }
    }
    out
}

/// Whether this boot also runs the baselines only the bench's figures
/// read (`cargo xtask test --baselines`): the same load under EEVDF, or
/// a job alone, beside what a test checks, which CI leaves out.
pub fn baselines() -> bool {
    std::env::var("SCX_LINGER_BASELINES").is_ok_and(|v| v == "1")
}

/// Where a test may leave files the host can read after the run.
pub fn results_dir() -> PathBuf {
    let dir = std::env::var_os("SCX_LINGER_RESULTS")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn state() -> String {
    fs::read_to_string(format!("{SCHED_EXT}/state"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

pub fn ops_name() -> Option<String> {
    fs::read_to_string(format!("{SCHED_EXT}/root/ops"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Poll `f` every 50 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The kernel's messages since this test began (see require_guest()).
pub fn dmesg() -> String {
    let mark = *DMESG_MARK.lock().unwrap();
    kernel_log()
        .lines()
        .filter(|l| log_time(l).is_none_or(|t| t > mark))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// sched_ext lines the kernel logged that mean our scheduler was ejected.
pub fn ejections(dmesg: &str) -> Vec<String> {
    dmesg
        .lines()
        .filter(|l| {
            l.contains("sched_ext")
                && l.contains("disabled")
                && !l.contains("unregistered from user space")
        })
        .map(str::to_string)
        .collect()
}

/// A running `scx_linger run`. Dropping it stops it (SIGTERM) so a failed
/// test does not leave the next one with a scheduler already loaded.
pub struct Agent {
    child: Option<Child>,
    log: PathBuf,
}

impl Agent {
    /// Start the agent and wait until the kernel reports it enabled.
    pub fn start(args: &[&str]) -> Agent {
        Self::start_bin(std::path::Path::new(AGENT), args)
    }

    /// The same, with the agent binary at `bin` (an installed one).
    pub fn start_bin(bin: &std::path::Path, args: &[&str]) -> Agent {
        Self::start_within(bin, args, Duration::from_secs(60))
    }

    /// The same, waiting up to `timeout` for the kernel to report it
    /// enabled (a guest whose every vCPU is busy verifies slowly).
    pub fn start_within(bin: &std::path::Path, args: &[&str], timeout: Duration) -> Agent {
        // One log per agent: a test that restarts the agent keeps both.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = results_dir().join(format!("agent-{}-{n}.log", std::process::id()));
        let out = fs::File::create(&log).unwrap();
        let child = Command::new(bin)
            .arg("run")
            .args(args)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("starting scx_linger");
        let mut agent = Agent {
            child: Some(child),
            log,
        };
        let up = wait_until(timeout, || {
            state() == "enabled" || agent.try_exit().is_some()
        });
        assert!(
            up && state() == "enabled",
            "scx_linger did not come up (state {}): {}",
            state(),
            agent.output()
        );
        agent
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("agent already stopped").id() as i32
    }

    /// Send `sig` without waiting (SIGSTOP, SIGCONT...).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) touches no memory of ours.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Still running (not exited).
    pub fn alive(&mut self) -> bool {
        self.try_exit().is_none()
    }

    /// Resident memory of the agent, in KiB (VmRSS).
    pub fn rss_kib(&self) -> u64 {
        fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                l.strip_prefix("VmRSS:")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    }

    fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    pub fn output(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM and wait; returns the exit status and everything it printed.
    pub fn stop(self) -> (ExitStatus, String) {
        self.stop_within(Duration::from_secs(30))
    }

    /// SIGTERM, waiting at most `limit` for the exit: on a node whose
    /// every emulated vCPU is busy, the agent's last stats and the
    /// kernel's switch of every task back to its own scheduler take
    /// longer than the 30 s `stop` allows.
    pub fn stop_within(mut self, limit: Duration) -> (ExitStatus, String) {
        let status = self.signal_and_wait(libc::SIGTERM, limit);
        (status, self.output())
    }

    /// Wait (at most `timeout`) for the agent to exit on its own.
    pub fn wait_exit(mut self, timeout: Duration) -> Option<(ExitStatus, String)> {
        let ok = wait_until(timeout, || self.try_exit().is_some());
        let status = self.try_exit()?;
        self.child = None;
        ok.then(|| (status, self.output()))
    }

    /// SIGKILL: the agent gets no chance to clean up.
    pub fn kill9(mut self) -> ExitStatus {
        self.signal_and_wait(libc::SIGKILL, Duration::from_secs(30))
    }

    fn signal_and_wait(&mut self, sig: i32, limit: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("agent already stopped");
        // SAFETY: kill(2) touches no memory of ours. SIGCONT after the
        // signal: a test that stopped the agent and failed must not leave
        // the signal pending behind the stop.
        unsafe {
            libc::kill(child.id() as i32, sig);
            libc::kill(child.id() as i32, libc::SIGCONT);
        }
        let end = Instant::now() + limit;
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s;
            }
            if Instant::now() > end {
                let _ = child.kill();
                panic!("scx_linger did not exit within {limit:?} of signal {sig}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // A test already failing must not abort in its cleanup (a panic
        // here would): the agent is killed outright.
        if std::thread::panicking() {
            if let Some(mut c) = self.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            return;
        }
        if self.child.is_some() {
            let _ = self.signal_and_wait(libc::SIGTERM, Duration::from_secs(30));
        }
    }
}

/// The uid the tests use for an unprivileged user (nobody).
pub const NOBODY: u32 = 65534;

/// `scx_linger ARGS` as user nobody with no capabilities at all.
pub fn agent_as_nobody(args: &[&str]) -> Output {
    agent_output(
        Command::new("setpriv")
            .arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .args([
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                AGENT,
            ])
            .args(args),
    )
}

/// Run the agent to completion (for commands that should fail at once).
pub fn agent_output(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .output()
        .expect("running scx_linger")
}

/// `scx_linger stats --json`, parsed. A failure names the exit status, how
/// long the client waited and what it said.
pub fn stats_json() -> serde_json::Value {
    stats_json_from(AGENT)
}

/// stats_json(), asked by the client `agent` (a path to scx_linger).
pub fn stats_json_from(agent: &str) -> serde_json::Value {
    let started = Instant::now();
    let out = agent_output(Command::new(agent).args(["stats", "--json"]));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "stats --json: {} after {:.1?}: {said}",
        out.status,
        started.elapsed()
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stats --json printed no JSON document ({e}): {said}"))
}

/// Processes that burn CPU (`sh` busy loops), killed on drop.
pub struct Hogs {
    children: Vec<Child>,
}

impl Hogs {
    pub fn spin(n: usize) -> Hogs {
        Self::shell(n, "while :; do :; done")
    }

    /// Fork and exit as fast as possible.
    pub fn fork_loop(n: usize) -> Hogs {
        Self::shell(n, "while :; do /bin/true; done")
    }

    fn shell(n: usize, script: &str) -> Hogs {
        let children = (0..n)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", script])
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("starting a workload")
            })
            .collect();
        Hogs { children }
    }

    pub fn pids(&self) -> Vec<i32> {
        self.children.iter().map(|c| c.id() as i32).collect()
    }

    /// Nanoseconds each process has run, from /proc/<pid>/schedstat.
    pub fn runtimes(&self) -> Vec<u64> {
        self.pids().into_iter().map(runtime_ns).collect()
    }

    /// True while every process is alive (not exited or reaped).
    pub fn all_alive(&mut self) -> bool {
        self.children
            .iter_mut()
            .all(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// CPU time of a task as the kernel accounts it (first field of
/// /proc/<pid>/schedstat, in ns).
pub fn runtime_ns(pid: i32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The CPU a task last ran on: field 39 of /proc/<pid>/stat, counted
/// after the command name, which may itself hold spaces.
pub fn last_cpu(pid: i32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_comm = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    // after_comm starts at field 3 (state), so field 39 is its 37th.
    after_comm
        .split_whitespace()
        .nth(36)
        .and_then(|f| f.parse().ok())
        .unwrap_or(-1)
}

/// Idle CPU time of the whole machine so far (idle + iowait of the `cpu`
/// line of /proc/stat), in ns.
pub fn idle_ns() -> u64 {
    idle_ns_in(&fs::read_to_string("/proc/stat").unwrap())
}

/// idle_ns() from a /proc/stat read elsewhere (another node's).
pub fn idle_ns_in(stat: &str) -> u64 {
    let ticks: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("cpu "))
        .map(|l| {
            l.split_whitespace()
                .skip(3)
                .take(2)
                .filter_map(|v| v.parse::<u64>().ok())
                .sum()
        })
        .unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * (1_000_000_000 / hz)
}

/// Processes created since boot (the `processes` line of /proc/stat).
pub fn forks_since_boot() -> u64 {
    fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("processes ")?.trim().parse().ok())
        .unwrap()
}

/// Every process made progress between two runtime readings.
pub fn all_progressed(before: &[u64], after: &[u64]) -> bool {
    before.len() == after.len() && before.iter().zip(after).all(|(b, a)| a > b)
}

/// Online CPUs in the guest.
pub fn nr_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Freeze (or thaw) everything in the cgroup at `path`, and wait until
/// the kernel says it is. A fatal signal still ends a frozen task. Tests
/// freeze the gangs they measured before reading a trace back: beside
/// them the test's own process is ordinary work that relief and the open
/// phase serve, and reading took longer than the window.
pub fn freeze(path: &std::path::Path, on: bool) {
    let _ = fs::write(path.join("cgroup.freeze"), if on { "1" } else { "0" });
    let want = if on { "frozen 1" } else { "frozen 0" };
    wait_until(Duration::from_secs(20), || {
        fs::read_to_string(path.join("cgroup.events")).is_ok_and(|e| e.contains(want))
    });
}

/// A cgroup made for one test, removed (with everything in it killed) on
/// drop, so tests never see each other's jobs.
pub struct TestCgroup {
    pub rel: String,
    pub path: PathBuf,
}

impl TestCgroup {
    pub fn new(rel: &str) -> TestCgroup {
        let path = PathBuf::from(CGROUP_ROOT).join(rel);
        if path.exists() {
            kill_cgroup(&path);
        }
        fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        TestCgroup {
            rel: rel.to_string(),
            path,
        }
    }

    /// Move a process (all its threads) into this cgroup.
    pub fn add(&self, pid: i32) {
        fs::write(self.path.join("cgroup.procs"), pid.to_string())
            .unwrap_or_else(|e| panic!("moving {pid} into {}: {e}", self.rel));
    }

    /// Freeze (or thaw) everything in this cgroup: freeze().
    pub fn freeze(&self, on: bool) {
        freeze(&self.path, on);
    }

    /// Spinning processes started in this cgroup.
    pub fn spin(&self, n: usize) -> Hogs {
        let h = Hogs::spin(n);
        for pid in h.pids() {
            self.add(pid);
        }
        h
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        kill_cgroup(&self.path);
    }
}

/// Kill everything in a cgroup subtree and remove it, deepest first.
fn kill_cgroup(path: &std::path::Path) {
    let _ = fs::write(path.join("cgroup.kill"), "1");
    let mut dirs = vec![path.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        if let Ok(rd) = fs::read_dir(&dirs[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(e.path());
                }
            }
        }
        i += 1;
    }
    for d in dirs.iter().rev() {
        let _ = wait_until(Duration::from_secs(5), || {
            fs::remove_dir(d).is_ok() || !d.exists()
        });
    }
}

/// Run `sh -c script` inside `cg` (it is in the cgroup before it execs
/// anything, so every thread it makes is in it from the start), with
/// stdout and stderr piped together.
pub fn spawn_in(cg: &TestCgroup, script: &str) -> Child {
    let cmd = format!(
        "echo $$ > {}/cgroup.procs && exec 2>&1 && {script}",
        cg.path.display()
    );
    Command::new("sh")
        .args(["-c", &cmd])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {script:?} in {}: {e}", cg.rel))
}

/// Wait (at most `timeout`) for a child started by spawn_in() and return
/// its exit status and output; kills it and panics on timeout.
pub fn finish_child(mut child: Child, timeout: Duration) -> (ExitStatus, String) {
    let end = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            use std::io::Read;
            if let Some(mut o) = child.stdout.take() {
                let _ = o.read_to_string(&mut out);
            }
            return (status, out);
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} did not finish within {timeout:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// CPU time the kernel charged a cgroup and its descendants so far
/// (`usage_usec` of its cpu.stat), in us; None once it is gone.
pub fn usage_us(cg: &std::path::Path) -> Option<u64> {
    fs::read_to_string(cg.join("cpu.stat"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec "))?
        .trim()
        .parse()
        .ok()
}

/// Set extended attribute `name` on `path` (a label, as `tag` would).
pub fn xattr_set(path: &std::path::Path, name: &str, value: &str) {
    xattr::set(path, name, value.as_bytes())
        .unwrap_or_else(|e| panic!("setxattr {name} on {}: {e}", path.display()));
}

/// `scx_linger tag <rel> <class>` as root; panics on failure.
pub fn tag(rel: &str, class: &str) {
    let out = agent_output(Command::new(AGENT).args(["tag", rel, class]));
    assert!(
        out.status.success(),
        "tag {rel} {class}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sum of the CPU time of a set of processes (ns, kernel accounting).
pub fn total_runtime(h: &Hogs) -> u64 {
    h.runtimes().iter().sum()
}

/// Record a measured figure: appended to figures.txt in the results dir,
/// which `cargo xtask test` prints after the run.
pub fn figure(line: &str) {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(results_dir().join("figures.txt"))
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Per-thread scheduling statistics: (run ns, run-delay ns, timeslices).
pub fn thread_schedstat(tid: i32) -> (u64, u64, u64) {
    linger_bench::schedstat(&format!("/proc/self/task/{tid}/schedstat"))
}

/// Threads of this process that compute for `busy` then sleep for `idle`,
/// like a primary job that is half busy; stop when dropped.
pub struct DutyThreads {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
    pub tids: Vec<i32>,
}

impl DutyThreads {
    pub fn start(n: usize, busy: Duration, idle: Duration) -> DutyThreads {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let handles = (0..n)
            .map(|_| {
                let stop = stop.clone();
                let tx = tx.clone();
                std::thread::spawn(move || {
                    tx.send(unsafe { libc::gettid() }).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        while t.elapsed() < busy {
                            std::hint::black_box(0u64);
                        }
                        std::thread::sleep(idle);
                    }
                })
            })
            .collect();
        let tids = (0..n).map(|_| rx.recv().unwrap()).collect();
        DutyThreads {
            stop,
            handles,
            tids,
        }
    }

    /// Summed (run ns, run-delay ns, timeslices) of the threads.
    pub fn schedstat(&self) -> (u64, u64, u64) {
        self.tids
            .iter()
            .map(|t| thread_schedstat(*t))
            .fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2))
    }
}

impl Drop for DutyThreads {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// A workload binary of the bench crate (built in release by `cargo xtask
/// test` before the guest boots).
pub fn bench_bin(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/release")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: run the guest tests through `cargo xtask test`, which builds it",
        p.display()
    );
    p
}

/// GET `path` from 127.0.0.1:`port` (HTTP/1.0); the body of a 200 answer.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let (head, rest) = body.split_once("\r\n\r\n")?;
    head.contains(" 200 ").then(|| rest.to_string())
}

/// CPU use of `h` over `window`, as a fraction of one CPU (schedstat).
pub fn cpu_share(h: &Hogs, window: Duration) -> f64 {
    let before = total_runtime(h);
    std::thread::sleep(window);
    (total_runtime(h) - before) as f64 / window.as_nanos() as f64
}

/// Two shares as percentages, "a% / b%" (two jobs' figures side by side).
pub fn two_pcts(v: [f64; 2]) -> String {
    format!("{:.0}% / {:.0}%", v[0] * 100.0, v[1] * 100.0)
}

/// Bind every thread of `pid` to CPU `cpu`, as batch systems and MPI
/// launchers bind ranks to cores.
pub fn bind_to_cpu(pid: i32, cpu: u32) {
    let ok = Command::new("taskset")
        .args(["-a", "-p", "-c", &cpu.to_string(), &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "taskset could not bind {pid} to CPU {cpu}");
}
