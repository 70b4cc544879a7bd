// SPDX-License-Identifier: GPL-2.0-only
//! What every cgroup resolves to, tested on trees built in memory: labels,
//! rules, inheritance, the job, machinery, and the paths a user may not
//! name.

use super::*;

fn cg(rel: &str, id: u64, trusted: Option<&str>, user: Option<&str>) -> Cgroup {
    Cgroup {
        rel: rel.into(),
        id,
        facts: Facts {
            trusted: trusted.map(str::to_string),
            user: user.map(str::to_string),
            ..Facts::default()
        },
        cpu_max: None,
    }
}

fn class_of<'a>(r: &'a [Resolved], rel: &str) -> &'a Resolved {
    r.iter().find(|x| x.rel == rel).unwrap()
}

#[test]
fn cpu_max_reads_as_the_kernel_writes_it() {
    let half = CpuMax::parse("50000 100000\n").unwrap();
    assert_eq!((half.quota_us, half.period_us), (50000, 100000));
    assert_eq!(half.entry().quota_ns, 50_000_000);
    assert_eq!(half.entry().period_ns, 100_000_000);
    // "max" is no limit, and so is anything the kernel never writes.
    for text in ["max 100000", "", "50000", "0 100000", "50000 0", "x y"] {
        assert_eq!(CpuMax::parse(text), None, "{text:?}");
    }
}

#[test]
fn finds_the_cgroup2_mount() {
    let info = "22 1 0:21 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw\n\
                23 1 0:22 / /proc rw - proc proc rw\n";
    assert_eq!(
        mount_from_mountinfo(info),
        Some(PathBuf::from("/sys/fs/cgroup"))
    );
    assert_eq!(
        mount_from_mountinfo("23 1 0:22 / /proc rw - proc proc rw\n"),
        None
    );
}

#[test]
fn descendants_inherit_unless_labelled() {
    let cgs = vec![
        cg("", 1, None, None),
        cg("jobs", 2, Some("guest"), None),
        cg("jobs/a", 3, None, None),
        cg("jobs/a/step", 4, None, None),
        cg("jobs/b", 5, Some("primary"), None),
        cg("system.slice", 6, None, None),
        cg("users/u1", 8, None, Some("guest")),
        cg("users", 7, None, None),
    ];
    let r = resolve_all(&cgs, Class::Primary);
    assert_eq!(class_of(&r, "").source, Source::Root);
    assert_eq!(class_of(&r, "jobs/a/step").class, Class::Guest);
    assert_eq!(
        class_of(&r, "jobs/a/step").source,
        Source::Inherited("jobs".into())
    );
    assert_eq!(class_of(&r, "jobs/b").class, Class::Primary);
    assert_eq!(class_of(&r, "system.slice").source, Source::Default);
    assert_eq!(class_of(&r, "users/u1").class, Class::Guest);
    let own: Vec<(u64, Class)> = r
        .iter()
        .filter(|x| x.own)
        .map(|x| (x.id, x.class))
        .collect();
    assert_eq!(own.len(), 3);
    assert!(own.contains(&(2, Class::Guest)) && own.contains(&(5, Class::Primary)));
}

#[test]
fn default_class_applies_below_the_root_only() {
    let cgs = vec![cg("", 1, None, None), cg("svc", 2, None, None)];
    let r = resolve_all(&cgs, Class::Guest);
    assert_eq!(class_of(&r, "").class, Class::Primary);
    assert_eq!(class_of(&r, "svc").class, Class::Guest);
    assert!(r.iter().all(|x| !x.own), "the default is no label");
    // What a new top-level cgroup inherits before the agent sees it.
    assert_eq!(class_of(&r, "").heir.class, Class::Guest);
    assert_eq!(class_of(&r, "svc").heir.class, Class::Guest);
}

