// SPDX-License-Identifier: GPL-2.0-only
//! The package's systemd unit, started by systemd itself: the package
//! laid over /usr as dpkg installs it (`installed()`), the site's
//! `/etc/default/scx_linger`, and `systemctl start scx_linger` under
//! Debian's systemd running as PID 1.
//!
//! The guest's init is virtme-ng's, not systemd, and the guest's root is
//! the host's, so a systemd booted as the guest's init would take any mark
//! of a container on a host that is itself one for its own, and skip the
//! serial console. So systemd runs here as containers run it
//! (systemd-nspawn's layout): PID 1 of its own PID, mount, cgroup, UTS
//! and IPC namespaces, told it is in a container, with its own /run and
//! /tmp and /proc/sys read-only (the kernel is the other tests' too), on a
//! cgroup of its own that is removed afterwards with everything in it.
//! What decides who may reach the stats socket is all systemd's doing:
//! the unit's RuntimeDirectory=, UMask=, capability bounding set,
//! NoNewPrivileges= and ProtectSystem=, and its EnvironmentFile= carrying
//! `--stats-group`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::*;
use crate::package::{installed, UNPACKED};

/// The group the site lets read stats.
const STATS_GROUP: &str = "scxstats";

/// systemd as PID 1 of namespaces of its own, killed with its cgroup
/// (and everything it started) on drop.
struct Systemd {
    pid: i32,
    unshare: std::process::Child,
    _cgroup: TestCgroup,
}

impl Systemd {
    /// Boot it to basic.target: what a unit with default dependencies
    /// starts after on a node. Its log goes to the results directory.
    fn boot() -> Systemd {
        // Its cgroup needs the controller the agent checks for.
        let _ = fs::write(
            Path::new(CGROUP_ROOT).join("cgroup.subtree_control"),
            "+cpu",
        );
        let cgroup = TestCgroup::new("systemd-as-pid1");
        let log = fs::File::create(results_dir().join("systemd-as-pid1.log")).unwrap();
        let inner = "mount -t proc proc /proc \
                     && mount --bind /proc/sys /proc/sys \
                     && mount -o remount,bind,ro /proc/sys \
                     && umount -l /sys/fs/cgroup \
                     && mount -t cgroup2 cgroup2 /sys/fs/cgroup \
                     && mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /tmp \
                     && exec env container=scx-linger-test /lib/systemd/systemd \
                     --system --unit=basic.target --show-status=no --log-target=kmsg";
        let outer = format!(
            "echo $$ > {}/cgroup.procs && exec unshare --pid --fork --mount --cgroup \
             --uts --ipc --propagation private sh -c '{inner}'",
            cgroup.path.display()
        );
        let mut shell = Command::new("sh")
            .args(["-c", &outer])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        // PID 1 of its namespace (the unshare's child), in its cgroup or,
        // once it has moved itself, in init.scope beside its helpers.
        let mut pid = 0;
        let found = wait_until(Duration::from_secs(60), || {
            if let Ok(Some(status)) = shell.try_wait() {
                panic!("systemd exited at boot ({status}): {}", boot_log());
            }
            pid = ["cgroup.procs", "init.scope/cgroup.procs"]
                .iter()
                .flat_map(|f| {
                    fs::read_to_string(cgroup.path.join(f))
                        .unwrap_or_default()
                        .lines()
                        .filter_map(|l| l.parse::<i32>().ok())
                        .collect::<Vec<_>>()
                })
                .find(|&p| is_pid1_of_its_namespace(p))
                .unwrap_or(0);
            pid != 0
        });
        assert!(found, "systemd did not start: {}", boot_log());
        let sd = Systemd {
            pid,
            unshare: shell,
            _cgroup: cgroup,
        };
        // "offline" until its own socket is up; --wait then waits out
        // the boot.
        let mut state = String::new();
        wait_until(Duration::from_secs(120), || {
            let up = sd.systemctl(&["is-system-running", "--wait"]);
            state = format!(
                "{}{}",
                String::from_utf8_lossy(&up.stdout).trim(),
                String::from_utf8_lossy(&up.stderr).trim()
            );
            state == "running" || state == "degraded"
        });
        assert!(
            state == "running" || state == "degraded",
            "systemd did not come up ({state}): {}",
            boot_log()
        );
        sd
    }

