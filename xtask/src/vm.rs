// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask vm`: boot the sched_ext guest under QEMU software emulation
//! (TCG) with virtme-ng, run one command as root in the project tree, and
//! return its exit code.
//!
//! virtme-ng shares the host's root filesystem read-only (with overlays on
//! /etc, /tmp, …) and one read-write directory per run, `target/vm/<run>/`.
//! The command's output goes to `output.log` there and we stream it while
//! the guest runs; the exit code comes back in `exit-code`. The kernel
//! console goes to `console.log`, for sched_ext messages and boot failures.
//! If `exit-code` never appears the guest did not run the command, and we
//! fail loudly instead of reporting anything about the command.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::paths::{project_root, vm_results_root};
use crate::progress::step;
use crate::setup::deps::vng_path;
use crate::setup::kernel;
use crate::shape::Shape;

#[derive(clap::Args, Clone)]
pub struct VmArgs {
    /// Kernel to boot: `debian` (newest Debian kernel with sched_ext) or
    /// `lts-6.12` (built by `cargo xtask kernel --lts 6.12`).
    #[arg(long, default_value = "debian")]
    pub kernel: String,
    /// Virtual CPUs (with --topology, the shape's count wins).
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// Shape the guest like a node: sockets, cores per socket, SMT threads
    /// per core and NUMA nodes, e.g. `2s2c2t2n` (8 CPUs in SMT pairs, two
    /// NUMA nodes). See xtask/src/shape.rs.
    #[arg(long)]
    pub topology: Option<Shape>,
    /// Guest memory, as QEMU takes it (e.g. 2G).
    #[arg(long, default_value = "2G")]
    pub mem: String,
    /// Give up (and kill the guest) after this many seconds.
    #[arg(long, default_value_t = 1800)]
    pub timeout: u64,
    /// Deterministic timing: the guest clock follows instruction counts
    /// (`-icount shift=3,sleep=off`). vCPUs then run round-robin in one host
    /// thread: right for primary/guest figures, wrong for gang effects.
    #[arg(long)]
    pub icount: bool,
    /// Run every vCPU in one host thread (`-accel tcg,thread=single`, as
    /// --icount does). Multi-threaded TCG breaks the kernel's own code
    /// patching (an int3 Oops at a static-key site) in half the boots at
    /// 8 vCPUs and all at 64; single-threaded TCG has shown none.
    #[arg(long)]
    pub single_thread: bool,
    /// Load a QEMU TCG plugin, as QEMU's `-plugin` takes it (the .so and
    /// its `,name=value` arguments); `{results}` stands for this boot's
    /// results folder (`cargo xtask bench --profile`).
    #[arg(long)]
    pub qemu_plugin: Option<String>,
    /// Boot a second guest beside this one, joined to it by a network
    /// link (a Unix socket between the two QEMUs on the host; addresses
    /// only inside the guests), sharing its results folder, and run this
    /// command in it (through `sh -c`) while the first runs `cmd`. Each
    /// guest finds its number (1, 2) in SCX_LINGER_NODE. The second is
    /// stopped once the first is done.
    #[arg(long)]
    pub peer: Option<String>,
    /// The command to run in the guest (through `sh -c`).
    #[arg(last = true, required = true)]
    pub cmd: Vec<String>,
}

/// The two-node link: QEMU's stream netdev on a Unix socket in the
/// host's abstract namespace (the first guest listens, the second
/// connects; no file to clean up), lossless and in order, each frame
/// readable by the other QEMU as soon as the device hands it over, in
/// both directions. TCP on the loopback held frames back: `-netdev
/// socket` leaves Nagle's algorithm on, and the stream netdev turns it
/// off on the connecting side only, so a frame from the listening side
/// sent while its previous one was unacknowledged waited for the other
/// QEMU's next send or its delayed-ACK timer (traced on the host: p50
/// 1.6-6.6 ms, p90 up to 42 ms, against 0.1-0.15 ms the other way), a
/// delay no wire between nodes has.
fn link_opts(node: u32, name: &str) -> String {
    let server = if node == 1 { "on" } else { "off" };
    format!(
        "-device virtio-net-pci,netdev=link,mac=52:54:00:00:00:0{node} \
         -netdev stream,id=link,server={server},addr.type=unix,addr.path={name},addr.abstract=on"
    )
}

