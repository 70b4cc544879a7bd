// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask kernel`: the kernels the guest boots.
//!
//! - default: the newest Debian kernel package that has sched_ext. Debian's
//!   6.1/6.12 builds do not; trixie-backports' do. We list what the archive
//!   has now and take the newest whose config says CONFIG_SCHED_CLASS_EXT=y,
//!   so no version is written down here to vanish from the archive.
//! - `--lts 6.12`: Debian's linux-source-6.12 built with virtme-ng's
//!   minimal config plus sched_ext, BTF and cgroups, to show that one
//!   scheduler binary loads on the oldest kernel we support too.
//!
//! virtme-ng shares the host's root filesystem with the guest, so the guest
//! sees the host's /lib/modules and /boot. We link the unpacked modules to
//! /lib/modules/<release> (virtme-ng loads 9p from there) and copy the config
//! to /boot/config-<release> (libbpf refuses to load without it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::apt::PrivateApt;
use super::deps::{host_apt, install_packages, vng_path};
use crate::paths::cache_dir;
use crate::progress::step;

/// Suites searched for a sched_ext kernel, newest packaging first.
/// `SCX_LINGER_KERNEL_SUITES` (space-separated) overrides.
const KERNEL_SUITES: &[&str] = &["trixie-backports"];

/// Options the guest kernel must have; checked in every kernel we boot.
pub const REQUIRED_CONFIG: &[&str] = &[
    "CONFIG_SCHED_CLASS_EXT=y",
    "CONFIG_DEBUG_INFO_BTF=y",
    "CONFIG_BPF_SYSCALL=y",
    "CONFIG_CGROUP_SCHED=y",
    // cpu.max exists only with it; the scheduler enforces what it sets.
    "CONFIG_CFS_BANDWIDTH=y",
];

#[derive(clap::Args)]
pub struct KernelArgs {
    /// Build an LTS kernel from Debian's linux-source-<VERSION> instead
    /// (only 6.12 is known to work).
    #[arg(long, value_name = "VERSION")]
    pub lts: Option<String>,
}

/// A bootable kernel image and the release string it reports.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub image: PathBuf,
    pub release: String,
}

pub fn run(args: &KernelArgs) -> Result<()> {
    let k = match &args.lts {
        Some(v) => build_lts(v)?,
        None => fetch_debian()?,
    };
    step(&format!(
        "kernel {} ready: {}",
        k.release,
        k.image.display()
    ));
    Ok(())
}

/// Resolve `--kernel` of `vm`/`test`: `debian` (default), `lts-6.12`, or a
/// path to a bzImage/vmlinuz whose release is in a `release` file beside it.
pub fn resolve(name: &str) -> Result<Kernel> {
    match name {
        "debian" => fetch_debian(),
        n if n.starts_with("lts-") => {
            let version = &n[4..];
            let k = lts_kernel(version);
            if !k.image.exists() {
                bail!("kernel {n} is not built: run `cargo xtask kernel --lts {version}` (about 20 min on 2 cores)");
            }
            install_config(&k.release, &lts_dir(version).join("config"))?;
            Ok(k)
        }
        path => bail!("unknown kernel {path:?}: use `debian` or `lts-6.12`"),
    }
}

fn kernels_dir() -> PathBuf {
    cache_dir().join("kernels")
}

fn kernel_apt() -> Result<PrivateApt> {
    let suites: Vec<String> = std::env::var("SCX_LINGER_KERNEL_SUITES")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_else(|_| KERNEL_SUITES.iter().map(|s| s.to_string()).collect());
    let suites: Vec<&str> = suites.iter().map(String::as_str).collect();
    PrivateApt::new(
        cache_dir().join("apt-kernel"),
        &[("http://deb.debian.org/debian", &suites)],
    )
}

