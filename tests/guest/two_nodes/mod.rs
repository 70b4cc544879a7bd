// SPDX-License-Identifier: GPL-2.0-only
//! Two nodes and a real Slurm across them: gang jobs that span both,
//! co-scheduled by the cluster rows slurmctld hands out (the config's
//! `[rows]`), on clocks chrony keeps together.
//!
//! `cargo xtask test` boots two 1-vCPU guests joined by a link between
//! their QEMUs, a Unix socket on the host (xtask/src/vm.rs), for this
//! module (plain TCG: the guests keep real time, which the clocks need).
//! The first runs the tests; the second runs `peer_node`, which brings
//! its end of the link up and then does what the first asks over a TCP
//! line protocol: shell commands, its agent, a trace. Each guest knows
//! its number from SCX_LINGER_NODE.
//!
//! The cluster: chronyd serving on n1 and following it on n2; munged on
//! both with the same key; slurmctld on n1 with the package's
//! PrologSlurmctld; slurmd on both with its Prolog and Epilog (the files
//! the package installs, at its paths, unchanged); each node's agent with the
//! same config, whose site rule makes the `gang` partition's jobs gangs.
//! As a site runs them: each daemon in its own service cgroup below
//! `system.slice` (the node's machinery, bpf/machinery.bpf.c), slurm.conf
//! outside /etc/slurm and named by `-f` and SLURM_CONF in the daemons'
//! environment alone (the hooks find it themselves), and Slurm's default
//! timeouts.
//!
//! What CI holds the scheduler to (rows, shares, the hooks' requests) needs
//! only the runs under scx_linger. The baselines the bench compares with
//! (one job alone under each scheduler, both jobs on quiet nodes, the mix without
//! rows and under EEVDF, MPI alone and under EEVDF, Slurm's own gang
//! scheduling on a spinning and a half-idle mix) run only with
//! `cargo xtask test --baselines`: each is a Slurm job start and a
//! run of a minute or more on these emulated nodes, and none is judged.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::slurm::{as_service, munge_and_cgroups, sh, start_munged};
use crate::trace::{self, Run};

mod jobs;
mod mpi;
mod rows_seen;
mod rpcs;
mod slurm_gang;
use jobs::*;
use rows_seen::*;

const NET: &str = "192.0.2";
const PEER_PORT: u16 = 7070;
/// Where both nodes keep Slurm's state, spool and logs of their own.
const LOCAL: &str = "/run/linger-two";
/// The config both agents and the Slurm hooks read (the hooks read the
/// default path, so it is written there on each node's own /etc).
const CONFIG: &str = "/etc/scx_linger/config.toml";
const ROWS: &str = "[rows]\ncount = 3\nslot_ms = 100\nopen_pct = 10\n";
const RULE: &str = "[[slurm_rule]]\npartition = \"gang\"\nclass = \"gang\"\n";

fn addr(n: u32) -> String {
    format!("{NET}.{n}")
}

