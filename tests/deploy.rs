// SPDX-License-Identifier: GPL-2.0-only
//! What a site installs beside the binary (deploy/), checked by the tools
//! a site would check it with. Runs on the host: it loads no scheduler.

use std::path::{Path, PathBuf};
use std::process::Command;

const UNIT: &str = "scx_linger.service";

/// systemd-analyze, run on an alternate root holding the unit as
/// installed, the real binary at its ExecStart path and the system's own
/// units (the targets it is ordered against).
fn analyze(root: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("systemd-analyze")
        .args(args)
        .arg(format!("--root={}", root.display()))
        .arg(UNIT)
        .output()
        .expect("running systemd-analyze (Debian's systemd package has it)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dst = to.join(e.file_name());
        let Ok(ty) = e.file_type() else { continue };
        if ty.is_dir() {
            copy_dir(&e.path(), &dst);
        } else if ty.is_symlink() {
            let target = std::fs::read_link(e.path()).unwrap();
            let _ = std::os::unix::fs::symlink(target, dst);
        } else {
            let _ = std::fs::copy(e.path(), dst);
        }
    }
}

fn installed_root() -> PathBuf {
    let root = std::env::temp_dir().join(format!("scx-linger-unit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let units = ["/usr/lib/systemd/system", "/lib/systemd/system"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.join("multi-user.target").exists())
        .expect("the system's systemd units (multi-user.target)");
    copy_dir(units, &root.join("usr/lib/systemd/system"));
    let etc = root.join("etc/systemd/system");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/systemd/scx_linger.service"
        ),
        etc.join(UNIT),
    )
    .unwrap();
    for (from, to) in [
        (env!("CARGO_BIN_EXE_scx_linger"), "usr/sbin/scx_linger"),
        ("/bin/kill", "bin/kill"),
    ] {
        std::fs::create_dir_all(root.join(to).parent().unwrap()).unwrap();
        std::fs::copy(from, root.join(to)).unwrap();
    }
    root
}

#[test]
fn the_systemd_unit_passes_systemds_verifier_and_is_hardened() {
    let root = installed_root();
    let (ok, text) = analyze(&root, &["verify"]);
    assert!(
        ok && text.trim().is_empty(),
        "systemd-analyze verify: {text}"
    );
    // The exposure score systemd gives the unit's sandboxing (0 best, 10
    // worst); a service that loads BPF as root scores about 4.
    let (ok, text) = analyze(&root, &["security", "--offline=true", "--threshold=50"]);
    assert!(ok, "systemd-analyze security: exposure above 5.0:\n{text}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The Slurm hooks are shell that parses, and call the commands the agent
/// has (the command's own `--help` names its hooks).
#[test]
fn the_slurm_hooks_parse_and_call_the_agents_slurm_command() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm");
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_scx_linger"))
        .args(["slurm", "--help"])
        .output()
        .expect("running scx_linger slurm --help");
    let help = String::from_utf8_lossy(&help.stdout);
    for hook in ["prolog", "epilog", "row"] {
        let path = dir.join(hook);
        let ok = std::process::Command::new("sh")
            .arg("-n")
            .arg(&path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{} does not parse", path.display());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(&format!("exec /usr/sbin/scx_linger slurm {hook}")),
            "{}",
            path.display()
        );
        assert!(
            help.contains(hook),
            "`scx_linger slurm` has no {hook}: {help}"
        );
    }
}

/// The unit as an operator runs it: flags from the environment file the
/// package ships, never beside another sched_ext loader, no silent skip
/// on a kernel without sched_ext, and the Slurm job records (under its
/// runtime directory) kept across restarts, or a restart would turn
/// every running scavenger job into a primary.
#[test]
fn the_unit_takes_its_flags_from_a_file_and_keeps_job_records_across_restarts() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/systemd/scx_linger.service"
    ))
    .unwrap();
    let values = |key: &str| -> Vec<String> {
        unit.lines()
            .filter_map(|l| l.trim().strip_prefix(&format!("{key}=")))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(values("RuntimeDirectory"), ["scx_linger scx"]);
    assert!(
        values("ReadWritePaths").is_empty(),
        "only its own directories of /run"
    );
    // Jobs start after the scheduler is in place.
    assert!(values("Before")[0]
        .split_whitespace()
        .any(|u| u == "slurmd.service"));
    assert_eq!(values("RuntimeDirectoryPreserve"), ["yes"]);
    assert_eq!(values("EnvironmentFile"), ["-/etc/default/scx_linger"]);
    assert!(values("ExecStart")[0].ends_with(" $SCX_LINGER_FLAGS"));
    assert!(values("Conflicts")[0]
        .split_whitespace()
        .any(|u| u == "scx.service"));
    assert!(values("ConditionPathExists").is_empty(), "no silent skip");
    assert!(
        values("CapabilityBoundingSet")[0].contains("CAP_CHOWN"),
        "--stats-group gives the socket to a group"
    );
    // The records live in the directory the unit keeps.
    let slurm =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/labels/slurm.rs"))
            .unwrap();
    assert!(slurm.contains("RECORD_DIR: &str = \"/run/scx_linger/slurm\""));
    let agent =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/labels/agent.rs"))
            .unwrap();
    assert!(agent.contains("PID_FILE: &str = \"/run/scx_linger/agent.pid\""));
    let stats = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/observe/scx_stats.rs"
    ))
    .unwrap();
    assert!(stats.contains("SOCKET: &str = \"/var/run/scx/root/stats\""));
    // The file the unit reads ships with the package, as a conffile.
    let env = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/default/scx_linger"
    ))
    .unwrap();
    assert!(env.lines().any(|l| l.starts_with("SCX_LINGER_FLAGS=")));
}

/// The SPANK plugin builds, as a site builds it, with the shipped Makefile
/// against this machine's Slurm headers (libslurm-dev), and says which
/// Slurm release it is for: the one release that will load it.
#[test]
fn the_spank_plugin_builds_against_the_installed_slurm_with_the_shipped_makefile() {
    let dir = std::env::temp_dir().join(format!("scx-linger-spank-{}", std::process::id()));
    let slurm = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/slurm");
    let out = Command::new("make")
        .args(["-s", "-C", slurm])
        .arg(format!("OUT={}", dir.display()))
        .args(["all", "version"])
        .output()
        .expect("running make (cargo xtask deps installs it)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "make: {text}");
    assert!(dir.join("linger_spank.so").exists(), "{text}");
    assert!(text.contains("builds for Slurm "), "{text}");
    // The shipped plugstack.conf names where `make install` puts it.
    let stack = std::fs::read_to_string(format!("{slurm}/plugstack.conf")).unwrap();
    assert!(stack.contains("/usr/local/lib/scx_linger/linger_spank.so"));
    let _ = std::fs::remove_dir_all(&dir);
}
