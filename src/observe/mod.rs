// SPDX-License-Identifier: GPL-2.0-only
//! The figures: what the agent reads from the BPF side and the kernel
//! each second, and every way an operator sees them.
//!
//! - schema.rs: the one reading (Snapshot) every view renders;
//! - histogram.rs: the log2 bucket rule of bpf/intf.h, read back;
//! - counters.rs: the per-CPU event counters;
//! - sampler.rs and gang_figures.rs: BPF maps to a Snapshot;
//! - server.rs (the stats socket and its client), metrics.rs
//!   (Prometheus), scx_stats.rs (the scx tools' protocol), top/ (the
//!   full-screen view), log.rs (the agent's log, kept for the views).
//!
//! Owns how a figure is counted and shown; decides nothing about
//! scheduling. Imports labels/, gangs/, bpf/ and node.rs; never
//! lifecycle/.
pub mod counters;
pub mod gang_figures;
pub mod histogram;
pub mod log;
pub mod metrics;
pub mod sampler;
pub mod schema;
pub mod scx_stats;
pub mod server;
pub mod top;
