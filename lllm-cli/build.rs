//! Release builds of `lllm` for Linux with glibc:
//!
//! - with the `release` profile and the toolchain's own linker (rustc's LLD, or the GNU linker `cc`
//!   drives), the functions a run executes are placed side by side (`hot_text.ld`, written by
//!   `scripts/hot_text.sh`): the kernel maps 64 KiB of a binary around each page a process first
//!   touches, and a run's code scattered over the binary's 17 MiB of machine code made most of its
//!   peak RSS (9 of 13 MiB, BENCHMARKS.md's floor section). Only that profile: its whole-program
//!   link hands the linker one object, and matching the script's patterns against its sections takes
//!   about 2 s; against the many objects of a build without LTO (the `quickstart` profile) it takes
//!   about a minute;
//! - the binary's relative relocations are packed (DT_RELR, `-z pack-relative-relocs`) when the
//!   toolchain can: the loader reads every relocation at start, and the packed form is about 4% of
//!   the size (0.64 MiB less of the binary in memory).
//!
//! Relocations are packed only when the C library linked against reads them (glibc 2.36 and later
//! define `GLIBC_ABI_DT_RELR`; the linker makes the binary require it, so an older glibc would refuse
//! to start it) and the linker knows the option (binutils 2.38, lld 15, mold). The functions are
//! placed only when no linker is chosen in `RUSTFLAGS` or Cargo's configuration (mold and gold do not
//! take the script's `INSERT`). A cross build, a debug build and another system are left as they are.
#![allow(clippy::print_stdout)] // Cargo reads its instructions on standard output.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=hot_text.ld");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if !linux_gnu || var("PROFILE") != "release" || var("TARGET") != var("HOST") {
        return;
    }
    if release_profile() && default_linker() && linker_takes_insert_scripts() {
        let script = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("hot_text.ld");
        // A copy of the package without the list (vendored, trimmed) links as other profiles do;
        // `-Wl,` splits its argument at commas, so a path with one cannot be passed this way.
        let exists = script.is_file();
        let script = script.display().to_string();
        if exists && !script.contains(',') {
            println!("cargo:rustc-link-arg-bin=lllm=-Wl,-T,{script}");
        }
    }
    if libc_reads_relr() && linker_packs_relr() {
        println!("cargo:rustc-link-arg-bin=lllm=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the profile is `release` itself, not one that inherits from it: Cargo tells a build
/// script only the profile's kind (`PROFILE`), and builds each profile under a folder of its name.
fn release_profile() -> bool {
    let out_dir = std::env::var_os("OUT_DIR").unwrap_or_default();
    let mut folders = std::path::Path::new(&out_dir).components().rev();
    // OUT_DIR is TARGET_DIR/PROFILE/build/PACKAGE-HASH/out.
    folders
        .nth(3)
        .is_some_and(|profile| profile.as_os_str() == "release")
}

/// Whether rustc links with the toolchain's linker: no linker named in Cargo's configuration
/// (`RUSTC_LINKER`) or in the flags.
fn default_linker() -> bool {
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    std::env::var_os("RUSTC_LINKER").is_none()
        && !flags.contains("fuse-ld")
        && !flags.contains("linker")
}

/// Whether the linker the C compiler drives is the GNU linker or LLD (rustc's own LLD, where it
/// links with it, takes the script too).
fn linker_takes_insert_scripts() -> bool {
    cc_output(&["-Wl,--version"])
        .is_some_and(|version| version.starts_with("GNU ld") || version.contains("LLD"))
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
