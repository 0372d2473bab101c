//! Runs one program and reports what it cost, for the `floor` benchmark:
//! `rusage PROGRAM [ARGS...]`. The program's standard streams are passed through; when it has
//! ended, one more line on standard output holds, as JSON, its wall time, user and system CPU time
//! and peak RSS (`getrusage(RUSAGE_CHILDREN)`: it is this process's only child) and its exit code.
//!
//! A process of its own, so that the figures are the program's alone: a program started by the
//! benchmark itself would count the benchmark's pages in its peak RSS (a child started with
//! `posix_spawn` shares its parent's memory until it executes the program), and RUSAGE_CHILDREN
//! would mix every run's peak. This binary uses nothing but std, nix and serde_json, so it is small
//! when it starts the program.
#![allow(clippy::print_stdout)]

use std::process::{Command, ExitCode};
use std::time::Instant;

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;

fn seconds(t: TimeVal) -> f64 {
    t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln_usage();
        return ExitCode::from(2);
    };
    let started = Instant::now();
    let status = match Command::new(&program).args(args).status() {
        Ok(status) => status,
        Err(e) => {
            report_error(&format!("cannot start {}: {e}", program.to_string_lossy()));
            return ExitCode::from(2);
        }
    };
    let wall = started.elapsed().as_secs_f64();
    let usage = match getrusage(UsageWho::RUSAGE_CHILDREN) {
        Ok(usage) => usage,
        Err(e) => {
            report_error(&format!("getrusage: {e}"));
            return ExitCode::from(2);
        }
    };
    let line = serde_json::json!({
        "wall_s": wall,
        "user_s": seconds(usage.user_time()),
        "sys_s": seconds(usage.system_time()),
        // Linux gives ru_maxrss in KiB.
        "max_rss_kib": usage.max_rss(),
        "code": status.code(),
    });
    println!("{line}");
    ExitCode::SUCCESS
}

#[allow(clippy::print_stderr)]
fn eprintln_usage() {
    eprintln!("usage: rusage PROGRAM [ARGS...]");
}

#[allow(clippy::print_stderr)]
fn report_error(message: &str) {
    eprintln!("rusage: {message}");
}
