// SPDX-License-Identifier: GPL-2.0-only
//! What each cgroup is: the classes operators label jobs with
//! (class.rs: the vocabulary and who may label what), the labels read
//! from the cgroup tree and the class every cgroup ends up with
//! (cgroups.rs), the agent's copy of the tree and the events that keep
//! it current (tree.rs, watch.rs), the site's rules (config.rs), Slurm's job cgroups and the
//! records its Prolog leaves for them (slurm.rs), the cluster rows
//! slurmctld hands multi-node gang jobs (slurm_rows.rs), Slurm's own
//! commands run from its hooks and the job records they print
//! (slurm_client.rs), the
//! `tag`, `untag` and `ls` commands (tag.rs), and the running agent as
//! label writers reach it: its pid file and notify signal (agent.rs).
//!
//! Owns every decision about a cgroup's class. Imports only node.rs and
//! bpf::intf (for the class values the BPF side shares); never the
//! running scheduler, gangs or figures.
pub mod agent;
pub mod cgroups;
pub mod class;
pub mod config;
#[cfg(test)]
mod hostile_input;
pub mod slurm;
pub mod slurm_client;
pub mod slurm_rows;
pub mod tag;
pub mod tree;
pub mod watch;
