// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench --profile`: where a primary's wake-up goes, counted
//! in guest kernel instructions (bench/profile.sh, with the QEMU plugin
//! bench/profile/insn_profile.c). Under icount an instruction is 8 ns of
//! guest time, so the count per wake-up is the scheduler's cost in the
//! same units as cyclictest's latency, and the per-function split shows
//! what sched_ext, scx_linger's BPF and EEVDF each spend. bpf_stats (the
//! latency bench's per-op table) times only the BPF programs; this sees
//! the sched_ext core and the helpers too.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::common::{run_script_with, save_report, script_header};
use super::latency::Hist;
use crate::paths::project_root;
use crate::progress::step;

/// The windows bench/profile.sh opens: (case, what it is). The first is
/// the baseline every ratio is against.
const CASES: [(&str, &str); 6] = [
    ("eevdf", "duty primaries, EEVDF (baseline)"),
    ("eevdf_guests", "duty primaries + SCHED_IDLE guests, EEVDF"),
    ("linger", "duty primaries, scx_linger"),
    ("linger_guests", "duty primaries + guests, scx_linger"),
    (
        "linger_noacct",
        "duty primaries, scx_linger `--no-accounting`",
    ),
    ("bpfland", "duty primaries, scx_bpfland 1.1.4"),
];

/// The kallsyms that names each window's BPF programs (taken while its
/// scheduler was loaded; EEVDF's windows run none).
fn kallsyms_of(case: &str) -> &'static str {
    match case {
        "bpfland" => "kallsyms.bpfland",
        "linger_noacct" => "kallsyms.noacct",
        _ => "kallsyms",
    }
}

/// How many of the functions that run only under sched_ext to list.
const TOP: usize = 30;

/// Build the plugin into target/bench/ (the host's C compiler: QEMU loads
/// it into its own process).
fn build_plugin() -> Result<std::path::PathBuf> {
    let root = project_root();
    let out_dir = root.join("target/bench");
    std::fs::create_dir_all(&out_dir)?;
    let so = out_dir.join("insn_profile.so");
    let status = Command::new("cc")
        .args([
            "-O2",
            "-Wall",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-o",
        ])
        .arg(&so)
        .arg(root.join("bench/profile/insn_profile.c"))
        .arg("-lpthread")
        .status()
        .context("running cc for the QEMU profile plugin")?;
    if !status.success() {
        bail!("bench/profile/insn_profile.c did not build ({status})");
    }
    Ok(so)
}

/// The guest's symbols, sorted by address, to name a block's function.
struct Symbols(Vec<(u64, String)>);

impl Symbols {
    fn parse(kallsyms: &str) -> Self {
        let mut v: Vec<(u64, String)> = kallsyms
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let name = it.nth(1)?;
                (addr != 0).then(|| (addr, name.to_string()))
            })
            .collect();
        v.sort();
        Symbols(v)
    }

    fn name(&self, addr: u64) -> &str {
        match self.0.partition_point(|(a, _)| *a <= addr) {
            0 => "?",
            i => &self.0[i - 1].1,
        }
    }
}

/// Instructions per function in one window, from the plugin's
/// "vaddr insns runs" lines.
fn per_function(counts: &str, syms: &Symbols) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for line in counts.lines() {
        let mut it = line.split_whitespace();
        let (Some(va), Some(n), Some(runs)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let (Ok(va), Ok(n), Ok(runs)) = (
            u64::from_str_radix(va, 16),
            n.parse::<u64>(),
            runs.parse::<u64>(),
        ) else {
            continue;
        };
        *out.entry(syms.name(va).to_string()).or_default() += n * runs;
    }
    out
}

/// One window: its latency histogram and instructions per function.
struct Window {
    hist: Hist,
    funcs: HashMap<String, u64>,
}

impl Window {
    fn wakeups(&self) -> f64 {
        self.hist.count().max(1) as f64
    }

    fn per_wakeup(&self, f: &str) -> f64 {
        self.funcs.get(f).copied().unwrap_or(0) as f64 / self.wakeups()
    }

    fn total_per_wakeup(&self) -> f64 {
        self.funcs.values().sum::<u64>() as f64 / self.wakeups()
    }
}

fn us(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| format!("{v} us"))
}

