//! lllm against Python lllm: the same N-turn conversation through Python lllm
//! (`scripts/bench/python_lllm_turns.py`) and through lllm (`turns`), against the same stand-in
//! server, each a process of its own. Prints one JSON object (for `report python`): per client,
//! the whole-process wall time of one turn (median of 5 runs), the client's CPU time per turn over
//! 100 turns and its peak RSS (median and maximum of 3 runs).
//!
//! ```text
//! vs_python API_BASE PYTHON PYTHON_SCRIPT TURNS_BINARY
//! ```
//!
//! The CPU time is the child's own (user + system, from `getrusage(RUSAGE_CHILDREN)` around its
//! wait); the peak RSS comes from GNU time (`/usr/bin/time -f %M`), which starts the program from a
//! small process of its own.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use nix::sys::resource::{getrusage, UsageWho};
use serde_json::json;

/// One measured process: wall time, CPU time (user + system), peak RSS.
struct Measured {
    wall: Duration,
    cpu: Duration,
    peak_rss_mib: f64,
}

/// The CPU time of this process's waited-for children so far.
fn children_cpu() -> anyhow::Result<Duration> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    Ok(time(usage.user_time()) + time(usage.system_time()))
}

/// Runs `command` (program, arguments) to its end; checks it answered.
fn run(command: &[String]) -> anyhow::Result<()> {
    let out = Command::new(&command[0])
        .args(&command[1..])
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_LOG", "ERROR")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {}", command[0]))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains("stub answer to") {
        bail!("{} failed ({}): {:.300}", command[0], out.status, stdout);
    }
    Ok(())
}

/// One run of `command` timed, then one under GNU time for its peak RSS.
fn measure(command: &[String]) -> anyhow::Result<Measured> {
    let cpu_before = children_cpu()?;
    let started = Instant::now();
    run(command)?;
    let wall = started.elapsed();
    let cpu = children_cpu()?.saturating_sub(cpu_before);
    let report = std::env::temp_dir().join(format!("lllm-vs-python-{}.rss", std::process::id()));
    let mut timed = vec![
        "/usr/bin/time".to_owned(),
        "-f".into(),
        "%M".into(),
        "-o".into(),
        report.display().to_string(),
    ];
    timed.extend_from_slice(command);
    run(&timed)?;
    let kib: f64 = std::fs::read_to_string(&report)?
        .split_whitespace()
        .last()
        .context("GNU time wrote no peak RSS")?
        .parse()?;
    std::fs::remove_file(&report).ok();
    Ok(Measured {
        wall,
        cpu,
        peak_rss_mib: kib / 1024.0,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// One client's figures; `command(n)` is the command for `n` turns.
fn client(name: &str, command: impl Fn(usize) -> Vec<String>) -> anyhow::Result<serde_json::Value> {
    measure(&command(1))?; // Warms the page cache: both sides start from files already read once.
    let one = (0..5)
        .map(|_| measure(&command(1)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let hundred = (0..3)
        .map(|_| measure(&command(100)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let figures = json!({
        "one_turn_wall_s": median(one.iter().map(|m| m.wall.as_secs_f64()).collect()),
        "cpu_per_turn_ms": 1e3 * median(hundred.iter().map(|m| m.cpu.as_secs_f64()).collect()) / 100.0,
        "peak_rss_mib": hundred.iter().map(|m| m.peak_rss_mib).fold(0.0, f64::max),
    });
    eprintln!("{name}: {figures}");
    Ok(figures)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [api_base, python, script, turns] = args.as_slice() else {
        bail!("usage: vs_python API_BASE PYTHON PYTHON_SCRIPT TURNS_BINARY");
    };
    let version = Command::new(python).arg("--version").output()?;
    let version = String::from_utf8_lossy(&version.stdout);
    let version = version.trim().trim_start_matches("Python ").to_owned();
    let python_figures = client("Python lllm 0.2.1", |n| {
        vec![
            python.clone(),
            script.clone(),
            api_base.clone(),
            n.to_string(),
        ]
    })?;
    let rust_figures = client("lllm (Rust)", |n| {
        vec![turns.clone(), api_base.clone(), n.to_string()]
    })?;
    println!(
        "{}",
        json!({"python_version": version, "python": python_figures, "rust": rust_figures})
    );
    Ok(())
}
