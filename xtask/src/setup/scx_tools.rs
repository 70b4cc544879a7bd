// SPDX-License-Identifier: GPL-2.0-only
//! The sched_ext schedulers the benches measure scx_linger against:
//! scx_layered (the existing sched_ext way to give guests a low-priority
//! layer) and scx_bpfland (a general-purpose sched_ext scheduler, the
//! overhead reference). Built from crates.io at one pinned version, the
//! one whose scx_utils scx_linger itself uses, and cached outside the tree
//! so that a fresh clone reuses them.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::paths::cache_dir;
use crate::progress::step;

/// The sched-ext/scx release both schedulers are pinned to.
pub const SCX_VERSION: &str = "1.1.4";

pub struct ScxTools {
    pub layered: PathBuf,
    pub bpfland: PathBuf,
}

/// Build whichever of the pinned schedulers is missing; return both paths.
pub fn ensure() -> Result<ScxTools> {
    let root = cache_dir().join("scx-tools");
    let installed = std::fs::read_to_string(root.join(".crates.toml")).unwrap_or_default();
    for name in ["scx_layered", "scx_bpfland"] {
        if installed.contains(&format!("\"{name} {SCX_VERSION} "))
            && root.join("bin").join(name).exists()
        {
            continue;
        }
        step(&format!(
            "building {name} {SCX_VERSION} from crates.io (once; cached in {})",
            root.display()
        ));
        let status = Command::new(env!("CARGO"))
            .args(["install", "--locked", "--root"])
            .arg(&root)
            .arg(format!("{name}@{SCX_VERSION}"))
            .env("CARGO_TARGET_DIR", cache_dir().join("scx-tools-build"))
            .env("BPF_CLANG", "clang-19")
            .env("LIBCLANG_PATH", "/usr/lib/llvm-19/lib")
            .status()
            .context("running cargo install")?;
        if !status.success() {
            bail!("building {name} {SCX_VERSION} failed ({status}); see the cargo output above");
        }
    }
    Ok(ScxTools {
        layered: root.join("bin/scx_layered"),
        bpfland: root.join("bin/scx_bpfland"),
    })
}
