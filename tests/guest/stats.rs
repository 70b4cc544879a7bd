// SPDX-License-Identifier: GPL-2.0-only
//! Live stats: the JSON the agent serves, checked against the kernel's own
//! accounting; the terminal view driven through tmux; the metrics
//! endpoint scraped by a real Prometheus server, with the shipped alert
//! rules checked by promtool and loaded there.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn job<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    v["jobs"].as_array()?.iter().find(|j| j["path"] == path)
}

fn class_cpu(v: &serde_json::Value, class: &str) -> f64 {
    v["classes"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["class"] == class))
        .and_then(|c| c["cpu_seconds"].as_f64())
        .unwrap_or_else(|| panic!("no class {class} in {v}"))
}

/// CPU time the kernel charged to a cgroup and its descendants.
fn cgroup_usage_ns(cg: &std::path::Path) -> f64 {
    usage_us(cg).expect("usage_usec in cpu.stat") as f64 * 1e3
}

fn signal_all(h: &Hogs, sig: i32) {
    for pid in h.pids() {
        // SAFETY: plain kill(2) on our own children.
        unsafe { libc::kill(pid, sig) };
    }
}

#[test]
fn stats_json_matches_the_kernels_accounting() {
    require_guest();
    let guest = TestCgroup::new("t-stats/guest");
    let agent = Agent::start(&[]);
    tag(&guest.rel, "guest");
    // Let the agent's rescan see the label before the hogs start, so all
    // their CPU time is the job's.
    std::thread::sleep(Duration::from_millis(500));
    let hogs = guest.spin(2);
    // An unlabelled job: its top-level cgroup is the job, and its thread
    // keeps its CPU slice after slice (charged without stopping()).
    let primary = TestCgroup::new("t-stats-work/x");
    let worker = primary.spin(1);
    // The kernel's figure is each job cgroup's own cpu.stat: it counts
    // from the moment the threads are in it, as the job's accounting
    // does. (Reading the threads' schedstat after the move instead let a
    // slow host's delay count for one side only: +15% seen once.)
    let duty = DutyThreads::start(1, Duration::from_millis(10), Duration::from_millis(10));
    // A job of short sleepers: cyclictest's thread wakes every 2 ms and
    // runs a few microseconds, so most of its CPU time lies around its
    // context switches, where a count by our own clock and the kernel's
    // charge differ most.
    let sleeper = TestCgroup::new("t-stats-sleeper/x");
    let cyclic = spawn_in(&sleeper, "exec cyclictest -q -t 1 -i 2000 -D 30");
    std::thread::sleep(Duration::from_secs(4));

    let live = stats_json();
    assert_eq!(live["schema"], 1);
    assert_eq!(live["node"]["state"], "enabled");
    assert!(live["node"]["scheduler"]
        .as_str()
        .unwrap()
        .starts_with("scx_linger"));
    let g = job(&live, &format!("/{}", guest.rel)).expect("the guest job is listed");
    assert_eq!(g["class"], "guest");
    assert!(g["threads_runnable"].as_u64().unwrap() >= 2, "{g}");
    let harvest = live["machine"]["guest_harvest_now"].as_f64();
    // What else ran, if the guests got little of what primaries left: a
    // stray busy primary (an earlier test's leftover) leaves them little.
    let busy: Vec<String> = live["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|j| j["cpus_now"].as_f64().unwrap_or(0.0) > 0.05)
        .map(|j| format!("{} {} {:.2}", j["path"], j["class"], j["cpus_now"]))
        .collect();
    assert!(
        harvest.is_some_and(|h| h > 0.5),
        "harvest {harvest:?} over {} s; classes {}; busy jobs {busy:?}",
        live["machine"]["interval_s"],
        live["classes"]
    );

    // Freeze the jobs, then compare their totals with the kernel's.
    signal_all(&hogs, libc::SIGSTOP);
    signal_all(&worker, libc::SIGSTOP);
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(cyclic.id() as i32, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(200));
    let kernel_ns = cgroup_usage_ns(&guest.path);
    let worker_ns = cgroup_usage_ns(&std::path::Path::new(CGROUP_ROOT).join("t-stats-work"));
    let sleeper_ns = cgroup_usage_ns(&std::path::Path::new(CGROUP_ROOT).join("t-stats-sleeper"));
    std::thread::sleep(Duration::from_millis(1500));
    let after = stats_json();
    let ours = job(&after, &format!("/{}", guest.rel)).unwrap()["cpu_seconds"]
        .as_f64()
        .unwrap()
        * 1e9;
    let guest_class = class_cpu(&after, "guest") * 1e9;
    let work = job(&after, "/t-stats-work").expect("the unlabelled job is listed")["cpu_seconds"]
        .as_f64()
        .unwrap()
        * 1e9;
    let sleeping = job(&after, "/t-stats-sleeper").expect("the sleepers' job is listed")
        ["cpu_seconds"]
        .as_f64()
        .unwrap()
        * 1e9;
    // Every thread of the three jobs is stopped now, so each job's
    // runnable count is back to zero. The sleepers' thread has slept
    // between each of its ~2,000 wake-ups: had a sleep gone uncounted
    // (stopping() takes it off the job's runnable count, quiescent() only
    // where stopping() did not), its count would have grown with them.
    // A running count is no test of it: its two threads may wait for a
    // CPU at once, and the per-CPU copies are read one after another.
    for path in [
        format!("/{}", guest.rel),
        "/t-stats-work".into(),
        "/t-stats-sleeper".into(),
    ] {
        let j = job(&after, &path).expect("the job is listed");
        assert_eq!(j["threads_runnable"], 0, "{j}");
    }
    figure(&format!(
        "stats: guest job CPU {:.3} s by scx_linger's accounting, {:.3} s by its cgroup's cpu.stat ({:+.2}%); unlabelled primary job {:.3} s vs {:.3} s ({:+.2}%); short sleepers' job {:.4} s vs {:.4} s ({:+.2}%); guest class {:.3} s; harvest {:.1}%",
        ours / 1e9,
        kernel_ns / 1e9,
        (ours / kernel_ns - 1.0) * 100.0,
        work / 1e9,
        worker_ns / 1e9,
        (work / worker_ns - 1.0) * 100.0,
        sleeping / 1e9,
        sleeper_ns / 1e9,
        (sleeping / sleeper_ns - 1.0) * 100.0,
        guest_class / 1e9,
        harvest.unwrap_or(0.0) * 100.0
    ));
    assert!(
        (ours - kernel_ns).abs() <= kernel_ns * 0.02 + 20e6,
        "job CPU {ours} ns vs cpu.stat {kernel_ns} ns"
    );
    assert!(
        guest_class >= ours * 0.99,
        "class {guest_class} < job {ours}"
    );
    assert!(
        (work - worker_ns).abs() <= worker_ns * 0.02 + 20e6,
        "primary job CPU {work} ns vs cpu.stat {worker_ns} ns"
    );
    // Both counts are the kernel's per-task sums; only the stretch since
    // each thread's last charge can differ.
    assert!(
        (sleeping - sleeper_ns).abs() <= sleeper_ns * 0.02 + 5e6,
        "short sleepers' job CPU {sleeping} ns vs cpu.stat {sleeper_ns} ns"
    );
    drop(duty);
    let mut cyclic = cyclic;
    let _ = cyclic.kill();
    let _ = cyclic.wait();
    signal_all(&hogs, libc::SIGCONT);
    signal_all(&worker, libc::SIGCONT);
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

#[test]
fn stats_without_an_agent_says_so_in_one_line() {
    require_guest();
    let out = agent_output(Command::new(AGENT).args(["stats"]));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no scx_linger agent is running"), "{err}");
}

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(args)
        .output()
        .expect("running tmux");
    assert!(
        out.status.success(),
        "tmux {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn screen() -> String {
    tmux(&["capture-pane", "-p", "-t", "top"])
}

/// The figures on the screen line of `job`, or "" if it is not shown.
fn job_line(screen: &str, job: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains(job))
        .unwrap_or("")
        .to_string()
}

#[test]
fn top_shows_both_classes_live_copes_with_resizes_and_quits_on_q() {
    require_guest();
    let guest = TestCgroup::new("t-top/guest");
    let agent = Agent::start(&[]);
    tag(&guest.rel, "guest");
    std::thread::sleep(Duration::from_millis(500));
    let _hogs = guest.spin(1);
    let _duty = DutyThreads::start(1, Duration::from_millis(10), Duration::from_millis(10));
    let exit_file = results_dir().join("top-exit");
    let _ = std::fs::remove_file(&exit_file);
    // The shell creates the file before `echo` writes to it, so the code
    // is written aside and renamed into place: once it exists, it is whole.
    let cmd = format!(
        "{AGENT} top; echo $? > {f}.part && mv {f}.part {f}",
        f = exit_file.display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "130",
        "-y",
        "40",
        &cmd,
    ]);

    let job = format!("/{}", guest.rel);
    let ok = wait_until(Duration::from_secs(20), || {
        job_line(&screen(), &job).contains("guest")
    });
    let first = screen();
    assert!(ok, "the guest job never appeared:\n{first}");
    std::thread::sleep(Duration::from_secs(3));
    let second = screen();
    std::fs::write(results_dir().join("top-screen.txt"), &second).unwrap();
    for s in [&first, &second] {
        assert!(s.contains("scx_linger top"), "{s}");
        assert!(
            s.lines().any(|l| l.trim_start().starts_with("primary")),
            "{s}"
        );
        assert!(
            s.lines().any(|l| l.trim_start().starts_with("guest")),
            "{s}"
        );
        assert!(s.contains("guest harvest"), "{s}");
        assert!(s.contains("q quit"), "{s}");
    }
    // The guest job's CPU total grew between the two frames.
    assert_ne!(
        job_line(&first, &job),
        job_line(&second, &job),
        "the figures did not change:\n{first}\n{second}"
    );

    // A tiny terminal: a notice, no crash; back to full size: the view.
    tmux(&["resize-window", "-t", "top", "-x", "20", "-y", "5"]);
    std::thread::sleep(Duration::from_millis(1500));
    let tiny = screen();
    assert!(tiny.contains("terminal"), "{tiny}");
    tmux(&["resize-window", "-t", "top", "-x", "130", "-y", "40"]);
    let back = wait_until(Duration::from_secs(5), || screen().contains("q quit"));
    assert!(back, "{}", screen());

    tmux(&["send-keys", "-t", "top", "q"]);
    let quit = wait_until(Duration::from_secs(10), || exit_file.exists());
    assert!(quit, "top did not quit on q:\n{}", screen());
    let code = std::fs::read_to_string(&exit_file).unwrap();
    assert_eq!(code.trim(), "0", "top exited with {code}");
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// GET `path` from 127.0.0.1:`port` (HTTP/1.0, so the server closes).
/// Samples of counter-typed families: "name{labels}" -> value.
fn counters(text: &str) -> HashMap<String, f64> {
    let counter_families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let (name, kind) = l.split_once(' ')?;
            matches!(kind, "counter" | "histogram").then_some(name)
        })
        .collect();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (key, v) = l.rsplit_once(' ')?;
            let name = key.split('{').next()?;
            counter_families
                .iter()
                .any(|f| name.starts_with(f))
                .then(|| Some((key.to_string(), v.parse().ok()?)))?
        })
        .collect()
}

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_scrapes_the_metrics_endpoint() {
    require_guest();
    let guest = TestCgroup::new("t-metrics/guest");
    let agent = Agent::start(&["--metrics-addr", "127.0.0.1:9464"]);
    tag(&guest.rel, "guest");
    let _hogs = guest.spin(1);
    let ok = wait_until(Duration::from_secs(10), || {
        http_get(9464, "/metrics").is_some()
    });
    assert!(ok, "nothing served /metrics: {}", agent.output());

    let first = http_get(9464, "/metrics").unwrap();
    let file = results_dir().join("metrics.txt");
    std::fs::write(&file, &first).unwrap();
    // OpenMetrics ends with EOF; the real Prometheus below parses the rest
    // (promtool's `check metrics` reads only the older text format).
    assert!(first.ends_with("# EOF\n"), "{first}");
    assert!(
        first.contains("scx_linger_cpu_seconds_total{class=\"guest\"}"),
        "{first}"
    );
    assert!(first.contains("scx_linger_enabled 1"), "{first}");
    std::thread::sleep(Duration::from_secs(2));
    let second = http_get(9464, "/metrics").unwrap();
    let (a, b) = (counters(&first), counters(&second));
    assert!(a.len() > 20, "too few counter samples: {a:?}");
    for (k, v) in &a {
        if let Some(w) = b.get(k) {
            assert!(w >= v, "counter {k} went down: {v} -> {w}");
        }
    }
    let guest_key = "scx_linger_cpu_seconds_total{class=\"guest\"}";
    assert!(b[guest_key] > a[guest_key], "guest CPU did not grow");

    // A real Prometheus server scrapes it every second.
    // Its storage needs mmap, which the 9p-shared results dir lacks.
    let dir = std::env::temp_dir().join("scx-linger-prometheus");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // With the alert rules the project ships (deploy/), as a site would.
    let rules = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/prometheus/scx_linger-alerts.yml"
    );
    let check = Command::new("promtool")
        .args(["check", "rules", rules])
        .output()
        .expect("running promtool");
    assert!(
        check.status.success(),
        "promtool check rules rejected {rules}: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: ['{rules}']\nscrape_configs:\n  - job_name: scx_linger\n    static_configs:\n      - targets: ['127.0.0.1:9464']\n"),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let _server = Prometheus(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg("--web.listen-address=127.0.0.1:9090")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting prometheus"),
    );
    let query = "/api/v1/query?query=scx_linger_cpu_seconds_total%7Bclass%3D%22guest%22%7D";
    let started = Instant::now();
    let mut answer = String::new();
    let scraped = wait_until(Duration::from_secs(120), || {
        answer = http_get(9090, query).unwrap_or_default();
        answer.contains("\"result\":[{")
    });
    figure(&format!(
        "metrics: Prometheus scraped the OpenMetrics exposition and had scx_linger's guest CPU {:.0} s after it started",
        started.elapsed().as_secs_f64()
    ));
    assert!(
        scraped,
        "Prometheus never scraped scx_linger: {answer}\n{}",
        std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
    );
    // It scraped as OpenMetrics, and without a parse error.
    let targets = http_get(9090, "/api/v1/targets").unwrap_or_default();
    assert!(
        targets.contains("\"health\":\"up\"") && targets.contains("\"lastError\":\"\""),
        "{targets}"
    );
    // A job's class is joined from its info metric, as a dashboard would.
    let join = "/api/v1/query?query=scx_linger_job_cpu_seconds_total%7Bcgroup%3D%22%2Ft-metrics%2Fguest%22%7D%20*%20on(cgroup)%20group_left(class)%20scx_linger_job_info";
    let joined = wait_until(Duration::from_secs(30), || {
        answer = http_get(9090, join).unwrap_or_default();
        answer.contains("\"class\":\"guest\"")
    });
    assert!(
        joined,
        "the job's class did not join from scx_linger_job_info: {answer}"
    );
    // The shipped rules loaded and evaluate without errors against what
    // the agent exports (health "ok" once evaluated).
    let mut rules_answer = String::new();
    let evaluated = wait_until(Duration::from_secs(30), || {
        rules_answer = http_get(9090, "/api/v1/rules").unwrap_or_default();
        rules_answer.contains("ScxLingerNotEnabled")
            && rules_answer.contains("\"health\":\"ok\"")
            && !rules_answer.contains("\"health\":\"err\"")
            && !rules_answer.contains("\"health\":\"unknown\"")
    });
    assert!(
        evaluated,
        "the shipped alert rules did not load and evaluate: {rules_answer}"
    );
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");
}