/// The script a guest runs: it marks the start first and records the exit
/// code last, so a missing exit-code file means the command never
/// finished, and a missing start mark that it never began. `tag` tells
/// the files of a second guest apart ("" for the first).
fn guest_script(dir: &Path, project: &Path, cmd: &str, node: Option<u32>) -> String {
    let tag = match node {
        Some(n) if n > 1 => format!("-n{n}"),
        _ => String::new(),
    };
    let node_env = node.map_or(String::new(), |n| format!("export SCX_LINGER_NODE={n}\n"));
    format!(
        "#!/bin/sh\n\
         : > {dir}/started{tag}\n\
         export SCX_LINGER_RESULTS={dir}\n\
         {node_env}\
         export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
         cd {project} || exit 97\n\
         ( {cmd} ) > {dir}/output{tag}.log 2>&1 < /dev/null\n\
         echo $? > {dir}/exit-code{tag}.tmp && mv {dir}/exit-code{tag}.tmp {dir}/exit-code{tag}\n\
         sync\n",
        dir = shell_quote(&dir.to_string_lossy()),
        project = shell_quote(&project.to_string_lossy()),
    )
}

/// The process groups of the guests running now, for the signal handler
/// below (0: a free slot). Two guests may run side by side (the test
/// command's single-threaded passes).
static GUEST_PGIDS: [AtomicI32; 4] = [const { AtomicI32::new(0) }; 4];

extern "C" fn kill_guest_and_exit(sig: libc::c_int) {
    for slot in &GUEST_PGIDS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) is async-signal-safe and touches no memory
            // of ours.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
    // SAFETY: _exit(2) is async-signal-safe.
    unsafe { libc::_exit(128 + sig) };
}