#[test]
fn a_slurm_jobs_cgroup_is_a_job_of_its_own_and_its_request_only_demotes() {
    let scope = "system.slice/n1_slurmstepd.scope";
    let job = |rel: &str, id, slurm: u64, request: Option<&str>| Cgroup {
        facts: Facts {
            slurm_job: Some(slurm),
            request: request.map(Into::into),
            request_slot: Some("200".into()),
            ..Facts::default()
        },
        cpu_max: None,
        ..cg(rel, id, None, None)
    };
    let guest_slice = Cgroup {
        facts: Facts {
            rule: Some((Class::Guest, "system.slice".into())),
            ..Facts::default()
        },
        cpu_max: None,
        ..cg("system.slice", 2, None, None)
    };
    let cgs = vec![
        cg("", 1, None, None),
        guest_slice,
        cg(scope, 3, None, None),
        job(&format!("{scope}/job_7"), 4, 7, None),
        cg(&format!("{scope}/job_7/step_0"), 5, None, None),
        job(&format!("{scope}/job_8"), 6, 8, Some("guest-gang")),
        job(&format!("{scope}/job_9"), 7, 9, Some("gang")),
    ];
    let r = resolve_all(&cgs, Class::Primary);
    let at = |j: &str| class_of(&r, &format!("{scope}/{j}"));
    // Inheriting its class from system.slice, job 7 still counts alone.
    assert_eq!(
        (at("job_7").class, at("job_7").job, at("job_7").origin),
        (Class::Guest, 4, Some(2))
    );
    assert_eq!(at("job_7/step_0").job, 4);
    assert_eq!(
        (at("job_8").class, at("job_8").source.clone()),
        (Class::GuestGang, Source::Request)
    );
    assert_eq!(at("job_8").slot_ms, Some(200));
    // Asking to be a gang is a promotion: ignored, and said.
    assert_eq!(at("job_9").class, Class::Guest);
    assert!(
        at("job_9").warnings[0].contains("slurm_rule"),
        "{:?}",
        at("job_9").warnings
    );
}

#[test]
fn a_gang_job_on_several_nodes_without_a_row_here_is_no_gang_here() {
    let scope = "system.slice/n1_slurmstepd.scope";
    let job = |id: u64, spans_nodes, record_row, class| Cgroup {
        facts: Facts {
            slurm_job: Some(id),
            rule: Some((class, "partition=gang".into())),
            spans_nodes,
            record_row,
            ..Facts::default()
        },
        cpu_max: None,
        ..cg(&format!("{scope}/job_{id}"), id, None, None)
    };
    let cgs = vec![
        cg("", 1, None, None),
        job(5, false, None, Class::Gang),
        job(6, true, Some(1), Class::Gang),
        job(7, true, None, Class::Gang),
        job(8, true, None, Class::GuestGang),
        cg(&format!("{scope}/job_7/step_0"), 70, None, None),
    ];
    let r = resolve_all(&cgs, Class::Primary);
    let at = |j: &str| class_of(&r, &format!("{scope}/{j}"));
    // One node: a gang of this node, as ever. Several, with a row: a
    // gang in its row.
    assert_eq!(
        (at("job_5").class, at("job_5").rowless),
        (Class::Gang, false)
    );
    assert_eq!((at("job_6").class, at("job_6").row), (Class::Gang, Some(1)));
    // Several nodes and no row: its tier's ordinary work, said once in
    // `ls`, and its steps with it.
    for (j, tier) in [("job_7", Class::Primary), ("job_8", Class::Guest)] {
        let x = at(j);
        assert_eq!((x.class, x.rowless, x.slot_ms), (tier, true, None), "{j}");
        assert!(
            x.warnings
                .iter()
                .any(|w| w.contains("without a cluster row")),
            "{:?}",
            x.warnings
        );
    }
    assert_eq!(at("job_7/step_0").class, Class::Primary);
    assert_eq!(at("job_7").slurm_job, Some(7));
}

#[test]
fn a_job_cgroup_not_made_by_root_is_no_slurm_job() {
    use std::os::unix::fs::chown;
    let mount = tempfile::tempdir().unwrap();
    let job = mount.path().join("system.slice/n1_slurmstepd.scope/job_1");
    std::fs::create_dir_all(&job).unwrap();
    let read = || read_cgroup(mount.path(), &job, &Config::default()).unwrap();
    // The tests run as root, as the agent does: root's is Slurm's.
    if nix::unistd::geteuid().is_root() {
        assert_eq!(read().facts.slurm_job, Some(1));
        chown(&job, Some(1000), None).unwrap();
        assert_eq!(read().facts.slurm_job, None);
        chown(&job, Some(0), None).unwrap();
        chown(job.parent().unwrap(), Some(1000), None).unwrap();
        assert_eq!(read().facts.slurm_job, None);
    } else {
        assert_eq!(read().facts.slurm_job, None);
    }
}

