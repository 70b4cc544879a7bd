// SPDX-License-Identifier: GPL-2.0-only
//! The libbpf-rs skeleton of `bpf/main.bpf.c`, generated at build time.
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