/// Until dropped (the guest is gone), the signal handler kills this guest.
struct GuestRegistered(&'static AtomicI32, i32);

impl Drop for GuestRegistered {
    fn drop(&mut self) {
        let _ = self
            .0
            .compare_exchange(self.1, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// The guest runs in its own process group (so that a timeout can kill
/// vng and its QEMU together), which also shields it from signals meant
/// for us: if we are interrupted or terminated (Ctrl-C, `timeout`, a CI
/// runner giving up), take the guest down too rather than leave a QEMU
/// eating the CPUs that the next timing run needs.
fn kill_guest_if_we_are_killed(pgid: i32) -> GuestRegistered {
    // A slot of its own, or (more guests than slots) the last one's.
    let slot = GUEST_PGIDS
        .iter()
        .find(|s| {
            s.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        })
        .unwrap_or(&GUEST_PGIDS[GUEST_PGIDS.len() - 1]);
    slot.store(pgid, Ordering::SeqCst);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only calls async-signal-safe
        // functions.
        unsafe { libc::signal(sig, kill_guest_and_exit as *const () as libc::sighandler_t) };
    }
    GuestRegistered(slot, pgid)
}

pub fn run_cli(args: &VmArgs) -> Result<i32> {
    let outcome = run(args)?;
    step(&format!(
        "guest command exited with {} ({:.0} s; results in {})",
        outcome.exit_code,
        outcome.elapsed.as_secs_f64(),
        outcome.dir.display()
    ));
    Ok(outcome.exit_code)
}

pub struct Outcome {
    pub exit_code: i32,
    pub dir: PathBuf,
    pub elapsed: Duration,
}

/// Quote one word for sh.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command line as one sh string: a single argument is taken as a
/// script, several as words to quote.
pub fn command_string(cmd: &[String]) -> String {
    if cmd.len() == 1 {
        cmd[0].clone()
    } else {
        cmd.iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn new_run_dir() -> Result<PathBuf> {
    let root = vm_results_root();
    std::fs::create_dir_all(&root)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis();
    // The process id too: two boots started in the same millisecond (two
    // benches side by side) shared one folder and one output.log; and a
    // count, for two guests of one process side by side.
    static BOOTS: AtomicI32 = AtomicI32::new(0);
    let n = BOOTS.fetch_add(1, Ordering::SeqCst);
    let dir = root.join(format!("run-{stamp}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let latest = root.join("latest");
    let _ = std::fs::remove_file(&latest);
    let _ = std::os::unix::fs::symlink(&dir, &latest);
    Ok(dir)
}

/// A boot that failed before the guest started our command: QEMU 10's
/// multi-threaded TCG has been seen to abort while the guest enumerates
/// PCI (`msix_table_mmio_write: Assertion ... failed`): seen once so far, in
/// hundreds of boots; and a guest may hang before it (boot_deadline()).
/// Nothing of the command ran, so booting again is safe.
#[derive(Debug)]
struct NeverStarted(String);

impl std::fmt::Display for NeverStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NeverStarted {}

/// A guest killed mid-command by the emulator itself: multi-threaded TCG
/// breaks the kernel's own code patching now and then (an `Oops: int3` at
/// a static-key site), more often with more vCPUs. What the command did
/// until then is in `dir`; the caller may boot again for the rest.
#[derive(Debug)]
pub struct EmulatorOops {
    pub dir: PathBuf,
}

impl std::fmt::Display for EmulatorOops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the guest's kernel hit the emulator's int3 oops (multi-threaded TCG) mid-command; console: {}",
            self.dir.join("console.log").display()
        )
    }
}

impl std::error::Error for EmulatorOops {}

/// Boots before giving up on a guest that dies before running the command.
const BOOT_ATTEMPTS: u32 = 3;

/// How long a boot may take to start our command: two minutes and 2 s a
/// vCPU, twice that under icount. Guests of 2 to 64 vCPUs start it within
/// 10-30 s on a 2-core host, so this is several times what a healthy boot
/// takes; one has been seen to hang while bringing up its secondary CPUs,
/// and each minute waited on such a boot comes out of CI's budget. Nothing of the command ran then, so it is booted again, as a boot
/// that died early is.
fn boot_deadline(args: &VmArgs) -> Duration {
    let cpus = args.topology.map_or(args.cpus, |t| t.cpus());
    let secs = 120 + 2 * u64::from(cpus);
    Duration::from_secs(if args.icount { 2 * secs } else { secs })
}

pub fn run(args: &VmArgs) -> Result<Outcome> {
    let mut attempt = 1;
    loop {
        match boot_once(args) {
            Err(e) if attempt < BOOT_ATTEMPTS && e.downcast_ref::<NeverStarted>().is_some() => {
                step(&format!(
                    "{e}; booting again (attempt {} of {BOOT_ATTEMPTS})",
                    attempt + 1
                ));
                attempt += 1;
            }
            other => return other,
        }
    }
}

fn boot_once(args: &VmArgs) -> Result<Outcome> {
    let k = kernel::resolve(&args.kernel)?;
    let vng = vng_path()?;
    let dir = new_run_dir()?;
    let project = project_root();

    let two_nodes = args.peer.is_some();
    let script = guest_script(
        &dir,
        &project,
        &command_string(&args.cmd),
        two_nodes.then_some(1),
    );
    let script_path = dir.join("run.sh");
    std::fs::write(&script_path, script)?;
    std::fs::write(dir.join("output.log"), b"")?;

    let mut qemu_opts = Vec::new();
    if args.icount {
        qemu_opts.push("-icount shift=3,sleep=off".to_string());
    } else if args.single_thread {
        qemu_opts.push("-accel tcg,thread=single".to_string());
    }
    let cpus = args.topology.map_or(args.cpus, |t| t.cpus());
    let mut numa = Vec::new();
    if let Some(t) = args.topology {
        // vng passes a plain `-smp N` too; QEMU merges the two.
        qemu_opts.push(t.qemu_smp());
        numa = t.vng_numa(&args.mem)?;
    }
    if let Some(plugin) = &args.qemu_plugin {
        let results = dir.to_string_lossy();
        qemu_opts.push(format!("-plugin {}", plugin.replace("{results}", &results)));
    }
    // A link of this run's own (one run per process).
    let link = format!("scx-linger-link-{}", std::process::id());
    let guest = |node: u32, script: &Path, console: &str| -> Result<Command> {
        let console = std::fs::File::create(dir.join(console))?;
        let mut cmd = Command::new(&vng);
        cmd.arg("--run")
            .arg(&k.image)
            .arg("--disable-kvm")
            .arg("--cpus")
            .arg(cpus.to_string())
            .arg("--memory")
            .arg(&args.mem)
            .arg(format!("--rwdir={}", dir.display()))
            .arg("--verbose");
        for o in &qemu_opts {
            cmd.arg(format!("--qemu-opts={o}"));
        }
        if two_nodes {
            cmd.arg(format!("--qemu-opts={}", link_opts(node, &link)));
        }
        for n in &numa {
            cmd.arg(format!("--numa={n}"));
        }
        if args.single_thread && !args.icount {
            // Each secondary CPU calibrates its delay loop against the timer
            // at boot; with every vCPU a slice of one host thread that fails
            // over and over (measured: 64 vCPUs stuck for minutes). A preset
            // value skips it; delays use the TSC on x86 anyway.
            cmd.arg("--append=lpj=10000000");
        }
        cmd.arg("--")
            .arg(format!("sh {}", shell_quote(&script.to_string_lossy())))
            .current_dir(&project)
            .stdin(Stdio::null())
            .stdout(console.try_clone()?)
            .stderr(console);
        Ok(cmd)
    };
    let mut cmd = guest(1, &script_path, "console.log")?;
    cmd.process_group(0);

    step(&format!(
        "booting {} on {} vCPU(s){}{}{}: {}",
        k.release,
        cpus,
        args.topology
            .map_or(String::new(), |t| format!(" shaped {t}")),
        if args.icount {
            " (icount)"
        } else if args.single_thread {
            " (single-threaded TCG)"
        } else {
            ""
        },
        if two_nodes {
            ", beside a second node"
        } else {
            ""
        },
        command_string(&args.cmd)
    ));
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", vng.display()))?;
    let _registered = kill_guest_if_we_are_killed(child.id() as i32);
    // The second node joins the first's process group, so that every way
    // the first is killed kills it too. Its QEMU connects to the first's
    // listening socket, which is there once the first QEMU has started.
    // Its QEMU gives up at once if nothing listens yet, and the first's
    // vng may take seconds to start its QEMU on a loaded host: wait for
    // the socket rather than for a fixed time.
    let first_pgid = child.id() as i32;
    let start_peer = |peer_cmd: &str| -> Result<std::process::Child> {
        let until = Instant::now() + Duration::from_secs(60);
        while !listening(&link) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(200));
        }
        let path = dir.join("run-n2.sh");
        std::fs::write(&path, guest_script(&dir, &project, peer_cmd, Some(2)))?;
        std::fs::write(dir.join("output-n2.log"), b"")?;
        let mut cmd = guest(2, &path, "console-n2.log")?;
        cmd.process_group(first_pgid);
        cmd.spawn().context("starting the second node")
    };
    let mut peer = args.peer.as_deref().map(start_peer).transpose()?;
    let mut peer_boots = 1;

    let mut streamer = LogStreamer::new(dir.join("output.log"));
    let deadline = started + Duration::from_secs(args.timeout);
    let status = loop {
        streamer.pump()?;
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        // A second node that died before starting its command (its boot
        // failed) is booted again while the first waits for it.
        if let (Some(p), Some(peer_cmd)) = (peer.as_mut(), args.peer.as_deref()) {
            if p.try_wait()?.is_some()
                && !dir.join("started-n2").exists()
                && peer_boots < BOOT_ATTEMPTS
            {
                tail_console(&dir, "console-n2.log");
                peer_boots += 1;
                step(&format!(
                    "the second node died before starting its command; booting it again (attempt {peer_boots} of {BOOT_ATTEMPTS})"
                ));
                peer = Some(start_peer(peer_cmd)?);
            }
        }
        if started.elapsed() > boot_deadline(args) && !dir.join("started").exists() {
            // SAFETY: kill(2) on our vng's process group (it and its
            // QEMU); no memory of ours is touched.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            if let Some(mut p) = peer.take() {
                let _ = p.wait();
            }
            tail_console(&dir, "console.log");
            return Err(NeverStarted(format!(
                "the guest had not started the command after {} s (console: {})",
                boot_deadline(args).as_secs(),
                dir.join("console.log").display()
            ))
            .into());
        }
        if Instant::now() > deadline {
            // Kill the whole process group: vng and the QEMU it started.
            // SAFETY: kill(2) with a negative pid signals a process group;
            // it touches no memory of ours.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    streamer.pump()?;
    let elapsed = started.elapsed();
    if let Some(mut p) = peer.take() {
        // It stops on its own once the first is done; else it is killed.
        let until = Instant::now() + Duration::from_secs(60);
        while p.try_wait()?.is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(200));
        }
        if p.try_wait()?.is_none() {
            // SAFETY: kill(2) on the first node's process group, which the
            // second node's vng and QEMU are in; no memory touched.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = p.wait();
        }
        if !dir.join("exit-code-n2").exists() {
            tail_console(&dir, "console-n2.log");
            step(&format!(
                "the second node did not {} its command (console: {})",
                if dir.join("started-n2").exists() {
                    "finish"
                } else {
                    "start"
                },
                dir.join("console-n2.log").display()
            ));
        }
    }

    if status.is_none() {
        tail_console(&dir, "console.log");
        bail!(
            "guest timed out after {} s and was killed (console: {})",
            args.timeout,
            dir.join("console.log").display()
        );
    }
    let code = std::fs::read_to_string(dir.join("exit-code"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    match code {
        Some(exit_code) => Ok(Outcome {
            exit_code,
            dir,
            elapsed,
        }),
        None if !dir.join("started").exists() => {
            tail_console(&dir, "console.log");
            Err(NeverStarted(format!(
                "the guest died before running the command (vng {}); console: {}",
                status.unwrap(),
                dir.join("console.log").display()
            ))
            .into())
        }
        None => {
            tail_console(&dir, "console.log");
            let console = std::fs::read_to_string(dir.join("console.log")).unwrap_or_default();
            if console.contains("Oops: int3") {
                return Err(EmulatorOops { dir }.into());
            }
            bail!(
                "the guest did not run the command to its end (vng {}); console: {}",
                status.unwrap(),
                dir.join("console.log").display()
            )
        }
    }
}

/// Whether a Unix stream socket listens on the abstract `name`, read
/// from /proc/net/unix: a probe connection would be the one peer the
/// first guest's QEMU accepts.
fn listening(name: &str) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/unix") else {
        return false;
    };
    let path = format!("@{name}");
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Flags 00010000 is __SO_ACCEPTCON (listening); type 0001 stream.
        fields.len() > 7 && fields[3] == "00010000" && fields[4] == "0001" && fields[7] == path
    })
}

