//! `lllm resume JOURNAL`: the run of a journal, started again with the journal as its memory.

use std::io::Write;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use lllm_runtime::{content_hash, Journal, TacticRegistry};

use crate::cli::{ResumeArgs, RunArgs};
use crate::exit::{stdout_failed, usage, Failure};

/// What `lllm run` needs to know when it continues a journaled run.
#[derive(Debug, Clone)]
pub(crate) struct Resuming {
    pub(crate) journal: Arc<Journal>,
    /// `--reject`: decline the calls that wait for a confirmation.
    pub(crate) reject: bool,
}

pub(crate) fn resume(args: ResumeArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let journal = Journal::resume(&args.journal).map_err(usage)?;
    if let Some(output) = journal.finished() {
        // A finished run: its output, as the run printed it.
        let mut out = std::io::stdout().lock();
        let written = if args.json {
            writeln!(out, "{}", serde_json::json!({ "answer": output }))
        } else {
            writeln!(out, "{output}")
        };
        return written.and_then(|()| out.flush()).map_err(stdout_failed);
    }
    let start = journal.start().clone();
    let bytes = std::fs::read(&start.tactic)
        .with_context(|| {
            format!(
                "cannot read the tactic {} of the journal",
                start.tactic.display()
            )
        })
        .map_err(usage)?;
    if content_hash(&bytes) != start.tactic_sha256 && !args.force {
        return Err(usage(anyhow!(
            "{} changed since the run started (its content hash differs from the journal's): resuming could send the model a different conversation; restore the file, or pass --force to resume anyway",
            start.tactic.display()
        )));
    }
    let vars = start
        .vars
        .iter()
        .map(|(key, value)| match value {
            serde_json::Value::String(text) => format!("{key}={text}"),
            other => format!("{key}={other}"),
        })
        .collect();
    let run = RunArgs {
        tactic: start.tactic.clone(),
        input: start.input.clone(),
        vars,
        dry_run: false,
        json: args.json,
        trace: None,
        trace_block_size: 64,
        trace_format: crate::cli::TraceFormatArg::Lllm,
        trace_rows_only: false,
        tokenizer: None,
        stream: false,
        yes: args.yes,
        priority_class: crate::cli::RunClassArg::Interactive,
        journal: Some(args.journal.clone()),
        // The run's own --limit settings first, then the resume's (which win).
        limits: start.limits.iter().cloned().chain(args.limits).collect(),
        resume: Some(Resuming {
            journal: Arc::new(journal),
            reject: args.reject,
        }),
    };
    crate::run::run(run, registry)
}