#[test]
fn a_gang_jobs_step_daemons_run_beside_it_not_in_it() {
    let scope = "system.slice/n1_slurmstepd.scope";
    let gang_job = Cgroup {
        facts: Facts {
            slurm_job: Some(7),
            rule: Some((Class::GuestGang, "partition=scavenger".into())),
            ..Facts::default()
        },
        cpu_max: None,
        ..cg(&format!("{scope}/job_7"), 4, None, None)
    };
    let cgs = vec![
        cg("", 1, None, None),
        cg("system.slice", 2, None, None),
        cg(scope, 3, None, None),
        gang_job,
        cg(&format!("{scope}/job_7/step_0"), 5, None, None),
        cg(&format!("{scope}/job_7/step_0/slurm"), 6, None, None),
        cg(&format!("{scope}/job_7/step_0/user"), 7, None, None),
        cg(&format!("{scope}/job_7/step_0/user/task_0"), 8, None, None),
        cg(&format!("{scope}/job_7/step_extern"), 9, None, None),
        cg(&format!("{scope}/job_7/step_extern/user"), 10, None, None),
        cg(
            &format!("{scope}/job_7/step_extern/user/task_special"),
            11,
            None,
            None,
        ),
    ];
    let r = resolve_all(&cgs, Class::Primary);
    let at = |j: &str| class_of(&r, &format!("{scope}/job_7{j}"));
    for task in ["", "/step_0", "/step_0/user/task_0"] {
        assert_eq!(at(task).class, Class::GuestGang, "{task:?}");
    }
    for helper in ["/step_extern", "/step_extern/user/task_special"] {
        let h = at(helper);
        // The job's tier, its CPU time still the job's.
        assert_eq!(
            (h.class, h.heir.class, h.job, h.machinery),
            (Class::Guest, Class::Guest, 4, false),
            "{helper}"
        );
    }
    // The step daemon is the node's machinery, whatever the job's
    // class: a guest job's slurmstepd must still answer a cancel under
    // full primary load. Its CPU time is still the job's.
    let d = at("/step_0/slurm");
    assert_eq!(
        (d.class, d.heir.class, d.job, d.machinery),
        (Class::Primary, Class::Primary, 4, true)
    );
}

#[test]
fn the_nodes_machinery_is_its_services_and_step_daemons_and_nothing_a_user_owns() {
    let owned_by_user = |rel: &str, id| Cgroup {
        facts: Facts {
            delegated: true,
            ..Facts::default()
        },
        ..cg(rel, id, None, None)
    };
    let job = Cgroup {
        facts: Facts {
            slurm_job: Some(7),
            ..Facts::default()
        },
        ..cg("system.slice/slurmstepd.scope/job_7", 7, None, None)
    };
    let cgs = vec![
        cg("", 1, None, None),
        cg("init.scope", 2, None, None),
        cg("system.slice", 3, None, None),
        cg("system.slice/slurmd.service", 4, None, None),
        cg("system.slice/munge.service", 5, None, None),
        cg("system.slice/batch.service", 6, Some("guest"), None),
        job,
        cg("system.slice/slurmstepd.scope", 8, None, None),
        cg("system.slice/slurmstepd.scope/job_7/step_0", 9, None, None),
        cg(
            "system.slice/slurmstepd.scope/job_7/step_0/slurm",
            10,
            None,
            None,
        ),
        owned_by_user("system.slice/delegated.service", 11),
        cg("user.slice", 12, None, None),
        cg("user.slice/user-1000.slice", 13, None, None),
        cg("kubepods.slice", 14, None, None),
    ];
    // Whatever the default class: the services are the node's.
    let r = resolve_all(&cgs, Class::Guest);
    let m = |rel: &str| {
        let x = class_of(&r, rel);
        (x.machinery, x.class)
    };
    for rel in [
        "init.scope",
        "system.slice",
        "system.slice/slurmd.service",
        "system.slice/munge.service",
        "system.slice/slurmstepd.scope",
        "system.slice/slurmstepd.scope/job_7/step_0/slurm",
    ] {
        assert_eq!(m(rel), (true, Class::Primary), "{rel}");
    }
    assert!(
        !class_of(&r, "").machinery,
        "the root holds jobs without systemd"
    );
    for rel in [
        "system.slice/batch.service",
        "system.slice/slurmstepd.scope/job_7",
        "system.slice/slurmstepd.scope/job_7/step_0",
        "system.slice/delegated.service",
        "user.slice",
        "user.slice/user-1000.slice",
        "kubepods.slice",
    ] {
        assert_eq!(m(rel), (false, Class::Guest), "{rel}");
    }
    // A new service is the node's before the agent sees it; a new
    // top-level cgroup is not.
    assert!(!class_of(&r, "").heir.machinery);
    assert!(class_of(&r, "system.slice").heir.machinery);
}

