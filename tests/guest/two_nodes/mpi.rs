// SPDX-License-Identifier: GPL-2.0-only
//! Real MPI across the two nodes: Debian's OpenMPI, submitted as a user
//! submits it (`sbatch -N2` with `mpirun` in the batch script; inside a
//! Slurm allocation mpirun starts its daemon on the other node through
//! `srun`), in the partition a site rule makes gangs, with the rows
//! slurmctld hands out; and the same jobs under EEVDF in the same boot.
//! The ranks run bench/mpi/ring.py (mpi4py): compute, then pass a
//! message to the other node over TCP and spin in OpenMPI's progress
//! engine for the answer.

use std::fs;
use std::path::Path;
use std::time::Duration;

use super::*;

/// The ring's rounds: 3-10 ms each (the TCP exchange between two
/// emulated nodes, whose time moves from boot to boot); more for the
/// bench (`--baselines`), where the figure is read.
fn rounds() -> u32 {
    if baselines() {
        3000
    } else {
        600
    }
}
/// Compute per round (loop iterations in Python).
const WORK: u32 = 1000;

/// How long the jobs may take to reach their ring: Python, mpi4py,
/// `srun` of OpenMPI's daemon on n2 and MPI_Init over the link.
const START: Duration = Duration::from_secs(240);

/// What the MPI jobs did, in one boot.
pub(super) struct MpiFigures {
    /// The bench's baselines (`--baselines`), none in CI's form.
    pub baselines: Option<MpiBaselines>,
    /// Two at once under scx_linger: the span, s.
    pub rows_s: f64,
    /// Each job's row on n1 and on n2, under scx_linger.
    pub rows_n1: Vec<(u64, u32)>,
    pub rows_n2: Vec<(u64, u32)>,
}

/// One job alone under each scheduler, and two at once under EEVDF: the
/// rings' wall time and span, s.
pub(super) struct MpiBaselines {
    pub alone_eevdf_s: f64,
    pub eevdf_s: f64,
    /// Under scx_linger with rows: what the scheduler costs a job that
    /// shares nothing, apart from what sharing its nodes costs it.
    pub alone_linger_s: f64,
}

/// Submit a two-node MPI job, a rank per node, whose ring starts when
/// `go` exists; its id.
fn submit(go: &Path) -> u64 {
    let ring = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/mpi/ring.py");
    sbatch(
        "gang",
        "mpi",
        // As root (the test's user), OpenMPI asks to be told twice; its
        // traffic goes over the nodes' link. Each job keeps its session
        // directory under a base of its own: two OpenMPI 4.1 `mpirun`s
        // starting on one node at once race on the shared one
        // (/tmp/ompi.HOST.UID), and the loser fails in orte_init, "A
        // call to mkdir was unable to create the desired directory"
        // (open-mpi/ompi#8510, whose workaround this is).
        &format!(
            "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
             OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include={NET}.0/24 \
             OMPI_MCA_oob_tcp_if_include={NET}.0/24 \
             OMPI_MCA_orte_tmpdir_base=/tmp/ompi-job.$SLURM_JOB_ID && \
             exec mpirun /usr/bin/python3 {} --rounds {} --work {WORK} --go {} --progress {}",
            ring.display(),
            rounds(),
            go.display(),
            rounds() / 10
        ),
    )
}

/// Every thread of a Slurm job's cgroups, and the kernel's softirq
/// threads (the network's receive work the ranks wait on): their
/// schedstat (run and wait time, ns; their runs), name and cgroup, as
/// `path:line` from one grep: the sample runs as ordinary work beside the
/// gangs, so it starts a few processes, not one for each thread, which
/// would outlast the rings it samples. A thread that ends between the
/// list and the grep is left out, not a failure.
const JOB_THREADS: &str = "{ grep -l job_ /proc/[0-9]*/task/*/cgroup; grep -l ksoftirqd /proc/[0-9]*/task/*/comm; } 2>/dev/null | sed 's,/[a-z]*$,,' | sed 's,$,/schedstat,;p;s,schedstat$,comm,;p;s,comm$,cgroup,' | xargs grep -H . 2>/dev/null; true";

