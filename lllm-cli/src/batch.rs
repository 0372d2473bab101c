//! `lllm batch`: a tactic run once per line of a JSONL file, items concurrently, each result appended
//! to the output as it finishes; a re-run skips the items already answered.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::Instrument as _;

use anyhow::{anyhow, Context};
use futures::StreamExt;
use lllm_runtime::{
    load_tactic, preflight, Invoker, McpServers, OpenAiInvoker, PromptVars, RunBudget,
    TacticRegistry, TacticSpec, Team, Usage,
};
use serde_json::{json, Value};

use crate::cli::BatchArgs;
use crate::exit::{failed, usage, Failure};

/// Items run at the same time unless `--concurrency` says otherwise.
pub(crate) const DEFAULT_CONCURRENCY: u16 = 8;
/// Longest input line: an item is one prompt and its variables.
const MAX_ITEM_BYTES: u64 = 16 * 1024 * 1024;

/// One line of the inputs.
#[derive(Debug)]
struct Item {
    id: String,
    /// The id as written (a number stays a number in the output).
    id_value: Value,
    input: Option<String>,
    vars: PromptVars,
}

pub(crate) fn batch(args: BatchArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    crate::redact::remember_tactic(&spec);
    let vars = crate::run::parse_vars(&args.vars).map_err(usage)?;
    let items = read_items(&args.inputs).map_err(usage)?;
    let done = answered_ids(&args.output).map_err(usage)?;
    let all = items.len();
    let todo: Vec<Item> = items
        .into_iter()
        .filter(|i| !done.contains(&i.id))
        .collect();
    let skipped = all - todo.len();
    let output = open_output(&args.output).map_err(usage)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(failed)?;
    let servers = runtime.block_on(crate::run::start_servers(&spec))?;
    let outcome = runtime.block_on(run_items(
        &spec,
        registry,
        &vars,
        todo,
        &args,
        &servers,
        Mutex::new(output),
        skipped,
    ));
    runtime.block_on(servers.shutdown());
    outcome
}

/// Reads the items: one JSON object a line, `id` optional (the line number), ids unique.
fn read_items(path: &Path) -> anyhow::Result<Vec<Item>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut number = 0;
    loop {
        let mut line = Vec::new();
        let read = (&mut reader)
            .take(MAX_ITEM_BYTES + 1)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        number += 1;
        let at = || format!("{}:{number}", path.display());
        if read as u64 > MAX_ITEM_BYTES {
            return Err(anyhow!(
                "{}: an item is longer than {} MiB",
                at(),
                MAX_ITEM_BYTES >> 20
            ));
        }
        let text = String::from_utf8(line).map_err(|_| anyhow!("{}: not UTF-8", at()))?;
        if text.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(&text).map_err(|e| anyhow!("{}: not a JSON object: {e}", at()))?;
        let Value::Object(mut object) = value else {
            return Err(anyhow!(
                "{}: each line must be a JSON object {{\"id\", \"input\", \"vars\"}}",
                at()
            ));
        };
        if let Some(key) = object
            .keys()
            .find(|k| !["id", "input", "vars"].contains(&k.as_str()))
        {
            return Err(anyhow!(
                "{}: unknown key `{key}`; an item has `id`, `input` and `vars`",
                at()
            ));
        }
        let id_value = object.remove("id").unwrap_or_else(|| Value::from(number));
        let id = match &id_value {
            Value::String(s) if !s.is_empty() => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => {
                return Err(anyhow!(
                    "{}: `id` must be a non-empty string or a number",
                    at()
                ))
            }
        };
        if !seen.insert(id.clone()) {
            return Err(anyhow!("{}: the id `{id}` is used twice", at()));
        }
        let input = match object.remove("input") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(anyhow!("{}: `input` must be a string", at())),
        };
        let vars = match object.remove("vars") {
            None | Some(Value::Null) => PromptVars::new(),
            Some(Value::Object(map)) => {
                if let Some(bad) = map.keys().find(|k| !lllm_core::is_variable_name(k)) {
                    return Err(anyhow!("{}: `{bad}` is not a variable name", at()));
                }
                map.into_iter().collect()
            }
            Some(_) => return Err(anyhow!("{}: `vars` must be an object", at())),
        };
        items.push(Item {
            id,
            id_value,
            input,
            vars,
        });
    }
    Ok(items)
}

