// SPDX-License-Identifier: GPL-2.0-only
//! An independent observer of who ran where and when: the kernel's
//! `sched_switch` tracepoint through tracefs, turned into per-CPU run
//! intervals. The gang tests judge co-scheduling from this, not from the
//! scheduler's own counters.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::{Mutex, Once};
use std::time::Duration;

mod spans;
pub use spans::*;

const TRACEFS: &str = "/sys/kernel/tracing";

/// One task from `start` to `end` (seconds on the trace clock), on one
/// CPU: a CPU's runs never overlap, which the analysis relies on.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub pid: i32,
    pub cpu: u32,
    pub start: f64,
    pub end: f64,
}

fn write(name: &str, value: &str) {
    fs::write(Path::new(TRACEFS).join(name), value)
        .unwrap_or_else(|e| panic!("writing {value:?} to {TRACEFS}/{name}: {e}"));
}

fn mount_tracefs() {
    if !Path::new(TRACEFS).join("trace").exists() {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "cannot mount tracefs at {TRACEFS}: the gang tests need sched_switch"
        );
    }
}

/// A flight recorder: the kernel's scheduling, timer and softirq events
/// kept in a tracefs instance of their own, beside the main buffer whose
/// windows the tests judge, and written to the results folder when the
/// kernel ended the scheduler while it ran: what ran, and what did not,
/// in the seconds a stall report covers.
pub struct FlightRecorder {
    dir: std::path::PathBuf,
    name: String,
}

const FLIGHT_EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "timer/hrtimer_expire_entry",
    "irq/softirq_entry",
];

impl FlightRecorder {
    pub fn start(name: &str) -> Self {
        mount_tracefs();
        let dir = Path::new(TRACEFS).join("instances").join(name);
        let _ = fs::create_dir(&dir);
        let set = |file: &str, value: &str| {
            fs::write(dir.join(file), value).unwrap_or_else(|e| {
                panic!("writing {value:?} to {}: {e}", dir.join(file).display())
            })
        };
        set("tracing_on", "0");
        set("trace_clock", "mono");
        let per_cpu_kb = (131_072 / crate::common::nr_cpus()).min(32_768);
        set("buffer_size_kb", &per_cpu_kb.to_string());
        for e in FLIGHT_EVENTS {
            set(&format!("events/{e}/enable"), "1");
        }
        // The kernel's exit dump stops the recording: what led up to an
        // ejection stays in the buffer, not what came after it.
        let _ = fs::write(
            dir.join("events/sched_ext/sched_ext_dump/trigger"),
            "traceoff",
        );
        set("trace", "");
        set("tracing_on", "1");
        FlightRecorder {
            dir,
            name: name.into(),
        }
    }
}

impl Drop for FlightRecorder {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        if !crate::common::ejections(&crate::common::dmesg()).is_empty() {
            if let Ok(text) = fs::read_to_string(self.dir.join("trace")) {
                let _ = fs::write(
                    crate::common::results_dir().join(format!("{}.txt", self.name)),
                    text,
                );
            }
        }
        for e in FLIGHT_EVENTS {
            let _ = fs::write(self.dir.join(format!("events/{e}/enable")), "0");
        }
        let _ = fs::write(
            self.dir.join("events/sched_ext/sched_ext_dump/trigger"),
            "!traceoff",
        );
        let _ = fs::remove_dir(&self.dir);
    }
}

/// The enable file of a trace event: `sched_switch` is the sched
/// subsystem's, `timer/hrtimer_expire_entry` names its own.
fn event_enable(event: &str) -> String {
    if event.contains('/') {
        format!("events/{event}/enable")
    } else {
        format!("events/sched/{event}/enable")
    }
}

