// SPDX-License-Identifier: GPL-2.0-only
//! Integration tests that load the real scx_linger on a kernel with
//! sched_ext. They run inside the QEMU guest (`cargo xtask test`), one at a
//! time (`--test-threads=1`: only one scheduler can be loaded), and assert
//! on what the kernel reports.
mod bpf_maps;
mod classes;
mod common;
mod faults;
mod gang;
mod kernel_progress;
mod lifecycle;
mod limits;
mod load;
mod machinery;
mod many_cpus;
mod mpi;
mod node_shaped;
mod package;
mod preflight;
mod rows;
mod slurm;
mod slurm_hostile;
mod soak;
mod stats;
mod trace;
mod two_nodes;
mod unit;
mod weights;