fn report(header: &str, windows: &BTreeMap<&str, Window>) -> String {
    let mut out = format!("## Where a primary's wake-up goes: guest kernel instructions per wake-up, 1 vCPU, icount\n\n{header}\n\n");
    out.push_str("Under `-icount shift=3` one guest instruction is 8 ns of guest time. Counts are the guest kernel's (user code is the workload's), over whole windows, divided by cyclictest's wake-ups: they include the duty primaries' own switches and timer ticks, alike in every case.\n\n");
    out.push_str("| case | wake-ups | p50 | p99 | max | kernel instructions per wake-up | vs baseline |\n|---|---|---|---|---|---|---|\n");
    let base = windows.get(CASES[0].0).map(Window::total_per_wakeup);
    for (case, what) in CASES {
        let Some(w) = windows.get(case) else {
            out.push_str(&format!("| {what} | (no run) | | | | | |\n"));
            continue;
        };
        let t = w.total_per_wakeup();
        out.push_str(&format!(
            "| {what} | {} | {} | {} | {} | {:.0} | {} |\n",
            w.hist.count(),
            us(w.hist.quantile(0.5)),
            us(w.hist.quantile(0.99)),
            us(w.hist.max()),
            t,
            base.map_or("-".into(), |b| format!(
                "{:+.0} ({:.2}x)",
                t - b,
                t / b.max(1.0)
            ))
        ));
    }
    let (Some(eevdf), Some(linger), Some(guests), Some(noacct), Some(bpfland)) = (
        windows.get("eevdf"),
        windows.get("linger"),
        windows.get("linger_guests"),
        windows.get("linger_noacct"),
        windows.get("bpfland"),
    ) else {
        return out;
    };
    // What runs only under sched_ext: nothing of it ran under EEVDF.
    let mut only: Vec<&String> = linger
        .funcs
        .keys()
        .chain(guests.funcs.keys())
        .chain(noacct.funcs.keys())
        .chain(bpfland.funcs.keys())
        .filter(|f| eevdf.per_wakeup(f) == 0.0)
        .collect();
    only.sort();
    only.dedup();
    only.sort_by(|a, b| guests.per_wakeup(b).total_cmp(&guests.per_wakeup(a)));
    let sum = |w: &Window, pred: &dyn Fn(&str) -> bool| -> f64 {
        only.iter()
            .filter(|f| pred(f))
            .map(|f| w.per_wakeup(f))
            .sum()
    };
    let is_prog = |f: &str| f.starts_with("bpf_prog_");
    out.push_str(&format!(
        "\n### What runs only under sched_ext, per wake-up\n\nAll of it: {:.0} instructions without guests, {:.0} beside guests; of which scx_linger's own BPF programs (`bpf_prog_*`, one row per BPF function) {:.0} and {:.0}. With `--no-accounting` (no per-class or per-job accounting), without guests: {:.0}, of which its BPF programs {:.0}. Under scx_bpfland, on the same node without guests: {:.0}, of which its BPF programs {:.0}. The rest is the sched_ext core and the BPF runtime it calls into (helpers, kfuncs, trampolines). EEVDF's fair-class work, which sched_ext replaces, is what the first table's difference nets it against.\n\n| function | scx_linger, duty primaries | + guests | `--no-accounting`, duty primaries | scx_bpfland, duty primaries |\n|---|---|---|---|---|\n",
        sum(linger, &|_| true),
        sum(guests, &|_| true),
        sum(linger, &is_prog),
        sum(guests, &is_prog),
        sum(noacct, &|_| true),
        sum(noacct, &is_prog),
        sum(bpfland, &|_| true),
        sum(bpfland, &is_prog),
    ));
    for f in only.iter().take(TOP) {
        out.push_str(&format!(
            "| `{f}` | {:.0} | {:.0} | {:.0} | {:.0} |\n",
            linger.per_wakeup(f),
            guests.per_wakeup(f),
            noacct.per_wakeup(f),
            bpfland.per_wakeup(f)
        ));
    }
    out
}

fn read_window(dir: &Path, case: &str, syms: &Symbols) -> Option<Window> {
    let counts = std::fs::read_to_string(dir.join(format!("out.{case}"))).ok()?;
    let mut hist = Hist::default();
    hist.add_line(&std::fs::read_to_string(dir.join(format!("cyc.{case}"))).ok()?);
    Some(Window {
        hist,
        funcs: per_function(&counts, syms),
    })
}

pub fn run(loops: u32, env: &[(String, String)]) -> Result<()> {
    let so = build_plugin()?;
    step("profiling a primary's wake-up (one icount boot, about 3 minutes)");
    let plugin = format!("{},dir={{results}}", so.display());
    let (raw, dir) = run_script_with(
        "profile.sh",
        1,
        true,
        env,
        &[loops.to_string()],
        Some(plugin),
        None,
    )?;
    let mut syms: HashMap<&str, Symbols> = HashMap::new();
    for (case, _) in CASES {
        let file = kallsyms_of(case);
        if !syms.contains_key(file) {
            let text = std::fs::read_to_string(dir.join(file))
                .with_context(|| format!("reading {file} in {}", dir.display()))?;
            syms.insert(file, Symbols::parse(&text));
        }
    }
    let windows: BTreeMap<&str, Window> = CASES
        .iter()
        .filter_map(|(case, _)| {
            let w = read_window(&dir, case, &syms[kallsyms_of(case)])?;
            Some((*case, w))
        })
        .collect();
    if windows.len() != CASES.len() {
        bail!(
            "the profile plugin left {} of {} windows in {}",
            windows.len(),
            CASES.len(),
            dir.display()
        );
    }
    let header = format!(
        "{}; QEMU TCG with `-icount shift=3,sleep=off` and bench/profile/insn_profile.c.",
        script_header(&raw)
    );
    save_report("profile-1cpu-icount", &report(&header, &windows), &raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_counts_for_the_function_it_starts_in() {
        let syms = Symbols::parse(
            "ffffffff81000000 T first\nffffffff81000100 t second\n0000000000000000 A none\n",
        );
        let f = per_function(
            "ffffffff81000010 4 10\nffffffff81000100 2 3\nffffffff81000180 1 1\n",
            &syms,
        );
        assert_eq!(f["first"], 40);
        assert_eq!(f["second"], 7);
        assert_eq!(syms.name(0x10), "?");
    }
}
