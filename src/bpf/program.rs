// SPDX-License-Identifier: GPL-2.0-only
//! The BPF scheduler's life in the kernel: open the skeleton, write the
//! tunables, load, fill its label map, attach, keep the labels in step with the cgroups,
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
use log::{info, warn};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited};

use super::intf;
use super::skel::{BpfSkel, BpfSkelBuilder};
use super::topology;

/// Event counters the BPF side keeps per CPU (enum linger_stat).
pub const NR_STATS: usize = intf::linger_stat_LINGER_NR_STATS as usize;
/// Gangs the slot table holds (LINGER_MAX_GANGS).
const MAX_GANGS: usize = intf::linger_consts_LINGER_MAX_GANGS as usize;

// SAFETY (all seven): bindgen's repr(C) structs of bpf/intf.h, made of
// integers only, with every gap padded by an explicit field there, so any
// bytes are a valid value and none is padding.
unsafe impl bytemuck::Zeroable for intf::linger_label {}
unsafe impl bytemuck::Pod for intf::linger_label {}
unsafe impl bytemuck::Zeroable for intf::linger_gang_table {}
unsafe impl bytemuck::Pod for intf::linger_gang_table {}
unsafe impl bytemuck::Zeroable for intf::linger_gang_stats {}
unsafe impl bytemuck::Pod for intf::linger_gang_stats {}
unsafe impl bytemuck::Zeroable for intf::linger_cpu_acct {}
unsafe impl bytemuck::Pod for intf::linger_cpu_acct {}
unsafe impl bytemuck::Zeroable for intf::linger_job_acct {}
unsafe impl bytemuck::Pod for intf::linger_job_acct {}
unsafe impl bytemuck::Zeroable for intf::linger_cpu_topo {}
unsafe impl bytemuck::Pod for intf::linger_cpu_topo {}
unsafe impl bytemuck::Zeroable for intf::linger_bw {}
unsafe impl bytemuck::Pod for intf::linger_bw {}

/// A map value's bytes as the struct intf.h defines; a value of another
/// size (never written by this BPF object) reads as zero.
fn read_value<T: bytemuck::Pod>(raw: &[u8]) -> T {
    bytemuck::try_pod_read_unaligned(raw).unwrap_or_else(|_| T::zeroed())
}

/// A cgrp_class entry: what the agent says one cgroup is.
pub type LabelEntry = intf::linger_label;

fn same_label(a: &LabelEntry, b: &LabelEntry) -> bool {
    bytemuck::bytes_of(a) == bytemuck::bytes_of(b)
}

/// Volatile read-modify-write of a u64/u32 in the mmapped .bss.
macro_rules! bss_update {
    ($skel:expr, $field:ident, |$v:ident| $e:expr) => {{
        let bss = $skel
            .maps
            .bss_data
            .as_mut()
            .context("BPF object has no .bss")?;
        // SAFETY: the field lives in the .bss map shared with BPF; volatile
        // accesses make each write visible to the BPF side as one store.
        unsafe {
            let p = std::ptr::addr_of_mut!(bss.$field);
            let $v = std::ptr::read_volatile(p);
            std::ptr::write_volatile(p, $e);
        }
    }};
}

/// Settings the BPF side reads at load time (see bpf/main.bpf.c).
#[derive(Debug, Clone)]
pub struct Tunables {
    pub primary_slice: Duration,
    pub guest_slice: Duration,
    pub guard_interval: Duration,
    pub guard_slice: Duration,
    pub relief_period: Duration,
    pub relief_slice: Duration,
    /// The node's machinery's budget per CPU beside gangs
    /// (bpf/machinery.bpf.c).
    pub machinery_period: Duration,
    pub machinery_slice: Duration,
    /// Wake-up preemption among primaries (bpf/wakeup.bpf.c).
    pub wake_preempt: bool,
    /// sched_ext's partial mode: only SCHED_EXT tasks are ours.
    pub partial: bool,
    /// Guests beside primaries on SMT cores (bpf/smt.bpf.c).
    pub smt_guests: intf::linger_smt_guests,
    /// A queue per class per LLC (bpf/llc.bpf.c), else one for the node.
    pub llc_queues: bool,
    /// Per-class and per-job accounting (bpf/account.bpf.c).
    pub accounting: bool,
    /// Testing only: make the BPF side fail this long after it starts.
    pub debug_fail_after: Option<Duration>,
    /// ops.exit_dump_len: 0 keeps the kernel's default.
    pub exit_dump_len: u32,
    pub libbpf_verbose: bool,
}