/// Record the `events` (the sched subsystem's unless one is named) on
/// trace clock `clock` ("mono", "tai", ...) while `during` runs, and
/// return the trace text with what it returned.
fn record<T>(clock: &str, events: &[&str], during: impl FnOnce() -> T) -> (String, T) {
    mount_tracefs();
    write("tracing_on", "0");
    write("trace_clock", clock);
    // 8 MiB per CPU, 128 MiB in all at most: a many-CPU guest's memory
    // is not all the trace's.
    let per_cpu_kb = (131_072 / crate::common::nr_cpus()).min(8192);
    write("buffer_size_kb", &per_cpu_kb.to_string());
    for e in events {
        write(&event_enable(e), "1");
    }
    write("trace", "");
    write("tracing_on", "1");
    let out = during();
    write("tracing_on", "0");
    let text = fs::read_to_string(Path::new(TRACEFS).join("trace")).expect("reading the trace");
    keep_for_a_failure(&text);
    for e in events {
        write(&event_enable(e), "0");
    }
    write("trace_clock", "local");
    (text, out)
}

/// The last trace recorded, written to the results folder (which
/// outlives the guest) by a failing test's panic. Written after every
/// window instead, its megabytes cost seconds each on an emulated CPU
/// that the test's load already starves.
static LAST_TRACE: Mutex<String> = Mutex::new(String::new());

fn keep_for_a_failure(text: &str) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let earlier = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Ok(t) = LAST_TRACE.try_lock() {
                let path = crate::common::results_dir().join("last-trace.txt");
                let _ = fs::write(path, t.as_bytes());
            }
            earlier(info);
        }));
    });
    if let Ok(mut t) = LAST_TRACE.lock() {
        t.clear();
        t.push_str(text);
    }
}

/// Record sched_switch for `window` on trace clock `clock` and return
/// every run in it, those cut by the window's ends included.
pub fn record_whole_runs(window: Duration, clock: &str) -> Vec<Run> {
    let (text, _) = record(clock, &["sched_switch"], || std::thread::sleep(window));
    runs_from_whole_trace(&text)
}

/// Record sched_switch for `window`, and when each CPU's scheduler tick
/// fired: `(cpu, seconds on the clock)`. The tick's period is fixed
/// (CONFIG_HZ), so a tick that comes late says that the CPU itself did
/// not run, or ran with interrupts off, whatever the scheduler had asked
/// for: under emulation, that the host did not run the virtual CPU.
pub fn record_switches_and_ticks(window: Duration, clock: &str) -> (Vec<Run>, Vec<(u32, f64)>) {
    let (text, ()) = record(
        clock,
        &["sched_switch", "timer/hrtimer_expire_entry"],
        || std::thread::sleep(window),
    );
    (runs_from_trace(&text), tick_times(&text))
}

/// Record sched_switch for `window` on trace clock `clock`: the runs
/// seen, and when the host stalled a virtual CPU (host_stalls), spans in
/// which whatever the guest traced as running did not run.
pub fn record_switches_and_stalls(window: Duration, clock: &str) -> (Vec<Run>, Vec<(f64, f64)>) {
    let (runs, ticks) = record_switches_and_ticks(window, clock);
    let stalls = host_stalls(&runs, &ticks);
    (runs, stalls)
}

/// The scheduler tick of the CPUs in `ticks` (from
/// record_switches_and_ticks): its usual interval (the median, s), the
/// share of intervals more than `slack` s longer, and those intervals as
/// (from, to). The kernel arms the tick every 1/HZ on a CPU that runs a
/// task, so a late one means the CPU did not run then or ran with
/// interrupts off: under emulation, mostly that the host did not run the
/// virtual CPU, and whatever the guest traced as running then did not.
pub fn late_ticks(ticks: &[(u32, f64)], slack: f64) -> (f64, f64, Vec<(f64, f64)>) {
    let intervals = tick_intervals(ticks);
    if intervals.is_empty() {
        return (0.0, 0.0, Vec::new());
    }
    let mut lengths: Vec<f64> = intervals.iter().map(|(_, a, b)| b - a).collect();
    let usual = percentile(&mut lengths, 50);
    let late: Vec<(f64, f64)> = intervals
        .into_iter()
        .filter(|(_, a, b)| b - a > usual + slack)
        .map(|(_, a, b)| (a, b))
        .collect();
    (usual, late.len() as f64 / lengths.len() as f64, late)
}

