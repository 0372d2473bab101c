//! `lllm run`: the arguments as a run plan, handed to the engine.

use std::io::{IsTerminal, Read, Write};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context};
use lllm_runtime::config::CHAT_TACTIC;
use lllm_runtime::engine::{JournalPlan, RunFiles};
use lllm_runtime::invoker::{DryRunInvoker, PreparedRequest};
use lllm_runtime::trace::{TraceFormat, TraceRecorder};
use lllm_runtime::{load_tactic, Invoker, OpenAiInvoker, RunPlan, TacticRegistry};

use crate::cli::{RunArgs, TraceFormatArg};
use crate::execute::execute;
use crate::exit::{failed, stdout_failed, usage, Failure};
use crate::screen::Shown;

/// Largest input read from standard input: far more than any context window holds.
const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

pub(crate) fn run(args: RunArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    crate::redact::remember_tactic(&spec);
    let vars = crate::vars::parse_vars(&args.vars).map_err(usage)?;
    // The terminal chat (streaming, interactive) runs the built-in `chat`; a registered replacement
    // runs like any other tactic.
    let is_chat = spec.tactic_type() == CHAT_TACTIC && registry.is_builtin(CHAT_TACTIC);
    let input = input(&args, is_chat)?;
    if args.dry_run && args.journal.is_some() {
        return Err(usage(anyhow!(
            "a dry run sends nothing, so there is nothing to journal: leave out --journal or --dry-run"
        )));
    }
    if is_chat && input.is_none() && args.journal.is_some() {
        return Err(usage(anyhow!(
            "an interactive chat cannot be journaled: pass --input TEXT (or pipe it) with --journal"
        )));
    }
    let tokenizer = match &args.tokenizer {
        Some(path) => Some(TraceRecorder::load_tokenizer(path).map_err(usage)?),
        None => None,
    };
    // Before the trace file is created: it must not be written over another file of the run.
    files(&args).check().map_err(usage)?;
    let trace = trace(&args, tokenizer)?;
    let printed = DryRunLines::default();
    let mut plan = RunPlan::new()
        .maybe_input(input)
        .vars(vars)
        .class(args.priority_class.into())
        .confirm(crate::confirm::confirmer(
            args.yes,
            false,
            args.journal.is_some(),
        ));
    for setting in &args.limits {
        plan = plan.limit(*setting);
    }
    if let Some(path) = &args.journal {
        plan = plan.journal(JournalPlan::Create(path.clone()));
    }
    if args.dry_run {
        plan = plan.invoker(dry_run_invoker(&printed));
    }
    if let Some(trace) = &trace {
        plan = plan.trace(trace.clone());
    }
    let plan = crate::otel::with_outer_trace(plan);
    let shown = Shown::at_terminal(args.json, args.dry_run, args.stream);
    let outcome = execute(registry, spec, plan, shown);
    if let Some(trace) = trace {
        trace
            .flush()
            .context("cannot write the trace")
            .map_err(failed)?;
    }
    outcome.and_then(|()| printed.result())
}

/// The files of the run, each in its role: none may be another (a trace written over the tactic or
/// the journal would destroy it).
fn files(args: &RunArgs) -> RunFiles {
    let mut files = RunFiles::new().input("tactic", &args.tactic);
    if let Some(path) = &args.journal {
        files = files.output("journal", path);
    }
    if let Some(path) = &args.tokenizer {
        files = files.input("tokenizer", path);
    }
    if let Some(path) = &args.trace {
        files = files.output("trace", path);
    }
    files
}

/// The input: `--input`, else standard input when it is not a terminal; none for an interactive
/// chat. An empty input is none, except that a chat needs one.
fn input(args: &RunArgs, is_chat: bool) -> Result<Option<String>, Failure> {
    let input = match args.input.clone() {
        Some(text) => Some(text),
        None if !std::io::stdin().is_terminal() => Some(read_stdin().map_err(usage)?),
        None => None,
    };
    match input {
        Some(text) if text.trim().is_empty() => {
            // A chat answers its input, so it needs one; steps may not use `input` at all.
            if is_chat {
                return Err(usage(anyhow!(
                    "the input is empty: pass --input TEXT or pipe text on standard input"
                )));
            }
            Ok(None)
        }
        other => Ok(other),
    }
}

/// The trace file, when asked for; what it holds is written out on a signal too.
fn trace(
    args: &RunArgs,
    tokenizer: Option<lllm_runtime::trace::Tokenizer>,
) -> Result<Option<Arc<TraceRecorder>>, Failure> {
    let Some(path) = &args.trace else {
        return Ok(None);
    };
    let format = match (args.trace_format, args.trace_rows_only) {
        (TraceFormatArg::AgenticMooncake, _) => TraceFormat::AgenticMooncake,
        (TraceFormatArg::Lllm, true) => TraceFormat::RowsOnly,
        (TraceFormatArg::Lllm, false) => TraceFormat::Lllm,
    };
    let trace = TraceRecorder::to_file(path, args.trace_block_size as usize, tokenizer, format)
        .with_context(|| format!("cannot write the trace to {}", path.display()))
        .map_err(usage)?;
    let trace = Arc::new(trace);
    let flushed = trace.clone();
    // The requests answered before an interruption are worth keeping.
    crate::signals::on_stop(move || {
        flushed.flush().ok();
    });
    Ok(Some(trace))
}

/// A dry run's invoker: each request printed as a JSON line on stdout, credentials redacted.
fn dry_run_invoker(printed: &DryRunLines) -> Arc<dyn Invoker> {
    let failure = printed.0.clone();
    Arc::new(DryRunInvoker::new(
        OpenAiInvoker::new(),
        move |request: &PreparedRequest| {
            let mut failure = failure.lock().unwrap_or_else(|p| p.into_inner());
            if failure.is_none() {
                let mut out = std::io::stdout().lock();
                if let Err(e) =
                    writeln!(out, "{}", request.to_redacted_json()).and_then(|()| out.flush())
                {
                    *failure = Some(e);
                }
            }
        },
    ))
}

/// Whether every request line of a dry run reached standard output.
#[derive(Debug, Default, Clone)]
struct DryRunLines(Arc<Mutex<Option<std::io::Error>>>);

impl DryRunLines {
    /// The first failed write, as the run's failure.
    fn result(&self) -> Result<(), Failure> {
        match self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(error) => Err(stdout_failed(error)),
            None => Ok(()),
        }
    }
}

fn read_stdin() -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .context("cannot read standard input")?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(anyhow!(
            "standard input is longer than {} MiB: pass a shorter input",
            MAX_INPUT_BYTES / (1024 * 1024)
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "standard input is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}
