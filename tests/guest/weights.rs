// SPDX-License-Identifier: GPL-2.0-only
//! Weights within a class, as the kernel's schedstat counts them: what a
//! light task that sleeps between its runs gets beside CPU-bound work at
//! the default weight (bpf/vtime.bpf.c: vtime_wake()).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// sched_ext's weight of a nice-10 task (the kernel's 110 of 1024,
/// rounded to its 1..10000 scale) against nice 0's 100.
const NICE_10_WEIGHT: f64 = 11.0;

/// `n` processes of the bench's `duty` at nice 10: compute 10 ms, sleep
/// 10 ms, for as long as the test runs.
fn light_duty(n: usize) -> Vec<Child> {
    let duty = bench_bin("duty");
    let out = Command::new(&duty)
        .args(["calibrate", "10"])
        .output()
        .expect("calibrating the bench's duty");
    let iters = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        iters.parse::<u64>().is_ok(),
        "duty calibrate printed {iters:?}"
    );
    (0..n)
        .map(|_| {
            Command::new("nice")
                .args(["-n", "10"])
                .arg(&duty)
                .args(["1000000", &iters, "10"])
                .stdout(Stdio::null())
                .spawn()
                .expect("starting duty under nice")
        })
        .collect()
}

/// The light tasks' share of all CPU time the two kinds ran over `window`.
fn light_share(light: &[Child], hogs: &Hogs, window: Duration) -> f64 {
    let ran = || -> u64 { light.iter().map(|c| runtime_ns(c.id() as i32)).sum() };
    let (l0, h0, t) = (ran(), total_runtime(hogs), Instant::now());
    std::thread::sleep(window);
    let (l, h) = (ran() - l0, total_runtime(hogs) - h0);
    assert!(t.elapsed() >= window);
    l as f64 / (l + h).max(1) as f64
}

/// One nice-10 task per CPU computing half its time, beside one nice-0
/// spinner per CPU: it wants more than its weight gives it, so it waits
/// for the CPU at nearly every wake-up, and its weight alone should decide
/// its share. With a sleeper's credit counted in plain vtime, whatever
/// the weight, it got 0.82 of that share here (2 vCPUs) and 0.69 on 1
/// vCPU under icount (bench/results/rule-ab-runs.md); with it, 1.00.
#[test]
fn a_light_sleeper_gets_its_weights_share() {
    require_guest();
    let p = nr_cpus();
    let hogs = Hogs::spin(p);
    let mut light = light_duty(p);
    std::thread::sleep(Duration::from_secs(1));
    let eevdf = light_share(&light, &hogs, Duration::from_secs(4));

    let agent = Agent::start(&[]);
    std::thread::sleep(Duration::from_secs(1));
    let linger = light_share(&light, &hogs, Duration::from_secs(8));
    assert_eq!(state(), "enabled", "ejected: {:?}", ejections(&dmesg()));
    for c in &mut light {
        let _ = c.kill();
        let _ = c.wait();
    }
    drop(hogs);
    let (status, out) = agent.stop();
    assert!(status.success(), "{out}");

    let fair = NICE_10_WEIGHT / (NICE_10_WEIGHT + 100.0);
    figure(&format!(
        "weights: nice-10 tasks computing half their time beside nice-0 spinners, {p} of each: {:.1}% of the CPU time (their weight's share {:.1}%, EEVDF {:.1}%)",
        linger * 100.0,
        fair * 100.0,
        eevdf * 100.0
    ));
    assert!(
        (0.85 * fair..=1.3 * fair).contains(&linger),
        "nice-10 sleepers got {:.1}% of the CPU time beside nice-0 spinners, where their weight gives {:.1}% (EEVDF {:.1}%)",
        linger * 100.0,
        fair * 100.0,
        eevdf * 100.0
    );
}
