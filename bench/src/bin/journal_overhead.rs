//! What a run's journal costs: a 100-turn dialog of one agent against the testing kit's stand-in
//! server (in this process), with and without a journal, the two legs alternating over several
//! repetitions so that drift in the machine's speed falls on both. Two workloads: each turn one
//! `receive` + `respond` answered with text (one journal line per turn), and each turn one tool call
//! through a Rust `tool_fn` tool before the text answer (two answers, `tool_started` and
//! `tool_finished`: four lines per turn).
//!
//! The stand-in server answers at once, so the run is as short as a run can be and the journal's
//! share of it as large as it can be: against a real model, whose answers take milliseconds to
//! seconds, the same bytes and writes are a vanishing share. The runtime is tokio's multi-threaded
//! one, as in `lllm run`.
//!
//! ```text
//! journal_overhead [REPETITIONS]    # default 101 per leg; prints one JSON object
//! ```
//!
//! `LLLM_JOURNAL_DIR` sets where the journals are written (default: the system's temp directory).
//! `LLLM_JOURNAL_LEG=with` or `without` runs only that leg, for profiling one under `perf stat` or
//! `strace -c` (then it prints nothing but the time it took).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lllm_runtime::agent::Usage;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::journal::{Journal, RunStart};
use lllm_runtime::testing::{StubReply, StubServer};
use lllm_runtime::tools::ToolError;
use lllm_runtime::{tool_fn, Agent, DialogId, Invoker, Message, ModelArgs, OpenAiInvoker};
use serde_json::json;

use lllm_bench::percentile;

const TURNS: usize = 100;
/// Runs of each leg before the measured ones (connection pool, allocator, page cache).
const WARMUP: usize = 3;
/// Appends timed for the micro-figure, in batches of `BATCH`.
const APPENDS: usize = 20_000;
const BATCH: usize = 100;
/// Journals created (each in a file just removed) for the figure of what starting one costs.
const CREATES: usize = 200;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// `receive` + `respond`, answered with text.
    Text,
    /// The same, the first answer of each turn calling a `tool_fn` tool.
    Tool,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Text => "text",
            Workload::Tool => "tool",
        }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupArgs {
    /// The key to look up.
    key: String,
}

/// One measured run: its wall time, and the journal's size in bytes and lines (0 without one).
struct Run {
    time: Duration,
    bytes: u64,
    lines: usize,
}

fn journal_path(dir: &Path, label: &str) -> PathBuf {
    dir.join(format!(
        "lllm-journal-bench-{}-{label}.jsonl",
        std::process::id()
    ))
}

fn run_start() -> RunStart {
    RunStart {
        tactic: "bench.yaml".into(),
        tactic_sha256: lllm_runtime::journal::content_hash(b"bench"),
        input: Some("bench input".into()),
        vars: serde_json::Map::new(),
        limits: Vec::new(),
        session: None,
        parent_session: None,
        seed: Vec::new(),
        dialogs: Vec::new(),
        caller_tools: Vec::new(),
    }
}

/// One 100-turn run, timed from before the journal is created to after its end is recorded.
async fn run(
    server: &StubServer,
    invoker: &Arc<dyn Invoker>,
    workload: Workload,
    journal: Option<&Path>,
) -> Result<Run, Box<dyn std::error::Error>> {
    if let Some(path) = journal {
        std::fs::remove_file(path).ok();
    }
    let started = Instant::now();
    let journal = journal
        .map(|path| Journal::create(path, run_start()).map(Arc::new))
        .transpose()?;
    let mut builder = Agent::builder()
        .name("bench")
        .system_prompt("You are a concise assistant.")
        .model("stub")
        .invoker(invoker.clone())
        .model_args(ModelArgs::new().api_base(server.base_url()).max_tokens(16));
    if workload == Workload::Tool {
        builder = builder.tool(tool_fn(
            "lookup",
            "Look a key up",
            |args: LookupArgs| async move { Ok::<_, ToolError>(format!("value of {}", args.key)) },
        ));
    }
    if let Some(journal) = &journal {
        builder = builder.journal(journal.clone());
    }
    let agent = builder.build()?;
    agent.open("main")?;
    let mut last = String::new();
    for turn in 0..TURNS {
        if workload == Workload::Tool {
            let arguments = json!({ "key": format!("k{turn}") }).to_string();
            server.push(StubReply::tool_calls(&[(
                &format!("call_{turn}"),
                "lookup",
                &arguments,
            )]));
        }
        agent.receive(format!("turn {turn}: say something short"))?;
        last = agent.respond("main").await?.content.unwrap_or_default();
    }
    if let Some(journal) = &journal {
        journal.finish(&last)?;
    }
    let time = started.elapsed();
    if !last.starts_with("stub answer to: turn") {
        return Err(format!("unexpected last answer: {last:?}").into());
    }
    let requests = server.requests().len();
    let expected = match workload {
        Workload::Text => TURNS,
        Workload::Tool => 2 * TURNS,
    };
    if requests != expected {
        return Err(format!("{requests} requests, expected {expected}").into());
    }
    server.clear_requests();
    let (bytes, lines) = match &journal {
        Some(journal) => {
            let text = std::fs::read_to_string(journal.path())?;
            std::fs::remove_file(journal.path())?;
            (text.len() as u64, text.lines().count())
        }
        None => (0, 0),
    };
    Ok(Run { time, bytes, lines })
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile(&sorted, 0.5)
}