pub struct Scheduler<'obj> {
    skel: BpfSkel<'obj>,
    link: Option<Link>,
    /// What the cgrp_class map holds now (cgroup id -> label).
    labels: BTreeMap<u64, LabelEntry>,
    /// The kernel hands cgroups' cpu.max to the scheduler itself
    /// (ops.cgroup_set_bandwidth, 6.17 and later); else the agent does.
    limits_from_kernel: bool,
    /// What the agent has written to the cgrp_bws map (cgroup id -> limit).
    limits: BTreeMap<u64, CpuLimit>,
}

/// One job's accounting (bpf/account.bpf.c): its CPUs' copies summed, and
/// how many of its threads are on CPUs now.
pub struct JobAccount {
    /// The job's cgroup id.
    pub id: u64,
    pub acct: intf::linger_job_acct,
    pub on_cpus: u64,
}

/// Threads on CPUs per job, from what each CPU says it runs
/// (`linger_cpu_acct.running_job`; 0: none of ours).
pub fn jobs_on_cpus(running: impl Iterator<Item = u64>) -> BTreeMap<u64, u64> {
    let mut on = BTreeMap::new();
    for job in running.filter(|&j| j != 0) {
        *on.entry(job).or_insert(0) += 1;
    }
    on
}

/// One job's figures from its CPUs' copies (bpf/account.bpf.c): every
/// field is a sum, the runnable count too (a thread counted on one CPU and
/// uncounted on another leaves +1 in one copy and -1 in the other).
pub fn sum_job_copies(
    copies: impl Iterator<Item = intf::linger_job_acct>,
) -> intf::linger_job_acct {
    let mut total: intf::linger_job_acct = bytemuck::Zeroable::zeroed();
    for c in copies {
        total.cpu_ns = total.cpu_ns.wrapping_add(c.cpu_ns);
        total.nr_runnable = total.nr_runnable.wrapping_add(c.nr_runnable);
        total.runs = total.runs.wrapping_add(c.runs);
        for (t, v) in total.delay_hist.iter_mut().zip(c.delay_hist) {
            *t = t.wrapping_add(v);
        }
    }
    total
}

/// A cgrp_bws entry: one cgroup's cpu.max (bpf/bandwidth.bpf.c).
pub type CpuLimit = intf::linger_bw;

