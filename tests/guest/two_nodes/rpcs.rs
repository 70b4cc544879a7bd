// SPDX-License-Identifier: GPL-2.0-only
//! What a job's start asks of slurmctld: sdiag's count of remote
//! procedure calls by message type, reset before the start and read
//! after it (the test: mod.rs). The hooks ask only through scontrol and
//! squeue: job listings (REQUEST_JOB_INFO, _SINGLE) and the row's update
//! (REQUEST_UPDATE_JOB); nothing else in a batch job's start asks those.

use std::collections::BTreeMap;
use std::path::Path;

use crate::slurm::sh;

/// The message types the hooks' commands send.
pub(super) const HOOK_RPCS: [&str; 3] = [
    "REQUEST_JOB_INFO",
    "REQUEST_JOB_INFO_SINGLE",
    "REQUEST_UPDATE_JOB",
];

/// sdiag with `args`, against the cluster of slurm.conf `conf`.
fn sdiag(conf: &Path, args: &str) -> String {
    sh(&format!("SLURM_CONF={} sdiag {args}", conf.display()))
}

/// Zero slurmctld's counters.
pub(super) fn reset(conf: &Path) {
    sdiag(conf, "--reset");
}

/// slurmctld's counts by message type since the last reset.
pub(super) fn by_type(conf: &Path) -> BTreeMap<String, u64> {
    parse(&sdiag(conf, ""))
}

/// The "by message type" table of sdiag's report: lines such as
/// `REQUEST_JOB_INFO ( 2003) count:4 ave_time:170 total_time:682`.
pub(super) fn parse(report: &str) -> BTreeMap<String, u64> {
    report
        .lines()
        .skip_while(|l| !l.contains("statistics by message type"))
        .skip(1)
        .take_while(|l| l.contains("count:"))
        .filter_map(|l| {
            let name = l.split_whitespace().next()?;
            let count = l.split("count:").nth(1)?.split_whitespace().next()?;
            Some((name.to_string(), count.parse().ok()?))
        })
        .collect()
}

/// Of `counts`: the hooks' calls, and all calls.
pub(super) fn hooks_and_all(counts: &BTreeMap<String, u64>) -> (u64, u64) {
    let hooks = HOOK_RPCS.iter().filter_map(|t| counts.get(*t)).sum();
    (hooks, counts.values().sum())
}

/// `TYPE xN` for each of the hooks' types that was called.
pub(super) fn describe_hooks(counts: &BTreeMap<String, u64>) -> String {
    let named: Vec<String> = HOOK_RPCS
        .iter()
        .filter_map(|t| Some(format!("{t} x{}", counts.get(*t)?)))
        .collect();
    if named.is_empty() {
        "none".to_string()
    } else {
        named.join(", ")
    }
}

#[test]
fn sdiags_table_reads_as_counts_by_type() {
    let report = "Remote Procedure Call statistics by message type\n\
        \tREQUEST_JOB_INFO                        ( 2003) count:4      ave_time:170    total_time:682\n\
        \tREQUEST_UPDATE_JOB                      ( 3001) count:1      ave_time:900    total_time:900\n\
        \tMESSAGE_NODE_REGISTRATION_STATUS        ( 1002) count:2      ave_time:50     total_time:100\n\
        \n\
        Remote Procedure Call statistics by user\n\
        \troot            (       0) count:7      ave_time:240    total_time:1682\n";
    let counts = parse(report);
    assert_eq!(counts.len(), 3);
    assert_eq!(hooks_and_all(&counts), (5, 7));
    assert_eq!(
        describe_hooks(&counts),
        "REQUEST_JOB_INFO x4, REQUEST_UPDATE_JOB x1"
    );
}
