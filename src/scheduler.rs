// SPDX-License-Identifier: GPL-2.0-only
//! The BPF scheduler's life in the kernel: open the skeleton, write the
//! tunables, load, attach, keep its label map in step with the cgroups,
//! watch for the kernel ejecting it, detach.
//!
//! Attaching creates a struct_ops link owned by this process. If the agent
//! dies for any reason, even SIGKILL, the kernel closes the link and every
//! task falls back to the default scheduler: nothing the agent does or fails
//! to do can strand a task. While the agent is merely slow or stuck, the
//! BPF side keeps scheduling with the last labels it was given.

use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};
use log::info;
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};

use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::class::Class;
use crate::stats::Counters;

/// Settings the BPF side reads at load time (see bpf/main.bpf.c).
#[derive(Debug, Clone)]
pub struct Tunables {
    pub primary_slice: Duration,
    pub guest_slice: Duration,
    pub guard_interval: Duration,
    pub guard_slice: Duration,
    pub default_class: Class,
    pub libbpf_verbose: bool,
}

pub struct Scheduler<'obj> {
    skel: BpfSkel<'obj>,
    link: Option<Link>,
    /// What the cgrp_class map holds now (cgroup id -> class).
    labels: BTreeMap<u64, Class>,
}

/// How a run ended.
pub enum Exit {
    /// We asked the kernel to unload us (SIGINT/SIGTERM).
    Requested,
    /// The kernel or the BPF program ended it; the reason was reported.
    Kernel,
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl<'obj> Scheduler<'obj> {
    pub fn load(storage: &'obj mut MaybeUninit<OpenObject>, t: &Tunables) -> Result<Self> {
        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(t.libbpf_verbose);
        let mut open = scx_ops_open!(builder, storage, linger_ops, None)?;

        // 6.12 warns about schedulers that ignore cpu.weight unless they
        // say they honour it; newer kernels dropped the flag.
        if let Ok(flag) = scx_utils::compat::read_enum("scx_ops_flags", "SCX_OPS_HAS_CGROUP_WEIGHT")
        {
            open.struct_ops.linger_ops_mut().flags |= flag;
        }
        let watchdog_ms = open.struct_ops.linger_ops_mut().timeout_ms;
        let rodata = open
            .maps
            .rodata_data
            .as_mut()
            .context("BPF object has no .rodata")?;
        rodata.primary_slice_ns = ns(t.primary_slice);
        rodata.guest_slice_ns = ns(t.guest_slice);
        rodata.guard_interval_ns = ns(t.guard_interval);
        rodata.guard_slice_ns = ns(t.guard_slice);
        rodata.watchdog_ns = u64::from(watchdog_ms) * 1_000_000;
        rodata.default_class = t.default_class.bpf_value();

        let mut skel = scx_ops_load!(open, linger_ops, uei)?;
        let link = scx_ops_attach!(skel, linger_ops)?;
        info!(
            "attached: primary slice {} us, guest slice {} us, guard {} us every {} ms, unlabelled cgroups {}",
            t.primary_slice.as_micros(),
            t.guest_slice.as_micros(),
            t.guard_slice.as_micros(),
            t.guard_interval.as_millis(),
            t.default_class
        );
        Ok(Self {
            skel,
            link: Some(link),
            labels: BTreeMap::new(),
        })
    }

    /// True once the kernel has disabled the scheduler (error, stall, sysrq).
    pub fn exited(&self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// Make the BPF label map equal `want`, then bump the generation so
    /// every task re-derives its class at its next scheduling event.
    /// Returns how many entries changed. A failed update leaves the old
    /// generation in place: BPF keeps using what it had.
    pub fn sync_labels(&mut self, want: &BTreeMap<u64, Class>) -> Result<usize> {
        let map = &self.skel.maps.cgrp_class;
        let mut changed = 0;
        for (id, class) in want {
            if self.labels.get(id) != Some(class) {
                map.update(
                    &id.to_ne_bytes(),
                    &class.bpf_value().to_ne_bytes(),
                    MapFlags::ANY,
                )
                .with_context(|| format!("writing the label of cgroup {id}"))?;
                changed += 1;
            }
        }
        let gone: Vec<u64> = self
            .labels
            .keys()
            .filter(|id| !want.contains_key(id))
            .copied()
            .collect();
        for id in &gone {
            // Already gone is fine: the entry is what we wanted removed.
            let _ = map.delete(&id.to_ne_bytes());
            changed += 1;
        }
        self.labels = want.clone();
        if changed > 0 {
            let bss = self
                .skel
                .maps
                .bss_data
                .as_mut()
                .context("BPF object has no .bss")?;
            // SAFETY: label_gen lives in the mmapped .bss shared with BPF;
            // a volatile write makes it visible to the BPF side as is.
            unsafe {
                let p = std::ptr::addr_of_mut!(bss.label_gen);
                std::ptr::write_volatile(p, std::ptr::read_volatile(p).wrapping_add(1));
            }
        }
        Ok(changed)
    }

    /// Sum of the per-CPU event counters.
    pub fn counters(&self) -> Result<Counters> {
        let key = 0u32.to_ne_bytes();
        let per_cpu = self
            .skel
            .maps
            .stats
            .lookup_percpu(&key, MapFlags::ANY)
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
