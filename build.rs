// SPDX-License-Identifier: GPL-2.0-only
//
// Two builds of the BPF side's code:
//
// - The scheduler: every bpf/*.bpf.c is a compilation unit of its own,
//   compiled and then linked into one BPF object by libbpf's static linker
//   (scx_cargo's compile_link_gen, as scx_layered builds), with a
//   libbpf-rs skeleton for it and bindgen's Rust for bpf/intf.h, the one
//   header BPF and the agent share. scx_cargo supplies vmlinux.h and the
//   scx/common.bpf.h + compat.bpf.h headers, so one object loads on 6.12
//   and on newer kernels.
// - bpf/lib/pure.h for the host (pure_host.c), so that the agent's unit
//   tests run the BPF side's own arithmetic (src/bpf/pure.rs). Only tests
//   reference it; the linker leaves it out of the scheduler binary.
const UNITS: &[&str] = &[
    "bpf/main.bpf.c", // the ops; must come first (the skeleton's source)
    "bpf/account.bpf.c",
    "bpf/bandwidth.bpf.c",
    "bpf/classify.bpf.c",
    "bpf/ctx.bpf.c",
    "bpf/gang.bpf.c",
    "bpf/gang_clock.bpf.c",
    "bpf/gang_run.bpf.c",
    "bpf/guard.bpf.c",
    "bpf/llc.bpf.c",
    "bpf/machinery.bpf.c",
    "bpf/preempt.bpf.c",
    "bpf/reclassify.bpf.c",
    "bpf/relief.bpf.c",
    "bpf/slice.bpf.c",
    "bpf/smt.bpf.c",
    "bpf/stats.bpf.c",
    "bpf/tunables.bpf.c",
    "bpf/vtime.bpf.c",
    "bpf/wakeup.bpf.c",
    "bpf/weight.bpf.c",
];

fn main() {
    let mut bpf = scx_cargo::BpfBuilder::new().unwrap();
    bpf.enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel(UNITS[0], "bpf");
    for unit in &UNITS[1..] {
        bpf.add_source(unit);
    }
    bpf.compile_link_gen().unwrap();

    cc::Build::new()
        .file("bpf/lib/pure_host.c")
        .warnings(true)
        .compile("linger_pure_host");

    println!("cargo:rerun-if-changed=bpf");
}
