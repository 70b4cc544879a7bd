// SPDX-License-Identifier: GPL-2.0-only
//! A guest shaped like a node: sockets of cores of SMT threads, split
//! into NUMA nodes, written `2s2c2t2n` (the `Nn` part is optional and
//! defaults to one node per socket).
//!
//! QEMU numbers the CPUs socket by socket, core by core, thread by
//! thread, so in `2s2c2t` CPUs 0 and 1 are SMT siblings, 0-3 share a
//! socket, and (with `2n`) NUMA node 1 holds CPUs 4-7. The guest tests
//! read the shape back from sysfs rather than assume it.

use std::fmt;
use std::str::FromStr;

use anyhow::{bail, Context, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub sockets: u32,
    pub cores: u32,
    pub threads: u32,
    pub nodes: u32,
}

impl Shape {
    pub fn cpus(&self) -> u32 {
        self.sockets * self.cores * self.threads
    }

    /// The QEMU option that lays the CPUs out.
    pub fn qemu_smp(&self) -> String {
        format!(
            "-smp {},sockets={},cores={},threads={}",
            self.cpus(),
            self.sockets,
            self.cores,
            self.threads
        )
    }

    /// virtme-ng's `--numa` values: `mem` (QEMU's size syntax) split
    /// evenly between the nodes, each with its run of CPUs.
    pub fn vng_numa(&self, mem: &str) -> Result<Vec<String>> {
        let mib = mem_mib(mem)?;
        if !mib.is_multiple_of(u64::from(self.nodes)) {
            bail!(
                "guest memory {mem} does not split evenly into {} NUMA nodes: pick a multiple of {} MiB",
                self.nodes,
                self.nodes
            );
        }
        let per_node = self.cpus() / self.nodes;
        Ok((0..self.nodes)
            .map(|n| {
                format!(
                    "{}M,cpus={}-{}",
                    mib / u64::from(self.nodes),
                    n * per_node,
                    (n + 1) * per_node - 1
                )
            })
            .collect())
    }
}

/// QEMU's memory size syntax (`2G`, `1536M`, a plain number of MiB) in MiB.
fn mem_mib(mem: &str) -> Result<u64> {
    let (num, unit) = mem.split_at(mem.find(|c: char| !c.is_ascii_digit()).unwrap_or(mem.len()));
    let n: u64 = num
        .parse()
        .with_context(|| format!("guest memory {mem:?}: expected a size like 2G or 1536M"))?;
    match unit {
        "" | "M" | "m" => Ok(n),
        "G" | "g" => Ok(n * 1024),
        _ => bail!("guest memory {mem:?}: expected a size like 2G or 1536M"),
    }
}

impl FromStr for Shape {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            format!(
                "topology {s:?}: write it as sockets, cores per socket, threads per core and \
                 optionally NUMA nodes, e.g. 2s2c2t or 2s4c2t2n"
            )
        };
        let (mut sockets, mut cores, mut threads, mut nodes) = (None, None, None, None);
        let mut num = String::new();
        for c in s.chars() {
            if c.is_ascii_digit() {
                num.push(c);
                continue;
            }
            let n: u32 = num.parse().ok().filter(|n| *n > 0).with_context(bad)?;
            num.clear();
            let slot = match c {
                's' => &mut sockets,
                'c' => &mut cores,
                't' => &mut threads,
                'n' => &mut nodes,
                _ => bail!(bad()),
            };
            if slot.replace(n).is_some() {
                bail!(bad());
            }
        }
        if !num.is_empty() {
            bail!(bad());
        }
        let (Some(sockets), Some(cores), Some(threads)) = (sockets, cores, threads) else {
            bail!(bad());
        };
        let shape = Shape {
            sockets,
            cores,
            threads,
            nodes: nodes.unwrap_or(sockets),
        };
        if !shape.cpus().is_multiple_of(shape.nodes) {
            bail!(
                "topology {s:?}: {} CPUs do not split evenly into {} NUMA nodes",
                shape.cpus(),
                shape.nodes
            );
        }
        Ok(shape)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}s{}c{}t{}n",
            self.sockets, self.cores, self.threads, self.nodes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_lays_out_a_two_socket_smt_node() {
        let s: Shape = "2s2c2t".parse().unwrap();
        assert_eq!(s.cpus(), 8);
        assert_eq!(s.nodes, 2);
        assert_eq!(s.qemu_smp(), "-smp 8,sockets=2,cores=2,threads=2");
        assert_eq!(
            s.vng_numa("2G").unwrap(),
            vec!["1024M,cpus=0-3", "1024M,cpus=4-7"]
        );
        assert_eq!(s.to_string(), "2s2c2t2n");
        assert_eq!("1s32c2t1n".parse::<Shape>().unwrap().cpus(), 64);
    }

    #[test]
    fn rejects_what_is_not_a_shape() {
        for bad in [
            "", "8", "2s2c", "2s2c2t3n", "0s2c2t", "2s2c2t2x", "2s2s2c2t", "2s2c2t2",
        ] {
            assert!(bad.parse::<Shape>().is_err(), "{bad:?} was accepted");
        }
        assert!("2s2c2t".parse::<Shape>().unwrap().vng_numa("3M").is_err());
    }
}
