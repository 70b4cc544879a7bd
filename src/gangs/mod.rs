// SPDX-License-Identifier: GPL-2.0-only
//! Gangs, the agent's half: which labelled cgroups are gangs, their
//! stable numbers, their sizes, and the slot table they are packed into
//! (table.rs, pure policy tested without a kernel), kept in step with the
//! BPF side by rotation.rs. The BPF half (bpf/gang*.bpf.c) admits,
//! switches and places members at run time.
//!
//! Owns the packing decision. Imports labels/ (a gang's class and slot),
//! bpf/ and node.rs; never observe/ or lifecycle/.
pub mod rotation;
pub mod table;