/// Each CPU's intervals between consecutive ticks: (cpu, from, to).
fn tick_intervals(ticks: &[(u32, f64)]) -> Vec<(u32, f64, f64)> {
    let mut by_cpu: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for (cpu, t) in ticks {
        by_cpu.entry(*cpu).or_default().push(*t);
    }
    by_cpu
        .into_iter()
        .flat_map(|(cpu, mut t)| {
            t.sort_by(f64::total_cmp);
            t.windows(2).map(|w| (cpu, w[0], w[1])).collect::<Vec<_>>()
        })
        .collect()
}

/// When each CPU's scheduler tick fired in trace `text` (the tick's
/// hrtimer function: `tick_nohz_handler`, `tick_sched_timer` before 6.10).
fn tick_times(text: &str) -> Vec<(u32, f64)> {
    text.lines()
        .filter(|l| {
            l.contains("function=tick_nohz_handler") || l.contains("function=tick_sched_timer")
        })
        .filter_map(|l| parse_head(l.split_once(": hrtimer_expire_entry:")?.0))
        .collect()
}

/// Record sched_switch while `during` runs; return the run intervals seen
/// and what `during` returned.
pub fn record_switches_during<T>(clock: &str, during: impl FnOnce() -> T) -> (Vec<Run>, T) {
    let (text, out) = record(clock, &["sched_switch"], during);
    (runs_from_trace(&text), out)
}

/// For `window`: how long each wake-up of one of `tids` waited before the
/// task ran (seconds), from sched_wakeup to the sched_switch onto it.
pub fn record_wake_waits(window: Duration, tids: &[i32]) -> Vec<f64> {
    let (text, ()) = record("mono", &["sched_wakeup", "sched_switch"], || {
        std::thread::sleep(window)
    });
    wake_waits(&text, tids)
}

/// What one window's trace says of some threads: each wake-up (when it
/// came, how long it waited), every run on every CPU meanwhile, and how
/// often the threads went to sleep.
pub struct WakeTrace {
    pub waits: Vec<(f64, f64)>,
    pub runs: Vec<Run>,
    /// Switches away from one of the threads that left it sleeping: the
    /// kernel's count of the rounds of a loop that sleeps once a round.
    pub sleeps: usize,
}

/// Record `tids` over `window`; `first` runs as the window opens and
/// `last` as it closes (before the trace is read back).
pub fn record_wake_waits_around(
    window: Duration,
    tids: &[i32],
    first: impl FnOnce(),
    last: impl FnOnce(),
) -> WakeTrace {
    let (text, ()) = record("mono", &["sched_wakeup", "sched_switch"], || {
        first();
        std::thread::sleep(window);
        last();
    });
    let sleeps = text
        .lines()
        .filter_map(parse_line)
        .filter(|(_, _, event, fields)| {
            *event == "switch"
                && field(fields, "prev_pid").is_some_and(|p| tids.contains(&p))
                && text_field(fields, "prev_state").is_some_and(|s| !s.starts_with('R'))
        })
        .count();
    WakeTrace {
        waits: timed_wake_waits(&text, tids),
        runs: runs_from_trace(&text),
        sleeps,
    }
}

