// SPDX-License-Identifier: GPL-2.0-only
//! Each preflight error, staged for real: an unprivileged user, a mount
//! namespace in which the kernel's sched_ext or BTF files are hidden, and a
//! scheduler already loaded. Each must be one line naming the problem and
//! the fix, with a non-zero exit and nothing loaded.

use std::process::{Command, Output};

use crate::common::*;

/// The single stderr line of a failed run.
fn one_line_error(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "scx_linger run succeeded unexpectedly"
    );
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "error is not one line: {err:?}");
    assert!(err.starts_with("scx_linger: "), "{err:?}");
    err
}

/// Run `scx_linger run` in a private mount namespace after `setup` (sh).
fn run_in_mount_ns(setup: &str) -> Output {
    agent_output(Command::new("unshare").args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        &format!("{setup} && exec {AGENT} run"),
    ]))
}

#[test]
fn unprivileged_user_is_told_to_use_root() {
    require_guest();
    let out = agent_output(Command::new("setpriv").args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        AGENT,
        "run",
    ]));
    let err = one_line_error(&out);
    assert!(
        err.contains("CAP_BPF") && err.contains("CAP_SYS_ADMIN"),
        "{err}"
    );
    assert!(err.contains("root"), "{err}");
    assert_eq!(state(), "disabled");
}

#[test]
fn kernel_without_sched_ext_names_the_config_option() {
    require_guest();
    let out = run_in_mount_ns("mount -t tmpfs none /sys/kernel");
    let err = one_line_error(&out);
    assert!(err.contains("CONFIG_SCHED_CLASS_EXT"), "{err}");
    assert_eq!(state(), "disabled");
}

#[test]
fn kernel_without_btf_is_named() {
    require_guest();
    let out = run_in_mount_ns("mount -t tmpfs none /sys/kernel/btf");
    let err = one_line_error(&out);
    assert!(
        err.contains("BTF") && err.contains("CONFIG_DEBUG_INFO_BTF"),
        "{err}"
    );
    assert_eq!(state(), "disabled");
}

#[test]
fn second_scheduler_names_the_one_already_loaded() {
    require_guest();
    let first = Agent::start(&[]);
    let loaded = ops_name().unwrap();
    let out = agent_output(Command::new(AGENT).arg("run"));
    let err = one_line_error(&out);
    assert!(err.contains("already loaded"), "{err}");
    assert!(err.contains(&loaded), "error does not name {loaded}: {err}");
    assert_eq!(state(), "enabled", "the first scheduler was disturbed");
    assert_eq!(ops_name(), Some(loaded));
    let (status, log) = first.stop();
    assert!(status.success(), "{log}");
}
