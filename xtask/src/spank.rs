// SPDX-License-Identifier: GPL-2.0-only
//! The Slurm SPANK plugin (deploy/slurm/linger_spank.c), built against
//! libslurm-dev's spank.h into target/slurm/, where the guest's Slurm
//! tests load it (and a package would ship it from).

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
    let out = root.join("target/slurm/linger_spank.so");
    let newer = |a: &PathBuf, b: &PathBuf| -> bool {
        let m = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        matches!((m(a), m(b)), (Some(x), Some(y)) if x <= y)
    };
    if newer(&src, &out) {
        return Ok(out);
    }
    if !std::path::Path::new("/usr/include/slurm/spank.h").exists() {
        bail!("/usr/include/slurm/spank.h is missing: install libslurm-dev (`cargo xtask deps`)");
    }
    std::fs::create_dir_all(out.parent().unwrap())?;
    let cc = compiler();
    let status = Command::new(&cc)
        .args([
            "-Wall", "-Wextra", "-Werror", "-O2", "-shared", "-fPIC", "-o",
        ])
        .arg(&out)
        .arg(&src)
        .status()
        .with_context(|| format!("running {cc} (set CC to a C compiler)"))?;
    if !status.success() {
        bail!("building the SPANK plugin with {cc} failed ({status})");
    }
    Ok(out)
}