/// Each wake-up's wait for a CPU (s, sched_wakeup to the sched_switch
/// onto the thread) of the threads `during` names, while it runs, less
/// the time in it in which the host stalled a virtual CPU (host_stalls):
/// the guest's clock follows the host's, so it counts such a stall as
/// waiting whatever the scheduler did. Only the stall is taken out, so a
/// wait the scheduler made stays as long as the guest ran through it.
/// Also: how many waits a stall touched, and the time taken out (s).
pub fn wake_waits_the_host_ran<T>(
    during: impl FnOnce() -> (Vec<i32>, T),
) -> (Vec<f64>, (usize, f64), T) {
    let (text, (tids, out)) = record(
        "mono",
        &["sched_wakeup", "sched_switch", "timer/hrtimer_expire_entry"],
        during,
    );
    let stalled = host_stalls(&runs_from_whole_trace(&text), &tick_times(&text));
    let (mut touched, mut taken) = (0, 0.0);
    let waits = timed_wake_waits(&text, &tids)
        .into_iter()
        .map(|(t0, wait)| {
            let lost = total(&intersect(&[(t0, t0 + wait)], &stalled));
            if lost > 0.0 {
                touched += 1;
                taken += lost;
            }
            (wait - lost).max(0.0)
        })
        .collect();
    (waits, (touched, taken), out)
}

/// When the host did not run a virtual CPU, in a trace with sched_switch
/// and the tick's hrtimer: a CPU running a task gets its tick every
/// period, so a tick more than a period late there means the CPU itself
/// did not run (on a loaded host, every virtual CPU for 100 ms at a
/// time). An idle CPU stops its tick, so intervals in which the CPU went
/// idle (`runs` of pid 0) say nothing.
fn host_stalls(runs: &[Run], ticks: &[(u32, f64)]) -> Vec<(f64, f64)> {
    let (period, _, _) = late_ticks(ticks, 0.0);
    let idle = |cpu, a, b| {
        runs.iter()
            .any(|r| r.pid == 0 && r.cpu == cpu && r.start < b && a < r.end)
    };
    let stalls = tick_intervals(ticks)
        .into_iter()
        .filter(|&(cpu, a, b)| b - a > 2.0 * period && !idle(cpu, a, b));
    union(stalls.map(|(_, a, b)| (a, b)).collect())
}

/// wake_waits(), with when each wake-up came.
pub fn timed_wake_waits(text: &str, tids: &[i32]) -> Vec<(f64, f64)> {
    let mut woken: HashMap<i32, f64> = HashMap::new();
    let mut waits = Vec::new();
    for (_, ts, event, fields) in text.lines().filter_map(parse_line) {
        match event {
            "wakeup" => {
                if let Some(pid) = field(fields, "pid").filter(|p| tids.contains(p)) {
                    woken.entry(pid).or_insert(ts);
                }
            }
            "switch" => {
                if let Some(t0) = field(fields, "next_pid").and_then(|p| woken.remove(&p)) {
                    waits.push((t0, ts - t0));
                }
            }
            _ => {}
        }
    }
    waits
}

/// A task's longest wait for a CPU in a trace: ready (woken, new, or
/// switched out still runnable) to running again, as the kernel's own
/// tracepoints show it.
#[derive(Debug, Clone)]
pub struct ReadyWait {
    pub pid: i32,
    pub comm: String,
    pub secs: f64,
    /// The CPU it ran on when the wait ended, or the one it became ready
    /// on if it was still waiting when the trace ended.
    pub cpu: u32,
    /// The wait, from and to, on the trace clock.
    pub from: f64,
    pub to: f64,
    /// What ran on `cpu` meanwhile, the most first (pid, comm, seconds;
    /// pid 0 is the CPU idle): who held its CPU. Filled for the longest
    /// waits only (HOLDERS_OF, HOLDERS_FROM).
    pub held_by: Vec<(i32, String, f64)>,
}

/// The longest waits whose holders are named, and the shortest wait that
/// is: holders cost a second pass over the trace, which a window of
/// short waits does not need.
const HOLDERS_OF: usize = 16;
const HOLDERS_FROM: f64 = 0.05;

