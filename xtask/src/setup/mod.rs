// SPDX-License-Identifier: GPL-2.0-only
//! What the machine needs before anything runs: Debian packages through a
//! private apt state (apt.rs), the build and guest tools (deps.rs), the
//! guest kernels (kernel.rs), the scx schedulers the bench compares
//! against (scx_tools.rs) and schbench, which Debian does not package
//! (schbench.rs). Everything lands in the cache (paths.rs), so a
//! second run costs only what changed. Imports nothing but paths.rs and
//! the step printer.
pub mod apt;
pub mod deps;
pub mod kernel;
pub mod schbench;
pub mod scx_tools;
