// SPDX-License-Identifier: GPL-2.0-only
//
// Compile bpf/main.bpf.c into a libbpf-rs skeleton and bindgen bpf/intf.h, the
// one header that BPF and Rust share. scx_cargo supplies vmlinux.h and the
// scx/common.bpf.h + compat.bpf.h headers, so one object loads on 6.12 and on
// newer kernels.
fn main() {
    scx_cargo::BpfBuilder::new()
        .unwrap()
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf")
        .build()
        .unwrap();
    // Every file under bpf/ is part of the one BPF object.
    println!("cargo:rerun-if-changed=bpf");
}