/// The kernel's own record of a node for a few seconds while the rings
/// run, written to `mpi-trace-PHASE.txt` in the node's results: every
/// `sched_switch` (who ran when: a rank with its peer on the other node
/// or without it), `sched_waking` of the softirq thread and of OpenMPI's
/// launcher and daemon (`mpirun` on n1, `orted` on n2; the line is led by
/// the waker), and the network's receive softirq (`softirq_entry/exit`,
/// vec 3: inline after an interrupt, or in `ksoftirqd`), the device
/// interrupts that bring packets in (`irq_handler_entry`) and each packet
/// handed to the link (`net_dev_xmit`): a message's time between the
/// nodes, from its sending to its arrival on the other. The clock is
/// TAI, which chronyd keeps within a fraction of a millisecond on both
/// nodes, so that the two nodes' records line up. bench/mpi/read_trace.py
/// reads it.
const TRACE_EVENTS: &str =
    "sched/sched_waking sched/sched_switch irq/softirq_entry irq/softirq_exit \
    irq/irq_handler_entry net/net_dev_xmit";
fn trace_on() -> String {
    format!(
        "t=/sys/kernel/tracing; echo 0 > $t/tracing_on; echo > $t/trace; \
         echo 16384 > $t/buffer_size_kb; echo tai > $t/trace_clock; \
         echo 'comm ~ \"ksoftirqd*\" || comm == \"mpirun\" || comm == \"orted\"' > $t/events/sched/sched_waking/filter; \
         echo 'vec == 3' > $t/events/irq/softirq_entry/filter; echo 'vec == 3' > $t/events/irq/softirq_exit/filter; \
         for e in {TRACE_EVENTS}; do echo 1 > $t/events/$e/enable; done; echo 1 > $t/tracing_on"
    )
}
fn trace_off(phase: &str) -> String {
    format!(
        "t=/sys/kernel/tracing; echo 0 > $t/tracing_on; \
         for e in {TRACE_EVENTS}; do echo 0 > $t/events/$e/enable; echo 0 > $t/events/$e/filter; done; \
         cat $t/trace > \"$SCX_LINGER_RESULTS/mpi-trace-{phase}.txt\"; echo > $t/trace; \
         echo local > $t/trace_clock; echo 1408 > $t/buffer_size_kb"
    )
}

/// The network's counters on a node: packets the softirq left for later
/// (softnet_stat's third column: its budget ran out), TCP's
/// retransmissions, which a stalled exchange would show, and TCP's
/// extended counters (timeouts, loss probes, drops), as two lines of
/// names and values.
const NET_COUNTERS: &str = "s=0; while read a b c r; do s=$((s + 0x$c)); done < /proc/net/softnet_stat; \
    printf 'squeezed=%d ' $s; awk '/^Tcp:/ {n++; if (n == 2) print \"retrans=\" $13}' /proc/net/snmp; \
    grep '^TcpExt:' /proc/net/netstat";

