// SPDX-License-Identifier: GPL-2.0-only
//! The Slurm SPANK plugin (deploy/slurm/linger_spank.c), built with the
//! Makefile a site builds it with (deploy/slurm/Makefile, shipped in the
//! package), against this machine's libslurm-dev, into target/slurm/,
//! where the guest's Slurm tests load it.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::paths::project_root;

/// The C compiler: $CC if set, else the clang the BPF build uses.
fn compiler() -> String {
    std::env::var("CC")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| std::env::var("BPF_CLANG").ok().filter(|c| !c.is_empty()))
        .unwrap_or_else(|| "clang-19".into())
}

/// Build the plugin if its source is newer; returns the .so's path.
pub fn build() -> Result<PathBuf> {
    let root = project_root();
    let src = root.join("deploy/slurm/linger_spank.c");
    let makefile = root.join("deploy/slurm/Makefile");
    let out = root.join("target/slurm/linger_spank.so");
    let newer = |a: &PathBuf, b: &PathBuf| -> bool {
        let m = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        matches!((m(a), m(b)), (Some(x), Some(y)) if x <= y)
    };
    if newer(&src, &out) && newer(&makefile, &out) {
        return Ok(out);
    }
    let cc = compiler();
    let status = Command::new("make")
        .args(["-s", "-C"])
        .arg(root.join("deploy/slurm"))
        .arg(format!("OUT={}", out.parent().unwrap().display()))
        .arg(format!("CC={cc}"))
        .status()
        .context("running make (cargo xtask deps installs it)")?;
    if !status.success() {
        bail!("building the SPANK plugin with deploy/slurm/Makefile ({cc}) failed ({status})");
    }
    Ok(out)
}