/// Opens the output for appending (readable by its owner only when created: it holds answers); a
/// line a crash tore is ended first, so that the next result starts a line of its own.
fn open_output(path: &Path) -> anyhow::Result<std::fs::File> {
    let cannot = || format!("cannot write {}", path.display());
    let torn = last_byte(path).is_some_and(|b| b != b'\n');
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).with_context(cannot)?;
    if torn {
        file.write_all(b"\n").with_context(cannot)?;
    }
    Ok(file)
}

/// The last byte of a file, if it has one.
fn last_byte(path: &Path) -> Option<u8> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::End(-1)).ok()?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte).ok()?;
    Some(byte[0])
}

/// The ids the output already answers (failed ones are tried again).
fn answered_ids(path: &Path) -> anyhow::Result<HashSet<String>> {
    let Ok(file) = std::fs::File::open(path) else {
        return Ok(HashSet::new());
    };
    let mut ids = HashSet::new();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        // A line torn by a crash is no answer.
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if object.contains_key("output") {
            match object.get("id") {
                Some(Value::String(s)) => ids.insert(s.clone()),
                Some(Value::Number(n)) => ids.insert(n.to_string()),
                _ => false,
            };
        }
    }
    Ok(ids)
}

/// The counts a progress line shows.
#[derive(Default)]
struct Counts {
    done: AtomicUsize,
    failed: AtomicUsize,
    in_flight: AtomicUsize,
    tokens: AtomicU64,
}

#[allow(clippy::too_many_arguments)]
async fn run_items(
    spec: &TacticSpec,
    registry: &TacticRegistry,
    vars: &PromptVars,
    items: Vec<Item>,
    args: &BatchArgs,
    servers: &McpServers,
    output: Mutex<std::fs::File>,
    skipped: usize,
) -> Result<(), Failure> {
    // The tactic is checked once, before any item runs.
    let tactic = registry.create(spec).map_err(usage)?;
    let invoker: Arc<dyn Invoker> = Arc::new(OpenAiInvoker::new());
    let confirm = crate::confirm::confirmer(args.yes, false, false);
    let total = items.len();
    let counts = Counts::default();
    let bar = progress_bar(total as u64);
    let latencies = Mutex::new(Vec::with_capacity(total));
    let concurrency = usize::from(args.concurrency).max(1);
    let started = Instant::now();
    let runs = items.into_iter().map(|item| {
        let (invoker, confirm, counts, bar, output, latencies) =
            (&invoker, &confirm, &counts, &bar, &output, &latencies);
        let tactic = &tactic;
        async move {
            counts.in_flight.fetch_add(1, Ordering::SeqCst);
            refresh(bar, counts);
            let began = Instant::now();
            let shared = Shared {
                spec,
                tactic: tactic.as_ref(),
                vars,
                invoker,
                confirm,
                servers,
                class: args.priority_class.into(),
            };
            let result = run_item(&shared, &item).await;
            let seconds = began.elapsed().as_secs_f64();
            counts.in_flight.fetch_sub(1, Ordering::SeqCst);
            let line = match result {
                Ok((answer, usage)) => {
                    counts.done.fetch_add(1, Ordering::SeqCst);
                    counts.tokens.fetch_add(usage.total_tokens(), Ordering::SeqCst);
                    latencies.lock().unwrap_or_else(|p| p.into_inner()).push(seconds);
                    json!({"id": item.id_value, "output": answer, "usage": usage_json(&usage), "seconds": round(seconds)})
                }
                Err(problem) => {
                    counts.failed.fetch_add(1, Ordering::SeqCst);
                    json!({"id": item.id_value, "error": crate::redact::redact(&problem), "seconds": round(seconds)})
                }
            };
            let written = {
                let mut file = output.lock().unwrap_or_else(|p| p.into_inner());
                writeln!(file, "{line}").and_then(|()| file.flush())
            };
            bar.inc(1);
            refresh(bar, counts);
            written
        }
    });
    let mut stream = futures::stream::iter(runs).buffer_unordered(concurrency);
    let mut write_error = None;
    while let Some(written) = stream.next().await {
        if let Err(e) = written {
            write_error.get_or_insert(e);
        }
    }
    drop(stream);
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(failed(
            anyhow::Error::new(e).context(format!("cannot write {}", args.output.display())),
        ));
    }
    let latencies = latencies.into_inner().unwrap_or_else(|p| p.into_inner());
    summary(&counts, total, skipped, &latencies, started.elapsed());
    match counts.failed.load(Ordering::SeqCst) {
        0 => Ok(()),
        n => Err(failed(anyhow!(
            "{n} of {total} item(s) failed; their errors are in {}; run the same command again to retry them",
            args.output.display()
        ))),
    }
}

