// SPDX-License-Identifier: GPL-2.0-only
//! The BPF scheduler's life in the kernel: open the skeleton, write the
//! tunables, load, attach, watch for the kernel ejecting it, detach.
//!
//! Attaching creates a struct_ops link owned by this process. If the agent
//! dies for any reason, even SIGKILL, the kernel closes the link and every
//! task falls back to the default scheduler: nothing the agent does or fails
//! to do can strand a task.

use std::mem::MaybeUninit;
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::{Link, MapCore, OpenObject};
use log::info;
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};

use crate::bpf_intf;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::stats::Counters;

/// Settings the BPF side reads at load time.
#[derive(Debug, Clone)]
pub struct Tunables {
    pub slice: Duration,
    pub libbpf_verbose: bool,
}

pub struct Scheduler<'obj> {
    skel: BpfSkel<'obj>,
    link: Option<Link>,
}

/// How a run ended.
pub enum Exit {
    /// We asked the kernel to unload us (SIGINT/SIGTERM).
    Requested,
    /// The kernel or the BPF program ended it; the reason was reported.
    Kernel,
}

impl<'obj> Scheduler<'obj> {
    pub fn load(storage: &'obj mut MaybeUninit<OpenObject>, t: &Tunables) -> Result<Self> {
        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(t.libbpf_verbose);
        let mut open = scx_ops_open!(builder, storage, linger_ops, None)?;

        let rodata = open
            .maps
            .rodata_data
            .as_mut()
            .context("BPF object has no .rodata")?;
        let slice_ns = t.slice.as_nanos() as u64;
        rodata.slice_ns = slice_ns;
        rodata.vtime_lag_ns = slice_ns;

        let mut skel = scx_ops_load!(open, linger_ops, uei)?;
        let link = scx_ops_attach!(skel, linger_ops)?;
        info!("scx_linger attached (slice {} us)", t.slice.as_micros());
        Ok(Self {
            skel,
            link: Some(link),
        })
    }

    /// True once the kernel has disabled the scheduler (error, stall, sysrq).
    pub fn exited(&self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// Sum of the per-CPU event counters.
    pub fn counters(&self) -> Result<Counters> {
        let key = 0u32.to_ne_bytes();
        let per_cpu = self
            .skel
            .maps
            .stats
            .lookup_percpu(&key, libbpf_rs::MapFlags::ANY)
            .context("reading the stats map")?
            .unwrap_or_default();
        Ok(Counters::sum_per_cpu(&per_cpu))
    }

    /// Detach (if still attached) and report the kernel's exit reason.
    pub fn shutdown(mut self, requested: bool) -> Result<Exit> {
        // Dropping the link unregisters the scheduler; the kernel then
        // records why it exited (SCX_EXIT_UNREG for a requested stop).
        self.link.take();
        uei_report!(&self.skel, uei).context("scx_linger was stopped by the kernel")?;
        Ok(if requested {
            Exit::Requested
        } else {
            Exit::Kernel
        })
    }
}

/// Number of counters the BPF side keeps per CPU.
pub const NR_STATS: usize = bpf_intf::linger_stat_LINGER_NR_STATS as usize;