#[test]
fn jobs_are_the_labelled_cgroup_else_the_top_level_one() {
    let cgs = vec![
        cg("", 1, None, None),
        cg("jobs", 2, None, None),
        cg("jobs/42", 3, Some("guest"), None),
        cg("jobs/42/step_0", 4, None, None),
        cg("jobs/43", 5, None, None),
        cg("jobs/43/step_0", 6, None, None),
    ];
    let r = resolve_all(&cgs, Class::Primary);
    let job = |rel| class_of(&r, rel).job;
    let origin = |rel| class_of(&r, rel).origin;
    assert_eq!((job(""), origin("")), (1, None));
    assert_eq!((job("jobs"), origin("jobs")), (2, None));
    assert_eq!((job("jobs/42"), origin("jobs/42")), (3, Some(3)));
    assert_eq!(
        (job("jobs/42/step_0"), origin("jobs/42/step_0")),
        (3, Some(3))
    );
    // Unlabelled below the top level: the top-level cgroup's job.
    assert_eq!((job("jobs/43/step_0"), origin("jobs/43/step_0")), (2, None));
}

#[test]
fn heirs_take_their_ancestors_class_but_the_roots_take_the_default() {
    let cgs = vec![
        cg("", 1, None, None),
        cg("batch", 2, Some("gang"), None),
        cg("batch/rank0", 3, None, None),
    ];
    let r = resolve_all(&cgs, Class::Guest);
    let root = class_of(&r, "");
    assert_eq!(root.class, Class::Primary);
    assert_eq!(
        root.heir,
        Heir {
            class: Class::Guest,
            origin: None,
            job: None,
            machinery: false,
        }
    );
    let rank = class_of(&r, "batch/rank0");
    assert_eq!((rank.class, rank.origin), (Class::Gang, Some(2)));
    assert_eq!(
        rank.heir,
        Heir {
            class: Class::Gang,
            origin: Some(2),
            job: Some(2),
            machinery: false,
        }
    );
}

#[test]
fn resolves_operator_paths_inside_the_mount_only() {
    let mount = tempfile::tempdir().unwrap();
    let m = mount.path();
    std::fs::create_dir_all(m.join("jobs/my job ü")).unwrap();
    std::fs::write(m.join("jobs/my job ü/cgroup.procs"), "").unwrap();
    std::fs::create_dir_all(m.join("plain")).unwrap();
    let (abs, rel) = resolve(m, "jobs/my job ü").unwrap();
    assert_eq!(rel, "jobs/my job ü");
    assert!(abs.ends_with("jobs/my job ü"));
    assert_eq!(resolve(m, "/jobs/my job ü").unwrap().1, "jobs/my job ü");
    let full = m.join("jobs/my job ü");
    assert_eq!(
        resolve(m, full.to_str().unwrap()).unwrap().1,
        "jobs/my job ü"
    );

    let e = |a: &str| format!("{:#}", resolve(m, a).unwrap_err());
    assert!(e("nope").contains("not found"));
    assert!(e("").contains("empty"));
    assert!(e("plain").contains("not a cgroup"));
    assert!(e("../../../../etc").contains("not"));
    assert!(e(&"a/".repeat(3000)).len() < 400);

    std::os::unix::fs::symlink("/etc", m.join("jobs/escape")).unwrap();
    assert!(e("jobs/escape").contains("not inside the cgroup2 mount"));
}