impl ReadyWait {
    /// "cyclictest[273] on CPU 3 behind barrier[270] (gang) 0.80 s, idle
    /// 0.10 s": who waited, where, and the (up to) three tasks that held
    /// its CPU, each with what `label` calls it, if anything.
    pub fn describe(&self, label: impl Fn(i32) -> Option<String>) -> String {
        let behind: Vec<String> = self
            .held_by
            .iter()
            .take(3)
            .map(|(pid, comm, s)| match (pid, label(*pid)) {
                (0, _) => format!("idle {s:.2} s"),
                (_, Some(l)) => format!("{comm}[{pid}] ({l}) {s:.2} s"),
                (_, None) => format!("{comm}[{pid}] {s:.2} s"),
            })
            .collect();
        let mut out = format!("{}[{}] on CPU {}", self.comm, self.pid, self.cpu);
        if !behind.is_empty() {
            out.push_str(&format!(" behind {}", behind.join(", ")));
        }
        out
    }
}

/// Record for `during` and return every task's longest ready wait, the
/// longest first. A task still waiting when the trace ends counts up to
/// its end, so one that never ran is not missed.
pub fn record_ready_waits<T>(during: impl FnOnce() -> T) -> (Vec<ReadyWait>, T) {
    let (text, out) = record(
        "mono",
        &["sched_wakeup", "sched_wakeup_new", "sched_switch"],
        during,
    );
    (ready_waits(&text), out)
}

/// The text after `key=` in a trace event's fields, up to the next
/// space. A token scan: no pattern to build per lookup, which counts in
/// an unoptimised build parsing megabytes of trace on an emulated CPU.
fn text_field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split_ascii_whitespace()
        .find_map(|tok| tok.strip_prefix(key)?.strip_prefix('='))
}

/// Parse `text` into each task's longest ready wait (see ReadyWait).
pub fn ready_waits(text: &str) -> Vec<ReadyWait> {
    // Each ready task: since when, and on which CPU.
    let mut ready: HashMap<i32, (f64, u32)> = HashMap::new();
    let mut longest: HashMap<i32, ReadyWait> = HashMap::new();
    let mut comms: HashMap<i32, String> = HashMap::new();
    let mut last_ts = 0.0;
    let mut note = |pid: i32, (from, to): (f64, f64), cpu: u32| {
        let e = longest.entry(pid).or_insert_with(|| ReadyWait {
            pid,
            comm: String::new(),
            secs: 0.0,
            cpu,
            from,
            to: from,
            held_by: Vec::new(),
        });
        if to - from >= e.secs {
            (e.secs, e.cpu, e.from, e.to) = (to - from, cpu, from, to);
        }
    };
    for (cpu, ts, event, fields) in text.lines().filter_map(parse_line) {
        last_ts = ts;
        match event {
            "wakeup" | "wakeup_new" => {
                if let Some(pid) = field(fields, "pid") {
                    if let Some(c) = text_field(fields, "comm") {
                        comms.insert(pid, c.to_string());
                    }
                    let target = text_field(fields, "target_cpu")
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(cpu);
                    ready.entry(pid).or_insert((ts, target));
                }
            }
            "switch" => {
                let prev = field(fields, "prev_pid");
                let still_ready =
                    text_field(fields, "prev_state").is_some_and(|s| s.starts_with('R'));
                // It ran until now: a wake-up traced while it ran began no
                // wait.
                if let Some(pid) = prev {
                    ready.remove(&pid);
                }
                if let (Some(pid), true) = (prev, still_ready) {
                    if let Some(c) = text_field(fields, "prev_comm") {
                        comms.insert(pid, c.to_string());
                    }
                    if pid != 0 {
                        ready.insert(pid, (ts, cpu));
                    }
                }
                if let Some(next) = field(fields, "next_pid") {
                    if let Some(c) = text_field(fields, "next_comm") {
                        comms.insert(next, c.to_string());
                    }
                    if let Some((t0, _)) = ready.remove(&next) {
                        note(next, (t0, ts), cpu);
                    }
                }
            }
            _ => {}
        }
    }
    for (pid, (t0, cpu)) in ready {
        note(pid, (t0, last_ts), cpu);
    }
    let mut v: Vec<ReadyWait> = longest
        .into_values()
        .filter(|w| w.pid != 0)
        .map(|mut w| {
            w.comm = comms.get(&w.pid).cloned().unwrap_or_default();
            w
        })
        .collect();
    v.sort_by(|a, b| b.secs.total_cmp(&a.secs));
    name_holders(text, &mut v, &comms);
    v
}