/// Run `jobs` MPI jobs with their rings started at one moment; the span
/// from the first ring's start to the last one's end (rank 0 of each is
/// on n1, so one clock), s.
fn span(peer: &mut Peer, jobs: usize, phase: &str) -> (Vec<u64>, f64) {
    let go = results_dir().join(format!("mpi-go-{phase}"));
    let ids: Vec<u64> = (0..jobs).map(|_| submit(&go)).collect();
    let out = |id: u64| fs::read_to_string(results_dir().join(format!("mpi-{id}.out")));
    let ready = wait_until(START, || {
        ids.iter()
            .all(|id| Path::new(&format!("{}.ready.{id}", go.display())).exists())
    });
    assert!(
        ready,
        "MPI jobs {ids:?} did not reach their rings in {START:?}: {:?}",
        ids.iter()
            .map(|&id| out(id).unwrap_or_default())
            .collect::<Vec<_>>()
    );
    fs::write(&go, "").unwrap();
    // While the bench's rings run, on both nodes: the kernel's record
    // for a few seconds, then each job thread's run and wait time twice
    // a few seconds apart (which threads of a job used its CPU time: the
    // ranks, or the runtime's own), and the network's counters around
    // both, for reading the spans.
    if baselines() {
        let net = |peer: &mut Peer| {
            format!(
                "n1 {} n2 {}",
                sh(NET_COUNTERS).trim(),
                peer.must(&format!("sh {NET_COUNTERS}")).trim()
            )
        };
        let net_before = net(peer);
        sh(&trace_on());
        peer.must(&format!("sh {}", trace_on()));
        std::thread::sleep(Duration::from_secs(4));
        sh(&trace_off(phase));
        peer.must(&format!("sh {}", trace_off(phase)));
        let mut threads = String::new();
        for _ in 0..2 {
            std::thread::sleep(Duration::from_secs(4));
            threads += &format!(
                "n1\n{}\nn2\n{}\n",
                sh(JOB_THREADS),
                peer.must(&format!("sh {JOB_THREADS}"))
            );
        }
        let net_after = net(peer);
        threads += &format!("net before {net_before}\nnet after {net_after}\n");
        let at = results_dir().join(format!("mpi-threads-{phase}.txt"));
        fs::write(at, threads).unwrap();
    }
    let done = wait_until(Duration::from_secs(300), || {
        ids.iter()
            .all(|&id| out(id).is_ok_and(|t| t.contains("ring_end=")))
    });
    let texts: Vec<String> = ids.iter().map(|&id| out(id).unwrap_or_default()).collect();
    assert!(done, "MPI jobs {ids:?} did not finish: {texts:?}");
    // The next phase starts once these jobs have left the queue, so that
    // its timing holds none of their teardown.
    assert!(
        wait_queue_empty(Duration::from_secs(120)),
        "MPI jobs {ids:?} still in slurmctld's queue 120 s after their rings ended"
    );
    let field = |t: &str, key: &str| -> f64 {
        t.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {t:?}"))
    };
    let start = texts
        .iter()
        .map(|t| field(t, "ring_start"))
        .fold(f64::INFINITY, f64::min);
    let end = texts
        .iter()
        .map(|t| field(t, "ring_end"))
        .fold(0.0, f64::max);
    (ids, end - start)
}

/// Two MPI jobs at once under the agents with `config` (a gang rule and
/// `[rows]`); with the bench's baselines first one alone and two at once
/// under EEVDF, and one alone under the agents before the two. The
/// agents must be stopped when this starts; they are again when it
/// returns.
pub(super) fn compare(peer: &mut Peer, config: &str) -> MpiFigures {
    let eevdf = baselines().then(|| (span(peer, 1, "alone").1, span(peer, 2, "eevdf").1));
    let agent = start_agents(peer, config);
    let baselines = eevdf.map(|(alone_eevdf_s, eevdf_s)| MpiBaselines {
        alone_eevdf_s,
        eevdf_s,
        alone_linger_s: span(peer, 1, "linger-alone").1,
    });
    let (ids, rows_s) = span(peer, 2, "rows");
    let table = agent.output();
    let n2_log = stop_agents(peer, agent);
    MpiFigures {
        baselines,
        rows_s,
        rows_n1: job_rows(&table, &ids),
        rows_n2: job_rows(&n2_log, &ids),
    }
}

impl MpiFigures {
    /// The figure, and what the scheduler is held to: each job in a row
    /// of its own, the same on both nodes. The spans are reported, not
    /// judged (one emulated vCPU a node; bench/README.md reads them).
    pub(super) fn judge(&self) {
        let spans = match &self.baselines {
            Some(b) => {
                let ideal = 2.0 * b.alone_eevdf_s.min(b.alone_linger_s);
                format!(
                    "span vs ideal (twice the faster of one job alone under each, same boot) scx_linger with rows {:.2}x, EEVDF {:.2}x; one job alone {:.2} s under scx_linger with rows, {:.2} s under EEVDF",
                    self.rows_s / ideal,
                    b.eevdf_s / ideal,
                    b.alone_linger_s,
                    b.alone_eevdf_s
                )
            }
            None => format!(
                "span with rows {:.2} s (alone and EEVDF not run: --baselines)",
                self.rows_s
            ),
        };
        figure(&format!(
            "two nodes, real MPI: 2 OpenMPI jobs (sbatch -N2, mpirun, a rank per node, an mpi4py ring over TCP), their rings started together: {spans}; rows n1 {:?}, n2 {:?}",
            self.rows_n1, self.rows_n2
        ));
        assert!(
            self.rows_n1.len() == 2
                && self.rows_n1[0].1 != self.rows_n1[1].1
                && self.rows_n1 == self.rows_n2,
            "the MPI jobs do not have a row each, the same on both nodes: n1 {:?}, n2 {:?}",
            self.rows_n1,
            self.rows_n2
        );
    }
}
