// SPDX-License-Identifier: GPL-2.0-only
//! `cargo xtask bench --gang`: k spinning-barrier jobs at once (bench/gang.sh)
//! under EEVDF, under scx_bpfland and as scx_linger gangs, on multi-threaded TCG so that the
//! vCPUs really run in parallel (icount runs them round-robin and hides
//! gang effects). Each figure is a ratio against the job alone, measured in
//! the same guest boot: wall time against k x alone (the ideal when the
//! jobs share the CPUs perfectly), CPU time against k x alone (spinning
//! for partners that do not run shows up here).

use std::collections::BTreeMap;

use anyhow::Result;

use super::common::{field, median, run_script, save_report, script_header, word};
use super::plot::{self, Bars};

/// Policies in report order: (case, legend, description).
const POLICIES: [(&str, &str, &str); 3] = [
    ("eevdf", "EEVDF", "EEVDF (Linux default)"),
    ("bpfland", "scx_bpfland", "scx_bpfland 1.1.4"),
    ("linger", "scx_linger", "scx_linger gangs"),
];

/// (wall ms, cpu ms) per repeat, per (case, k).
type Runs = BTreeMap<(String, u32), Vec<(f64, f64)>>;

fn parse(raw: &str) -> Runs {
    let mut runs = Runs::new();
    for line in raw.lines().filter(|l| l.starts_with("case=")) {
        let (Some(case), Some(k)) = (word(line, "case"), field(line, "k")) else {
            continue;
        };
        let (Some(wall), Some(cpu)) = (field(line, "wall_ms"), field(line, "cpu_ms")) else {
            continue;
        };
        runs.entry((case.to_string(), k as u32))
            .or_default()
            .push((wall, cpu));
    }
    runs
}

/// "median (min..max)" of ratios.
fn spread(mut v: Vec<f64>) -> String {
    let lo = v.iter().copied().fold(f64::MAX, f64::min);
    let hi = v.iter().copied().fold(f64::MIN, f64::max);
    format!("{:.2}x ({lo:.2}..{hi:.2})", median(&mut v))
}

pub fn report(raw: &str, header: &str) -> String {
    let runs = parse(raw);
    let mut out = format!("{header}\n\n");
    let Some(alone) = runs.get(&("alone".to_string(), 1)) else {
        out.push_str("(no baseline run: the bench failed)\n");
        return out;
    };
    let alone_wall = median(&mut alone.iter().map(|r| r.0).collect::<Vec<_>>());
    let alone_cpu = median(&mut alone.iter().map(|r| r.1).collect::<Vec<_>>());
    out.push_str(&format!(
        "Job alone: {alone_wall:.0} ms wall, {alone_cpu:.0} ms CPU (median).\n\n\
         | jobs (k) | policy | wall time vs ideal (k x alone), median (min..max) | CPU time vs k x alone |\n|---|---|---|---|\n"
    ));
    let mut ks: Vec<u32> = runs.keys().map(|(_, k)| *k).filter(|k| *k > 1).collect();
    ks.sort_unstable();
    ks.dedup();
    for k in ks {
        for (case, _, what) in POLICIES {
            let Some(r) = runs.get(&(case.to_string(), k)) else {
                continue;
            };
            let kf = f64::from(k);
            out.push_str(&format!(
                "| {k} | {what} | {} | {} |\n",
                spread(r.iter().map(|x| x.0 / (kf * alone_wall)).collect()),
                spread(r.iter().map(|x| x.1 / (kf * alone_cpu)).collect()),
            ));
        }
    }
    out + &gang_stats_block(raw)
}

/// The per-gang lines the agent printed at exit (gang.sh's gang_stats).
fn gang_stats_block(raw: &str) -> String {
    let stats: Vec<&str> = raw
        .lines()
        .filter(|l| l.starts_with("gang_stats ") && l.contains("gang=/"))
        .collect();
    if stats.is_empty() {
        return String::new();
    }
    let mut out = "\nPer gang, as scx_linger's BPF side counted (skew and boundary-to-first-member latency are log2-histogram bucket edges):\n\n```\n".to_string();
    for l in stats {
        out.push_str(l.trim_start_matches("gang_stats "));
        out.push('\n');
    }
    out + "```\n"
}

