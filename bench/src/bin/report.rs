//! Turns a benchmark's figures (the JSON its binary printed) into its section of BENCHMARKS.md,
//! prints the section, and with `--write` puts it between its markers (the one splicer,
//! `lllm_bench::splice`). The scripts under `scripts/` call it after each benchmark.
//!
//! ```text
//! report [--write] [--file BENCHMARKS.md] BENCHMARK INPUT...
//!   concurrency FIGURES.json            journal FIGURES.json
//!   mcp FIGURES.json...                 otel FIGURES.json [PROCESSES.json]
//!   payoff LEGS.jsonl WORKERS           priority ELAPSED_S MOCK_ARGS LEG.json...
//!   replay WORK_DIR                     criterion CRITERION_DIR
//!   python FIGURES.json                 (with --write also redraws docs/bench_vs_python.svg)
//!   serve FIGURES.json                compaction LEGS.jsonl MOCK_ARGS
//!   continuation FIGURES.json
//!   admission DYNAMO_ARGS LEGS.jsonl... queue FIGURES.json
//!   floor TABLE.md                      (the `floor` binary's output)
//!   subagents FORKS.json MAKESPAN.json MOCK_ARGS   eval FIGURES.json
//! ```
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};
use lllm_bench::report::{
    admission, compaction, concurrency, continuation, criterion, eval, floor, journal, mcp, otel,
    payoff, priority, python, queue, replay, serve, subagents,
};
use lllm_bench::splice::{splice_file, Section};

const USAGE: &str = "usage: report [--write] [--file BENCHMARKS.md] BENCHMARK INPUT...
  concurrency FIGURES.json | journal FIGURES.json | mcp FIGURES.json...
  otel FIGURES.json [PROCESSES.json] | payoff LEGS.jsonl WORKERS
  priority ELAPSED_S MOCK_ARGS LEG.json... | replay WORK_DIR | criterion CRITERION_DIR
  python FIGURES.json | serve FIGURES.json | continuation FIGURES.json
  compaction LEGS.jsonl MOCK_ARGS
  admission DYNAMO_ARGS LEGS.jsonl... | queue FIGURES.json | floor TABLE.md
  subagents FORKS.json MAKESPAN.json MOCK_ARGS | eval FIGURES.json";

/// The command line, read.
struct Args {
    write: bool,
    file: PathBuf,
    benchmark: String,
    inputs: Vec<String>,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        write: false,
        file: PathBuf::from("BENCHMARKS.md"),
        benchmark: String::new(),
        inputs: Vec::new(),
    };
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        match arg.as_str() {
            "--write" => args.write = true,
            "--file" => {
                args.file = given.next().context("--file needs a path")?.into();
            }
            "-h" | "--help" => bail!("{USAGE}"),
            _ if args.benchmark.is_empty() => args.benchmark = arg,
            _ => args.inputs.push(arg),
        }
    }
    if args.benchmark.is_empty() {
        bail!("{USAGE}");
    }
    Ok(args)
}

/// The input at `index`, or a usage error naming what it is.
fn input<'a>(args: &'a Args, index: usize, what: &str) -> anyhow::Result<&'a str> {
    args.inputs
        .get(index)
        .map(String::as_str)
        .ok_or_else(|| anyhow!("report {}: missing {what}\n{USAGE}", args.benchmark))
}

fn paths(inputs: &[String]) -> Vec<&Path> {
    inputs.iter().map(Path::new).collect()
}

/// The sections of the benchmark the command line names, and the chart to draw, if any.
fn sections(args: &Args) -> anyhow::Result<(Vec<Section>, Option<String>)> {
    let first = |what| input(args, 0, what).map(Path::new);
    let sections = match args.benchmark.as_str() {
        "concurrency" => concurrency::report(first("FIGURES.json")?)?,
        "journal" => journal::report(first("FIGURES.json")?)?,
        "serve" => serve::report(first("FIGURES.json")?)?,
        "continuation" => continuation::report(first("FIGURES.json")?)?,
        "queue" => queue::report(first("FIGURES.json")?)?,
        "eval" => eval::report(first("FIGURES.json")?)?,
        "floor" => floor::report(first("TABLE.md")?)?,
        "admission" => {
            let dynamo = input(args, 0, "DYNAMO_ARGS")?;
            input(args, 1, "LEGS.jsonl")?;
            admission::report(&paths(&args.inputs[1..]), dynamo)?
        }
        "subagents" => subagents::report(
            first("FORKS.json")?,
            Path::new(input(args, 1, "MAKESPAN.json")?),
            input(args, 2, "MOCK_ARGS")?,
        )?,
        "compaction" => compaction::report(first("LEGS.jsonl")?, input(args, 1, "MOCK_ARGS")?)?,
        "mcp" => {
            first("FIGURES.json")?;
            mcp::report(&paths(&args.inputs))?
        }
        "otel" => otel::report(first("FIGURES.json")?, args.inputs.get(1).map(Path::new))?,
        "payoff" => {
            let workers = input(args, 1, "WORKERS")?;
            let workers = workers
                .parse()
                .with_context(|| format!("WORKERS: `{workers}` is not a count"))?;
            payoff::report(first("LEGS.jsonl")?, workers)?
        }
        "priority" => {
            let elapsed = input(args, 0, "ELAPSED_S")?;
            let elapsed = elapsed
                .parse()
                .with_context(|| format!("ELAPSED_S: `{elapsed}` is not whole seconds"))?;
            let mock = input(args, 1, "MOCK_ARGS")?;
            input(args, 2, "LEG.json")?;
            priority::report(&paths(&args.inputs[2..]), elapsed, mock)?
        }
        "replay" => replay::report(first("WORK_DIR")?)?,
        "criterion" => criterion::report(first("CRITERION_DIR")?)?,
        "python" => {
            let figures = python::read(first("FIGURES.json")?)?;
            return Ok((
                vec![python::section(&figures)],
                Some(python::chart(&figures)),
            ));
        }
        other => bail!("report: no benchmark `{other}`\n{USAGE}"),
    };
    Ok((sections, None))
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    let (sections, chart) = sections(&args)?;
    for section in &sections {
        println!("{}", section.body);
    }
    if args.write {
        splice_file(&args.file, &sections)?;
        if let Some(chart) = chart {
            let path = args
                .file
                .parent()
                .unwrap_or(Path::new("."))
                .join(python::CHART);
            std::fs::write(&path, chart).with_context(|| format!("{}", path.display()))?;
        }
        let names: Vec<&str> = sections.iter().map(|s| s.name).collect();
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "report: wrote {} into {}",
                names.join(", "),
                args.file.display()
            );
        }
    }
    Ok(())
}