    /// Run `cmd` in systemd's PID and mount namespaces, as a command on
    /// the node it runs would; killed after two minutes.
    fn run(&self, cmd: &Command) -> Output {
        let mut c = Command::new("nsenter");
        c.args([
            "-t",
            &self.pid.to_string(),
            "-m",
            "-p",
            "--",
            "timeout",
            "120",
        ])
        .arg(cmd.get_program())
        .args(cmd.get_args());
        c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"))
    }

    fn systemctl(&self, args: &[&str]) -> Output {
        self.run(Command::new("systemctl").args(args))
    }

    fn show(&self, unit: &str, property: &str) -> String {
        let out = self.systemctl(&["show", "--value", "-p", property, unit]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn journal(&self, unit: &str) -> String {
        let out =
            self.run(Command::new("journalctl").args(["-u", unit, "--no-pager", "-o", "cat"]));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Systemd {
    fn drop(&mut self) {
        // Its PID namespace ends with it: every process it started goes
        // too (a scheduler it loaded with the agent); TestCgroup's drop
        // then removes the cgroups it made.
        let _ = Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .status();
        let _ = self.unshare.wait();
        let _ = wait_until(Duration::from_secs(20), || state() == "disabled");
    }
}

/// Is `pid` (as this namespace sees it) PID 1 of its own PID namespace?
fn is_pid1_of_its_namespace(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .and_then(|ids| ids.split_whitespace().last())
            == Some("1")
    })
}

/// A systemd time span as `systemctl show` prints it ("10s", "100ms",
/// "1min 30s"); None for a form it does not take apart.
fn time_span(text: &str) -> Option<Duration> {
    text.split_whitespace()
        .try_fold(Duration::ZERO, |sum, part| {
            let unit = part.trim_start_matches(|c: char| c.is_ascii_digit());
            let n: u32 = part[..part.len() - unit.len()].parse().ok()?;
            let one = match unit {
                "ms" => Duration::from_millis(1),
                "s" => Duration::from_secs(1),
                "min" => Duration::from_secs(60),
                _ => return None,
            };
            Some(sum + one * n)
        })
}

/// What unshare said, and systemd's own log (it logs to the kernel's).
fn boot_log() -> String {
    let said = fs::read_to_string(results_dir().join("systemd-as-pid1.log")).unwrap_or_default();
    let logged: Vec<String> = dmesg()
        .lines()
        .filter(|l| l.contains("systemd"))
        .map(str::to_string)
        .collect();
    format!(
        "{said}{}",
        logged[logged.len().saturating_sub(30)..].join("\n")
    )
}

/// The site's files under /etc, put back as they were on drop.
struct EtcFiles(Vec<(PathBuf, Option<Vec<u8>>)>);

impl EtcFiles {
    fn write(files: &[(&str, &[u8])]) -> EtcFiles {
        let kept = files
            .iter()
            .map(|(path, text)| {
                let path = PathBuf::from(path);
                let old = fs::read(&path).ok();
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, text).unwrap();
                (path, old)
            })
            .collect();
        EtcFiles(kept)
    }
}

impl Drop for EtcFiles {
    fn drop(&mut self) {
        for (path, old) in &self.0 {
            let _ = match old {
                Some(text) => fs::write(path, text),
                None => fs::remove_file(path),
            };
        }
    }
}

/// `--stats-group` as a site sets it: in the environment file the
/// package ships, read by the shipped unit that systemd starts. A member
/// of the group reads `stats`; anyone else is refused, told why; the
/// unit stops cleanly, and the scheduler with it. Then a bad flag: the
/// unit fails and is not restarted.
#[test]
fn the_stats_group_reads_stats_from_the_unit_systemd_starts_and_no_one_else_does() {
    require_guest();
    installed();
    let config = fs::read(Path::new(UNPACKED).join("etc/scx_linger/config.toml")).unwrap();
    let flags = format!("SCX_LINGER_FLAGS=\"--stats-group {STATS_GROUP}\"\n");
    let _etc = EtcFiles::write(&[
        ("/etc/scx_linger/config.toml", &config),
        ("/etc/default/scx_linger", flags.as_bytes()),
    ]);
    let _ = Command::new("groupadd").args(["-f", STATS_GROUP]).status();
    let group = Command::new("getent")
        .args(["group", STATS_GROUP])
        .output()
        .unwrap();
    let gid = String::from_utf8_lossy(&group.stdout)
        .split(':')
        .nth(2)
        .unwrap_or_else(|| panic!("no group {STATS_GROUP}"))
        .to_string();

    let systemd = Systemd::boot();
    // The package's unit, not one a manual install put in /etc.
    let unit_file = systemd.show("scx_linger.service", "FragmentPath");
    assert!(
        unit_file.ends_with("lib/systemd/system/scx_linger.service"),
        "systemd loaded {unit_file:?}, not the package's unit"
    );
    let start = systemd.systemctl(&["start", "scx_linger.service"]);
    assert!(
        start.status.success(),
        "systemctl start scx_linger: {}{}",
        String::from_utf8_lossy(&start.stderr),
        systemd.journal("scx_linger.service")
    );
    // Type=notify: started means the agent said READY=1.
    assert_eq!(systemd.show("scx_linger.service", "ActiveState"), "active");
    assert_eq!(
        state(),
        "enabled",
        "{}",
        systemd.journal("scx_linger.service")
    );

    let stats_as = |groups: &str| {
        systemd.run(
            Command::new("setpriv")
                .arg(format!("--reuid={NOBODY}"))
                .arg(format!("--regid={NOBODY}"))
                .args([groups, "/usr/sbin/scx_linger", "stats", "--json"]),
        )
    };
    let member = stats_as(&format!("--groups={gid}"));
    let text = String::from_utf8_lossy(&member.stdout);
    assert!(
        member.status.success() && serde_json::from_str::<serde_json::Value>(&text).is_ok(),
        "a member of {STATS_GROUP} could not read stats: {}{text}",
        String::from_utf8_lossy(&member.stderr)
    );
    let other = stats_as("--clear-groups");
    let said = String::from_utf8_lossy(&other.stderr);
    assert!(
        !other.status.success() && said.contains("--stats-group"),
        "a user outside {STATS_GROUP} was not refused, or not told why: {said}"
    );

    let stop = systemd.systemctl(&["stop", "scx_linger.service"]);
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    assert_eq!(
        systemd.show("scx_linger.service", "ExecMainStatus"),
        "0",
        "the agent's exit on stop: {}",
        systemd.journal("scx_linger.service")
    );
    assert_eq!(state(), "disabled");

    // A flag the agent does not know is a usage error (exit 2), which the
    // unit does not restart from: it stays failed, past RestartSec=.
    fs::write(
        "/etc/default/scx_linger",
        "SCX_LINGER_FLAGS=\"--no-such-flag\"\n",
    )
    .unwrap();
    let bad = systemd.systemctl(&["start", "scx_linger.service"]);
    assert!(!bad.status.success(), "a usage error started the unit");
    let restart_after = systemd.show("scx_linger.service", "RestartUSec");
    let restart_after = time_span(&restart_after)
        .unwrap_or_else(|| panic!("RestartUSec={restart_after:?}: not a time span"));
    std::thread::sleep(restart_after + Duration::from_secs(2));
    let (status, restarts, active) = (
        systemd.show("scx_linger.service", "ExecMainStatus"),
        systemd.show("scx_linger.service", "NRestarts"),
        systemd.show("scx_linger.service", "ActiveState"),
    );
    assert_eq!(
        (status.as_str(), restarts.as_str(), active.as_str()),
        ("2", "0", "failed"),
        "{}",
        systemd.journal("scx_linger.service")
    );
    assert_eq!(state(), "disabled");
}
