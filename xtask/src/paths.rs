// SPDX-License-Identifier: GPL-2.0-only
//! Where things live: the project tree, and the cache outside it.

use std::path::PathBuf;

/// The workspace root (the directory holding the top Cargo.toml).
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// The download and build cache: `$SCX_LINGER_CACHE`, else
/// `$XDG_CACHE_HOME/scx-linger`, else `~/.cache/scx-linger`. Outside the git
/// tree so that a fresh clone on the same machine reuses it.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SCX_LINGER_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache")
        });
    base.join("scx-linger")
}

/// Per-run guest results (console log, command output, exit code), shared
/// read-write with the guest. Inside target/ so `cargo clean` removes it.
pub fn vm_results_root() -> PathBuf {
    project_root().join("target/vm")
}