fn this_node() -> u32 {
    std::env::var("SCX_LINGER_NODE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Bring this node's end of the link up as n<N>, and what Slurm needs
/// on a node without systemd (see slurm/mod.rs).
fn join_link(n: u32) {
    // Debian's kernels build the driver as a module; the LTS kernel
    // `cargo xtask kernel` builds has it built in.
    if !std::path::Path::new("/sys/bus/virtio/drivers/virtio_net").exists() {
        sh("modprobe virtio_net");
    }
    let iface = fs::read_dir("/sys/class/net")
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|i| i != "lo")
        .expect("no network interface: the guest was booted without the link");
    sh(&format!(
        "ip link set lo up && ip addr replace {}/24 dev {iface} && ip link set {iface} up",
        addr(n)
    ));
    sh(&format!("hostname n{n}"));
    let hosts = fs::read_to_string("/etc/hosts").unwrap_or_default();
    if !hosts.contains(" n2") {
        fs::write(
            "/etc/hosts",
            format!("{hosts}{} n1\n{} n2\n", addr(1), addr(2)),
        )
        .unwrap();
    }
    sh(&format!("mkdir -p {LOCAL}/state {LOCAL}/spool /run/chrony"));
    munge_and_cgroups();
}

/// A daemon of this node, in its own service cgroup as systemd would
/// start it, its output in the shared results folder.
fn daemon(name: &str, cmd: &mut Command) -> Child {
    let out = fs::File::create(results_dir().join(format!("n{}-{name}.out", this_node()))).unwrap();
    as_service(cmd, &format!("{name}.service"))
        .env("SLURM_CONF", slurm_conf())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {name}: {e}"))
}

/// The first node's results folder, which both nodes see; the second
/// keeps its own results in a folder below it.
fn shared_dir() -> PathBuf {
    let dir = results_dir();
    match this_node() {
        2 => dir.parent().map(Path::to_path_buf).unwrap_or(dir),
        _ => dir,
    }
}

fn slurm_conf() -> PathBuf {
    shared_dir().join("slurm.conf")
}

/// munged and slurmd (and on n1 slurmctld first), with the package's
/// hooks at the paths slurm.conf names: the package's files as shipped,
/// run the way slurmd and slurmctld run them (SLURM_CONF is theirs).
fn start_slurm(n: u32) -> Vec<Child> {
    crate::package::installed();
    let mut d = vec![start_munged(|cmd| daemon("munged", cmd))];
    if n == 1 {
        d.push(daemon(
            "slurmctld",
            Command::new("slurmctld")
                .args(["-D", "-i", "-f"])
                .arg(slurm_conf()),
        ));
    }
    d.push(daemon(
        "slurmd",
        Command::new("slurmd")
            .args(["-D", "-N", &format!("n{n}"), "-f"])
            .arg(slurm_conf()),
    ));
    d
}

/// The cluster's slurm.conf, with `extra` lines (the bench's other
/// scheduling mode, which `scontrol reconfigure` turns on and off).
fn write_slurm_conf(extra: &str) {
    let d = results_dir();
    let d = d.display();
    fs::write(
        slurm_conf(),
        format!(
            "ClusterName=linger2\nSlurmctldHost=n1({a1})\nSlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nStateSaveLocation={LOCAL}/state\nSlurmdSpoolDir={LOCAL}/spool\n\
             SlurmctldPidFile={LOCAL}/ctld.pid\nSlurmdPidFile={LOCAL}/d.pid\n\
             SlurmctldLogFile={d}/n1-slurmctld.log\nSlurmdLogFile={d}/slurmd-%n.log\n\
             ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nSchedulerType=sched/backfill\n\
             PrologFlags=Contain\nProlog=/usr/lib/scx_linger/slurm-prolog\n\
             Epilog=/usr/lib/scx_linger/slurm-epilog\nPrologSlurmctld=/usr/lib/scx_linger/slurm-row\n\
             MpiDefault=none\nReturnToService=2\n{extra}\
             NodeName=n1 NodeAddr={a1} CPUs=1 State=UNKNOWN\n\
             NodeName=n2 NodeAddr={a2} CPUs=1 State=UNKNOWN\n\
             PartitionName=gang Nodes=n1,n2 Default=YES OverSubscribe=FORCE:4 MaxTime=INFINITE State=UP\n",
            a1 = addr(1),
            a2 = addr(2),
        ),
    )
    .unwrap();
}

/// Wait for both nodes to be up and idle in slurmctld's view.
fn wait_nodes_idle() {
    let mut states = String::new();
    let idle = wait_until(Duration::from_secs(90), || {
        let out = Command::new("sinfo")
            .env("SLURM_CONF", slurm_conf())
            .args(["-h", "-N", "-o", "%N %T"])
            .output()
            .unwrap();
        states = String::from_utf8_lossy(&out.stdout).into_owned();
        states.lines().count() == 2
            && states
                .lines()
                .all(|l| l.split_whitespace().nth(1) == Some("idle"))
    });
    assert!(idle, "the two nodes did not come up idle: {states}");
}

/// Wait up to `timeout` for slurmctld's queue to hold no job; whether it
/// emptied.
fn wait_queue_empty(timeout: Duration) -> bool {
    wait_until(timeout, || {
        Command::new("squeue")
            .env("SLURM_CONF", slurm_conf())
            .arg("-h")
            .output()
            .is_ok_and(|o| o.status.success() && o.stdout.is_empty())
    })
}

/// The second node: join the link and do what the first asks, one line
/// at a time, until it says bye. Not a test of its own: `cargo xtask
/// test` runs it (`--ignored --exact`) in the second guest only.
#[test]
#[ignore = "the second node's half of two_nodes, run by cargo xtask test"]
fn peer_node() {
    require_guest();
    assert_eq!(this_node(), 2, "peer_node runs in the second guest");
    let _flight = trace::FlightRecorder::start("flight-n2");
    join_link(2);
    let listener = TcpListener::bind((addr(2).as_str(), PEER_PORT)).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    let mut agent: Option<Agent> = None;
    let mut daemons = Vec::new();
    let mut chrony: Option<Child> = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let (verb, arg) = line
            .trim_end()
            .split_once(' ')
            .unwrap_or((line.trim_end(), ""));
        let reply = match verb {
            "sh" => {
                let o = Command::new("sh").arg("-c").arg(arg).output().unwrap();
                format!(
                    "{}\n{}{}",
                    o.status.code().unwrap_or(-1),
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                )
            }
            "sync" => {
                // Step once to n1's clock, then follow it.
                sh(&format!(
                    "chronyd -u root -q -t 20 'server {} iburst'",
                    addr(1)
                ));
                fs::write(
                    "/run/chrony/client.conf",
                    format!(
                        "server {} iburst minpoll -2 maxpoll 0\nmakestep 0.01 -1\n",
                        addr(1)
                    ),
                )
                .unwrap();
                chrony = Some(daemon(
                    "chronyd",
                    Command::new("chronyd").args([
                        "-u",
                        "root",
                        "-d",
                        "-f",
                        "/run/chrony/client.conf",
                    ]),
                ));
                "0\nstepped".into()
            }
            "slurm" => {
                daemons = start_slurm(2);
                "0\nstarted".into()
            }
            "agent" => {
                agent = Some(Agent::start(&["--config", CONFIG]));
                "0\nenabled".into()
            }
            "agent-stop" => {
                let said = agent.take().map(|a| a.stop().1).unwrap_or_default();
                format!("0\n{said}")
            }
            "trace" => {
                let secs: f64 = arg.parse().unwrap_or(2.0);
                let (runs, ticks) =
                    trace::record_switches_and_ticks(Duration::from_secs_f64(secs), "tai");
                format!("0\n{}{}", runs_to_text(&runs), ticks_to_text(&ticks))
            }
            "bye" => break,
            _ => format!("2\nunknown request {verb:?}"),
        };
        write!(out, "{}\n{reply}", reply.len()).unwrap();
        out.flush().unwrap();
    }
    drop(agent);
    for mut d in daemons.into_iter().chain(chrony) {
        let _ = d.kill();
        let _ = d.wait();
    }
}