/// What every item of a batch shares.
#[derive(Clone, Copy)]
struct Shared<'a> {
    spec: &'a TacticSpec,
    tactic: &'a dyn lllm_runtime::Tactic,
    vars: &'a PromptVars,
    invoker: &'a Arc<dyn Invoker>,
    confirm: &'a Arc<dyn lllm_runtime::Confirm>,
    servers: &'a McpServers,
    /// How the items' requests rank under `priority: auto`.
    class: lllm_core::RunClass,
}

/// One item: its own team (its own dialogs and sessions), its variables over `--var`.
async fn run_item(shared: &Shared<'_>, item: &Item) -> Result<(String, Usage), String> {
    let Shared {
        spec,
        tactic,
        vars,
        invoker,
        confirm,
        servers,
        class,
    } = *shared;
    let mut vars = vars.clone();
    vars.extend(item.vars.clone());
    if let Some(input) = &item.input {
        vars.insert("input".into(), Value::from(input.as_str()));
    }
    let text = |e: &dyn std::error::Error| lllm_core::full_message(e);
    preflight(spec, &vars).map_err(|e| text(&e))?;
    let team = Team::builder(spec)
        .invoker(invoker.clone())
        .mcp(servers)
        .confirm(confirm.clone())
        .budget(Arc::new(RunBudget::new(*spec.limits())))
        .item(item.id.clone())
        .run_class(class)
        .build()
        .map_err(|e| text(&e))?;
    // One trace per item: each is a run of its own.
    let span = crate::otel::workflow_span(&crate::otel::tactic_name(spec.path()));
    span.record("lllm.batch.item", item.id.as_str());
    let answer = tactic.run(&team, &vars).instrument(span.clone()).await;
    let answer = answer.map_err(|e| {
        lllm_runtime::telemetry::record_failure(
            &span,
            "run_failed",
            &crate::redact::redact(&text(&e)),
        );
        text(&e)
    })?;
    Ok((answer, team.usage()))
}

fn progress_bar(total: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    let style =
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} {per_sec} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn refresh(bar: &indicatif::ProgressBar, counts: &Counts) {
    bar.set_message(format!(
        "done {} failed {} in flight {}",
        counts.done.load(Ordering::SeqCst),
        counts.failed.load(Ordering::SeqCst),
        counts.in_flight.load(Ordering::SeqCst)
    ));
}

/// The end of a batch on stderr: items, failures, tokens, latency percentiles.
#[allow(clippy::print_stderr)]
fn summary(counts: &Counts, total: usize, skipped: usize, latencies: &[f64], took: Duration) {
    let mut sorted = latencies.to_vec();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        if sorted.is_empty() {
            0.0
        } else {
            sorted[((sorted.len() - 1) as f64 * p).round() as usize]
        }
    };
    eprintln!(
        "lllm: batch: {total} item(s) run, {} answered, {} failed, {skipped} skipped (answered before); {} tokens; latency p50 {:.2} s, p90 {:.2} s, p99 {:.2} s; {:.1} s in all",
        counts.done.load(Ordering::SeqCst),
        counts.failed.load(Ordering::SeqCst),
        counts.tokens.load(Ordering::SeqCst),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        took.as_secs_f64()
    );
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens(),
    })
}

fn round(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}
