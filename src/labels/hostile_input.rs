// SPDX-License-Identifier: GPL-2.0-only
//! Hostile input, tested without a kernel: whatever an operator or a user
//! types as a class, a config file or a cgroup path, and whatever a user
//! writes into a label, the agent answers with a one-line error or a
//! defined safe behaviour, and never panics. Property tests (proptest)
//! generate the inputs; a table covers the cases worth naming.

use std::path::Path;
use std::str::FromStr;

use proptest::prelude::*;

use crate::labels::cgroups;
use crate::labels::class::{own_class, Class, Facts};
use crate::labels::config::Config;

/// An error as the agent prints it (anyhow's one-line chain).
fn one_line(e: &anyhow::Error) -> String {
    let s = format!("{e:#}");
    assert!(!s.contains('\n'), "error spans lines: {s:?}");
    assert!(s.len() < 1000, "error too long ({} bytes)", s.len());
    s
}

/// A directory that looks like a cgroup (it has cgroup.procs).
fn fake_cgroup(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("cgroup.procs"), "").unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_config_text_parses_or_fails_in_one_line(text in "\\PC{0,400}") {
        if let Err(e) = Config::parse(&text) {
            one_line(&e);
        }
    }

    #[test]
    fn any_rule_parses_or_fails_in_one_line(
        pattern in "\\PC{0,60}",
        class in "\\PC{0,20}|primary|guest|gang|guest-gang",
        slot in proptest::option::of(0u64..100_000),
        default in proptest::option::of("\\PC{0,12}|primary|guest"),
    ) {
        let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
        let mut text = String::new();
        if let Some(d) = &default {
            text += &format!("default_class = {}\n", quote(d));
        }
        text += &format!("[[rule]]\ncgroup = {}\nclass = {}\n", quote(&pattern), quote(&class));
        if let Some(ms) = slot {
            text += &format!("slot_ms = {ms}\n");
        }
        match Config::parse(&text) {
            Err(e) => { one_line(&e); }
            Ok(cfg) => {
                // The root cgroup is never made anything but primary.
                if pattern.trim_matches('/').is_empty() {
                    prop_assert!(cfg.rules.iter().all(|r| r.class == Class::Primary));
                }
                prop_assert!(!cfg.default_class.is_gang());
            }
        }
    }

    #[test]
    fn any_class_name_is_one_of_four_or_a_one_line_error(name in "\\PC{0,100}") {
        match Class::from_str(&name) {
            Ok(c) => prop_assert_eq!(c.name(), name.trim()),
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(!msg.contains('\n'));
                prop_assert!(msg.contains("primary, guest, gang, guest-gang"));
            }
        }
    }

    #[test]
    fn a_user_label_never_promotes(user in "\\PC{0,20}|primary|gang|guest|guest-gang") {
        let f = Facts { user: Some(user), ..Default::default() };
        if let Some((class, _)) = own_class(&f) {
            prop_assert_eq!(class.tier(), Class::Guest);
        }
    }

    #[test]
    fn any_cgroup_path_resolves_inside_the_mount_or_fails_in_one_line(arg in "\\PC{0,300}") {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("cg");
        fake_cgroup(&mount.join("jobs/a"));
        match cgroups::resolve(&mount, &arg) {
            Ok((real, _)) => prop_assert!(real.starts_with(mount.canonicalize().unwrap())),
            Err(e) => { one_line(&e); }
        }
    }
}

#[test]
fn hostile_cgroup_paths_get_one_line_errors_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("cg");
    fake_cgroup(&mount.join("jobs/with space"));
    fake_cgroup(&mount.join("jobs/ünïcødé"));
    fake_cgroup(&dir.path().join("outside"));
    std::os::unix::fs::symlink(dir.path().join("outside"), mount.join("jobs/escape")).unwrap();
    std::fs::create_dir_all(mount.join("jobs/not-a-cgroup")).unwrap();

    // Odd but real names resolve.
    for ok in ["jobs/with space", "jobs/ünïcødé", "/jobs/ünïcødé/"] {
        assert!(cgroups::resolve(&mount, ok).is_ok(), "{ok}");
    }
    let long = "x/".repeat(3000);
    let outside = dir.path().join("outside");
    let cases: [(&str, &str); 6] = [
        ("", "name a cgroup"),
        ("jobs/missing", "create it first"),
        ("jobs/escape", "not inside the cgroup2 mount"),
        ("../outside", "not inside the cgroup2 mount"),
        ("jobs/not-a-cgroup", "not a cgroup directory"),
        (&long, "not found"),
    ];
    for (arg, says) in cases {
        let e = cgroups::resolve(&mount, arg).expect_err(arg);
        let msg = one_line(&e);
        assert!(msg.contains(says), "{arg:.40}: {msg}");
    }
    // An absolute path outside the mount is taken as relative to it.
    let e = cgroups::resolve(&mount, &outside.to_string_lossy()).unwrap_err();
    assert!(one_line(&e).contains("not found"));
}

#[test]
fn well_formed_rules_parse() {
    // The property test above must not pass by rejecting everything.
    let cfg =
        Config::parse("[[rule]]\ncgroup = \"slurm/job_*\"\nclass = \"gang\"\nslot_ms = 200\n")
            .unwrap();
    assert_eq!(cfg.rules.len(), 1);
    assert_eq!(cfg.rules[0].class, Class::Gang);
}

#[test]
fn a_config_that_labels_the_root_guest_is_refused() {
    for pattern in ["/", "", "//"] {
        let text = format!("[[rule]]\ncgroup = {pattern:?}\nclass = \"guest\"\n");
        let e = Config::parse(&text).unwrap_err();
        assert!(one_line(&e).contains("root cgroup"), "{e:#}");
    }
    let e = Config::parse("default_class = \"gang\"\n").unwrap_err();
    assert!(one_line(&e).contains("tag its cgroup instead"));
}
