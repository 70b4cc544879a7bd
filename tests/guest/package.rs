// SPDX-License-Identifier: GPL-2.0-only
//! The Debian package (`cargo xtask package`; `cargo xtask test` builds it
//! from the debug binary), installed by dpkg into a root of its own in the
//! guest, and what it installed put to use: the unit through systemd's own
//! verifier, the man pages through man, the completions through their
//! shells, the installed binary loading the scheduler with the installed
//! config. Then removed and purged: nothing of it stays. And the
//! package's files where it installs them, for the tests that run them
//! as a site does (`installed()`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

pub(crate) const DEB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/target/package/scx-linger_",
    env!("CARGO_PKG_VERSION"),
    "_amd64.deb"
);

/// Where `installed()` unpacks the package, on the guest's own tmpfs.
pub(crate) const UNPACKED: &str = "/run/scx-linger-package";

/// The package's /usr at its own paths in this boot, as `dpkg -i` puts
/// it on a site's node: Slurm's hooks at /usr/lib/scx_linger/, the
/// binary they run at /usr/sbin/scx_linger, the unit at
/// /lib/systemd/system/ (/lib is /usr/lib on Debian's merged /usr). The
/// guest's /usr is the host's, read-only, so the package is unpacked
/// once a boot and laid over it (overlayfs, the package on top). Its
/// /etc is left out: each test brings its own config. The Slurm tests name these files in
/// slurm.conf exactly as the package's docs do, so what slurmd and
/// slurmctld run is what the package ships, unchanged.
pub(crate) fn installed() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        assert!(
            Path::new(DEB).exists(),
            "{DEB} is missing: run the guest tests with `cargo xtask test`, which builds it"
        );
        let _ = fs::remove_dir_all(UNPACKED);
        run(Command::new("dpkg-deb").args(["-x", DEB, UNPACKED]));
        if Path::new(UNPACKED).join("lib").exists() {
            run(Command::new("cp").args([
                "-a",
                &format!("{UNPACKED}/lib/."),
                &format!("{UNPACKED}/usr/lib/"),
            ]));
        }
        run(Command::new("mount").args([
            "-t",
            "overlay",
            "overlay",
            "-o",
            &format!("lowerdir={UNPACKED}/usr:/usr"),
            "/usr",
        ]));
        let version = run(Command::new("/usr/sbin/scx_linger").arg("--version"));
        assert!(
            version.contains(env!("CARGO_PKG_VERSION"))
                && Path::new("/usr/lib/scx_linger/slurm-prolog").exists()
                && Path::new("/lib/systemd/system/scx_linger.service").exists(),
            "the package's files are not at their paths: {version}"
        );
    });
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?}: {text}");
    text
}

fn dpkg(root: &Path) -> Command {
    let mut c = Command::new("dpkg");
    c.arg(format!("--root={}", root.display()));
    c
}

/// Files under `dir`, relative, directories left out.
fn files(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

#[test]
fn the_package_installs_works_and_leaves_nothing_when_purged() {
    require_guest();
    assert!(
        Path::new(DEB).exists(),
        "{DEB} is missing: run the guest tests with `cargo xtask test`, which builds it"
    );
    // The guest's own tmpfs: a root of its own, with an empty dpkg database.
    let root = PathBuf::from("/run/scx-linger-pkgroot");
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("var/lib/dpkg/info")).unwrap();
    fs::create_dir_all(root.join("var/lib/dpkg/updates")).unwrap();
    fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    // dpkg runs the maintainer scripts chrooted into the root: a shell,
    // and the one command they call that is not built into it (rm), from
    // the static busybox (systemd is not running there: they skip it).
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::copy("/bin/busybox", root.join("bin/busybox")).unwrap();
    for applet in ["sh", "rm"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
    }
    // Its libraries are the guest's own; this root has no libc6 package.
    run(dpkg(&root).args(["--force-depends", "-i", DEB]));
    let status = run(Command::new("dpkg-query")
        .arg(format!("--root={}", root.display()))
        .args(["-W", "-f=${Status} ${Conffiles}", "scx-linger"]));
    assert!(status.starts_with("install ok installed"), "{status}");
    assert!(
        status.contains("/etc/scx_linger/config.toml")
            && status.contains("/etc/default/scx_linger"),
        "the config and the unit's flags are conffiles: {status}"
    );

    // The unit, as installed, through systemd's verifier: with the
    // system's targets it is ordered against and the kill its reload runs.
    let units = ["/usr/lib/systemd/system", "/lib/systemd/system"]
        .into_iter()
        .find(|p| Path::new(p).join("multi-user.target").exists())
        .expect("the system's systemd units");
    let system_units = root.join("usr/lib/systemd/system");
    fs::create_dir_all(&system_units).unwrap();
    // The system's own units, less any scx_linger of a package installed
    // where the guest's root comes from (the README's Install section):
    // the unit under test is the one this package just installed.
    let theirs = fs::read_dir(units)
        .unwrap()
        .flatten()
        .filter(|u| !u.file_name().to_string_lossy().starts_with("scx_linger"))
        .map(|u| u.path());
    run(Command::new("cp").arg("-a").args(theirs).arg(&system_units));
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::copy("/bin/kill", root.join("bin/kill")).unwrap();
    let verify = run(Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .arg("scx_linger.service"));
    assert!(verify.trim().is_empty(), "systemd-analyze verify: {verify}");

    // Man pages render; completions parse in their shells.
    let man = run(Command::new("man")
        .env("MANWIDTH", "80")
        .arg("-l")
        .arg(root.join("usr/share/man/man1/scx_linger-slurm.1.gz")));
    assert!(man.contains("prolog") && man.contains("epilog"), "{man}");
    run(Command::new("bash")
        .arg("-n")
        .arg(root.join("usr/share/bash-completion/completions/scx_linger")));

    // The installed binary runs the scheduler with the installed config.
    let bin = root.join("usr/sbin/scx_linger");
    let cfg = root.join("etc/scx_linger/config.toml");
    let agent = Agent::start_bin(&bin, &["--config", cfg.to_str().unwrap()]);
    assert_eq!(state(), "enabled");
    let (code, out) = agent.stop();
    assert!(code.success(), "{out}");

    // Removed, the conffile stays (dpkg's rule); purged, nothing does.
    run(dpkg(&root).args(["-r", "scx-linger"]));
    let left: Vec<String> = files(&root)
        .into_iter()
        .filter(|f| f.starts_with("etc/scx_linger") || f.starts_with("usr/"))
        .filter(|f| !f.starts_with("usr/lib/systemd/system/") || f.contains("scx_linger"))
        .collect();
    assert_eq!(left, vec!["etc/scx_linger/config.toml".to_string()]);
    run(dpkg(&root).args(["--purge", "scx-linger"]));
    assert!(
        !root.join("etc/scx_linger").exists() && !root.join("etc/default/scx_linger").exists(),
        "purge leaves the config"
    );
    let _ = fs::remove_dir_all(&root);
}