fn leg(runs: &[Run]) -> serde_json::Value {
    let mut ms: Vec<f64> = runs.iter().map(|r| r.time.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    json!({
        "median_ms": percentile(&ms, 0.5),
        "p90_ms": percentile(&ms, 0.9),
        "min_ms": ms[0],
        "mean_ms": ms.iter().sum::<f64>() / ms.len() as f64,
    })
}

/// Alternates the two legs `repetitions` times (which goes first alternates too).
async fn measure(
    server: &StubServer,
    invoker: &Arc<dyn Invoker>,
    workload: Workload,
    dir: &Path,
    repetitions: usize,
) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let path = journal_path(dir, workload.name());
    for _ in 0..WARMUP {
        run(server, invoker, workload, None).await?;
        run(server, invoker, workload, Some(&path)).await?;
    }
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for i in 0..repetitions {
        if i % 2 == 0 {
            without.push(run(server, invoker, workload, None).await?);
            with.push(run(server, invoker, workload, Some(&path)).await?);
        } else {
            with.push(run(server, invoker, workload, Some(&path)).await?);
            without.push(run(server, invoker, workload, None).await?);
        }
    }
    let (plain, journaled) = (leg(&without), leg(&with));
    let overhead = |key: &str| {
        let (a, b) = (
            plain[key].as_f64().unwrap_or(f64::NAN),
            journaled[key].as_f64().unwrap_or(f64::NAN),
        );
        (b / a - 1.0) * 100.0
    };
    // Each journaled run against the run without a journal next to it: robust to slow drift.
    let paired: Vec<f64> = with
        .iter()
        .zip(&without)
        .map(|(w, o)| (w.time.as_secs_f64() / o.time.as_secs_f64() - 1.0) * 100.0)
        .collect();
    let added_us = (journaled["median_ms"].as_f64().unwrap_or(0.0)
        - plain["median_ms"].as_f64().unwrap_or(0.0))
        * 1e3;
    let bytes = with[0].bytes;
    if with.iter().any(|r| r.bytes != bytes) {
        return Err("the journals of the same workload differ in size".into());
    }
    Ok(json!({
        "workload": workload.name(),
        "turns": TURNS,
        "repetitions": repetitions,
        "without_journal": plain,
        "with_journal": journaled,
        "overhead_median_pct": overhead("median_ms"),
        "overhead_p90_pct": overhead("p90_ms"),
        "overhead_paired_median_pct": median(&paired),
        "journal_bytes": bytes,
        "journal_lines": with[0].lines,
        "bytes_per_turn": bytes as f64 / TURNS as f64,
        "added_us_per_turn": added_us / TURNS as f64,
        "added_us_per_line": added_us / with[0].lines as f64,
    }))
}

/// The answer line the `text` workload journals each turn, as the journal writes it (a copy of its
/// `answer` event, which is private to the journal).
#[derive(serde::Serialize)]
struct AnswerLine<'a> {
    event: &'static str,
    dialog: DialogId,
    n: u32,
    message: &'a Message,
}

fn typical_answer() -> Message {
    let mut message = Message::assistant("stub answer to: turn 42: say something short");
    message.usage = Some(Usage {
        prompt_tokens: 11,
        completion_tokens: 3,
        cached_tokens: None,
    });
    message.finish_reason = Some("stop".into());
    message
}