fn tail_console(dir: &Path, console: &str) {
    if let Ok(text) = std::fs::read_to_string(dir.join(console)) {
        let lines: Vec<&str> = text.lines().collect();
        eprintln!("---- last lines of the guest console ({console}) ----");
        for l in &lines[lines.len().saturating_sub(40)..] {
            eprintln!("{l}");
        }
        eprintln!("-----------------------------------------");
    }
}

thread_local! {
    /// This thread's guests keep their output to output.log (see quietly).
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with the guest's output left in its output.log instead of
/// echoed as it comes: for guests side by side, whose lines would
/// interleave; the caller prints each one's log once it has ended.
pub fn quietly<T>(f: impl FnOnce() -> T) -> T {
    QUIET.set(true);
    let out = f();
    QUIET.set(false);
    out
}

/// Copies what the guest appends to a file to our stdout.
struct LogStreamer {
    path: PathBuf,
    pos: u64,
}

impl LogStreamer {
    fn new(path: PathBuf) -> Self {
        Self { path, pos: 0 }
    }

    fn pump(&mut self) -> Result<()> {
        if QUIET.get() {
            return Ok(());
        }
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Ok(());
        };
        f.seek(SeekFrom::Start(self.pos))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        if !buf.is_empty() {
            self.pos += buf.len() as u64;
            let mut out = std::io::stdout().lock();
            out.write_all(&buf)?;
            out.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_words_for_sh() {
        assert_eq!(shell_quote("plain-word_1.2"), "plain-word_1.2");
        assert_eq!(shell_quote("two words"), "'two words'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn one_argument_is_a_script_several_are_words() {
        assert_eq!(command_string(&["echo a; echo b".into()]), "echo a; echo b");
        assert_eq!(command_string(&["echo".into(), "a b".into()]), "echo 'a b'");
    }

    #[test]
    fn sees_a_listening_socket_without_connecting_to_it() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("scx-linger-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
        let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
        assert!(listening(&name));
        assert!(!listening(&format!("{name}-other")));
        drop(listener);
        assert!(!listening(&name));
    }
}