/// The scx tools' protocol: an scx_stats client (the crate the scx tools
/// use) reads the agent's view on scx_stats' default socket, with the
/// metadata that `--help-stats` prints; `run --monitor` prints readings
/// of the running agent without loading anything.
#[test]
fn scx_stats_clients_read_the_agent() {
    require_guest();
    let guest = TestCgroup::new("t-scxstats/guest");
    let agent = Agent::start(&[]);
    tag(&guest.rel, "guest");
    std::thread::sleep(Duration::from_millis(500));
    let _hogs = guest.spin(1);
    std::thread::sleep(Duration::from_secs(3));

    let mut client = scx_stats::StatsClient::new()
        .connect(None)
        .expect("connecting to /var/run/scx/root/stats");
    let meta: serde_json::Value = client.request("stats_meta", vec![]).expect("stats_meta");
    assert!(meta.get("LingerStats").is_some(), "{meta}");
    let v: serde_json::Value = client.request("stats", vec![]).expect("stats");
    assert_eq!(v["state"], "enabled", "{v}");
    let path = format!("/{}", guest.rel);
    let j = &v["jobs"][&path];
    assert_eq!(j["class"], "guest", "{v}");
    // Its figures are the reading's (checked against the kernel above);
    // a "_now" rate over a just-taken interval may read 0.
    assert!(j["cpu_seconds"].as_f64().unwrap() > 1.0, "{j}");
    assert_eq!(j["slurm_job_id"], 0, "{j}");

    let help = agent_output(Command::new(AGENT).args(["run", "--help-stats"]));
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("slurm_job_id"), "{help}");

    // --monitor loads nothing and reads the running agent until SIGINT.
    let mut monitor = Command::new(AGENT)
        .args(["run", "--monitor", "0.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(monitor.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while monitor.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = monitor.kill();
    let out = monitor.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .filter(|l| l.starts_with("[scx_linger] enabled"))
            .count()
            >= 2,
        "--monitor printed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&path), "{text}");
    assert_eq!(state(), "enabled", "--monitor must not touch the scheduler");

    // A reader that goes away ends a printing command as it ends other
    // Unix tools (SIGPIPE, or done), never in a panic; and the reader
    // did get output first.
    for args in ["stats --json --interval 1", "run --monitor 0.5", "ls"] {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "timeout 60 {AGENT} {args} 2>/run/sigpipe.err | head -c 1 | wc -c; \
                 echo ${{PIPESTATUS[0]}}; cat /run/sigpipe.err"
            ))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines().map(str::trim);
        let (got, code) = (lines.next(), lines.next());
        assert!(
            got == Some("1") && matches!(code, Some("0" | "141")) && !text.contains("panicked"),
            "`{args} | head -c 1` read {got:?} and ended with {text}"
        );
    }
    drop(agent);
}
