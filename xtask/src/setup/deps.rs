// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask deps`: install what building and testing need and the
//! machine lacks. Idempotent: what is there already is left alone.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::apt::{installed, PrivateApt};
use crate::paths::cache_dir;
use crate::progress::step;

/// Debian packages for the BPF build, the guest and the guest tests,
/// from bookworm, but for FROM_BACKPORTS.
pub const HOST_PACKAGES: &[&str] = &[
    "clang-19",        // BPF compiler (scx_cargo needs clang >= 18)
    "llvm-19",         // llvm-strip for the BPF object
    "libclang1-19",    // bindgen, for bpf/intf.h
    "libelf-dev",      // libbpf
    "zlib1g-dev",      // libbpf
    "pkg-config",      // libbpf-sys build
    "qemu-system-x86", // the guest
    "kmod",            // depmod for the guest kernel's modules
    "busybox-static",  // virtme-ng's initramfs
    "cpio",            // virtme-ng's initramfs
    "zstd",            // kernel module compression
    "util-linux",      // setpriv/unshare, used by the guest tests
    "tmux",            // drives `scx_linger top` in the guest tests
    "prometheus",      // a real scraper, and promtool, for the metrics test
    "rt-tests",        // hackbench, for the scheduler overhead bench
    "stress-ng",       // scheduler stressors for the soak tests
    "bpftool",         // counts BPF map entries in the churn test
    "iproute2",        // the guest's Slurm needs an address: a dummy link
    "munge",           // Slurm's authentication, in the guest
    "slurmctld",       // a real Slurm controller and node daemon in the
    "slurmd",          // guest (22.05), for the Slurm tests: the
    "slurm-client",    // daemons run only there, started by the tests
    "libslurm-dev",    // spank.h, for the SPANK plugin
    "make",            // builds the SPANK plugin (deploy/slurm/Makefile)
    "lintian",         // checks the Debian package
    "chrony",          // synchronises the two-node guests' clocks
    "openmpi-bin",     // real MPI gang jobs: mpirun and its runtime
    "python3-mpi4py",  // MPI for bench/mpi/ring.py, the gang tests' MPI job
];

/// Packages held at bookworm's version whenever packages are installed:
/// bookworm's OpenMPI takes only bookworm's hwloc (libhwloc-plugins
/// depends on libhwloc15 < 2.9.0A), and a machine that once took
/// everything from backports has a newer one to go back from.
pub const FROM_BOOKWORM: &[&str] = &["libhwloc15"];

/// The packages taken from bookworm-backports, and only these: QEMU 10
/// (bookworm's 7.2 is older than the QEMU the harness is verified with).
/// Taking everything from there (`-t bookworm-backports`) would also
/// upgrade the libraries other packages share with the rest of bookworm
/// (libhwloc15 past what bookworm's OpenMPI accepts).
pub const FROM_BACKPORTS: &[&str] = &["qemu-system-x86"];

/// virtme-ng boots a kernel with the host's root filesystem shared over 9p.
pub const VIRTME_NG: &str = "virtme-ng==1.42";

pub fn run() -> Result<()> {
    let started = Instant::now();
    install_packages(HOST_PACKAGES)?;
    install_virtme_ng()?;
    step(&format!(
        "deps ready ({:.0} s)",
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// The apt state that reads bookworm (+updates, -security, -backports).
pub fn host_apt() -> Result<PrivateApt> {
    PrivateApt::new(
        cache_dir().join("apt-host"),
        &[
            (
                "http://deb.debian.org/debian",
                &["bookworm", "bookworm-updates", "bookworm-backports"],
            ),
            (
                "http://deb.debian.org/debian-security",
                &["bookworm-security"],
            ),
        ],
    )
}

/// Install whichever of `pkgs` are missing, saying which.
pub fn install_packages(pkgs: &[&str]) -> Result<()> {
    let missing: Vec<String> = pkgs
        .iter()
        .filter(|p| !installed(p))
        .map(|p| p.to_string())
        .collect();
    if missing.is_empty() {
        step("Debian packages: all present");
        return Ok(());
    }
    step(&format!(
        "installing Debian packages: {}",
        missing.join(" ")
    ));
    let apt = host_apt()?;
    apt.update(Duration::from_secs(6 * 3600))?;
    let (backports, bookworm): (Vec<String>, Vec<String>) = missing
        .into_iter()
        .partition(|p| FROM_BACKPORTS.contains(&p.as_str()));
    if !bookworm.is_empty() {
        let mut pkgs = bookworm;
        pkgs.extend(FROM_BOOKWORM.iter().map(|p| format!("{p}/bookworm")));
        apt.install(&pkgs, None)?;
    }
    if !backports.is_empty() {
        apt.install(&backports, Some("bookworm-backports"))?;
    }
    Ok(())
}

/// Find virtme-ng's `vng`: on PATH, or in Python's scripts directory (pip
/// may put it where a fresh shell's PATH does not look).
pub fn vng_path() -> Result<PathBuf> {
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join("vng");
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])
        .output()
        .context("running python3")?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("vng");
    if p.is_file() {
        return Ok(p);
    }
    bail!("virtme-ng (vng) is not installed: run `cargo xtask deps`")
}

fn install_virtme_ng() -> Result<()> {
    let want = VIRTME_NG.split("==").nth(1).unwrap_or_default();
    let have = Command::new("vng")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if have.contains(want) {
        step(&format!("virtme-ng {want}: present"));
        return Ok(());
    }
    step(&format!("installing {VIRTME_NG} from PyPI"));
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--root-user-action=ignore",
            VIRTME_NG,
        ])
        .status()
        .context("running python3 -m pip")?;
    if !status.success() {
        bail!("pip install {VIRTME_NG} failed ({status})");
    }
    Ok(())
}
