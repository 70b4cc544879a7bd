// SPDX-License-Identifier: GPL-2.0-only
//! Gang co-scheduling, judged by an independent observer (the kernel's
//! sched_switch tracepoint) and by the wall and CPU time of a real
//! spinning-barrier job (bench/src/bin/barrier.rs).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::trace::{self, any_and_all, overlap_spans, percentile, period_starts};

/// One round of the barrier job computes this much (about 0.15 ms here).
pub(crate) const ITERS: &str = "20000";

/// Start the barrier job inside `cg` (every thread a member from the start).
pub(crate) fn start_job(cg: &TestCgroup, args: &[&str]) -> Child {
    spawn_in(
        cg,
        &format!("exec {} {}", bench_bin("barrier").display(), args.join(" ")),
    )
}

/// A barrier job of `threads` threads inside `cg` that spins until killed.
pub(crate) fn start_spinning(cg: &TestCgroup, threads: usize) -> Child {
    let n = threads.to_string();
    start_job(
        cg,
        &["--threads", &n, "--rounds", "1000000000", "--iters", ITERS],
    )
}

/// Run the barrier job without a cgroup (EEVDF baselines).
fn start_plain(args: &[&str]) -> Child {
    Command::new(bench_bin("barrier"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the barrier job")
}

/// The job's `key=value` report.
struct Report(String);

impl Report {
    fn get(&self, key: &str) -> u64 {
        self.0
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in barrier output {:?}", self.0))
    }
}

/// Wait for a job (at most `timeout`) and return its report.
fn finish(child: Child, timeout: Duration) -> Report {
    let (status, out) = finish_child(child, timeout);
    assert!(status.success(), "barrier job failed: {status} {out}");
    Report(out)
}

/// Thread ids of a job once all its `n` threads exist.
pub(crate) fn job_threads(child: &Child, n: usize) -> Vec<i32> {
    let mut tids = Vec::new();
    let ok = wait_until(Duration::from_secs(10), || {
        tids = trace::threads_of(child.id());
        tids.len() >= n
    });
    assert!(ok, "job {} never had {n} threads: {tids:?}", child.id());
    tids
}

/// The gang tests are written for 2 vCPUs: check, and load scx_linger.
fn start_on_two_cpus() -> Agent {
    require_guest();
    assert_eq!(nr_cpus(), 2, "this test is written for 2 vCPUs");
    Agent::start(&[])
}

/// The scheduler survived the test: still enabled, and stops cleanly.
fn stop_still_enabled(agent: Agent) {
    assert_eq!(state(), "enabled");
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// Gang slots with the agent's defaults: 100 ms, and an open phase of 10%
/// of the cycle (see gang.rs): two one-slot gangs cycle every 222.2 ms,
/// in whole nanoseconds as the agent computes it (over 10^10 cycles since
/// 1970, rounding the cycle would shift the phase by seconds).
const SLOT_NS: i128 = 100_000_000;
const CYCLE_NS: i128 = 2 * SLOT_NS + 2 * SLOT_NS * 10 / 90;

/// Distance (s) of TAI time `t` (s) from the nearest boundary of that cycle.
fn off_boundary(t: f64) -> f64 {
    let pos = ((t * 1e9) as i128).rem_euclid(CYCLE_NS);
    [0, SLOT_NS, 2 * SLOT_NS, CYCLE_NS]
        .iter()
        .map(|b| (pos - b).abs())
        .min()
        .unwrap_or(0) as f64
        / 1e9
}

#[test]
fn two_gangs_take_turns_together_on_the_clock() {
    let agent = start_on_two_cpus();
    let (a, b) = (TestCgroup::new("gang-a"), TestCgroup::new("gang-b"));
    tag(&a.rel, "gang");
    tag(&b.rel, "gang");
    // Far longer than the test needs (about 50 s of work alone): this
    // test's own thread is ordinary primary work, which waits for the open
    // phase at each wake-up while the gangs fill both CPUs, so its 4 s of
    // settling and tracing can take many times that. Checked below, and
    // the jobs are killed when the trace has been judged.
    let args = ["--threads", "2", "--rounds", "1000000", "--iters", ITERS];
    let mut ja = start_job(&a, &args);
    let mut jb = start_job(&b, &args);
    let (ta, tb) = (job_threads(&ja, 2), job_threads(&jb, 2));

    // Let the agent size and slot both gangs, then watch for 2 s on the
    // TAI clock, the clock the slot table is aligned to.
    std::thread::sleep(Duration::from_secs(2));
    let window = Duration::from_secs(2);
    let (runs, stalled) = trace::record_switches_and_stalls(window, "tai");
    assert!(!runs.is_empty(), "the trace recorded no sched_switch");
    // The measurement means something only if both gangs ran throughout.
    for (name, job) in [("a", &mut ja), ("b", &mut jb)] {
        assert!(
            job.try_wait().unwrap().is_none(),
            "job {name} finished before the trace ended: make its --rounds longer"
        );
    }

    // Judge togetherness inside the slots proper. In the open phase that
    // ends each cycle, ordinary work (this test, the agent's rescans) goes
    // first by design, and the next gang only fills what it leaves.
    let in_slots = trace::clip(&runs, |t| {
        ((t * 1e9) as i128).rem_euclid(CYCLE_NS) < 2 * SLOT_NS
    });
    let (any_a, all_a) = any_and_all(&in_slots, &ta);
    let (any_b, all_b) = any_and_all(&in_slots, &tb);
    let together_a = all_a / any_a.max(1e-9);
    let together_b = all_b / any_b.max(1e-9);
    // A virtual CPU the host stops running goes on showing its member as
    // running, while the other moves on to the next slot: overlap the
    // emulator made. A tick a whole period late marks those spans, and
    // the gangs are judged on the rest of the window.
    let spans = overlap_spans(&runs, &ta, &tb);
    let judged = window.as_secs_f64() - trace::total(&stalled);
    let mixed_ran = trace::total(&trace::subtract(&spans, &stalled));
    let mixed = mixed_ran / judged.max(1e-9);
    let mixed_stalled = (trace::total(&spans) - mixed_ran) / window.as_secs_f64();

    // A gang may start in the open phase that ends each cycle (each
    // slot's gang in turn), where ordinary work goes first and may hold
    // back a member: the skew that matters is that of starts at a slot
    // boundary.
    let (mut skews, mut open_skews, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
    for tids in [&ta, &tb] {
        for starts in period_starts(&runs, tids) {
            if starts.len() == tids.len() {
                let first = starts.iter().copied().fold(f64::MAX, f64::min);
                let last = starts.iter().copied().fold(f64::MIN, f64::max);
                let pos = ((first * 1e9) as i128).rem_euclid(CYCLE_NS);
                if (pos - 2 * SLOT_NS).abs() < SLOT_NS / 10 {
                    open_skews.push(last - first);
                } else {
                    skews.push(last - first);
                }
                offsets.push(off_boundary(first));
            }
        }
    }
    let open50 = percentile(&mut open_skews, 50);
    let (skew50, skew90, skew99) = (
        percentile(&mut skews, 50),
        percentile(&mut skews, 90),
        percentile(&mut skews, 99),
    );
    let (off50, off90) = (percentile(&mut offsets, 50), percentile(&mut offsets, 90));
    figure(&format!(
        "gang: 2 gangs x 2 threads on 2 CPUs, 2 s of sched_switch: members together {:.1}% / {:.1}% of their run time in their slots; gangs overlapping {:.2}% of the time the host ran both virtual CPUs ({:.2}% of the window, and {:.2}% more while a CPU's tick came a period late: {:.0} ms of the window); skew p50 {:.0} us p90 {:.0} us p99 {:.0} us over {} slot starts (early starts in the open phase: p50 {:.0} us over {}); slot start vs TAI boundary p50 {:.2} ms p90 {:.2} ms",
        together_a * 100.0,
        together_b * 100.0,
        mixed * 100.0,
        judged / window.as_secs_f64() * 100.0,
        mixed_stalled * 100.0,
        trace::total(&stalled) * 1e3,
        skew50 * 1e6,
        skew90 * 1e6,
        skew99 * 1e6,
        skews.len(),
        open50 * 1e6,
        open_skews.len(),
        off50 * 1e3,
        off90 * 1e3
    ));

    // A gang whose slot follows another gang's runs nearly all of its
    // slot; one that starts in the open phase shares its start
    // with ordinary work still running there (such as the agent's
    // once-a-second stats reading). Gangs that were not co-scheduled at
    // all would come out near 50%.
    let ran = |tids: &[i32]| -> Vec<(i32, f64)> {
        tids.iter()
            .map(|t| {
                (
                    *t,
                    runs.iter()
                        .filter(|r| r.pid == *t)
                        .map(|r| r.end - r.start)
                        .sum(),
                )
            })
            .collect()
    };
    assert!(
        together_a > 0.7 && together_b > 0.7,
        "members of a gang did not run together: {together_a:.2} / {together_b:.2}; traced run time (tid, s): a {:?}, b {:?}",
        ran(&ta),
        ran(&tb)
    );
    // A CPU that idles stops its tick too, so the spans set aside include
    // idle ones (41% of the window once on 6.12): only a trace with little
    // left to judge is refused.
    assert!(
        judged > 0.2 * window.as_secs_f64(),
        "the host left a virtual CPU unrun for {:.0} ms of the {} s traced: too little to judge the gangs by",
        trace::total(&stalled) * 1e3,
        window.as_secs()
    );
    // Gangs that did not take turns would overlap about half the time.
    // Taking turns, they overlap while one virtual CPU reaches the slot's
    // boundary later than the other: 0.05-0.5% of the time on a quiet
    // host, 0.9-2.3% with a busy loop on one of its two cores (skews p50
    // 1-4 ms at 20 boundaries in 2 s), and once 5.0% on a CI host.
    assert!(
        mixed < 0.10,
        "the two gangs overlapped {:.1}% of the time the host ran both virtual CPUs",
        mixed * 100.0
    );
    assert!(
        skews.len() + open_skews.len() >= 10,
        "only {} slot starts in 2 s of 100 ms slots",
        skews.len() + open_skews.len()
    );
    // Bounds a host tick wide: each vCPU is a host thread of the
    // multi-threaded emulator on 2 host cores, and one the host leaves
    // off its core for a tick (4 ms) starts its member that much late.
    // Runs of one build gave p50 47 us to 3.5 ms (the slowest while the
    // whole pass ran 20% slow); scheduled by EEVDF, members of one job
    // are hardly ever together at all (barrier_gangs_run_their_threads_together).
    assert!(
        skew50 < 0.005 && skew90 < 0.010,
        "co-scheduling skew p50 {:.0} us, p90 {:.0} us",
        skew50 * 1e6,
        skew90 * 1e6
    );
    assert!(
        off50 < 0.003,
        "slot starts are not aligned to the TAI clock: p50 {:.2} ms off",
        off50 * 1e3
    );

    for mut job in [ja, jb] {
        let _ = job.kill();
        let _ = job.wait();
    }
    assert!(agent.output().contains("gang table:"), "{}", agent.output());
    stop_still_enabled(agent);
}

/// A pair of barrier jobs as it ran: the makespan, the two jobs' CPU
/// time, and for each job how long all its threads were on CPUs at once
/// and what share of its run time that was (sched_switch over the whole
/// pair).
struct PairRun {
    wall_ms: f64,
    cpu_ms: f64,
    together_s: [f64; 2],
    together: [f64; 2],
}

/// Launch two barrier jobs with `start` and wait for both, tracing them.
/// Wall time is the makespan on this test's clock, from launching the
/// jobs to the end of the last: a job's own clock starts only in its
/// main(), and a gang left out of a crowded slot may not get to exec
/// before its slot comes (its own figure would then flatter it, below
/// the ideal with more CPU time than two CPUs could give).
fn run_pair(start: impl Fn(usize) -> Child) -> PairRun {
    // Tracing starts before the launch: this test's thread is ordinary
    // work, which waits for the open phase at each wake-up while gangs
    // fill the CPUs, so setting tracefs up after the launch could miss
    // most of the pair's run.
    let (runs, (tids, wall_ms, [ra, rb])) = trace::record_switches_during("mono", || {
        let launched = Instant::now();
        let jobs = [start(0), start(1)];
        let tids = jobs.each_ref().map(|j| job_threads(j, 2));
        let reports = jobs.map(|j| finish(j, Duration::from_secs(300)));
        (tids, launched.elapsed().as_secs_f64() * 1e3, reports)
    });
    let spans = tids.map(|t| any_and_all(&runs, &t));
    PairRun {
        wall_ms,
        cpu_ms: (ra.get("cpu_ms") + rb.get("cpu_ms")) as f64,
        together_s: spans.map(|(_, all)| all),
        // + 0.0: no "-0%" in the figure when they never ran together.
        together: spans.map(|(any, all)| all / any.max(1e-9) + 0.0),
    }
}

#[test]
fn barrier_gangs_run_their_threads_together() {
    require_guest();
    assert_eq!(nr_cpus(), 2, "this test is written for 2 vCPUs");
    // About 1 s alone: long enough that a job's start (exec over 9p, its
    // threads appearing one by one, being sized and slotted) is a small
    // part of it, as it is for real parallel jobs.
    let args = ["--threads", "2", "--rounds", "18000", "--iters", ITERS];

    // The bench's baselines (`--baselines`), which nothing here judges:
    // the job alone, then two at once, under the kernel's own scheduler.
    // Alone twice, keeping the faster: the first run after boot pays for
    // loading the binary and warming the emulator. The pair under EEVDF
    // shows that its threads overlap by chance, whatever the length: a
    // tenth of the rounds shows it (its makespan, 10-15x the ideal, is
    // the bench's, bench/README.md).
    let baseline = baselines().then(|| {
        let (alone_wall, alone_cpu) = [0, 1]
            .map(|_| {
                let launched = Instant::now();
                let r = finish(start_plain(&args), Duration::from_secs(120));
                (
                    launched.elapsed().as_secs_f64() * 1e3,
                    r.get("cpu_ms") as f64,
                )
            })
            .into_iter()
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .unwrap();
        let short = ["--threads", "2", "--rounds", "1800", "--iters", ITERS];
        (alone_wall, alone_cpu, run_pair(|_| start_plain(&short)))
    });

    let agent = Agent::start(&[]);
    let (a, b) = (TestCgroup::new("gang-a"), TestCgroup::new("gang-b"));
    tag(&a.rel, "gang");
    tag(&b.rel, "gang");
    let linger = run_pair(|i| start_job([&a, &b][i], &args));
    let pct = |p: &PairRun| two_pcts(p.together);
    let eevdf = baseline
        .as_ref()
        .map_or("not run (--baselines)".into(), |b| {
            format!("{} (a tenth of the rounds)", pct(&b.2))
        });
    let vs_alone = match &baseline {
        Some((alone_wall, alone_cpu, _)) => format!(
            "(alone {alone_wall:.0} ms): scx_linger wall vs ideal {:.2}x, CPU time vs alone {:.2}x",
            linger.wall_ms / (2.0 * alone_wall),
            linger.cpu_ms / (2.0 * alone_cpu),
        ),
        None => format!("(alone not run): scx_linger wall {:.0} ms", linger.wall_ms),
    };
    let together_vs_alone = baseline
        .as_ref()
        .map_or(String::new(), |(alone_wall, _, _)| {
            format!(
                " (time together vs alone {:.2}x / {:.2}x)",
                linger.together_s[0] * 1e3 / alone_wall,
                linger.together_s[1] * 1e3 / alone_wall,
            )
        });
    figure(&format!(
        "gang: 2 barrier jobs x 2 threads on 2 CPUs {vs_alone}; threads together EEVDF {eevdf}, scx_linger {}{together_vs_alone}",
        pct(&linger),
    ));

    // What the scheduler controls, and what this test judges: whether a
    // gang's threads run at the same time. Threads left to the default
    // scheduler overlap only by chance; threads co-scheduled in slots
    // overlap nearly all the time (the start, before the agent has seen a
    // job's threads and slotted it, counts against it).
    //
    // Wall time against the ideal is reported, and held to its target in
    // bench/ (median of repeats), but not judged here: under
    // multi-threaded TCG the emulator's speed for this job drifts far
    // more than any scheduler effect. The same job alone took 0.97-1.62 s
    // over ten runs in one boot, and 1.1 s, 2.0 s and 16 s in three boots
    // of the same day, while the same job run natively on the host stayed
    // within 5%. "Time together vs alone" in the figure shows which it was: a job
    // that needed more time with all its threads on CPUs than it took alone
    // was slowed by the emulator, not kept apart by the scheduler.
    assert!(
        linger.together.iter().all(|t| *t > 0.7),
        "gang members ran together only {} of their run time (EEVDF {eevdf})",
        pct(&linger),
    );
    stop_still_enabled(agent);
}

#[test]
fn a_sleeping_member_lends_its_cpu_to_a_guest() {
    require_guest();
    assert_eq!(nr_cpus(), 2, "this test is written for 2 vCPUs");
    // Guests get 1 s slices: a member that had to wait for the guest's
    // slice to end (or for the next slot boundary, 100 ms) instead of
    // taking its CPU back would be late by far more than emulation noise.
    let agent = Agent::start(&["--guest-slice-us", "1000000"]);
    let (g, guests) = (TestCgroup::new("gang-nap"), TestCgroup::new("guest-job"));
    tag(&g.rel, "gang");
    tag(&guests.rel, "guest");
    // Member 0 (the job's main thread) sleeps 20 ms after every 100
    // rounds (about 15 ms of work), its partner spins at the barrier
    // meanwhile.
    let args = "--threads 2 --rounds 15000 --iters 20000 --nap-ms 20 --nap-every 100";
    let args: Vec<&str> = args.split(' ').collect();
    // The napper's waits from wake-up to running, as the kernel traced
    // them, less what the host stalled the guest in them: the job's own
    // timer lateness also counts the host's stalls (on a loaded host,
    // 100 ms at a time), which look like a missed slot.
    let napping_job = || {
        trace::wake_waits_the_host_ran(|| {
            let job = start_job(&g, &args);
            let napper = vec![job.id() as i32];
            (napper, finish(job, Duration::from_secs(120)))
        })
    };
    // Baseline: how late a sleeper gets its CPU back here with no guest.
    let (mut alone, (alone_touched, alone_taken), _) = napping_job();
    let hog = guests.spin(1);
    let before = total_runtime(&hog);
    let (mut waits, (touched, taken), report) = napping_job();
    let guest_ns = total_runtime(&hog) - before;
    let wall_ns = report.get("wall_ms") * 1_000_000;
    let share = guest_ns as f64 / wall_ns as f64;
    let us = |v: &mut Vec<f64>, p| (percentile(v, p) * 1e6) as u64;
    let (p50, p99, max) = (us(&mut waits, 50), us(&mut waits, 99), us(&mut waits, 100));
    let (base50, base99) = (us(&mut alone, 50), us(&mut alone, 99));
    figure(&format!(
        "gang: a member sleeping 20 ms in every ~35 ms: the guest got {:.0}% of a CPU meanwhile; from wake-up to running the member waited p50 {p50} us, p99 {p99} us, longest {max} us over {} wake-ups, vs {base50} / {base99} us with no guest (host stalls taken out of {touched} and {alone_touched} waits: {:.1} and {:.1} ms)",
        share * 100.0,
        waits.len(),
        taken * 1e3,
        alone_taken * 1e3
    ));
    assert!(
        share > 0.15,
        "the guest got only {:.1}% of a CPU while a member slept",
        share * 100.0
    );
    assert!(
        waits.len() >= 100 && alone.len() >= 100,
        "the napper woke only {} and {} times in the trace",
        waits.len(),
        alone.len()
    );
    // Never a guest's slice (1 s) nor a slot (100 ms): p99 under half a
    // slot. Smaller waits happen by design in the open phase at the end of
    // each cycle, where ordinary primaries (the agent itself) go first.
    assert!(
        p50 < base50 + 1000 && p99 < 50_000,
        "a waking member waited {p50} / {p99} us (p50 / p99) for its CPU beside a guest with 1 s slices, {base50} / {base99} us without"
    );
    drop(hog);
    stop_still_enabled(agent);
}

#[test]
fn an_oversized_gang_is_reported_and_still_progresses() {
    let agent = start_on_two_cpus();
    let g = TestCgroup::new("gang-big");
    tag(&g.rel, "gang");
    let started = Instant::now();
    let job = start_job(&g, &["--threads", "3", "--rounds", "200", "--iters", ITERS]);
    let report = finish(job, Duration::from_secs(180));
    figure(&format!(
        "gang: a 3-thread gang on 2 CPUs finished 200 barrier rounds in {:.1} s (it cannot be co-scheduled; its threads take turns)",
        started.elapsed().as_secs_f64()
    ));
    assert_eq!(report.get("rounds"), 200);
    let ok = wait_until(Duration::from_secs(5), || {
        agent.output().contains("cannot be co-scheduled")
    });
    assert!(
        ok,
        "the agent did not report the oversized gang: {}",
        agent.output()
    );
    assert!(ejections(&dmesg()).is_empty(), "{:?}", ejections(&dmesg()));
    stop_still_enabled(agent);
}

/// The job's threads' schedstat, summed: CPU time and runs (ns, count).
fn job_runs(pid: u32, tids: &[i32]) -> (u64, u64) {
    tids.iter()
        .map(|t| linger_bench::schedstat(&format!("/proc/{pid}/task/{t}/schedstat")))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.2))
}

#[test]
fn members_of_an_oversized_gang_take_whole_turns() {
    let agent = start_on_two_cpus();
    let g = TestCgroup::new("gang-turns");
    tag(&g.rel, "gang");
    // Three spinning members on two CPUs: one always waits in its gang's
    // queue, and a member whose turn ends gives its CPU to it. A member
    // that claimed its CPU back at once (it stays runnable) preempted the
    // one chosen in its place, which did the same: runs of 80-120 us,
    // hundreds in a row, each little more than the switch.
    let mut job = start_spinning(&g, 3);
    let tids = job_threads(&job, 3);
    std::thread::sleep(Duration::from_secs(1));
    let (cpu0, runs0) = job_runs(job.id(), &tids);
    std::thread::sleep(Duration::from_secs(3));
    let (cpu1, runs1) = job_runs(job.id(), &tids);
    let _ = job.kill();
    let _ = job.wait();
    let runs = runs1 - runs0;
    let mean_ms = (cpu1 - cpu0) as f64 / runs.max(1) as f64 / 1e6;
    figure(&format!(
        "gang: 3 spinning members on 2 CPUs: {runs} runs in 3 s, {mean_ms:.1} ms each on average (turns of a primary slice, 20 ms)"
    ));
    assert!(
        mean_ms >= 2.0,
        "members of an oversized gang ran {mean_ms:.2} ms at a time ({runs} runs in 3 s): they threw each other off instead of taking turns"
    );
    assert!(ejections(&dmesg()).is_empty(), "{:?}", ejections(&dmesg()));
    stop_still_enabled(agent);
}

#[test]
fn ordinary_primaries_keep_waking_up_beside_a_gang() {
    let agent = start_on_two_cpus();
    let g = TestCgroup::new("gang-solo");
    tag(&g.rel, "gang");
    // A one-thread gang holds a CPU for its whole slot, two CPU-bound
    // primaries share the rest, and a primary wakes every 20 ms to do 1 ms
    // of work. Were the gang to drive the primary vtime clock, every
    // waking primary would be queued behind the hogs for good, the
    // kernel's own workers among them, until the watchdog ends the
    // scheduler.
    let _member = g.spin(1);
    let _hogs = Hogs::spin(2);
    std::thread::sleep(Duration::from_secs(2));
    let waker = DutyThreads::start(1, Duration::from_millis(1), Duration::from_millis(20));
    let (r0, d0, s0) = waker.schedstat();
    let window = Duration::from_secs(10);
    std::thread::sleep(window);
    let (r1, d1, s1) = waker.schedstat();
    let slices = s1 - s0;
    let delay_ms = (d1 - d0) as f64 / slices.max(1) as f64 / 1e6;
    figure(&format!(
        "gang: a primary waking every 20 ms beside a one-thread gang and two CPU-bound primaries: {slices} runs in 10 s, mean run delay {delay_ms:.1} ms, {:.0} ms of CPU",
        (r1 - r0) as f64 / 1e6
    ));
    // Up to ~470 wake-ups fit in 10 s; a starved waker manages a handful.
    assert!(
        slices > 100,
        "the waking primary ran only {slices} times in 10 s"
    );
    assert!(delay_ms < 50.0, "mean run delay {delay_ms:.1} ms");
    drop(waker);
    stop_still_enabled(agent);
}

/// Mean wait for a CPU per wake-up (ms) of a thread of ordinary primary
/// work that wakes every 20 ms for 1 ms of work, over `window`, beside
/// whatever runs now.
fn ordinary_wake_delay_ms(window: Duration) -> (f64, u64) {
    let waker = DutyThreads::start(1, Duration::from_millis(1), Duration::from_millis(20));
    std::thread::sleep(Duration::from_millis(500));
    let (_, d0, s0) = waker.schedstat();
    std::thread::sleep(window);
    let (_, d1, s1) = waker.schedstat();
    let runs = s1 - s0;
    ((d1 - d0) as f64 / runs.max(1) as f64 / 1e6, runs)
}

#[test]
fn ordinary_work_gets_relief_while_gangs_fill_every_cpu() {
    require_guest();
    assert_eq!(nr_cpus(), 2, "this test is written for 2 vCPUs");
    let (a, b) = (TestCgroup::new("gang-a"), TestCgroup::new("gang-b"));
    // Two gangs that compute without pause fill both CPUs in every slot;
    // ordinary work is sure only of the open phase at the end of each
    // 222 ms cycle. Killed with their cgroups.
    let args = ["--threads", "2", "--rounds", "1000000000", "--iters", ITERS];
    // Some 15 runs of the waker without relief, 150 with.
    let window = Duration::from_secs(3);
    let measure = |agent_args: &[&str]| {
        let agent = Agent::start(agent_args);
        tag(&a.rel, "gang");
        tag(&b.rel, "gang");
        let mut jobs = [start_job(&a, &args), start_job(&b, &args)];
        let tids = jobs.each_ref().map(|j| job_threads(j, 2));
        std::thread::sleep(Duration::from_secs(2));
        // The gangs end inside the trace: without relief this test is
        // itself ordinary work that they starve, and it reads and parses
        // the trace several times faster on free CPUs.
        let (runs, (delay_ms, wakes)) = trace::record_switches_during("mono", || {
            let delay = ordinary_wake_delay_ms(window);
            for j in &mut jobs {
                let _ = j.kill();
                let _ = j.wait();
            }
            delay
        });
        let together = tids.map(|t| {
            let (any, all) = any_and_all(&runs, &t);
            all / any.max(1e-9)
        });
        stop_still_enabled(agent);
        (delay_ms, wakes, together)
    };
    let (off_ms, off_wakes, off_together) = measure(&["--relief-period-us", "0"]);
    let (on_ms, on_wakes, on_together) = measure(&[]);
    figure(&format!(
        "gang relief: a primary waking every 20 ms beside two gangs filling both CPUs: mean wait {on_ms:.1} ms ({on_wakes} runs in {} s) with relief, {off_ms:.1} ms ({off_wakes} runs) without; gang members together {:.0}% / {:.0}% with, {:.0}% / {:.0}% without",
        window.as_secs(),
        on_together[0] * 100.0,
        on_together[1] * 100.0,
        off_together[0] * 100.0,
        off_together[1] * 100.0
    ));
    // The waker needs 1 ms in 20, the whole relief budget (2 ms in 40),
    // which the node's other ordinary work shares: it waits for the
    // budget about half of its wake-ups (22 ms on average; 44 ms when a
    // turn came only after a 40 ms wait), against most of a cycle without
    // relief. A turn displaces a member, whose partner spins through it,
    // so members stay together a little less of the time.
    assert!(
        on_ms < 60.0 && on_ms < off_ms / 3.0,
        "ordinary work waited {on_ms:.1} ms per wake-up with relief ({off_ms:.1} ms without)"
    );
    assert!(
        on_together.iter().all(|t| *t > 0.7),
        "relief broke up the gangs: members together {on_together:?}"
    );
}

#[test]
fn gangs_bound_to_the_same_cpu_each_get_their_own_slot() {
    let agent = start_on_two_cpus();
    let (a, b) = (
        TestCgroup::new("gang-bound-a"),
        TestCgroup::new("gang-bound-b"),
    );
    tag(&a.rel, "gang");
    tag(&b.rel, "gang");
    // Two one-thread gangs bound to CPU 1 by affinity, not by a cpuset:
    // admission counts CPUs (one each, two free), so each is admitted
    // beside the other's lead, and only the slot says which one has CPU 1.
    let hogs = [a.spin(1), b.spin(1)];
    for h in &hogs {
        bind_to_cpu(h.pids()[0], 1);
    }
    std::thread::sleep(Duration::from_secs(2));
    let pids: Vec<i32> = hogs.iter().map(|h| h.pids()[0]).collect();
    let before = hogs.each_ref().map(total_runtime);
    let window = Duration::from_secs(10);
    let (waits, ()) = trace::record_ready_waits(|| std::thread::sleep(window));
    let after = hogs.each_ref().map(total_runtime);
    let shares: Vec<f64> = (0..2)
        .map(|i| (after[i] - before[i]) as f64 / window.as_nanos() as f64)
        .collect();
    let longest: Vec<f64> = pids
        .iter()
        .map(|p| {
            waits
                .iter()
                .find(|w| w.pid == *p)
                .map_or(window.as_secs_f64(), |w| w.secs)
        })
        .collect();
    figure(&format!(
        "gang: two one-thread gangs bound to one CPU: shares {:.0}% / {:.0}% of it, longest waits {:.0} / {:.0} ms",
        shares[0] * 100.0,
        shares[1] * 100.0,
        longest[0] * 1e3,
        longest[1] * 1e3
    ));
    // Each leads 100 ms of a 222 ms cycle: about 45-55% each. Waiting out
    // the other's slot and the open phase takes 122 ms; a loaded host
    // stretches it, a starved gang waits the whole window.
    assert!(
        shares.iter().all(|s| *s > 0.25),
        "each gang gets its slot on the CPU: shares {shares:?}"
    );
    assert!(
        longest.iter().all(|w| *w < 1.0),
        "longest waits {longest:?} s"
    );
    assert!(ejections(&dmesg()).is_empty(), "{:?}", ejections(&dmesg()));
    stop_still_enabled(agent);
}
