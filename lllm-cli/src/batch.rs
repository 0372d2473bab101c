//! `lllm batch`: the arguments as a batch plan, its progress on a terminal, its summary.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::anyhow;
use lllm_runtime::batch::{
    read_items, BatchItem, BatchOutput, BatchPlan, BatchProgress, BatchReport,
};
use lllm_runtime::config::PromptVars;
use lllm_runtime::engine::RunFiles;
use lllm_runtime::{load_tactic, Engine, TacticRegistry, TacticSpec};

use crate::cli::BatchArgs;
use crate::execute::announce_servers;
use crate::exit::run_failure;
use crate::exit::{failed, usage, Failure};

/// What every batch starts from, here or on a queue: the tactic, the variables, and the items of
/// its shard, the files checked.
pub(crate) struct Start {
    pub(crate) spec: TacticSpec,
    pub(crate) vars: PromptVars,
    pub(crate) items: Vec<BatchItem>,
}

pub(crate) fn start(args: &BatchArgs) -> Result<Start, Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    crate::redact::remember_tactic(&spec);
    let vars = crate::vars::parse_vars(&args.vars).map_err(usage)?;
    RunFiles::new()
        .input("tactic", &args.tactic)
        .input("inputs", &args.inputs)
        .output("output", &args.output)
        .check()
        .map_err(usage)?;
    let mut items = read_items(&args.inputs).map_err(usage)?;
    if let Some(shard) = args.shard {
        items.retain(|item| shard.contains(&item.id));
    }
    Ok(Start { spec, vars, items })
}

pub(crate) fn batch(args: BatchArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let Start { spec, vars, items } = start(&args)?;
    let done = BatchOutput::answered_ids(&args.output).map_err(usage)?;
    let all = items.len();
    let todo: Vec<BatchItem> = items
        .into_iter()
        .filter(|i| !done.contains(&i.id))
        .collect();
    let skipped = all - todo.len();
    let output = BatchOutput::open(&args.output).map_err(usage)?;
    let mut plan = BatchPlan::default();
    plan.concurrency = usize::from(args.concurrency);
    plan.vars = vars;
    plan.class = args.priority_class.into();
    plan.confirm = Some(crate::confirm::confirmer(args.yes, false, false));
    let host = crate::execute::host()?;
    let engine = Engine::new(registry.clone());
    announce_servers(&spec);
    let bar = progress_bar(todo.len() as u64);
    let report = host.block_on(async {
        let tactic = engine.prepare(spec).await.map_err(run_failure)?;
        let shown = |progress: BatchProgress| show(&bar, progress);
        let report = engine.batch(&tactic, todo, &plan, &output, &shown).await;
        tactic.shutdown().await;
        report.map_err(failed)
    });
    bar.finish_and_clear();
    let report = report?;
    summary(&report, skipped);
    match report.failed {
        0 => Ok(()),
        n => Err(failed(anyhow!(
            "{n} of {} item(s) failed; their errors are in {}; run the same command again to retry them",
            report.run,
            args.output.display()
        ))),
    }
}

pub(crate) fn progress_bar(total: u64) -> indicatif::ProgressBar {
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

fn show(bar: &indicatif::ProgressBar, progress: BatchProgress) {
    bar.set_position((progress.answered + progress.failed) as u64);
    bar.set_message(format!(
        "done {} failed {} in flight {}",
        progress.answered, progress.failed, progress.in_flight
    ));
}

/// The end of a batch on stderr: items, failures, tokens, latency percentiles.
#[allow(clippy::print_stderr)]
fn summary(report: &BatchReport, skipped: usize) {
    eprintln!(
        "lllm: batch: {} item(s) run, {} answered, {} failed, {skipped} skipped (answered before); {} tokens; latency p50 {:.2} s, p90 {:.2} s, p99 {:.2} s; {:.1} s in all",
        report.run,
        report.answered,
        report.failed,
        report.tokens,
        report.percentile(0.5),
        report.percentile(0.9),
        report.percentile(0.99),
        report.took.as_secs_f64()
    );
}