/// Fill `held_by` for the longest of `waits` (sorted, the longest first).
fn name_holders(text: &str, waits: &mut [ReadyWait], comms: &HashMap<i32, String>) {
    let n = waits
        .iter()
        .take(HOLDERS_OF)
        .take_while(|w| w.secs >= HOLDERS_FROM)
        .count();
    if n == 0 {
        return;
    }
    let runs = runs_from_whole_trace(text);
    for w in &mut waits[..n] {
        let mut by_pid: HashMap<i32, f64> = HashMap::new();
        for r in runs.iter().filter(|r| r.cpu == w.cpu) {
            let held = r.end.min(w.to) - r.start.max(w.from);
            if held > 0.0 && r.pid != w.pid {
                *by_pid.entry(r.pid).or_default() += held;
            }
        }
        let mut held: Vec<(i32, String, f64)> = by_pid
            .into_iter()
            .map(|(pid, s)| (pid, comms.get(&pid).cloned().unwrap_or_default(), s))
            .collect();
        held.sort_by(|a, b| b.2.total_cmp(&a.2));
        w.held_by = held;
    }
}

/// One trace line: (cpu, timestamp, event name, the event's fields).
fn parse_line(line: &str) -> Option<(u32, f64, &str, &str)> {
    let (head, rest) = line.split_once(": sched_")?;
    let (event, fields) = rest.split_once(": ")?;
    let (cpu, ts) = parse_head(head)?;
    Some((cpu, ts, event, fields))
}

/// A trace line's CPU and timestamp, from what comes before the event's
/// name (`comm-pid [cpu] flags timestamp`).
fn parse_head(head: &str) -> Option<(u32, f64)> {
    let cpu = head
        .split('[')
        .nth(1)?
        .split(']')
        .next()?
        .trim()
        .parse()
        .ok()?;
    let ts = head
        .split_whitespace()
        .last()?
        .trim_end_matches(':')
        .parse()
        .ok()?;
    Some((cpu, ts))
}

/// The integer after `key=` in a trace event's fields.
fn field(fields: &str, key: &str) -> Option<i32> {
    text_field(fields, key)?.parse().ok()
}

/// Parse `trace` text: each sched_switch ends prev's run on that CPU and
/// starts next's. Only runs with both ends in the trace are kept.
pub fn runs_from_trace(text: &str) -> Vec<Run> {
    parse_runs(text, false)
}

/// As runs_from_trace, and also the runs cut by the trace's ends: what
/// each CPU ran before its first switch (from the first event on) and
/// after its last (to the last event). A task that keeps its CPU slice
/// after slice passes no sched_switch at all, so without these a
/// pinned hog would be missing from the trace.
pub fn runs_from_whole_trace(text: &str) -> Vec<Run> {
    parse_runs(text, true)
}

fn parse_runs(text: &str, edges: bool) -> Vec<Run> {
    let mut open: HashMap<u32, (i32, f64)> = HashMap::new();
    let mut runs = Vec::new();
    let (mut first, mut last) = (None, 0.0);
    for (cpu, ts, event, fields) in text.lines().filter_map(parse_line) {
        first.get_or_insert(ts);
        last = ts;
        let Some(next_pid) = field(fields, "next_pid").filter(|_| event == "switch") else {
            continue;
        };
        match open.insert(cpu, (next_pid, ts)) {
            Some((pid, start)) => runs.push(Run {
                pid,
                cpu,
                start,
                end: ts,
            }),
            None if edges => runs.extend(field(fields, "prev_pid").map(|pid| Run {
                pid,
                cpu,
                start: first.unwrap_or(ts),
                end: ts,
            })),
            None => {}
        }
    }
    if edges {
        runs.extend(open.into_iter().map(|(cpu, (pid, start))| Run {
            pid,
            cpu,
            start,
            end: last,
        }));
    }
    runs
}

