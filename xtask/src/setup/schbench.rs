// SPDX-License-Identifier: GPL-2.0-only
//! schbench (Chris Mason's model of a web server's scheduling: message
//! threads hand requests to workers that sleep, compute under a per-CPU
//! lock and sleep again), which `cargo xtask bench --schbench` runs.
//! Debian does not package it, so it is built from its upstream source at
//! one pinned commit: the source archive is downloaded once into the
//! cache, built with the host's C compiler, and the binary kept beside it.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::paths::cache_dir;
use crate::progress::step;

/// The upstream commit the bench's figures were measured with.
pub const SCHBENCH_COMMIT: &str = "24e32b8ef67cbafb0761aed68747d90a291767ae";
const SOURCE_URL: &str = "https://github.com/masoncl/schbench/archive";

/// The schbench binary, built if missing.
pub fn ensure() -> Result<PathBuf> {
    let root = cache_dir().join("schbench");
    let short = &SCHBENCH_COMMIT[..12];
    let bin = root.join(format!("schbench-{short}"));
    if bin.exists() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let archive = root.join(format!("{SCHBENCH_COMMIT}.tar.gz"));
    if !archive.exists() {
        step(&format!(
            "downloading schbench {short} (once; cached in {})",
            root.display()
        ));
        let partial = archive.with_extension("part");
        let status = Command::new("curl")
            .args(["-fsSL", "--retry", "3", "-o"])
            .arg(&partial)
            .arg(format!("{SOURCE_URL}/{SCHBENCH_COMMIT}.tar.gz"))
            .status()
            .context("running curl")?;
        if !status.success() {
            bail!("downloading schbench failed ({status}): the bench needs {SOURCE_URL}/{SCHBENCH_COMMIT}.tar.gz, or that file placed in {}", root.display());
        }
        std::fs::rename(&partial, &archive)?;
    }
    step(&format!("building schbench {short}"));
    let src = root.join(format!("schbench-{SCHBENCH_COMMIT}"));
    let _ = std::fs::remove_dir_all(&src);
    let run = |cmd: &mut Command, what: &str| -> Result<()> {
        let status = cmd.status().with_context(|| format!("running {what}"))?;
        if !status.success() {
            bail!(
                "{what} failed ({status}) building schbench in {}",
                src.display()
            );
        }
        Ok(())
    };
    run(
        Command::new("tar")
            .arg("-xzf")
            .arg(&archive)
            .arg("-C")
            .arg(&root),
        "tar",
    )?;
    run(
        Command::new("make").arg("-C").arg(&src).arg("schbench"),
        "make",
    )?;
    std::fs::copy(src.join("schbench"), &bin)
        .with_context(|| format!("installing {}", bin.display()))?;
    let _ = std::fs::remove_dir_all(&src);
    Ok(bin)
}
