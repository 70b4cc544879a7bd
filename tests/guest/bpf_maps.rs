// SPDX-License-Identifier: GPL-2.0-only
//! What the kernel holds for the BPF side, read without the agent: its
//! maps through bpftool, and a cgroup's id as BPF keys it.

use std::fs;
use std::process::Command;

/// BPF map `name`'s entries now, as bpftool dumps them: an observer
/// independent of the agent's own bookkeeping.
fn bpf_map_dump(name: &str) -> Vec<serde_json::Value> {
    let out = Command::new("bpftool")
        .args(["-j", "map", "dump", "name", name])
        .output()
        .expect("running bpftool (cargo xtask deps installs it)");
    assert!(
        out.status.success(),
        "bpftool map dump name {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("bpftool printed no JSON");
    match v {
        serde_json::Value::Array(entries) => entries,
        _ => Vec::new(),
    }
}

/// How many entries BPF map `name` holds now.
pub fn bpf_map_entries(name: &str) -> usize {
    bpf_map_dump(name).len()
}

/// The keys of BPF hash map `name`, keyed by a u64 (a cgroup id). bpftool
/// prints a key as its bytes in hex ("0x2a", ...), native order.
pub fn bpf_map_u64_keys(name: &str) -> Vec<u64> {
    bpf_map_dump(name)
        .iter()
        .map(|e| {
            let bytes: Vec<u8> = e["key"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: an entry without key bytes: {e}"))
                .iter()
                .map(|b| {
                    let hex = b.as_str().unwrap_or_default().trim_start_matches("0x");
                    u8::from_str_radix(hex, 16)
                        .unwrap_or_else(|_| panic!("{name}: key byte {b} is not hex"))
                })
                .collect();
            let raw: [u8; 8] = bytes
                .try_into()
                .unwrap_or_else(|b: Vec<u8>| panic!("{name}: a {}-byte key, not u64", b.len()));
            u64::from_ne_bytes(raw)
        })
        .collect()
}

/// A cgroup's id, as BPF and the kernel name it: its cgroupfs inode.
pub fn cgroup_id(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path)
        .unwrap_or_else(|e| panic!("stat {}: {e}", path.display()))
        .ino()
}
