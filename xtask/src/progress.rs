// SPDX-License-Identifier: GPL-2.0-only
//! Step headers on stderr, so long runs show where they are.

/// Print a step header, so long runs show where they are.
pub fn step(msg: &str) {
    eprintln!("==> {msg}");
}