/// Median time per operation in ns, over batches of `BATCH`.
fn per_op_ns(mut op: impl FnMut()) -> f64 {
    let mut batches = Vec::with_capacity(APPENDS / BATCH);
    for _ in 0..APPENDS / BATCH {
        let start = Instant::now();
        for _ in 0..BATCH {
            op();
        }
        batches.push(start.elapsed().as_secs_f64() * 1e9 / BATCH as f64);
    }
    median(&batches)
}

/// One append of a typical answer, taken apart: serialising its line, writing the line with one
/// `write()`, and a whole append through the journal of a line of the same size (`Journal::saved`,
/// the public append, goes the same way: serialise, one write). Also what creating a journal costs.
/// All in tight loops, so with warm caches: inside a run, where each append comes between requests,
/// the same work takes longer.
fn micro(dir: &Path) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let message = typical_answer();
    let dialog = DialogId::new();
    let answer = || AnswerLine {
        event: "answer",
        dialog,
        n: 42,
        message: &message,
    };
    let line = {
        let mut line = serde_json::to_vec(&answer())?;
        line.push(b'\n');
        line
    };
    let serialise_ns = per_op_ns(|| {
        let mut bytes =
            serde_json::to_vec(&std::hint::black_box(answer())).unwrap_or_else(|_| Vec::new());
        bytes.push(b'\n');
        std::hint::black_box(bytes);
    });

    let raw_path = journal_path(dir, "raw");
    std::fs::remove_file(&raw_path).ok();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&raw_path)?;
    let write_ns = per_op_ns(|| {
        use std::io::Write;
        file.write_all(std::hint::black_box(&line)).ok();
    });
    drop(file);
    std::fs::remove_file(&raw_path)?;

    let path = journal_path(dir, "append");
    let mut creates = Vec::new();
    for _ in 0..CREATES {
        std::fs::remove_file(&path).ok();
        let start = Instant::now();
        let journal = Journal::create(&path, run_start())?;
        creates.push(start.elapsed().as_secs_f64() * 1e6);
        drop(journal);
    }
    creates.sort_by(f64::total_cmp);
    std::fs::remove_file(&path).ok();
    let journal = Journal::create(&path, run_start())?;
    // A `saved` line as long as the answer's line.
    let empty = serde_json::to_vec(&json!({"event": "saved", "name": "answer", "value": ""}))?;
    let text: String = message
        .text()
        .chars()
        .cycle()
        .take(line.len().saturating_sub(empty.len() + 1))
        .collect();
    let append_ns = per_op_ns(|| {
        journal.saved("answer", std::hint::black_box(&text)).ok();
    });
    drop(journal);
    let appended = std::fs::read_to_string(&path)?;
    std::fs::remove_file(&path)?;
    let append_line_bytes = appended.lines().nth(1).map_or(0, |l| l.len() + 1);
    Ok(json!({
        "answer_line_bytes": line.len(),
        "serialise_ns": serialise_ns,
        "write_ns": write_ns,
        "append_ns": append_ns,
        "append_line_bytes": append_line_bytes,
        "create_median_us": percentile(&creates, 0.5),
        "create_p90_us": percentile(&creates, 0.9),
        "create_max_us": creates[creates.len() - 1],
    }))
}

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let repetitions: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 101,
    };
    let dir = std::env::var_os("LLLM_JOURNAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let server = StubServer::start().await?;
    let invoker: Arc<dyn Invoker> = Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()));
    if let Ok(leg) = std::env::var("LLLM_JOURNAL_LEG") {
        let started = Instant::now();
        for workload in [Workload::Text, Workload::Tool] {
            let path = journal_path(&dir, workload.name());
            let journal = match leg.as_str() {
                "with" => Some(path.as_path()),
                "without" => None,
                _ => return Err("LLLM_JOURNAL_LEG is `with` or `without`".into()),
            };
            for _ in 0..WARMUP + repetitions {
                run(&server, &invoker, workload, journal).await?;
            }
        }
        println!("{leg}: {:.3} s", started.elapsed().as_secs_f64());
        return Ok(());
    }
    let text = measure(&server, &invoker, Workload::Text, &dir, repetitions).await?;
    let tool = measure(&server, &invoker, Workload::Tool, &dir, repetitions).await?;
    let report = json!({
        "journal_dir": dir.display().to_string(),
        "workloads": [text, tool],
        "append": micro(&dir)?,
    });
    println!("{report}");
    Ok(())
}
