//! The benchmark binaries run once, in their shortest form, and `report --write` puts their figures
//! into a copy of BENCHMARKS.md: what `scripts/bench.sh --write` does, minus the timing (the test
//! command runs no benchmark). The benchmarks on Dynamo and against Python lllm run only under
//! `scripts/bench.sh`; their sections are tested on fixed figures in `lllm_bench::report`.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;

use lllm_bench::report::today;

/// A folder of its own under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("lllm-bench-smoke-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Runs `command`, which must succeed; its standard output goes to `out`.
fn run_into(command: &mut Command, out: &Path) {
    let output = command.output().expect("the benchmark starts");
    assert!(
        output.status.success(),
        "{command:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::write(out, &output.stdout).expect("figures written");
}

/// `report --write BENCHMARK INPUTS` into a copy of the repository's BENCHMARKS.md in `dir`: the
/// section `name` now holds today's figures, and everything outside it is as it was.
fn report_writes(dir: &Path, benchmark: &str, name: &str, inputs: &[&Path]) -> String {
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
    let original = std::fs::read_to_string(original).expect("BENCHMARKS.md");
    let copy = dir.join("BENCHMARKS.md");
    std::fs::write(&copy, &original).expect("copy");
    let output = Command::new(env!("CARGO_BIN_EXE_report"))
        .args(["--write", "--file"])
        .arg(&copy)
        .arg(benchmark)
        .args(inputs)
        .output()
        .expect("report starts");
    assert!(
        output.status.success(),
        "report {benchmark} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let written = std::fs::read_to_string(&copy).expect("copy read");
    let (start, end) = (
        format!("<!-- {name}:start -->"),
        format!("<!-- {name}:end -->"),
    );
    let outside = |text: &str| {
        let (before, rest) = text.split_once(&start).expect("start marker");
        let (inside, after) = rest.split_once(&end).expect("end marker");
        (before.to_owned(), inside.to_owned(), after.to_owned())
    };
    let (before, inside, after) = outside(&written);
    let (old_before, _, old_after) = outside(&original);
    assert_eq!(
        (before, after),
        (old_before, old_after),
        "text outside the section changed"
    );
    assert!(
        inside.starts_with(&format!("\nMeasured {}", today())),
        "{inside}"
    );
    // What report printed is what it wrote.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        inside.trim()
    );
    inside
}

#[test]
fn concurrency_figures_go_into_benchmarks_md() {
    let dir = TempDir::new("concurrency");
    let figures = dir.0.join("figures.json");
    run_into(
        Command::new(env!("CARGO_BIN_EXE_concurrency")).env("LLLM_DIALOGS", "20"),
        &figures,
    );
    let section = report_writes(&dir.0, "concurrency", "concurrency", &[&figures]);
    assert!(section.contains("| 20 | 10 | 200 |"), "{section}");
}

#[test]
fn journal_overhead_figures_go_into_benchmarks_md() {
    let dir = TempDir::new("journal");
    let figures = dir.0.join("figures.json");
    run_into(
        Command::new(env!("CARGO_BIN_EXE_journal_overhead"))
            .arg("1")
            .env("LLLM_JOURNAL_DIR", &dir.0),
        &figures,
    );
    let section = report_writes(&dir.0, "journal", "journal", &[&figures]);
    assert!(
        section.contains("alternate, 1 of each after 3 warm-up runs"),
        "{section}"
    );
    assert!(section.contains("| text answer | 103 |"), "{section}");
    assert!(
        section.contains("| one tool call, then the answer | 403 |"),
        "{section}"
    );
}

#[test]
fn otel_overhead_figures_go_into_benchmarks_md() {
    let dir = TempDir::new("otel");
    let figures = dir.0.join("figures.json");
    run_into(
        Command::new(env!("CARGO_BIN_EXE_otel_overhead")).arg("1"),
        &figures,
    );
    let section = report_writes(&dir.0, "otel", "otel", &[&figures]);
    assert!(
        section.contains("| exporting to a collector on 127.0.0.1 |"),
        "{section}"
    );
    assert!(section.contains("| 201 (1 POST) |"), "{section}");
}

#[test]
fn mcp_overhead_figures_go_into_benchmarks_md() {
    let Ok(server) = std::env::var("LLLM_MCP_EVERYTHING") else {
        assert_ne!(
            std::env::var("LLLM_REQUIRE_MCP").as_deref(),
            Ok("1"),
            "LLLM_REQUIRE_MCP=1 and no LLLM_MCP_EVERYTHING (scripts/servers/mcp.sh install)"
        );
        eprintln!("skipped: no LLLM_MCP_EVERYTHING (scripts/servers/mcp.sh install)");
        return;
    };
    let dir = TempDir::new("mcp");
    let figures = dir.0.join("figures.json");
    run_into(
        // 100 calls: one block of each side (the calls are counted in blocks of 100).
        Command::new(env!("CARGO_BIN_EXE_mcp_overhead"))
            .args(["100", "43", "--", &server, "stdio"]),
        &figures,
    );
    let section = report_writes(&dir.0, "mcp", "mcp", &[&figures]);
    assert!(section.contains("| 43 B | 100 |"), "{section}");
}

#[test]
fn serve_overhead_figures_go_into_benchmarks_md() {
    let dir = TempDir::new("serve");
    let figures = dir.0.join("figures.json");
    run_into(
        Command::new(env!("CARGO_BIN_EXE_serve_overhead")).args(["--requests", "20"]),
        &figures,
    );
    let inside = report_writes(&dir.0, "serve", "serve", &[&figures]);
    assert!(inside.contains("requests per second"), "{inside}");
}

#[test]
fn serve_continuation_figures_go_into_benchmarks_md() {
    let dir = TempDir::new("continuation");
    let figures = dir.0.join("figures.json");
    run_into(
        Command::new(env!("CARGO_BIN_EXE_serve_continuation")).args([
            "--requests",
            "10",
            "--conversations",
            "20",
            "--sample",
            "2",
        ]),
        &figures,
    );
    let inside = report_writes(&dir.0, "continuation", "continuation", &[&figures]);
    assert!(
        inside.contains("| turn 10 (19 messages) | p50 | p99 |"),
        "{inside}"
    );
    assert!(inside.contains("| 50 | 100 |"), "{inside}");
    assert!(inside.contains("KiB per conversation"), "{inside}");
}
