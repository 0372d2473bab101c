//! Release builds of `lllm` for Linux with glibc pack the binary's relative relocations (DT_RELR,
//! `-z pack-relative-relocs`) when the toolchain can: the loader reads every relocation at start, and
//! the packed form is about 4% of the size (0.64 MiB less of the binary in memory, BENCHMARKS.md's
//! floor section).
//!
//! Only when the C library linked against reads them (glibc 2.36 and later define
//! `GLIBC_ABI_DT_RELR`; the linker makes the binary require it, so an older glibc would refuse to
//! start it) and the linker knows the option (binutils 2.38, lld 15, mold). A cross build, a debug
//! build and other systems are left as they are.
#![allow(clippy::print_stdout)] // Cargo reads its instructions on standard output.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if !linux_gnu || var("PROFILE") != "release" || var("TARGET") != var("HOST") {
        return;
    }
    if libc_reads_relr() && linker_packs_relr() {
        println!("cargo:rustc-link-arg-bin=lllm=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the `libc.so.6` the C compiler links against defines `GLIBC_ABI_DT_RELR`.
fn libc_reads_relr() -> bool {
    let Some(path) = cc_output(&["-print-file-name=libc.so.6"]) else {
        return false;
    };
    std::fs::read(path.trim()).is_ok_and(|bytes| {
        bytes
            .windows(b"GLIBC_ABI_DT_RELR".len())
            .any(|w| w == b"GLIBC_ABI_DT_RELR")
    })
}

/// Whether the linker the C compiler drives lists `pack-relative-relocs` in its help.
fn linker_packs_relr() -> bool {
    cc_output(&["-Wl,--help"]).is_some_and(|help| help.contains("pack-relative-relocs"))
}

/// What `cc ARGS` prints on standard output, if it ran and succeeded (rustc links through `cc` on
/// Linux unless told otherwise).
fn cc_output(args: &[&str]) -> Option<String> {
    let output = Command::new("cc").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}
