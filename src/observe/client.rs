// SPDX-License-Identifier: GPL-2.0-only
//! `scx_linger stats` and `scx_linger top` as clients of the agent's one
//! stats socket: scx_stats' protocol (scx_stats.rs serves it), asking for
//! the whole reading (schema::Snapshot, target "snapshot") where the scx
//! tools ask for its summary (target "top").

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use scx_stats::prelude::StatsClient;

use super::schema::Snapshot;
use super::scx_stats::{HISTORY_ARG, SNAPSHOT_TARGET};

/// How long a client waits for the agent's answer (it may take a reading
/// first: latest.rs). Generous: while gangs hold every CPU of a node, the
/// agent and this client are ordinary work and run in the gangs' relief
/// turns and open phases only (bpf/relief.bpf.c), and an operator asking
/// a busy node would rather wait for its answer than be told nothing.
const TIMEOUT_MS: u64 = 20_000;

/// One line naming what went wrong reaching the agent at `path`, and the fix.
fn unreachable(path: &Path, e: &std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound | ErrorKind::ConnectionRefused => anyhow!(
            "no scx_linger agent is running (nothing answers at {}): start one with `scx_linger run`",
            path.display()
        ),
        ErrorKind::PermissionDenied => anyhow!(
            "permission denied on {}: run as root, or ask the operator to start the agent with --stats-group and a group you are in",
            path.display()
        ),
        _ => anyhow!("cannot reach the agent at {}: {e}", path.display()),
    }
}

/// Ask the agent at `path` for a reading (`history`: with the CPU history
/// `top` draws).
pub fn fetch(path: &Path, history: bool) -> Result<Snapshot> {
    let mut client = StatsClient::new()
        .set_path(path)
        .connect(Some(TIMEOUT_MS))
        .map_err(|e| match e.downcast_ref::<std::io::Error>() {
            Some(io) => unreachable(path, io),
            None => e.context(format!("cannot reach the agent at {}", path.display())),
        })?;
    let args = vec![
        ("target".to_string(), SNAPSHOT_TARGET.to_string()),
        (HISTORY_ARG.to_string(), u8::from(history).to_string()),
    ];
    client
        .request::<Snapshot>("stats", args)
        // scx_stats reports a timeout on either side as "... timed out".
        .map_err(|e| {
            if e.to_string().ends_with("timed out") {
                anyhow!(
                    "the agent at {} did not answer within {} s: it may be stopped or short of CPU; see `systemctl status scx_linger` and try again",
                    path.display(),
                    TIMEOUT_MS / 1000
                )
            } else {
                anyhow!("the agent says: {e:#}")
            }
        })
        .context("reading the agent's answer")
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
    use crate::observe::latest::Latest;

    #[test]
    fn a_stats_group_may_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let gid = nix::unistd::getegid();
        let Ok(Some(group)) = nix::unistd::Group::from_gid(gid) else {
            return;
        };
        let _served =
            crate::observe::scx_stats::serve(Default::default(), &path, Some(&group.name)).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!((meta.mode() & 0o777, meta.gid()), (0o660, gid.as_raw()));
    }

    #[test]
    fn says_when_no_agent_runs() {
        let dir = tempfile::tempdir().unwrap();
        let err = fetch(&dir.path().join("none"), false).unwrap_err();
        assert!(
            err.to_string().contains("no scx_linger agent is running"),
            "{err:#}"
        );
    }

    #[test]
    fn reads_the_whole_reading_through_the_one_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let latest: Latest = Default::default();
        let _served = crate::observe::scx_stats::serve(latest.clone(), &path, None).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "root's alone by default");
        let err = fetch(&path, false).unwrap_err();
        assert!(format!("{err:#}").contains("no reading yet"), "{err:#}");
        let mut snap = Snapshot::default();
        snap.node.kernel = "k".into();
        snap.history.push(Default::default());
        latest.set(snap);
        let plain = fetch(&path, false).unwrap();
        assert_eq!(plain.node.kernel, "k");
        assert!(plain.history.is_empty(), "stats asks for no history");
        assert_eq!(fetch(&path, true).unwrap().history.len(), 1);
        // Unknown groups are refused in one line.
        let bad = crate::observe::scx_stats::serve(
            Default::default(),
            &dir.path().join("g"),
            Some("no-such-group-here"),
        );
        let Err(bad) = bad else {
            panic!("an unknown --stats-group was taken");
        };
        assert!(bad.to_string().contains("--stats-group"), "{bad}");
        // A second agent finds the socket taken.
        let Err(again) = crate::observe::scx_stats::serve(latest, &path, None) else {
            panic!("a second agent served the same socket");
        };
        assert!(
            again.to_string().contains("another scx_linger agent"),
            "{again}"
        );
    }
}