/// The first node's line to the second.
struct Peer {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Peer {
    fn connect() -> Peer {
        let started = Instant::now();
        let stream = loop {
            match TcpStream::connect((addr(2).as_str(), PEER_PORT)) {
                Ok(s) => break s,
                Err(e) if started.elapsed() > Duration::from_secs(120) => {
                    panic!(
                        "the second node never answered on {}:{PEER_PORT}: {e}",
                        addr(2)
                    )
                }
                Err(_) => std::thread::sleep(Duration::from_millis(300)),
            }
        };
        Peer {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    /// Ask; its exit code and output.
    fn ask(&mut self, request: &str) -> (i32, String) {
        writeln!(self.writer, "{request}").unwrap();
        let mut len = String::new();
        self.reader.read_line(&mut len).unwrap();
        let len: usize = len
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the second node broke off at {request:?}"));
        let mut body = vec![0u8; len];
        self.reader.read_exact(&mut body).unwrap();
        let body = String::from_utf8_lossy(&body).into_owned();
        let (code, text) = body.split_once('\n').unwrap_or((&body, ""));
        (code.parse().unwrap_or(-1), text.to_string())
    }

    /// Ask, and fail the test if it failed.
    fn must(&mut self, request: &str) -> String {
        let (code, text) = self.ask(request);
        assert_eq!(code, 0, "n2: {request}: {text}");
        text
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = writeln!(self.writer, "bye");
    }
}

/// The offset of n2's clock from n1's as chrony on n2 estimates it, in
/// ms (positive: n2 is ahead).
fn chrony_offset_ms(peer: &mut Peer) -> f64 {
    let text = peer.must("sh chronyc -n tracking");
    text.lines()
        .find(|l| l.starts_with("System time"))
        .and_then(|l| {
            let mut w = l.split(':').nth(1)?.split_whitespace();
            let secs: f64 = w.next()?.parse().ok()?;
            let sign = if l.contains("fast") { 1.0 } else { -1.0 };
            Some(sign * secs * 1e3)
        })
        .unwrap_or_else(|| panic!("no offset in chronyc tracking: {text}"))
}

/// Each node's agent: started with `config` (written to CONFIG on each
/// node's own /etc, through the shared folder for the second).
fn start_agents(peer: &mut Peer, config: &str) -> Agent {
    let shared = shared_dir().join("config.toml");
    fs::write(&shared, config).unwrap();
    fs::create_dir_all("/etc/scx_linger").unwrap();
    fs::write(CONFIG, config).unwrap();
    peer.must(&format!(
        "sh mkdir -p /etc/scx_linger && cp {} {CONFIG}",
        shared.display()
    ));
    peer.must("agent");
    Agent::start(&["--config", CONFIG])
}

fn stop_agents(peer: &mut Peer, agent: Agent) -> String {
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
    peer.must("agent-stop")
}

/// (job id, row) for each of `ids` in the last gang table of an agent's
/// log that has them all (`[row 1: /system.slice/n1_slurmstepd.scope/job_7 100ms]`).
fn job_rows(log: &str, ids: &[u64]) -> Vec<(u64, u32)> {
    let parse = |line: &str| -> Vec<(u64, u32)> {
        line.split("[row ")
            .skip(1)
            .filter_map(|cell| {
                let (row, rest) = cell.split_once(':')?;
                let id = rest.split("/job_").nth(1)?.split_whitespace().next()?;
                Some((id.parse().ok()?, row.trim().parse().ok()?))
            })
            .filter(|(id, _)| ids.contains(id))
            .collect()
    };
    let mut rows = log
        .lines()
        .filter(|l| l.contains("gang table:"))
        .map(parse)
        .rfind(|r| r.len() == ids.len())
        .unwrap_or_default();
    rows.sort();
    rows
}

#[test]
fn multi_node_gang_jobs_run_in_their_row_on_both_nodes() {
    require_guest();
    assert_eq!(
        this_node(),
        1,
        "run through `cargo xtask test`, which boots two nodes"
    );
    let _flight = trace::FlightRecorder::start("flight-n1");
    join_link(1);
    // chronyd serves n1's clock to n2, which steps to it and follows.
    fs::write(
        "/run/chrony/server.conf",
        format!("local stratum 8\nallow {NET}.0/24\n"),
    )
    .unwrap();
    let chrony = daemon(
        "chronyd",
        Command::new("chronyd").args(["-u", "root", "-d", "-f", "/run/chrony/server.conf"]),
    );
    let mut peer = Peer::connect();
    std::thread::sleep(Duration::from_secs(1));
    peer.must("sync");

    let dir = results_dir();
    write_slurm_conf("");
    fs::write(
        dir.join("cgroup.conf"),
        "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\nConstrainCores=yes\n",
    )
    .unwrap();
    let mut daemons = start_slurm(1);
    peer.must("slurm");
    wait_nodes_idle();
    let offset = chrony_offset_ms(&mut peer);

    // One job alone on quiet nodes (under each scheduler, for the bench):
    // the ideal for two is twice that.
    let rounds = 3000;
    let with_rows = format!("{RULE}{ROWS}");
    // What a start asks of slurmctld without the agents' config, from its
    // own counters: the hooks find no [rows] and ask nothing.
    let (alone_eevdf, asked_plain) = if baselines() {
        rpcs::reset(&slurm_conf());
        let alone = makespan(&mut peer, 1, rounds);
        (alone, Some(rpcs::by_type(&slurm_conf())))
    } else {
        (f64::INFINITY, None)
    };
    let agent = start_agents(&mut peer, &with_rows);
    // One job alone, and both jobs on quiet nodes (the same mix on each),
    // under the agents with rows.
    let (alone, same) = if baselines() {
        (
            makespan(&mut peer, 1, rounds),
            makespan(&mut peer, 2, rounds),
        )
    } else {
        (f64::NAN, f64::NAN)
    };

    // Then the nodes run different mixes: a node-local gang on n2 (one
    // spinning thread, the agent's own label) and a guest on n1, started
    // once every rank waits for the go. Beside n2's local gang, primary
    // work (the Prolog, the step daemons) gets only the open phase and
    // relief, and the ranks' start-up took minutes there; the figures
    // count from the go, so the test does not wait that out.
    let guest = TestCgroup::new("t-guest");
    tag(&guest.rel, "guest");
    let mut g = None;
    let submitted = Instant::now();
    let mut ranks_up = 0.0;
    // The kernel's counters at the go: n1's guest's CPU time and both
    // nodes' idle time, for what the guest harvested of what the jobs left.
    let mut at_go = (Instant::now(), 0, 0, 0);
    // What the two jobs' starts and ends ask of slurmctld, by its own
    // counters (the hooks' requests with [rows] set).
    rpcs::reset(&slurm_conf());
    let (ids, near_ranks, far_ranks) = submit_together(&mut peer, 2, rounds, |peer| {
        ranks_up = submitted.elapsed().as_secs_f64();
        start_local_gang(peer);
        g = Some(guest.spin(1));
        // The local gang in n2's table before the rounds start.
        std::thread::sleep(Duration::from_secs(2));
        at_go = (
            Instant::now(),
            usage_us(&guest.path).expect("the guest cgroup's cpu.stat"),
            idle_ns(),
            idle_ns_in(&peer.must("sh head -1 /proc/stat")),
        );
    });
    let remote = std::thread::scope(|s| {
        let far = s.spawn(|| peer.must("trace 8"));
        let near = trace::record_switches_and_ticks(Duration::from_secs(8), "tai");
        (near, far.join().unwrap())
    });
    let (ps1, ps2) = (sh(PS), peer.must(&format!("sh {PS}")));
    let both = wait_jobs(&ids, Duration::from_secs(300))
        .into_iter()
        .fold(0.0, f64::max);
    let asked_rows = rpcs::by_type(&slurm_conf());
    // From the go until the jobs were seen done: CPU time the guest got
    // against the time n1's CPU idled (together, what the jobs and other
    // primaries left), and n2's idle time, which no guest there took.
    let guest_s = usage_us(&guest.path)
        .expect("the guest cgroup's cpu.stat")
        .saturating_sub(at_go.1) as f64
        / 1e6;
    let idle1_s = idle_ns().saturating_sub(at_go.2) as f64 / 1e9;
    let idle2_s =
        idle_ns_in(&peer.must("sh head -1 /proc/stat")).saturating_sub(at_go.3) as f64 / 1e9;
    let window_s = at_go.0.elapsed().as_secs_f64();
    let harvest = guest_s / (guest_s + idle1_s).max(1e-9);
    let table = agent.output();
    let n2_log = stop_agents(&mut peer, agent);
    let (rows1, rows2) = (job_rows(&table, &ids), job_rows(&n2_log, &ids));
    // One ideal for all three, with the bench's baselines: twice the
    // faster of the two alone runs (without them it is not measured).
    let ideal = 2.0 * alone.min(alone_eevdf);
    let rows_ratio = both / ideal;

    // The same jobs and mixes, the agents laying gangs out node by node;
    // then EEVDF. For the bench only (`--baselines`); nothing
    // here judges them.
    stop_local_gang(&mut peer);
    drop(g);
    let (no_rows, eevdf) = if baselines() {
        let agent = start_agents(&mut peer, RULE);
        let no_rows = mixed_makespan(&mut peer, &guest, rounds) / ideal;
        stop_agents(&mut peer, agent);
        (no_rows, mixed_makespan(&mut peer, &guest, rounds) / ideal)
    } else {
        (f64::NAN, f64::NAN)
    };

    // Across nodes: each job's ranks running at once, and the starts of
    // each row on both nodes, from the two traces on the TAI clocks.
    let ((near, near_ticks), far) = (remote.0, runs_from_text(&remote.1));
    let far_ticks = ticks_from_text(&remote.1);
    // Both traces, for reading the figures below run by run.
    fs::write(
        results_dir().join("rows-trace-n1.txt"),
        runs_to_text(&near) + &ticks_to_text(&near_ticks),
    )
    .unwrap();
    fs::write(results_dir().join("rows-trace-n2.txt"), &remote.1).unwrap();
    fs::write(
        results_dir().join("rows-ranks.txt"),
        format!("n1\n{near_ranks}\n{ps1}\nn2\n{far_ranks}\n{ps2}\n"),
    )
    .unwrap();
    let (mut co, mut starts, mut shares) = (Vec::new(), Vec::new(), Vec::new());
    for (id, row) in &rows1 {
        let (p1, p2) = (ranks_of(&near_ranks, *id), ranks_of(&far_ranks, *id));
        let mine = |runs: &[Run], p: &[i32]| -> Vec<Run> {
            runs.iter()
                .filter(|r| p.contains(&r.pid))
                .copied()
                .collect()
        };
        let (a, b) = (mine(&near, &p1), mine(&far, &p2));
        let (both_ran, ran_a, ran_b) = together(&a, &b);
        co.push(both_ran / ran_a.max(ran_b).max(1e-9));
        starts.extend(row_starts(&a, &b, *row));
        shares.push((
            *id,
            *row,
            row_share(&near, &a, *row),
            row_share(&far, &b, *row),
        ));
    }
    let skews: Vec<f64> = starts.iter().map(RowStart::skew).collect();
    // Which row starts more than 1 ms apart came while the later node's
    // own tick was late: the emulator's share of the skew, not the slots'.
    let (tick, late1, late1_at) = trace::late_ticks(&near_ticks, 0.5e-3);
    let (_, late2, late2_at) = trace::late_ticks(&far_ticks, 0.5e-3);
    let apart: Vec<&RowStart> = starts.iter().filter(|s| s.skew() > 1e-3).collect();
    let in_late_tick = apart
        .iter()
        .filter(|s| {
            let (late_at, started) = if s.n2 > s.n1 {
                (&late2_at, s.n2)
            } else {
                (&late1_at, s.n1)
            };
            late_at
                .iter()
                .any(|(from, to)| *from < started && *to > s.boundary)
        })
        .count();
    let (s50, s99, smax) = (
        trace::percentile(&mut skews.clone(), 50),
        trace::percentile(&mut skews.clone(), 99),
        skews.iter().copied().fold(0.0, f64::max),
    );
    // The fair ideal of the different mixes: n2 holds three jobs, each its
    // third, so three times one job alone where `ideal` is twice.
    const TO_FAIR: f64 = 2.0 / 3.0;
    let vs_ideal = if no_rows.is_nan() {
        format!("makespan {both:.2} s (the ideal, without rows and EEVDF not run: --baselines)")
    } else {
        format!(
            "makespan vs ideal (2x the faster of one job alone under each, same boot) scx_linger with rows {rows_ratio:.2}x, without rows {no_rows:.2}x, EEVDF {eevdf:.2}x; vs the fair ideal (n2 holds three jobs, each its third: 3x the faster alone) with rows {:.2}x, without rows {:.2}x, EEVDF {:.2}x; the same two jobs on otherwise quiet nodes with rows {:.2}x; one job alone on quiet nodes {alone:.2} s (EEVDF {alone_eevdf:.2} s)",
            rows_ratio * TO_FAIR,
            no_rows * TO_FAIR,
            eevdf * TO_FAIR,
            same / ideal
        )
    };
    figure(&format!(
        "two nodes (1 vCPU each, plain TCG), 2 two-node gang jobs (a rank per node, {rounds} rounds of compute and a UDP exchange), n2 also running a local gang and n1 a guest: {vs_ideal}; with rows, each job's ranks running at once {:.0}% / {:.0}% of their run time; each job's share of its own row n1/n2 {}; a row's start on n1 vs n2 p50 {:.2} ms p99 {:.2} ms max {:.2} ms over {} rows, {} of them more than 1 ms apart and {in_late_tick} of those while the later node's own tick (every {:.1} ms) was late; that tick more than 0.5 ms late in {:.0}% / {:.0}% of its intervals on n1 / n2; chrony offset n2-n1 {offset:+.3} ms; over the {window_s:.1} s from the go until the jobs were seen done (the last ended after {both:.1} s), n1's guest ran {guest_s:.2} s and n1 idled {idle1_s:.2} s (harvest {:.0}% of what the jobs left), n2 idled {idle2_s:.2} s; every rank started {ranks_up:.0} s after submission, before the local gang and the guest",
        co.first().unwrap_or(&0.0) * 100.0,
        co.get(1).unwrap_or(&0.0) * 100.0,
        shares
            .iter()
            .map(|(_, _, n1, n2)| format!("{:.0}%/{:.0}%", n1 * 100.0, n2 * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
        s50 * 1e3,
        s99 * 1e3,
        smax * 1e3,
        skews.len(),
        apart.len(),
        tick * 1e3,
        late1 * 100.0,
        late2 * 100.0,
        harvest * 100.0
    ));
    let (hooks_rows, all_rows) = rpcs::hooks_and_all(&asked_rows);
    let plain = asked_plain.map_or(String::new(), |asked| {
        let (hooks, all) = rpcs::hooks_and_all(&asked);
        format!(
            "; one such job without the agents' config {all}, the hooks {hooks} ({})",
            rpcs::describe_hooks(&asked)
        )
    });
    figure(&format!(
        "two nodes: two two-node batch jobs' starts and ends asked slurmctld {all_rows} RPCs with [rows] set, the hooks {hooks_rows} of them ({}){plain}",
        rpcs::describe_hooks(&asked_rows),
    ));
    // The hooks' cost at the controller, per two-node job: PrologSlurmctld's
    // one listing and one update, and each node's Prolog's one look-up of
    // its job.
    assert!(
        hooks_rows <= 2 * (2 + 2),
        "the hooks asked slurmctld {hooks_rows} times for two two-node jobs: {}",
        rpcs::describe_hooks(&asked_rows)
    );
    // What the scheduler is held to here: each job in one row, the same
    // on both nodes, the two in different rows, and in the kernel's trace
    // each job's ranks holding the CPU for most of its own row on both
    // nodes (95-98% measured; what else runs there is ordinary work's
    // relief and the trace itself). The makespans are reported, not
    // judged: on one emulated vCPU per node they swing between boots;
    // bench/README.md reads them.
    assert!(
        rows1.len() == 2 && rows1[0].1 != rows1[1].1,
        "n1's gang table does not give jobs {ids:?} a row each: {rows1:?}\n{table}"
    );
    assert_eq!(rows1, rows2, "the two nodes put the jobs in different rows");
    for (id, row, n1, n2) in &shares {
        assert!(
            *n1 >= 0.5 && *n2 >= 0.5,
            "job {id}'s ranks held the CPU for {:.0}% of row {row} on n1 and {:.0}% on n2, \
             where they lead it: its row does not come at once on both nodes",
            n1 * 100.0,
            n2 * 100.0
        );
    }
    // Real MPI, on nodes that n1's guest and n2's local gang have left.
    mpi::compare(&mut peer, &with_rows).judge();
    // Slurm's own gang scheduling on the same jobs, for the bench.
    if baselines() {
        slurm_gang::compare(
            &mut peer,
            &with_rows,
            &guest,
            rounds,
            alone_eevdf / rounds as f64,
        );
    }
    drop(peer);
    daemons.push(chrony);
    for mut d in daemons {
        let _ = d.kill();
        let _ = d.wait();
    }
}
