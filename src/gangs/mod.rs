// SPDX-License-Identifier: GPL-2.0-only
//! Gangs, the agent's half: which labelled cgroups are gangs, their
//! stable numbers, their cpusets, and the rotation of slots they lead
//! (table.rs, pure policy tested without a kernel), kept in step with the
//! BPF side by rotation.rs. The BPF half (bpf/gang*.bpf.c) sizes and
//! admits gangs from live counts, switches slots and places members.
//!
//! Owns the rotation's layout; never sizing or admission. Imports labels/ (a gang's class and slot),
//! bpf/ and node.rs; never observe/ or lifecycle/.
pub mod rotation;
pub mod table;
