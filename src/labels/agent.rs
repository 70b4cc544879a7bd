// SPDX-License-Identifier: GPL-2.0-only
//! The running agent as label writers see it: its pid file, and the
//! signal that asks it to look at the cgroup tree now. `tag`, `untag` and
//! the Slurm Prolog write labels or records and then poke the agent
//! (SIGUSR1), so a change takes effect at once rather than at its next
//! rescan; `slurm wait` asks whether an agent runs at all. The agent
//! writes the file while it runs (PidFile, held by lifecycle/).
//!
//! A module of its own so that everything that writes labels can reach
//! the agent without importing the commands (tag.rs) or each other.

use std::path::{Path, PathBuf};

use log::warn;

/// Where a running agent records its pid: in its runtime directory, the
/// one of /run the unit lets it write.
pub const PID_FILE: &str = "/run/scx_linger/agent.pid";

/// The agent's pid file, removed when it is dropped (a killed agent
/// leaves it behind; agent_pid() then finds no scx_linger behind it).
pub struct PidFile(PathBuf);

impl PidFile {
    /// Write our pid to `path`; None (and a warning) if it cannot be.
    pub fn create(path: &Path) -> Option<PidFile> {
        // Outside the unit nobody made the directory: readable by all,
        // as the unit's RuntimeDirectory is.
        if let Some(dir) = path.parent().filter(|d| !d.exists()) {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::create_dir_all(dir).and_then(|_| {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            });
        }
        match std::fs::write(path, format!("{}\n", std::process::id())) {
            Ok(()) => Some(PidFile(path.to_path_buf())),
            Err(e) => {
                warn!(
                    "cannot write {} ({e}): `tag` will take effect at the next periodic rescan",
                    path.display()
                );
                None
            }
        }
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Ask a running agent to apply label changes now. Best effort: without
/// an agent (or without permission to signal it) the label still reaches
/// it as a cgroupfs event, or at its next start.
pub fn notify_agent() {
    let Some(pid) = agent_pid(Path::new(PID_FILE)) else {
        return;
    };
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGUSR1,
    );
}

/// The running agent's pid, if one runs.
pub fn agent_pid(pid_file: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = std::fs::read_to_string(PathBuf::from(format!("/proc/{pid}/comm"))).ok()?;
    (pid > 1 && comm.trim() == "scx_linger").then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_pid_files_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pid");
        assert_eq!(agent_pid(&f), None);
        std::fs::write(&f, "1\n").unwrap();
        assert_eq!(agent_pid(&f), None);
        // Our own pid is alive but is not scx_linger.
        std::fs::write(&f, format!("{}\n", std::process::id())).unwrap();
        assert_eq!(agent_pid(&f), None);
    }

    #[test]
    fn the_pid_file_goes_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pid");
        let held = PidFile::create(&f).expect("writable");
        assert_eq!(
            std::fs::read_to_string(&f).unwrap().trim(),
            std::process::id().to_string()
        );
        drop(held);
        assert!(!f.exists());
    }
}
