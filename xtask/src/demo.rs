// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask demo`: the README's main job. Installs what is missing,
//! fetches the kernel, builds scx_linger, boots the guest and runs
//! `xtask/guest/demo.sh` there: the scheduler loads, demo jobs run under it,
//! its live counters and the jobs' CPU time scroll by, and it unloads.

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::paths::project_root;
use crate::progress::step;
use crate::setup::deps;
use crate::vm::{self, VmArgs};

#[derive(clap::Args)]
pub struct DemoArgs {
    /// How long the demo jobs run, in seconds.
    #[arg(long, default_value_t = 20)]
    pub seconds: u32,
    /// Virtual CPUs for the guest.
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// Kernel to boot (see `cargo xtask vm --help`).
    #[arg(long, default_value = "debian")]
    pub kernel: String,
}

pub fn run(args: &DemoArgs) -> Result<i32> {
    deps::run()?;
    step("building scx_linger (release)");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--bin", "scx_linger"])
        .current_dir(project_root())
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building scx_linger failed");
    }
    let agent = project_root().join("target/release/scx_linger");
    let script = project_root().join("xtask/guest/demo.sh");
    let outcome = vm::run(&VmArgs {
        kernel: args.kernel.clone(),
        topology: None,
        cpus: args.cpus,
        mem: "2G".into(),
        timeout: 600 + u64::from(args.seconds),
        icount: false,
        single_thread: false,
        qemu_plugin: None,
        peer: None,
        cmd: vec![
            "sh".into(),
            script.to_string_lossy().into_owned(),
            agent.to_string_lossy().into_owned(),
            args.seconds.to_string(),
        ],
    })?;
    step(&format!(
        "demo finished with {} in {:.0} s",
        outcome.exit_code,
        outcome.elapsed.as_secs_f64()
    ));
    Ok(outcome.exit_code)
}