/// Wall time against the ideal, per k and policy (median of repeats).
fn plot(raw: &str, path: &std::path::Path, cpus: u32) -> Result<()> {
    let runs = parse(raw);
    let Some(alone) = runs.get(&("alone".to_string(), 1)) else {
        return Ok(());
    };
    let alone_wall = median(&mut alone.iter().map(|r| r.0).collect::<Vec<_>>());
    let mut ks: Vec<u32> = runs.keys().map(|(_, k)| *k).filter(|k| *k > 1).collect();
    ks.sort_unstable();
    ks.dedup();
    let series = POLICIES
        .iter()
        .map(|(case, legend, _)| {
            let values = ks
                .iter()
                .map(|k| match runs.get(&(case.to_string(), *k)) {
                    Some(r) => median(
                        &mut r
                            .iter()
                            .map(|x| x.0 / (f64::from(*k) * alone_wall))
                            .collect::<Vec<_>>(),
                    ),
                    None => f64::NAN,
                })
                .collect();
            (legend.to_string(), values)
        })
        .collect();
    plot::draw(
        path,
        &Bars {
            title: format!("Gang slowdown: k barrier jobs on {cpus} vCPUs"),
            y_label: "wall time / ideal (k x alone)".into(),
            groups: ks.iter().map(|k| format!("k = {k}")).collect(),
            series,
            fmt: |v| format!("{v:.2}x"),
        },
    )
}

pub fn run(cpus: u32, repeats: u32, env: &[(String, String)]) -> Result<()> {
    let started = std::time::Instant::now();
    // Parallel TCG, not icount: icount runs the vCPUs round-robin.
    let raw = run_script("gang.sh", cpus, false, env, &[repeats.to_string()])?;
    let header = format!(
        "## Gang scheduling: k spinning-barrier jobs at once, {cpus} vCPUs, multi-threaded TCG\n\n{} ; QEMU TCG with vCPUs in parallel on host threads (host timing noise included; no caches modelled); {repeats} repeats; run took {:.1} min. Each job has one thread per CPU computing ~100 us between spinning barriers (bench/src/bin/barrier.rs).",
        script_header(&raw),
        started.elapsed().as_secs_f64() / 60.0
    );
    let name = format!("gang-{cpus}cpu-parallel");
    let header = format!("{header}\n\n![gang slowdown]({name}.png)");
    let table = report(&raw, &header);
    save_report(&name, &table, &raw)?;
    plot(
        &raw,
        &super::common::results_dir().join(format!("{name}.png")),
        cpus,
    )
}

/// Rounds of bench/mpi/ring.py and its work per round: about 3 s of ring
/// alone on 2 vCPUs under multi-threaded TCG, beside about 3 s of
/// Python's and `MPI_Init`'s start-up. With start-up the larger part, as
/// at half these rounds, one slow stretch of the emulator during it moved
/// a boot's ratios more than the policies did; real MPI jobs run far
/// longer than they take to start.
const MPI_ROUNDS: u32 = 6000;
const MPI_WORK: u32 = 1000;
/// The targets real MPI gangs are held to, per boot: makespan against
/// the ideal, and against EEVDF's in the same boot.
const MPI_IDEAL_TARGET: f64 = 1.0;
const MPI_EEVDF_TARGET: f64 = 0.8;

/// `--gang --mpi`: two real MPI jobs at once (bench/gang.sh with MPI set),
/// in `boots` guest boots, each judged against its own baseline.
pub fn run_mpi(cpus: u32, repeats: u32, boots: u32, env: &[(String, String)]) -> Result<()> {
    let started = std::time::Instant::now();
    let mut env = env.to_vec();
    env.push((
        "MPI".into(),
        crate::paths::project_root()
            .join("bench/mpi/ring.py")
            .to_string_lossy()
            .into_owned(),
    ));
    let args = [repeats, MPI_ROUNDS, MPI_WORK]
        .map(|v| v.to_string())
        .into_iter()
        .chain(["2".to_string()])
        .collect::<Vec<_>>();
    let mut raws = Vec::new();
    for boot in 1..=boots {
        crate::progress::step(&format!("MPI gangs: boot {boot} of {boots}"));
        raws.push(run_script("gang.sh", cpus, false, &env, &args)?);
    }
    let header = format!(
        "## Gang scheduling of real MPI jobs: 2 jobs at once, {cpus} vCPUs, multi-threaded TCG

{} ; QEMU TCG with vCPUs in parallel on host threads (host timing noise included); {boots} boots of {repeats} repeats; run took {:.1} min. Each job is `mpirun -np {cpus}` of bench/mpi/ring.py (Debian's OpenMPI through mpi4py; each round a rank computes, then passes a message round a ring and spins in the shared-memory transport for its neighbour's), launched inside the job's cgroup, so mpirun and its helper threads are in the job. Wall time is the makespan from launch, Python's and MPI_Init's start-up included.",
        script_header(&raws[0]),
        started.elapsed().as_secs_f64() / 60.0
    );
    let mut table = format!("{header}\n\n{}", boots_summary(&raws));
    for (i, raw) in raws.iter().enumerate() {
        table.push_str(&report(raw, &format!("### Boot {}", i + 1)));
    }
    let raw = raws
        .iter()
        .enumerate()
        .map(|(i, r)| format!("# boot {}\n{r}", i + 1))
        .collect::<String>();
    save_report(&format!("gang-{cpus}cpu-mpi"), &table, &raw)
}

