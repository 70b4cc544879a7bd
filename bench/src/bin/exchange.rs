// SPDX-License-Identifier: GPL-2.0-only
//! One rank of a two-rank job that spans two nodes, like an MPI program
//! whose progress engine spin-polls: each round a rank computes, sends its
//! peer a message over UDP and spins on a non-blocking socket until the
//! peer's message of the same round arrives. A rank that is not running
//! holds its peer up, so the job runs at its pace only when both ranks run
//! at the same moment: co-scheduled across nodes.
//!
//! Usage: exchange --rank 0|1 --peer HOST --port P [--rounds R] [--iters I]
//!                 [--idle-us U] [--meet-s S] [--go FILE]
//!
//! The ranks first wait up to `--meet-s` (60 s) for each other, as an MPI
//! runtime's start-up does: a batch system starts them on their nodes
//! at different moments, and a busy node's step daemon starts late. With
//! `--go`, they then sleep until FILE exists (as long again at most), so
//! that a bench can start several jobs' rounds at one moment whenever
//! their start-ups end. The wall time counts from the meeting, or from
//! the go.
//!
//! With `--idle-us`, a rank sleeps that long after each round, as a rank
//! that waits on I/O between its exchanges does, and blocks in `recv()`
//! for its peer's message instead of spinning, as a blocking MPI receive
//! does: its CPU is idle for both waits, for whatever else the node runs.
//!
//! Rank r listens on port P + r and sends to the peer's P + 1 - r. Under
//! Slurm, `--slurm` takes the rank from SLURM_PROCID, the peer from
//! SLURM_JOB_NODELIST (two nodes, one task each) and the port from the
//! job id. Prints one line: `wall_ms=… cpu_ms=… rounds=… rank=… end_ms=…`,
//! the last the Unix time at the end (a bench compares jobs that did not
//! run at the same time by it, on one node's clock).
use std::net::{ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use linger_bench::{process_cpu_s, work};

struct Args {
    rank: u16,
    peer: String,
    port: u16,
    rounds: u64,
    iters: u64,
    idle: Duration,
    meet: Duration,
    go: Option<std::path::PathBuf>,
}

/// The other node of a two-node Slurm hostlist (`n[1-2]` or `a,b`).
fn other_node(list: &str, me: &str) -> Option<String> {
    let names: Vec<String> = match list.split_once('[') {
        Some((prefix, rest)) => rest
            .trim_end_matches(']')
            .split(',')
            .flat_map(|r| match r.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                    Some((a..=b).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>())
                }
                None => Some(vec![format!("{prefix}{r}")]),
            })
            .flatten()
            .collect(),
        None => list.split(',').map(str::to_string).collect(),
    };
    names.into_iter().find(|n| n != me)
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        rank: 0,
        peer: String::new(),
        port: 40000,
        rounds: 2000,
        iters: 20_000,
        idle: Duration::ZERO,
        meet: Duration::from_secs(60),
        go: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let num = |v: String, name: &str| v.parse::<u64>().map_err(|_| format!("{name}: {v:?}"));
        match flag.as_str() {
            "--rank" => a.rank = num(val("--rank")?, "--rank")?.min(1) as u16,
            "--peer" => a.peer = val("--peer")?,
            "--port" => a.port = num(val("--port")?, "--port")? as u16,
            "--rounds" => a.rounds = num(val("--rounds")?, "--rounds")?,
            "--iters" => a.iters = num(val("--iters")?, "--iters")?,
            "--idle-us" => a.idle = Duration::from_micros(num(val("--idle-us")?, "--idle-us")?),
            "--meet-s" => a.meet = Duration::from_secs(num(val("--meet-s")?, "--meet-s")?),
            "--go" => a.go = Some(val("--go")?.into()),
            "--slurm" => {
                let env =
                    |k: &str| std::env::var(k).map_err(|_| format!("--slurm: {k} is not set"));
                a.rank = env("SLURM_PROCID")?
                    .parse::<u16>()
                    .map_err(|e| e.to_string())?
                    .min(1);
                let me = env("SLURMD_NODENAME")?;
                a.peer = other_node(&env("SLURM_JOB_NODELIST")?, &me)
                    .ok_or("--slurm: the job has no second node")?;
                let job: u64 = env("SLURM_JOB_ID")?.parse().map_err(|_| "SLURM_JOB_ID")?;
                a.port = 20000 + (job % 20000) as u16 * 2;
            }
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    if a.peer.is_empty() {
        return Err("--peer (or --slurm) is required".into());
    }
    Ok(a)
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("exchange: {e}");
            std::process::exit(2);
        }
    };
    let sock = UdpSocket::bind(("0.0.0.0", a.port + a.rank)).unwrap_or_else(|e| {
        eprintln!("exchange: binding port {}: {e}", a.port + a.rank);
        std::process::exit(1);
    });
    // Resolved once, as an MPI runtime exchanges addresses at start-up: a
    // host name passed to every send_to() is looked up again each time
    // (files read, a netlink query), which would put a sleep in every
    // round on a node whose files are slow.
    let peer_port = a.port + 1 - a.rank;
    let peer = (a.peer.as_str(), peer_port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.find(|addr| addr.is_ipv4()))
        .unwrap_or_else(|| {
            eprintln!("exchange: --peer {}: no IPv4 address for that name", a.peer);
            std::process::exit(2);
        });
    sock.set_nonblocking(true).expect("non-blocking socket");
    let blocking = !a.idle.is_zero();
    // Meet first (message 0): the peer may start later. Resend until it
    // answers. Round r's message is r + 1.
    let mut buf = [0u8; 8];
    let met = Instant::now();
    loop {
        let _ = sock.send_to(&0u64.to_le_bytes(), peer);
        std::thread::sleep(Duration::from_millis(5));
        let mut heard = false;
        while let Ok((n, _)) = sock.recv_from(&mut buf) {
            heard |= n == 8;
        }
        if heard {
            let _ = sock.send_to(&0u64.to_le_bytes(), peer);
            break;
        }
        if met.elapsed() > a.meet {
            eprintln!(
                "exchange: no word from {}:{} in {} s (--meet-s)",
                a.peer,
                peer_port,
                a.meet.as_secs()
            );
            std::process::exit(1);
        }
    }
    if let Some(go) = &a.go {
        let waiting = Instant::now();
        while !go.exists() {
            if waiting.elapsed() > a.meet {
                eprintln!(
                    "exchange: no {} in {} s (--go)",
                    go.display(),
                    a.meet.as_secs()
                );
                std::process::exit(1);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    if blocking {
        sock.set_nonblocking(false).expect("blocking socket");
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("socket read timeout");
    }
    let cpu0 = process_cpu_s();
    let start = Instant::now();
    for round in 0..a.rounds {
        work(a.iters);
        let msg = (round + 1).to_le_bytes();
        let _ = sock.send_to(&msg, peer);
        // Spin-poll, as a progress engine does, for the peer's round (or a
        // later one: it got ours and went on). A datagram lost on the way
        // is sent again after a while without word.
        let mut sent = Instant::now();
        loop {
            match sock.recv_from(&mut buf) {
                Ok((8, _)) if u64::from_le_bytes(buf) > round => break,
                Ok(_) => {}
                // Interrupted: a recv() with a read timeout fails so when
                // the rank is stopped and continued (signal(7)), as
                // Slurm's gang mode suspends and resumes whole jobs.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    if sent.elapsed() >= Duration::from_millis(200) {
                        let _ = sock.send_to(&msg, peer);
                        sent = Instant::now();
                    }
                    std::hint::spin_loop()
                }
                Err(e) => {
                    eprintln!("exchange: {e}");
                    std::process::exit(1);
                }
            }
        }
        if !a.idle.is_zero() {
            std::thread::sleep(a.idle);
        }
    }
    let wall = start.elapsed();
    // Let the peer see the last round even if it lost our first send.
    for _ in 0..3 {
        let _ = sock.send_to(&a.rounds.to_le_bytes(), peer);
    }
    let end = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    println!(
        "wall_ms={} cpu_ms={:.0} rounds={} rank={} end_ms={}",
        wall.as_millis(),
        (process_cpu_s() - cpu0) * 1e3,
        a.rounds,
        a.rank,
        end.as_millis()
    );
}
