// SPDX-License-Identifier: GPL-2.0-only
//! The agent's stats socket, and the client side that `scx_linger stats`
//! and `scx_linger top` use.
//!
//! Protocol: a client connects to the Unix socket, writes one request
//! line, `stats` (the latest reading) or `top` (the same with the CPU
//! history), and reads one JSON document (schema::Snapshot) back; then
//! the agent closes the connection.
//!
//! Who may read: the socket is the agent's (root's) with mode 0600, so
//! only root can by default. `scx_linger run --stats-group G` makes it
//! 0660 and group G's, so the operator can let a group watch. What it
//! serves is scheduling figures and cgroup paths, nothing else, and it
//! accepts no command that changes anything.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use log::warn;

use super::schema::Snapshot;

pub const SOCKET: &str = "/run/scx_linger/stats.sock";

/// The latest reading, shared with the socket and metrics threads, and
/// when one of them last asked for it: the run loop reads the stats every
/// second only while someone looks (a reading costs the agent about as
/// much CPU as everything else it does on a quiet node). A client that
/// finds the reading older than FRESH asks the run loop for a new one and
/// waits for it, so nobody is answered with a reading from before it
/// began to look.
#[derive(Default)]
pub struct Shared {
    /// The reading and when it was taken.
    reading: Mutex<(Option<Snapshot>, Option<Instant>)>,
    taken: Condvar,
    asked: Mutex<Option<Instant>>,
    /// Asks the run loop for a reading now (lifecycle/mod.rs sets it).
    wake: Mutex<Option<Box<dyn Fn() + Send>>>,
    /// Times the agent loaded the scheduler again after the kernel ended
    /// it (lifecycle/restart.rs), for the metrics.
    restarts: AtomicU64,
}

pub type Latest = Arc<Shared>;

/// A reading older than this is taken again before it is served.
const FRESH: Duration = Duration::from_millis(1500);
/// How long a client waits for that reading.
const FRESH_WAIT: Duration = Duration::from_secs(2);

impl Shared {
    /// How to ask the run loop for a reading now.
    pub fn on_stale(&self, wake: impl Fn() + Send + 'static) {
        if let Ok(mut w) = self.wake.lock() {
            *w = Some(Box::new(wake));
        }
    }

    /// A recent reading, for a client: it counts as being watched.
    pub fn get(&self) -> Option<Snapshot> {
        if let Ok(mut a) = self.asked.lock() {
            *a = Some(Instant::now());
        }
        let Ok(guard) = self.reading.lock() else {
            return None;
        };
        let taken = guard.1;
        let stale = taken.is_none_or(|t| t.elapsed() > FRESH);
        let woke = stale
            && self
                .wake
                .lock()
                .is_ok_and(|w| w.as_ref().map(|f| f()).is_some());
        let guard = if woke {
            match self
                .taken
                .wait_timeout_while(guard, FRESH_WAIT, |r| r.1 == taken)
            {
                Ok((g, _)) => g,
                Err(_) => return None,
            }
        } else {
            guard
        };
        guard.0.clone()
    }

    pub fn set(&self, snap: Snapshot) {
        if let Ok(mut r) = self.reading.lock() {
            *r = (Some(snap), Some(Instant::now()));
        }
        self.taken.notify_all();
    }

    /// The agent is loading the scheduler again after the kernel ended it.
    pub fn note_restart(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Whether a client asked for a reading within `within`.
    pub fn watched(&self, within: Duration) -> bool {
        self.asked
            .lock()
            .is_ok_and(|a| a.is_some_and(|t| t.elapsed() < within))
    }
}

/// Removes the socket when the agent stops (a killed agent leaves it
/// behind; clients then get "connection refused" and say that no agent
/// runs, and the next agent replaces it).
pub struct Served(PathBuf);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn group_id(name: &str) -> Result<u32> {
    match nix::unistd::Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        Ok(None) => {
            bail!("unknown group {name:?} for --stats-group: name an existing group (getent group)")
        }
        Err(e) => Err(e).with_context(|| format!("looking up group {name:?} for --stats-group")),
    }
}

/// Listen on `path` and answer requests on a thread of its own.
pub fn serve(path: &Path, group: Option<&str>, latest: Latest) -> Result<Served> {
    let gid = group.map(group_id).transpose()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if UnixStream::connect(path).is_ok() {
        bail!(
            "another scx_linger agent serves stats at {}: stop it first",
            path.display()
        );
    }
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)
        .with_context(|| format!("cannot create the stats socket {}", path.display()))?;
    let served = Served(path.to_path_buf());
    let mode = if gid.is_some() { 0o660 } else { 0o600 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    if let Some(gid) = gid {
        std::os::unix::fs::chown(path, None, Some(gid))
            .with_context(|| format!("giving {} to group {gid}", path.display()))?;
    }
    std::thread::Builder::new()
        .name("stats-socket".into())
        .spawn(move || {
            for conn in listener.incoming() {
                match conn {
                    Ok(stream) => {
                        if let Err(e) = answer(stream, &latest) {
                            warn!("stats socket: {e:#}");
                        }
                    }
                    Err(e) => warn!("stats socket: accept failed: {e}"),
                }
            }
        })
        .context("starting the stats socket thread")?;
    Ok(served)
}

