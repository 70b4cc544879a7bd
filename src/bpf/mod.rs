// SPDX-License-Identifier: GPL-2.0-only
//! The kernel side and its boundary: the BPF program (`bpf/*.bpf.c` at
//! the top of the tree), the one header it shares with the agent
//! (`bpf/intf.h`, turned into `intf` by bindgen), the skeleton libbpf-rs
//! generates for it, `program`, the loaded scheduler's handle, and
//! `topology`, where each CPU sits as the BPF side is told it.
//!
//! Owns: loading, attaching and detaching, every read and write of the
//! BPF maps and globals, and the byte layout of what crosses. It speaks
//! only in intf.h's types and plain numbers: what a label or a slot table
//! means is decided above it (labels/, gangs/), never here.
pub mod intf;
pub mod program;
#[cfg(test)]
pub mod pure;
pub mod skel;
pub mod topology;