/// The median makespan of `case` (k = 2) against the ideal in one boot.
fn median_vs_ideal(runs: &Runs, case: &str) -> Option<f64> {
    let alone = runs.get(&("alone".to_string(), 1))?;
    let alone_wall = median(&mut alone.iter().map(|r| r.0).collect::<Vec<_>>());
    let r = runs.get(&(case.to_string(), 2))?;
    Some(median(
        &mut r
            .iter()
            .map(|x| x.0 / (2.0 * alone_wall))
            .collect::<Vec<_>>(),
    ))
}

/// One line per boot: scx_linger's and EEVDF's makespan against the
/// ideal and against each other, judged against the targets.
fn boots_summary(raws: &[String]) -> String {
    let mut out = format!(
        "Targets: scx_linger's median makespan at most {MPI_IDEAL_TARGET:.1}x the ideal and at most {MPI_EEVDF_TARGET:.1}x EEVDF's, in every boot.\n\n\
         | boot | EEVDF vs ideal | scx_linger vs ideal | scx_linger vs EEVDF | targets |\n|---|---|---|---|---|\n"
    );
    let mut met = 0;
    for (i, raw) in raws.iter().enumerate() {
        let runs = parse(raw);
        let (Some(e), Some(l)) = (
            median_vs_ideal(&runs, "eevdf"),
            median_vs_ideal(&runs, "linger"),
        ) else {
            out.push_str(&format!("| {} | (failed) | | | |\n", i + 1));
            continue;
        };
        let ok = l <= MPI_IDEAL_TARGET && l / e <= MPI_EEVDF_TARGET;
        met += usize::from(ok);
        out.push_str(&format!(
            "| {} | {e:.2}x | {l:.2}x | {:.2}x | {} |\n",
            i + 1,
            l / e,
            if ok { "met" } else { "not met" }
        ));
    }
    out + &format!("\nTargets met in {met} of {} boots.\n\n", raws.len())
}

/// Cpuset layouts on 4 vCPUs (bench/gang.sh's LAYOUTS): name*ideal, then
/// each job as CPUS/THREADS. The issue's case: two 2-thread jobs bound to
/// CPUs 0-1 and one to 2-3, ideally 2 job-times (a and b alternate, c
/// throughout). A Slurm-like mix: two jobs on overlapping cores 0-1 and
/// 1-2 (they must alternate), one on core 3, one unbound thread (which
/// fits beside either), also 2 job-times.
const LAYOUTS: &str = "issue*2:0-1/2,0-1/2,2-3/2 slurm*2:0-1/2,1-2/2,3/1,0-3/1";
const CPUSET_CPUS: u32 = 4;
const CPUSET_ROUNDS: u32 = 40000;

/// (case, layout) -> (ideal, makespans in ms).
fn parse_layouts(raw: &str) -> BTreeMap<(String, String), (f64, Vec<f64>)> {
    let mut runs: BTreeMap<(String, String), (f64, Vec<f64>)> = BTreeMap::new();
    for line in raw.lines().filter(|l| l.starts_with("case=")) {
        let (Some(case), Some(layout)) = (word(line, "case"), word(line, "layout")) else {
            continue;
        };
        let (Some(ideal), Some(wall)) = (field(line, "ideal"), field(line, "wall_ms")) else {
            continue;
        };
        let e = runs
            .entry((case.to_string(), layout.to_string()))
            .or_insert((ideal, Vec::new()));
        e.1.push(wall);
    }
    runs
}

pub fn report_layouts(raw: &str, header: &str) -> String {
    let runs = parse_layouts(raw);
    let mut out = format!("{header}\n\n");
    let base = |l: &str| {
        runs.get(&("alone".to_string(), l.to_string()))
            .map(|(_, w)| median(&mut w.clone()))
    };
    let (Some(alone), Some(full)) = (base("alone"), base("full")) else {
        out.push_str("(no baseline run: the bench failed)\n");
        return out;
    };
    out.push_str(&format!(
        "One 2-thread job bound to CPUs 0-1: {alone:.0} ms alone; {full:.0} ms beside a second one bound to CPUs 2-3 (every vCPU busy, nothing to schedule: how fast the emulator runs a job on a full node) (medians). The ideal schedule's makespan is given in both units: against the job alone it is what real hardware would show; against the full node it takes out the emulator running more busy vCPUs than the host has cores.\n\n\
         | layout | policy | makespan vs ideal, in full-node job times, median (min..max) | in job-alone times |\n|---|---|---|---|\n"
    ));
    let mut layouts: Vec<&String> = runs
        .keys()
        .filter(|(case, _)| case != "alone")
        .map(|(_, l)| l)
        .collect();
    layouts.sort();
    layouts.dedup();
    for layout in layouts {
        for (case, _, what) in POLICIES {
            let Some((ideal, walls)) = runs.get(&(case.to_string(), layout.clone())) else {
                continue;
            };
            out.push_str(&format!(
                "| {layout} | {what} | {} | {} |\n",
                spread(walls.iter().map(|w| w / (ideal * full)).collect()),
                spread(walls.iter().map(|w| w / (ideal * alone)).collect())
            ));
        }
    }
    out + &gang_stats_block(raw)
}

