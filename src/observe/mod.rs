// SPDX-License-Identifier: GPL-2.0-only
//! The figures: what the agent reads from the BPF side and the kernel
//! each second, and every way an operator sees them.
//!
//! - schema.rs: the one reading (Snapshot) every view renders;
//! - histogram.rs: the log2 bucket rule of bpf/intf.h, read back;
//! - counters.rs: the per-CPU event counters;
//! - sampler.rs and gang_figures.rs: BPF maps to a Snapshot;
//! - latest.rs: the latest reading, shared by the views;
//! - scx_stats.rs: the one stats socket (scx_stats, the scx tools'
//!   protocol), client.rs: `stats` and `top` as its clients, metrics.rs
//!   (Prometheus), top/ (the full-screen view), log.rs (the agent's log,
//!   kept for the views).
//!
//! Owns how a figure is counted and shown; decides nothing about
//! scheduling. Imports labels/, gangs/, bpf/ and node.rs; never
//! lifecycle/.
pub mod client;
pub mod counters;
pub mod gang_figures;
pub mod histogram;
pub mod latest;
pub mod log;
pub mod metrics;
pub mod sampler;
pub mod schema;
pub mod scx_stats;
pub mod top;