/// Package versions (`7.3.4+deb13`) of generic amd64 kernel binaries, newest
/// first. Names look like `linux-binary-7.3.4+deb13-amd64`; cloud and rt
/// flavours are skipped.
pub fn kernel_versions(pkgnames: &[String]) -> Vec<String> {
    let mut v: Vec<String> = pkgnames
        .iter()
        .filter_map(|n| n.strip_prefix("linux-binary-")?.strip_suffix("-amd64"))
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()) && !v.contains('-'))
        .map(str::to_string)
        .collect();
    v.sort_by_key(|v| std::cmp::Reverse(version_key(v)));
    v.dedup();
    v
}

/// Numeric sort key of `7.3.4+deb13` → [7, 3, 4, 13].
fn version_key(v: &str) -> Vec<u64> {
    v.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or(0))
        .collect()
}

/// True if a kernel config text has every option in REQUIRED_CONFIG.
pub fn config_ok(config: &str) -> Result<(), Vec<&'static str>> {
    let missing: Vec<&str> = REQUIRED_CONFIG
        .iter()
        .copied()
        .filter(|opt| !config.lines().any(|l| l.trim() == *opt))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

fn fetch_debian() -> Result<Kernel> {
    let current = kernels_dir().join("debian.current");
    let cached = std::fs::read_to_string(&current)
        .ok()
        .map(|s| s.trim().to_string());

    let apt = kernel_apt()?;
    let versions = match apt
        .update(Duration::from_secs(24 * 3600))
        .and_then(|_| apt.pkgnames("linux-binary-"))
    {
        Ok(names) => kernel_versions(&names),
        Err(e) => {
            match &cached {
                Some(release) => {
                    eprintln!("xtask: warning: cannot list Debian kernels ({e:#}); using cached {release}");
                    return prepare_debian(release);
                }
                None => return Err(e.context("listing Debian kernel packages")),
            }
        }
    };
    if versions.is_empty() {
        bail!("no linux-binary-*-amd64 package in {KERNEL_SUITES:?}; set SCX_LINGER_KERNEL_SUITES to a suite that has one");
    }

    for version in &versions {
        let release = format!("{version}-amd64");
        if cached.as_deref() == Some(release.as_str()) && unpacked(&release).exists() {
            return prepare_debian(&release);
        }
        step(&format!("fetching Debian kernel {release}"));
        let started = Instant::now();
        let dl = kernels_dir().join(&release).join("debs");
        apt.download(&[&format!("linux-base-{release}")], &dl)?;
        let config = deb_file(&dl, &format!("linux-base-{release}_"))?;
        let root = kernels_dir().join(&release).join("root");
        unpack_deb(&config, &root)?;
        let cfg_text = std::fs::read_to_string(modules_dir(&release).join("config"))
            .with_context(|| format!("linux-base-{release} has no config"))?;
        if let Err(missing) = config_ok(&cfg_text) {
            eprintln!(
                "xtask: {release} lacks {}; trying an older one",
                missing.join(", ")
            );
            continue;
        }
        apt.download(
            &[
                &format!("linux-binary-{release}"),
                &format!("linux-modules-{release}"),
            ],
            &dl,
        )?;
        for prefix in ["linux-binary-", "linux-modules-"] {
            unpack_deb(&deb_file(&dl, &format!("{prefix}{release}_"))?, &root)?;
        }
        std::fs::remove_dir_all(&dl).ok();
        std::fs::write(&current, &release)?;
        step(&format!(
            "fetched {release} in {:.0} s",
            started.elapsed().as_secs_f64()
        ));
        return prepare_debian(&release);
    }
    bail!("no Debian kernel in {KERNEL_SUITES:?} has CONFIG_SCHED_CLASS_EXT=y")
}

fn unpacked(release: &str) -> PathBuf {
    modules_dir(release).join("vmlinuz")
}

fn modules_dir(release: &str) -> PathBuf {
    kernels_dir()
        .join(release)
        .join("root/usr/lib/modules")
        .join(release)
}

