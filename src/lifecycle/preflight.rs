// SPDX-License-Identifier: GPL-2.0-only
//! Checks made before anything is loaded, so that an operator who cannot run
//! the scheduler gets one line that names the problem and its fix instead of
//! a libbpf error log.
//!
//! The checks read the filesystem below a root directory (normally `/`) and
//! take the caller's capabilities as a value, so they are unit-tested here
//! against fabricated trees.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use crate::labels::cgroups;
use crate::node::{Caps, CAP_BPF, CAP_SYS_ADMIN};

/// Why the scheduler cannot be loaded. `Display` is the one-line message.
#[derive(Debug, PartialEq, Eq)]
pub enum PreflightError {
    NotPrivileged { missing: Vec<&'static str> },
    NoSchedExt { kernel: String },
    NoBtf,
    NoKernelConfig { kernel: String },
    NoCgroup2,
    CgroupHybrid { mount: PathBuf },
    AlreadyLoaded { name: String },
}

impl fmt::Display for PreflightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPrivileged { missing } => write!(
                f,
                "loading a scheduler needs CAP_BPF and CAP_SYS_ADMIN (missing {}): run it as root, e.g. with sudo",
                missing.join(", ")
            ),
            Self::NoSchedExt { kernel } => write!(
                f,
                "kernel {kernel} has no sched_ext (/sys/kernel/sched_ext is absent): boot Linux 6.12+ built with CONFIG_SCHED_CLASS_EXT=y"
            ),
            Self::NoBtf => write!(
                f,
                "kernel has no BTF (/sys/kernel/btf/vmlinux is absent): boot a kernel built with CONFIG_DEBUG_INFO_BTF=y"
            ),
            Self::NoKernelConfig { kernel } => write!(
                f,
                "libbpf reads the kernel's config and neither /boot/config-{kernel} nor /proc/config.gz exists: install the kernel's config file (distributions ship it with the kernel image) or `modprobe configs` for /proc/config.gz"
            ),
            Self::NoCgroup2 => write!(
                f,
                "no cgroup2 filesystem is mounted: scx_linger reads job labels from the unified cgroup hierarchy; mount it (mount -t cgroup2 none /sys/fs/cgroup) or boot with systemd.unified_cgroup_hierarchy=1"
            ),
            Self::CgroupHybrid { mount } => write!(
                f,
                "cgroup v2 at {} has no cpu controller (hybrid mode: jobs' cgroups are in cgroup v1): boot with systemd.unified_cgroup_hierarchy=1 so jobs land in cgroup v2",
                mount.display()
            ),
            Self::AlreadyLoaded { name } => write!(
                f,
                "another sched_ext scheduler is already loaded ({name}): stop it first, then start scx_linger"
            ),
        }
    }
}

impl std::error::Error for PreflightError {}

/// Run every check in the order an operator would fix them: privileges,
/// then the kernel, then whoever holds sched_ext now.
pub fn check(root: &Path, caps: Caps) -> Result<(), PreflightError> {
    let missing: Vec<&'static str> = [(CAP_BPF, "CAP_BPF"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN")]
        .into_iter()
        .filter(|(cap, _)| !caps.has(*cap))
        .map(|(_, name)| name)
        .collect();
    if !missing.is_empty() {
        return Err(PreflightError::NotPrivileged { missing });
    }

    let sched_ext = root.join("sys/kernel/sched_ext");
    if !sched_ext.is_dir() {
        return Err(PreflightError::NoSchedExt {
            kernel: kernel_release(root),
        });
    }
    if !root.join("sys/kernel/btf/vmlinux").exists() {
        return Err(PreflightError::NoBtf);
    }
    // The BPF program reads a kernel config option (scx's headers'
    // CONFIG_PREEMPT_RCU): libbpf refuses to load without the config file.
    let kernel = kernel_release(root);
    if !root.join(format!("boot/config-{kernel}")).exists() && !root.join("proc/config.gz").exists()
    {
        return Err(PreflightError::NoKernelConfig { kernel });
    }
    check_cgroup2(root)?;
    if let Some(name) = loaded_scheduler(root) {
        return Err(PreflightError::AlreadyLoaded { name });
    }
    Ok(())
}

/// Jobs must be in cgroup v2 with the cpu controller at its root: in
/// systemd's hybrid mode the controllers and the jobs' cgroups are in v1.
fn check_cgroup2(root: &Path) -> Result<(), PreflightError> {
    let info = fs::read_to_string(root.join("proc/self/mountinfo")).unwrap_or_default();
    let Some(mount) = cgroups::mount_from_mountinfo(&info) else {
        return Err(PreflightError::NoCgroup2);
    };
    let rel = mount.strip_prefix("/").unwrap_or(&mount);
    let controllers =
        fs::read_to_string(root.join(rel).join("cgroup.controllers")).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "cpu") {
        return Err(PreflightError::CgroupHybrid { mount });
    }
    Ok(())
}