/// `bench --gang --cpusets`: the layouts above, on parallel TCG.
pub fn run_cpusets(repeats: u32, env: &[(String, String)]) -> Result<()> {
    let started = std::time::Instant::now();
    let mut env = env.to_vec();
    env.push(("LAYOUTS".into(), LAYOUTS.into()));
    // Jobs of about 2 s alone: long against a cycle of 3-4 slots of
    // 100 ms, so that where a job starts in the cycle weighs little.
    let raw = run_script(
        "gang.sh",
        CPUSET_CPUS,
        false,
        &env,
        &[repeats.to_string(), CPUSET_ROUNDS.to_string()],
    )?;
    let header = format!(
        "## Cpuset-bound gangs: makespan against the ideal schedule, {CPUSET_CPUS} vCPUs, multi-threaded TCG\n\n{} ; QEMU TCG with vCPUs in parallel on host threads ({CPUSET_CPUS} vCPUs on the host's cores: host timing noise included); {repeats} repeats; run took {:.1} min. Each job is bound to its cpuset (cgroup cpuset.cpus) and has one spinning-barrier thread per CPU of it (bench/src/bin/barrier.rs). Layouts: `{LAYOUTS}` (name*ideal, then CPUS/THREADS per job; the ideal is in units of one job's time alone).",
        script_header(&raw),
        started.elapsed().as_secs_f64() / 60.0
    );
    let table = report_layouts(&raw, &header);
    save_report(
        &format!("gang-cpusets-{CPUSET_CPUS}cpu-parallel"),
        &table,
        &raw,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_ratios_against_the_job_alone() {
        let raw = "\
# kernel=7.3 cpus=2
case=alone k=1 rep=1 wall_ms=1000 cpu_ms=2000
case=eevdf k=2 rep=1 wall_ms=10000 cpu_ms=20000
case=linger k=2 rep=1 wall_ms=2100 cpu_ms=4000
gang_stats k=2 rep=1 gang=/bench-gang/j1: 10 slots, 0 partial starts (0.00%)
gang_stats k=2 rep=1 gang=table: gangs: cycle 111ms
case=alone k=1 rep=2 wall_ms=1000 cpu_ms=2000
case=eevdf k=2 rep=2 wall_ms=10000 cpu_ms=20000
";
        let md = report(raw, "h");
        assert!(md.contains("| 2 | EEVDF (Linux default) | 5.00x"), "{md}");
        assert!(
            md.contains("| 2 | scx_linger gangs | 1.05x (1.05..1.05) | 1.00x"),
            "{md}"
        );
        assert!(md.contains("gang=/bench-gang/j1: 10 slots"), "{md}");
        assert!(!md.contains("table:"), "{md}");
        assert_eq!(md.matches("| 2 | EEVDF").count(), 1, "{md}");
        assert!(report("", "h").contains("no baseline"));
    }

    #[test]
    fn reports_layouts_against_their_ideal_schedule() {
        let raw = "\
case=alone layout=alone ideal=1 rep=1 wall_ms=1000 cpu_ms=2000
case=alone layout=full ideal=1 rep=1 wall_ms=2000 cpu_ms=2000
case=eevdf layout=issue ideal=2 rep=1 wall_ms=7000 cpu_ms=1
case=linger layout=issue ideal=2 rep=1 wall_ms=2400 cpu_ms=1
case=linger layout=issue ideal=2 rep=2 wall_ms=2200 cpu_ms=1
gang_stats layout=issue rep=1 gang=/bench-gang/j1: 10 slots
";
        let md = report_layouts(raw, "h");
        assert!(
            md.contains("| issue | EEVDF (Linux default) | 1.75x (1.75..1.75) | 3.50x"),
            "{md}"
        );
        assert!(
            md.contains("| issue | scx_linger gangs | 0.57x (0.55..0.60) | 1.15x (1.10..1.20)"),
            "{md}"
        );
        assert!(
            md.contains("layout=issue rep=1 gang=/bench-gang/j1"),
            "{md}"
        );
        assert!(report_layouts("", "h").contains("no baseline"));
    }
}