/// Make an unpacked Debian kernel bootable by virtme-ng: modules reachable
/// under /lib/modules with their index built, config under /boot.
fn prepare_debian(release: &str) -> Result<Kernel> {
    let mods = modules_dir(release);
    let image = mods.join("vmlinuz");
    if !image.exists() {
        bail!("{} is missing: run `cargo xtask kernel`", image.display());
    }
    let link = Path::new("/lib/modules").join(release);
    if std::fs::read_link(&link).ok().as_deref() != Some(mods.as_path()) {
        std::fs::create_dir_all("/lib/modules")?;
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&mods, &link)
            .with_context(|| format!("linking {} (needs root)", link.display()))?;
    }
    if !mods.join("modules.dep").exists() {
        let status = Command::new("depmod").args(["-a", release]).status()?;
        if !status.success() {
            bail!("depmod -a {release} failed");
        }
    }
    install_config(release, &mods.join("config"))?;
    Ok(Kernel {
        image,
        release: release.to_string(),
    })
}

/// Copy a kernel config to /boot/config-<release>, where libbpf looks for it
/// inside the guest (the guest's /boot is the host's).
fn install_config(release: &str, config: &Path) -> Result<()> {
    let dest = PathBuf::from(format!("/boot/config-{release}"));
    let text = std::fs::read(config).with_context(|| format!("reading {}", config.display()))?;
    if std::fs::read(&dest).ok().as_deref() != Some(text.as_slice()) {
        std::fs::create_dir_all("/boot")?;
        std::fs::write(&dest, text).with_context(|| format!("writing {}", dest.display()))?;
    }
    Ok(())
}

fn deb_file(dir: &Path, prefix: &str) -> Result<PathBuf> {
    std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".deb"))
        })
        .with_context(|| format!("no {prefix}*.deb in {}", dir.display()))
}

fn unpack_deb(deb: &Path, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest)?;
    let status = Command::new("dpkg-deb")
        .arg("-x")
        .arg(deb)
        .arg(dest)
        .status()
        .context("running dpkg-deb")?;
    if !status.success() {
        bail!("dpkg-deb -x {} failed", deb.display());
    }
    Ok(())
}

// ---- LTS kernel built from source -------------------------------------

/// Packages a kernel build needs beyond HOST_PACKAGES (dwarves: pahole,
/// which generates the BTF that sched_ext requires).
const BUILD_PACKAGES: &[&str] = &[
    "build-essential",
    "flex",
    "bison",
    "bc",
    "libssl-dev",
    "libelf-dev",
    "dwarves",
    "xz-utils",
    "python3",
    "rsync",
];

/// Options added to virtme-ng's minimal config (`vng --kconfig`).
const LTS_CONFIG: &[&str] = &[
    "BPF",
    "BPF_SYSCALL",
    "BPF_JIT",
    "DEBUG_INFO",
    "DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT",
    "DEBUG_INFO_BTF",
    "SCHED_CLASS_EXT",
    "CGROUPS",
    "CGROUP_SCHED",
    "FAIR_GROUP_SCHED",
    "CFS_BANDWIDTH",
    "EXT_GROUP_SCHED",
    "SCHEDSTATS",
    "SCHED_DEBUG",
    "FTRACE",
    "FUNCTION_TRACER",
    "DYNAMIC_FTRACE",
    "BPF_EVENTS",
    "KPROBES",
    "HOTPLUG_CPU",
];

fn lts_dir(version: &str) -> PathBuf {
    kernels_dir().join(format!("lts-{version}"))
}