/// The name of the sched_ext scheduler loaded now, if any. The state file
/// says whether one is enabled; root/ops names it.
pub fn loaded_scheduler(root: &Path) -> Option<String> {
    let dir: PathBuf = root.join("sys/kernel/sched_ext");
    let state = fs::read_to_string(dir.join("state")).ok()?;
    if state.trim() == "disabled" {
        return None;
    }
    let name = fs::read_to_string(dir.join("root/ops"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    Some(if name.is_empty() {
        format!("state {}", state.trim())
    } else {
        name
    })
}

fn kernel_release(root: &Path) -> String {
    fs::read_to_string(root.join("proc/sys/kernel/osrelease"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "(unknown)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Caps = Caps((1 << CAP_BPF) | (1 << CAP_SYS_ADMIN));

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, body) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, body).unwrap();
        }
        dir
    }

    const MOUNTINFO: &str =
        "35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";

    fn good() -> tempfile::TempDir {
        tree(&[
            ("sys/kernel/sched_ext/state", "disabled\n"),
            ("sys/kernel/btf/vmlinux", ""),
            ("proc/sys/kernel/osrelease", "7.3.4\n"),
            ("boot/config-7.3.4", ""),
            ("proc/self/mountinfo", MOUNTINFO),
            (
                "sys/fs/cgroup/cgroup.controllers",
                "cpuset cpu io memory pids\n",
            ),
        ])
    }

    #[test]
    fn names_the_kernel_config_file_libbpf_needs() {
        let t = good();
        fs::remove_file(t.path().join("boot/config-7.3.4")).unwrap();
        let msg = check(t.path(), ALL).unwrap_err().to_string();
        assert!(
            msg.contains("/boot/config-7.3.4") && msg.contains("/proc/config.gz"),
            "{msg}"
        );
        fs::write(t.path().join("proc/config.gz"), "").unwrap();
        assert_eq!(check(t.path(), ALL), Ok(()));
    }

    #[test]
    fn wants_the_unified_cgroup_hierarchy() {
        let t = good();
        fs::write(t.path().join("proc/self/mountinfo"), "").unwrap();
        assert_eq!(check(t.path(), ALL), Err(PreflightError::NoCgroup2));
        // Hybrid: cgroup2 at /sys/fs/cgroup/unified, no controllers there.
        fs::write(
            t.path().join("proc/self/mountinfo"),
            MOUNTINFO.replace("/sys/fs/cgroup ", "/sys/fs/cgroup/unified "),
        )
        .unwrap();
        fs::create_dir_all(t.path().join("sys/fs/cgroup/unified")).unwrap();
        fs::write(
            t.path().join("sys/fs/cgroup/unified/cgroup.controllers"),
            "\n",
        )
        .unwrap();
        let msg = check(t.path(), ALL).unwrap_err().to_string();
        assert!(
            msg.contains("hybrid") && msg.contains("unified_cgroup_hierarchy=1"),
            "{msg}"
        );
    }

    #[test]
    fn passes_on_a_ready_machine() {
        assert_eq!(check(good().path(), ALL), Ok(()));
    }

    #[test]
    fn names_each_missing_capability() {
        let e = check(good().path(), Caps(1 << CAP_SYS_ADMIN)).unwrap_err();
        assert_eq!(
            e,
            PreflightError::NotPrivileged {
                missing: vec!["CAP_BPF"]
            }
        );
        let msg = check(good().path(), Caps(0)).unwrap_err().to_string();
        assert!(msg.contains("CAP_BPF, CAP_SYS_ADMIN") && msg.contains("root"));
    }

    #[test]
    fn kernel_without_sched_ext_names_the_config_option() {
        let t = tree(&[("proc/sys/kernel/osrelease", "6.1.0-28-amd64\n")]);
        let msg = check(t.path(), ALL).unwrap_err().to_string();
        assert!(msg.contains("6.1.0-28-amd64"), "{msg}");
        assert!(msg.contains("CONFIG_SCHED_CLASS_EXT"), "{msg}");
    }

    #[test]
    fn kernel_without_btf() {
        let t = tree(&[("sys/kernel/sched_ext/state", "disabled\n")]);
        assert_eq!(check(t.path(), ALL), Err(PreflightError::NoBtf));
    }

    #[test]
    fn names_the_scheduler_already_loaded() {
        let t = good();
        fs::write(t.path().join("sys/kernel/sched_ext/state"), "enabled\n").unwrap();
        fs::create_dir_all(t.path().join("sys/kernel/sched_ext/root")).unwrap();
        fs::write(
            t.path().join("sys/kernel/sched_ext/root/ops"),
            "bpfland_1.0.4\n",
        )
        .unwrap();
        let msg = check(t.path(), ALL).unwrap_err().to_string();
        assert!(msg.contains("bpfland_1.0.4"), "{msg}");
    }
}