fn answer(stream: UnixStream, latest: &Latest) -> Result<()> {
    // A client that never sends its request must not hold up the others.
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    // A request is a word: read one line of at most 4 KiB.
    let mut request = String::new();
    BufReader::new((&stream).take(4096))
        .read_line(&mut request)
        .context("reading the request")?;
    let reading = latest.get();
    let mut out = &stream;
    let Some(mut snap) = reading else {
        out.write_all(b"{\"error\":\"no reading yet\"}\n")?;
        return Ok(());
    };
    match request.trim() {
        "top" => {}
        "stats" => snap.history.clear(),
        other => {
            let shown: String = other.chars().take(40).collect();
            writeln!(
                out,
                "{}",
                serde_json::json!({ "error": format!("unknown request {shown:?}: send stats or top") })
            )?;
            return Ok(());
        }
    }
    serde_json::to_writer(&mut out, &snap)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Ask the agent at `path` for a reading (`top`: with the CPU history).
pub fn fetch(path: &Path, top: bool) -> Result<Snapshot> {
    let stream = UnixStream::connect(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound | ErrorKind::ConnectionRefused => anyhow::anyhow!(
            "no scx_linger agent is running (nothing answers at {}): start one with `scx_linger run`",
            path.display()
        ),
        ErrorKind::PermissionDenied => anyhow::anyhow!(
            "permission denied on {}: run as root, or ask the operator to start the agent with --stats-group and a group you are in",
            path.display()
        ),
        _ => anyhow::anyhow!("cannot reach the agent at {}: {e}", path.display()),
    })?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut out = &stream;
    out.write_all(if top { b"top\n" } else { b"stats\n" })?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .context("reading the agent's answer")?;
    let value: serde_json::Value =
        serde_json::from_str(&line).context("the agent's answer is not JSON")?;
    if let Some(err) = value.get("error").and_then(|e| e.as_str()) {
        bail!("the agent says: {err}");
    }
    serde_json::from_value(value).context("the agent's answer does not match this version's schema")
}

/// `scx_linger stats`: one reading, or one every `interval` seconds.
pub fn print(socket: &Path, json: bool, interval: Option<u64>, count: Option<u64>) -> Result<()> {
    let mut printed = 0;
    loop {
        let snap = fetch(socket, false)?;
        if json {
            println!("{}", serde_json::to_string(&snap)?);
        } else {
            print!("{}", snap.text());
        }
        printed += 1;
        let Some(secs) = interval else {
            return Ok(());
        };
        if count.is_some_and(|n| printed >= n) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(secs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_reading_is_taken_again_before_it_is_served() {
        let latest: Latest = Default::default();
        latest.set(Snapshot {
            time_ms: 1,
            ..Default::default()
        });
        // The run loop, asked for a reading, takes one.
        let l = latest.clone();
        latest.on_stale(move || {
            let l = l.clone();
            std::thread::spawn(move || {
                l.set(Snapshot {
                    time_ms: 2,
                    ..Default::default()
                });
            });
        });
        assert_eq!(
            latest.get().unwrap().time_ms,
            1,
            "a fresh reading is served as it is"
        );
        std::thread::sleep(FRESH + Duration::from_millis(100));
        assert_eq!(latest.get().unwrap().time_ms, 2);
    }

    #[test]
    fn serves_readings_and_refuses_unknown_requests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let latest: Latest = Default::default();
        let _served = serve(&path, None, latest.clone()).unwrap();
        assert!(!latest.watched(Duration::from_secs(60)));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let err = fetch(&path, false).unwrap_err().to_string();
        assert!(err.contains("no reading yet"), "{err}");
        let mut snap = Snapshot::default();
        snap.node.kernel = "k".into();
        snap.history.push(Default::default());
        // Asking, even before there is a reading, counts as watching.
        assert!(latest.watched(Duration::from_secs(60)));
        latest.set(snap);
        assert!(fetch(&path, false).unwrap().history.is_empty());
        assert_eq!(fetch(&path, true).unwrap().history.len(), 1);

        let mut s = UnixStream::connect(&path).unwrap();
        s.write_all(b"shutdown\n").unwrap();
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
        assert!(line.contains("unknown request"), "{line}");
    }

    #[test]
    fn says_when_no_agent_runs() {
        let dir = tempfile::tempdir().unwrap();
        let err = fetch(&dir.path().join("none.sock"), false).unwrap_err();
        assert!(err.to_string().contains("no scx_linger agent is running"));
    }
}