/// Wake-up to running, for each wake-up of one of `tids` in `text`.
pub fn wake_waits(text: &str, tids: &[i32]) -> Vec<f64> {
    timed_wake_waits(text, tids)
        .into_iter()
        .map(|(_, w)| w)
        .collect()
}

/// Thread ids of a process.
pub fn threads_of(pid: u32) -> Vec<i32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The trace's own text, no kernel needed: a task woken onto CPU 1 while
/// a hog holds it, run there 0.3 s later, is named behind the hog.
#[test]
fn a_ready_wait_names_what_held_its_cpu() {
    let text = "\
 hog-20 [001] d..2. 10.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=20 next_prio=120
 sh-30 [000] d..2. 10.100000: sched_wakeup: comm=waiter pid=40 prio=120 target_cpu=001
 hog-20 [001] d..2. 10.300000: sched_switch: prev_comm=hog prev_pid=20 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 swapper-0 [001] d..2. 10.400000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=waiter next_pid=40 next_prio=120
";
    let waits = ready_waits(text);
    let w = &waits[0]; // the longest, and the only one
    assert!((w.secs - 0.3).abs() < 1e-6, "{w:?}");
    assert_eq!(w.cpu, 1);
    assert_eq!(
        w.describe(|pid| (pid == 20).then(|| "primary".to_string())),
        "waiter[40] on CPU 1 behind hog[20] (primary) 0.20 s, idle 0.10 s"
    );
}

/// The trace's own text, no kernel needed: CPU 0 runs a hog and ticks
/// every 4 ms but for one 100-ms hole (the host stalled it); CPU 1 goes
/// idle for 50 ms and stops its tick meanwhile (no stall). Only the hole
/// is a stall, and only the wake-up inside it is left out.
#[test]
fn a_tick_missing_on_a_busy_cpu_is_a_host_stall() {
    let mut text = String::from(
        " sh-1 [001] d..2. 0.000000: sched_switch: prev_comm=sh prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=20 next_prio=120\n",
    );
    let tick = |cpu: u32, t: f64| {
        format!(" hog-20 [00{cpu}] d.h.. {t:.6}: hrtimer_expire_entry: hrtimer=0 function=tick_nohz_handler now=0\n")
    };
    for i in 0..100 {
        let t = 0.004 * f64::from(i);
        if !(0.2..0.3).contains(&t) {
            text += &tick(0, t);
        }
        if !(0.1..0.15).contains(&t) {
            text += &tick(1, t);
        }
    }
    text += " hog-20 [001] d..2. 0.100500: sched_switch: prev_comm=hog prev_pid=20 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n";
    text += " swapper-0 [001] d..2. 0.149000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=20 next_prio=120\n";
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_by(|a, b| {
        let t = |l: &str| {
            let ts = l.split_whitespace().nth(3).unwrap_or("0:");
            ts.trim_end_matches(':').parse::<f64>().unwrap_or(0.0)
        };
        t(a).total_cmp(&t(b))
    });
    let text = lines.join("\n");
    let stalls = host_stalls(&runs_from_whole_trace(&text), &tick_times(&text));
    assert_eq!(stalls.len(), 1, "{stalls:?}");
    let (a, b) = stalls[0];
    assert!(
        (a - 0.196).abs() < 1e-6 && (b - 0.3).abs() < 1e-6,
        "{stalls:?}"
    );
}