fn lts_kernel(version: &str) -> Kernel {
    let dir = lts_dir(version);
    Kernel {
        image: dir.join("bzImage"),
        release: std::fs::read_to_string(dir.join("release"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

fn build_lts(version: &str) -> Result<Kernel> {
    let k = lts_kernel(version);
    // A kernel built before an option joined REQUIRED_CONFIG is built
    // again (incrementally, in the kept source tree).
    let cached_ok = std::fs::read_to_string(lts_dir(version).join("config"))
        .is_ok_and(|c| config_ok(&c).is_ok());
    if k.image.exists() && !k.release.is_empty() && cached_ok {
        step(&format!("LTS kernel {} already built", k.release));
        install_config(&k.release, &lts_dir(version).join("config"))?;
        return Ok(k);
    }
    install_packages(BUILD_PACKAGES)?;
    let dir = lts_dir(version);
    let src = dir.join("src");
    if !src.join("Makefile").exists() {
        step(&format!("fetching Debian linux-source-{version}"));
        let apt = host_apt()?;
        apt.update(Duration::from_secs(6 * 3600))?;
        let dl = dir.join("debs");
        let pkg = format!("linux-source-{version}");
        apt.download(&[&pkg], &dl)?;
        let root = dir.join("root");
        unpack_deb(&deb_file(&dl, &format!("{pkg}_"))?, &root)?;
        let tarball = root.join(format!("usr/src/linux-source-{version}.tar.xz"));
        std::fs::create_dir_all(&src)?;
        sh(Command::new("tar")
            .arg("-xf")
            .arg(&tarball)
            .arg("--strip-components=1")
            .arg("-C")
            .arg(&src))?;
        std::fs::remove_dir_all(&root).ok();
        std::fs::remove_dir_all(&dl).ok();
    }

    step("configuring: vng --kconfig + sched_ext, BTF, cgroups");
    sh(Command::new(vng_path()?).arg("--kconfig").current_dir(&src))?;
    let mut cfg = Command::new(src.join("scripts/config"));
    cfg.current_dir(&src).arg("--file").arg(".config");
    for opt in LTS_CONFIG {
        cfg.args(["--enable", opt]);
    }
    sh(&mut cfg)?;
    sh(Command::new("make").arg("olddefconfig").current_dir(&src))?;
    let config = std::fs::read_to_string(src.join(".config"))?;
    if let Err(missing) = config_ok(&config) {
        bail!(
            "the 6.12 config lost {} after olddefconfig",
            missing.join(", ")
        );
    }

    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    step(&format!(
        "building linux {version} with {jobs} jobs (about 20 min on 2 cores)"
    ));
    let started = Instant::now();
    sh(Command::new("make")
        .arg(format!("-j{jobs}"))
        .arg("bzImage")
        .current_dir(&src))?;
    let took = started.elapsed();
    let release = String::from_utf8(
        Command::new("make")
            .args(["-s", "kernelrelease"])
            .current_dir(&src)
            .output()?
            .stdout,
    )?
    .trim()
    .to_string();
    std::fs::copy(src.join("arch/x86/boot/bzImage"), dir.join("bzImage"))?;
    std::fs::write(dir.join("config"), &config)?;
    std::fs::write(dir.join("release"), &release)?;
    std::fs::write(dir.join("build-time"), format!("{} s\n", took.as_secs()))?;
    step(&format!(
        "built {release} in {:.1} min",
        took.as_secs_f64() / 60.0
    ));
    install_config(&release, &dir.join("config"))?;
    Ok(lts_kernel(version))
}

fn sh(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{:?} failed ({status})", cmd);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_generic_amd64_kernels_newest_first() {
        let names: Vec<String> = [
            "linux-binary-7.2.12+deb13-amd64",
            "linux-binary-7.3.4+deb13-amd64",
            "linux-binary-7.3.4+deb13-cloud-amd64",
            "linux-binary-7.3.4+deb13-rt-amd64",
            "linux-binary-7.2.9+deb13-amd64",
            "linux-binary-7.10.1+deb13-amd64",
            "linux-binary-amd64",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            kernel_versions(&names),
            ["7.10.1+deb13", "7.3.4+deb13", "7.2.12+deb13", "7.2.9+deb13"]
        );
    }

    #[test]
    fn config_check_names_what_is_missing() {
        let good = REQUIRED_CONFIG.join("\n");
        assert_eq!(config_ok(&good), Ok(()));
        let bad = good.replace(
            "CONFIG_SCHED_CLASS_EXT=y",
            "# CONFIG_SCHED_CLASS_EXT is not set",
        );
        assert_eq!(config_ok(&bad), Err(vec!["CONFIG_SCHED_CLASS_EXT=y"]));
    }
}
