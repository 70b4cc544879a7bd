// SPDX-License-Identifier: GPL-2.0-only
//! apt with a private state directory.
//!
//! Each `PrivateApt` has its own sources, package lists and download cache
//! under our cache dir, so we can install from bookworm-backports or download
//! kernels from trixie-backports without adding those suites to the machine's
//! own apt sources.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

pub struct PrivateApt {
    dir: PathBuf,
}

impl PrivateApt {
    /// An apt state under `dir` that reads `suites` of `uri` (main only).
    pub fn new(dir: PathBuf, sources: &[(&str, &[&str])]) -> Result<Self> {
        for sub in ["etc", "lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("creating {}", dir.join(sub).display()))?;
        }
        let mut text = String::new();
        for (uri, suites) in sources {
            text.push_str(&format!(
                "Types: deb\nURIs: {uri}\nSuites: {}\nComponents: main\nSigned-By: {KEYRING}\n\n",
                suites.join(" ")
            ));
        }
        std::fs::write(dir.join("etc/private.sources"), text)?;
        Ok(Self { dir })
    }

    fn options(&self) -> Vec<String> {
        let d = self.dir.display();
        vec![
            "-o".into(),
            "Dir::Etc::SourceList=/dev/null".into(),
            "-o".into(),
            format!("Dir::Etc::SourceParts={d}/etc"),
            "-o".into(),
            format!("Dir::State::Lists={d}/lists"),
            "-o".into(),
            format!("Dir::Cache={d}/cache"),
            "-o".into(),
            "APT::Architecture=amd64".into(),
            // We run as root and write into our own cache dir, which the
            // _apt sandbox user may not be able to reach.
            "-o".into(),
            "APT::Sandbox::User=root".into(),
        ]
    }

    /// Refresh the package lists unless they are younger than `max_age`.
    pub fn update(&self, max_age: Duration) -> Result<()> {
        let stamp = self.dir.join("lists/.updated");
        let fresh = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age < max_age);
        if fresh {
            return Ok(());
        }
        self.apt("apt-get", &["update", "-qq"], None)?;
        std::fs::write(stamp, b"")?;
        Ok(())
    }

    /// Names of packages in the lists that start with `prefix`.
    pub fn pkgnames(&self, prefix: &str) -> Result<Vec<String>> {
        let out = self.output("apt-cache", &["pkgnames", prefix])?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// Install packages, preferring `target_release` where it has them. A
    /// package named `pkg/release` is taken from that release, older than
    /// what is installed if need be.
    pub fn install(&self, pkgs: &[String], target_release: Option<&str>) -> Result<()> {
        let mut args: Vec<&str> = vec![
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "--allow-downgrades",
        ];
        if let Some(t) = target_release {
            args.extend(["-t", t]);
        }
        args.extend(pkgs.iter().map(String::as_str));
        self.apt("apt-get", &args, None)
    }

    /// Download packages' .deb files into `dest`.
    pub fn download(&self, pkgs: &[&str], dest: &Path) -> Result<()> {
        std::fs::create_dir_all(dest)?;
        let mut args = vec!["download", "-q"];
        args.extend(pkgs);
        self.apt("apt-get", &args, Some(dest))
    }

    fn apt(&self, tool: &str, args: &[&str], cwd: Option<&Path>) -> Result<()> {
        let mut cmd = Command::new(tool);
        cmd.args(self.options()).args(args);
        cmd.env("DEBIAN_FRONTEND", "noninteractive");
        if let Some(d) = cwd {
            cmd.current_dir(d);
        }
        let status = cmd
            .status()
            .with_context(|| format!("running {tool} (is this a Debian machine?)"))?;
        if !status.success() {
            bail!("{tool} {} failed ({status})", args.join(" "));
        }
        Ok(())
    }

    fn output(&self, tool: &str, args: &[&str]) -> Result<String> {
        let out = Command::new(tool)
            .args(self.options())
            .args(args)
            .output()
            .with_context(|| format!("running {tool}"))?;
        if !out.status.success() {
            bail!(
                "{tool} {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// True if dpkg reports `pkg` as installed.
pub fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}