fn same_limit(a: &CpuLimit, b: &CpuLimit) -> bool {
    a.period_ns == b.period_ns && a.quota_ns == b.quota_ns
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// Does this kernel let any op re-enqueue a CPU's local DSQ
/// (`scx_bpf_reenqueue_local___v2`, 6.19; `scx_bpf_dsq_reenq`, 7.1)?
fn reenqueue_from_anywhere() -> bool {
    ["scx_bpf_dsq_reenq", "scx_bpf_reenqueue_local___v2"]
        .iter()
        .any(|k| scx_utils::compat::ksym_exists(k).unwrap_or(false))
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
        if t.partial {
            open.struct_ops.linger_ops_mut().flags |=
                scx_utils::compat::read_enum("scx_ops_flags", "SCX_OPS_SWITCH_PARTIAL")
                    .context("this kernel's sched_ext has no SCX_OPS_SWITCH_PARTIAL")?;
        }
        if t.exit_dump_len > 0 {
            open.struct_ops.linger_ops_mut().exit_dump_len = t.exit_dump_len;
        }
        // Kernels before 6.17 have no bandwidth op: the agent reads
        // cpu.max instead (sync_limits()). Left out here, so that the
        // loader has nothing to warn about.
        let limits_from_kernel =
            scx_utils::compat::struct_has_field("sched_ext_ops", "cgroup_set_bandwidth")
                .unwrap_or(false);
        if !limits_from_kernel {
            open.struct_ops.linger_ops_mut().cgroup_set_bandwidth = std::ptr::null_mut();
        }
        // A higher sched class taking a CPU: kernels that allow the
        // local DSQ's re-enqueue from any op (6.19 and later) deprecate
        // cpu_release/cpu_acquire, and stopping() does it there
        // (bpf/main.bpf.c). Older ones get the ops.
        if reenqueue_from_anywhere() {
            let ops = open.struct_ops.linger_ops_mut();
            ops.cpu_release = std::ptr::null_mut();
            ops.cpu_acquire = std::ptr::null_mut();
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
        rodata.relief_period_ns = ns(t.relief_period);
        rodata.relief_slice_ns = ns(t.relief_slice);
        rodata.machinery_period_ns = ns(t.machinery_period);
        rodata.machinery_slice_ns = ns(t.machinery_slice);
        rodata.wake_preempt = t.wake_preempt;
        rodata.watchdog_ns = u64::from(watchdog_ms) * 1_000_000;
        rodata.accounting = t.accounting;
        rodata.debug_fail_after_ns = t.debug_fail_after.map_or(0, ns);
        let places = topology::read().unwrap_or_default();
        let queues = topology::write_llcs(rodata, &places, t.llc_queues);
        rodata.smt_guests = topology::smt_policy(&places, t.smt_guests);

        let skel = scx_ops_load!(open, linger_ops, uei)?;
        topology::write_siblings(&skel, &places, queues, t.smt_guests);
        info!(
            "loaded{}: primary slice {} us (wake-up preemption {}), guest slice {} us, guard {} us every {} ms, gang relief {} us per {} us, machinery {} us per {} us a CPU",
            if t.partial {
                " in partial mode (SCHED_EXT tasks only)"
            } else {
                ""
            },
            t.primary_slice.as_micros(),
            if t.wake_preempt { "on" } else { "off" },
            t.guest_slice.as_micros(),
            t.guard_slice.as_micros(),
            t.guard_interval.as_millis(),
            t.relief_slice.as_micros(),
            t.relief_period.as_micros(),
            t.machinery_slice.as_micros(),
            t.machinery_period.as_micros(),
        );
        info!(
            "cpu.max limits enforced, as {}",
            if limits_from_kernel {
                "the kernel passes them"
            } else {
                "the agent reads them from cgroupfs"
            }
        );
        Ok(Self {
            skel,
            link: None,
            labels: BTreeMap::new(),
            limits_from_kernel,
            limits: BTreeMap::new(),
        })
    }

    /// Make the loaded scheduler the kernel's: from here on it schedules
    /// every task. Labels written before this apply from the first decision.
    pub fn attach(&mut self) -> Result<()> {
        self.link = Some(scx_ops_attach!(self.skel, linger_ops)?);
        info!("attached");
        Ok(())
    }

    /// True once the kernel has disabled the scheduler (error, stall, sysrq).
    pub fn exited(&self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// Make the BPF label map equal `want`, then bump the generation so
    /// every task re-derives its class at its next scheduling event.
    /// Returns how many entries changed. A failed update leaves the old
    /// generation in place: BPF keeps using what it had.
    pub fn sync_labels(&mut self, want: BTreeMap<u64, LabelEntry>) -> Result<usize> {
        let map = &self.skel.maps.cgrp_class;
        let mut changed = 0;
        for (id, label) in &want {
            if !self
                .labels
                .get(id)
                .is_some_and(|had| same_label(had, label))
            {
                map.update(&id.to_ne_bytes(), bytemuck::bytes_of(label), MapFlags::ANY)
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
        self.labels = want;
        if changed > 0 {
            bss_update!(self.skel, label_gen, |g| g.wrapping_add(1));
        }
        Ok(changed)
    }

    /// Make the cpu.max map equal `want` (cgroup id -> limit, from
    /// cgroupfs), where the kernel does not pass limits itself; then tell
    /// BPF how many there are and bump their generation, so that every
    /// task looks its limited cgroups up again. Returns how many entries
    /// changed. An entry is rewritten only when its limit changed: that
    /// starts its period afresh.
    pub fn sync_limits(&mut self, want: &BTreeMap<u64, CpuLimit>) -> Result<usize> {
        if self.limits_from_kernel {
            return Ok(0);
        }
        let map = &self.skel.maps.cgrp_bws;
        let mut changed = 0;
        for (id, limit) in want {
            if !self
                .limits
                .get(id)
                .is_some_and(|had| same_limit(had, limit))
            {
                map.update(&id.to_ne_bytes(), bytemuck::bytes_of(limit), MapFlags::ANY)
                    .with_context(|| format!("writing the cpu.max of cgroup {id}"))?;
                changed += 1;
            }
        }
        for id in self.limits.keys().filter(|id| !want.contains_key(id)) {
            // Already gone is fine: the entry is what we wanted removed.
            let _ = map.delete(&id.to_ne_bytes());
            changed += 1;
        }
        self.limits = want.clone();
        if changed > 0 {
            let nr = u32::try_from(want.len()).unwrap_or(u32::MAX);
            bss_update!(self.skel, bw_nr_limits, |_n| nr);
            bss_update!(self.skel, bw_gen, |g| g.wrapping_add(1));
        }
        Ok(changed)
    }

    /// Hand BPF a new gang table: write the slot it is not reading, then
    /// flip to it, so that its timer never reads a half-written table.
    pub fn set_gang_table(&mut self, table: &intf::linger_gang_table) -> Result<()> {
        let bss = self
            .skel
            .maps
            .bss_data
            .as_ref()
            .context("BPF object has no .bss")?;
        // SAFETY: a plain read of a u32 in the shared .bss.
        let cur = unsafe { std::ptr::read_volatile(std::ptr::addr_of!(bss.gang_table_idx)) } & 1;
        let next = cur ^ 1;
        self.skel
            .maps
            .gang_tables
            .update(
                &next.to_ne_bytes(),
                bytemuck::bytes_of(table),
                MapFlags::ANY,
            )
            .context("writing the gang table")?;
        bss_update!(self.skel, gang_table_idx, |_i| next);
        Ok(())
    }

    /// The counters of gang number `g` (see struct linger_gang_stats).
    pub fn gang_stat(&self, g: usize) -> Result<intf::linger_gang_stats> {
        let key = (g.min(MAX_GANGS - 1) as u32).to_ne_bytes();
        let raw = self
            .skel
            .maps
            .gang_stats
            .lookup(&key, MapFlags::ANY)
            .context("reading the gang stats map")?
            .unwrap_or_default();
        Ok(read_value(&raw))
    }

    /// Each CPU's LLC as the BPF side numbers them (rodata cpu_llc, which
    /// gang homes count in), by CPU; empty where it has one LLC or one
    /// queue for the node (then there are no homes).
    pub fn cpu_llcs(&self) -> Vec<u32> {
        let Some(ro) = self.skel.maps.rodata_data.as_ref() else {
            return Vec::new();
        };
        if ro.nr_llcs <= 1 {
            return Vec::new();
        }
        let nr_cpus = crate::node::online_cpus() as usize;
        ro.cpu_llc.iter().take(nr_cpus).copied().collect()
    }

    /// Whether the BPF side accounts per class and job.
    pub fn accounting(&self) -> bool {
        self.skel
            .maps
            .rodata_data
            .as_ref()
            .is_some_and(|r| r.accounting)
    }

    /// Each CPU's copy of the per-class accounting.
    fn cpu_accounts(&self) -> Result<Vec<intf::linger_cpu_acct>> {
        let per_cpu = self
            .skel
            .maps
            .cpu_accts
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .context("reading the cpu_accts map")?
            .unwrap_or_default();
        Ok(per_cpu.iter().map(|raw| read_value(raw)).collect())
    }

    /// Per-class accounting, summed over the CPUs.
    pub fn class_accounts(&self) -> Result<intf::linger_cpu_acct> {
        let mut total: intf::linger_cpu_acct = bytemuck::Zeroable::zeroed();
        for c in self.cpu_accounts()? {
            for a in 0..total.cpu_ns.len() {
                total.cpu_ns[a] += c.cpu_ns[a];
                total.runs[a] += c.runs[a];
                total.delay_ns[a] += c.delay_ns[a];
                for (t, v) in total.delay_hist[a].iter_mut().zip(c.delay_hist[a]) {
                    *t += v;
                }
            }
            total.backfill_ns += c.backfill_ns;
        }
        Ok(total)
    }

    /// Every job the BPF side has accounted, by cgroup id, its CPUs'
    /// copies summed, with its threads on CPUs now.
    pub fn job_accounts(&self) -> Vec<JobAccount> {
        let on_cpus = self
            .cpu_accounts()
            .map(|cpus| jobs_on_cpus(cpus.iter().map(|c| c.running_job)))
            .unwrap_or_default();
        let map = &self.skel.maps.job_accts;
        map.keys()
            .filter_map(|k| {
                let id = u64::from_ne_bytes(k.as_slice().try_into().ok()?);
                // A job deleted between keys() and here is simply skipped.
                let per_cpu = map.lookup_percpu(&k, MapFlags::ANY).ok()??;
                Some(JobAccount {
                    id,
                    acct: sum_job_copies(per_cpu.iter().map(|raw| read_value(raw))),
                    on_cpus: on_cpus.get(&id).copied().unwrap_or(0),
                })
            })
            .collect()
    }

    /// Drop the accounting of a job whose cgroup is gone.
    pub fn forget_job(&self, id: u64) {
        let _ = self.skel.maps.job_accts.delete(&id.to_ne_bytes());
    }

    /// The event counters, one array per CPU.
    pub fn counters_per_cpu(&self) -> Result<Vec<[u64; NR_STATS]>> {
        let key = 0u32.to_ne_bytes();
        let per_cpu = self
            .skel
            .maps
            .stats
            .lookup_percpu(&key, MapFlags::ANY)
            .context("reading the stats map")?
            .unwrap_or_default();
        Ok(per_cpu.iter().map(|raw| read_value(raw)).collect())
    }

    /// Detach (if still attached), report the kernel's exit reason, and
    /// return it: the restart policy (lifecycle/restart.rs) decides what
    /// follows.
    pub fn shutdown(mut self) -> Exit {
        // Dropping the link unregisters the scheduler; the kernel then
        // records why it exited (SCX_EXIT_UNREG for a requested stop).
        self.link.take();
        let uei = scx_utils::uei_read!(&self.skel, uei);
        // Prints "EXIT: ..." for an ordinary exit, returns it for an error.
        if let Err(e) = uei.report() {
            warn!("scx_linger was stopped by the kernel: {e:#}");
        }
        let (kind, why) = self
            .skel
            .maps
            .data_data
            .as_ref()
            .map_or((0, String::new()), |d| {
                // SAFETY: a plain read of an i32 in the shared .data.
                let kind = unsafe { std::ptr::read_volatile(std::ptr::addr_of!(d.uei.kind)) };
                let text = |b: &[std::ffi::c_char]| {
                    let bytes: Vec<u8> = b
                        .iter()
                        .take_while(|c| **c != 0)
                        .map(|c| *c as u8)
                        .collect();
                    String::from_utf8_lossy(&bytes).into_owned()
                };
                let (reason, msg) = (text(&d.uei.reason), text(&d.uei.msg));
                (
                    kind,
                    if msg.is_empty() {
                        reason
                    } else {
                        format!("{reason} ({msg})")
                    },
                )
            });
        Exit {
            kind,
            restart_requested: uei.should_restart(),
            why,
        }
    }
}

/// How the kernel ended a run: enum scx_exit_kind, whether it asked for a
/// restart (SCX_ECODE_ACT_RESTART), and its words for why.
pub struct Exit {
    pub kind: i32,
    pub restart_requested: bool,
    pub why: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(cpu_ns: u64, runnable: i64, bucket: usize) -> intf::linger_job_acct {
        let mut c: intf::linger_job_acct = bytemuck::Zeroable::zeroed();
        c.cpu_ns = cpu_ns;
        c.nr_runnable = runnable;
        c.runs = 1;
        c.delay_hist[bucket] = 1;
        c
    }

    #[test]
    fn a_jobs_copies_sum_to_its_figures_even_where_one_copy_is_negative() {
        // A thread counted runnable on CPU 0 and uncounted on CPU 1.
        let total = sum_job_copies([copy(5, 1, 0), copy(7, -1, 3)].into_iter());
        assert_eq!(total.cpu_ns, 12);
        assert_eq!(total.nr_runnable, 0);
        assert_eq!(total.runs, 2);
        assert_eq!((total.delay_hist[0], total.delay_hist[3]), (1, 1));
    }

    #[test]
    fn a_jobs_threads_on_cpus_are_the_cpus_that_say_they_run_it() {
        let on = jobs_on_cpus([7, 0, 7, 9].into_iter());
        assert_eq!(on.get(&7), Some(&2));
        assert_eq!(on.get(&9), Some(&1));
        assert_eq!(on.get(&0), None);
    }
}
