//! `lllm eval`: the arguments as eval options, handed to the runtime's eval run; the report
//! printed in words and written as JSON and JUnit; exit 0 when every case reaches the pass rate.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use lllm_runtime::engine::RunFiles;
use lllm_runtime::eval::{self, EvalOptions, EvalReport, EvalRun, Tapes};
use lllm_runtime::{Engine, TacticRegistry};

use crate::cli::EvalArgs;
use crate::exit::{failed, run_failure, stdout_failed, usage, Failure};

pub(crate) fn eval(args: &EvalArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let suite = eval::load_evals(&args.evals).map_err(usage)?;
    crate::redact::remember_tactic(&suite.tactic);
    files(args, &suite.tactic_path).check().map_err(usage)?;
    let baseline = args.baseline.as_deref().map(read_baseline).transpose()?;
    if let Some(dir) = &args.replay {
        if !dir.is_dir() {
            return Err(usage(anyhow!(
                "--replay {}: not a folder of recordings (make one with --record)",
                dir.display()
            )));
        }
    }
    // Every trial has a journal: in the recording's folder, else in a private temporary one.
    let scratch = match &args.record {
        Some(_) => None,
        None => Some(
            crate::private_dir::fresh("lllm-eval")
                .context("cannot make a folder for the trials' journals")
                .map_err(failed)?,
        ),
    };
    let options = EvalOptions {
        trials: args.trials,
        tapes: match (&args.record, &args.replay) {
            (Some(dir), _) => Tapes::Record(dir.clone()),
            (None, Some(dir)) => Tapes::Replay(dir.clone()),
            (None, None) => Tapes::Live,
        },
        journals: args.record.clone().or_else(|| scratch.clone()),
        concurrency: None,
    };
    let run = EvalRun::new(suite, args.evals.display().to_string());
    on_interrupt(&run, args);
    let report = execute(&run, &options, registry);
    if let Some(dir) = scratch {
        std::fs::remove_dir_all(dir).ok();
    }
    let report = report?;
    show(&report, args, baseline.as_ref())?;
    let failing = report.cases.iter().filter(|c| !c.passed).count();
    match failing {
        0 => Ok(()),
        n => Err(failed(anyhow!(
            "{n} of {} case(s) did not reach the pass rate {}",
            report.cases.len(),
            report.pass_rate
        ))),
    }
}

/// The files of the command, each in its role: a report written over the eval file or the tactic
/// would destroy it.
fn files(args: &EvalArgs, tactic: &Path) -> RunFiles {
    let mut files = RunFiles::new()
        .input("eval file", &args.evals)
        .input("tactic", tactic);
    if let Some(path) = &args.baseline {
        files = files.input("baseline", path);
    }
    if let Some(path) = &args.json {
        files = files.output("JSON report", path);
    }
    if let Some(path) = &args.junit {
        files = files.output("JUnit report", path);
    }
    files
}

fn read_baseline(path: &Path) -> Result<EvalReport, Failure> {
    EvalReport::read(path).map_err(|e| usage(anyhow!("the baseline: {e}")))
}

/// Prepares the tactic and runs every trial, with a progress bar on a terminal.
fn execute(
    run: &Arc<EvalRun>,
    options: &EvalOptions,
    registry: &TacticRegistry,
) -> Result<EvalReport, Failure> {
    let host = crate::execute::host()?;
    let engine = Engine::new(registry.clone());
    crate::execute::announce_servers(&run.suite().tactic);
    let bar = crate::batch::progress_bar(run.total_trials(options));
    let ended = |id: &str, trial: &eval::TrialReport| {
        bar.inc(1);
        if !trial.passed {
            bar.set_message(format!("last failure: {id}"));
        }
    };
    let report = host.block_on(async {
        let tactic = engine
            .prepare(run.suite().tactic.clone())
            .await
            .map_err(run_failure)?;
        let report = run.run(&engine, &tactic, options, &ended).await;
        tactic.shutdown().await;
        Ok::<_, Failure>(report)
    });
    bar.finish_and_clear();
    report
}

/// On Ctrl-C (or SIGTERM, SIGHUP): the trials that ended, reported and written, before the exit.
fn on_interrupt(run: &Arc<EvalRun>, args: &EvalArgs) {
    let run = run.clone();
    let json = args.json.clone();
    let junit = args.junit.clone();
    crate::signals::on_stop(move || {
        let report = run.report(true);
        let mut out = std::io::stdout().lock();
        write!(out, "\n{}", eval::in_words(&report)).ok();
        out.flush().ok();
        write_reports(&report, json.as_deref(), junit.as_deref()).ok();
    });
}

fn show(
    report: &EvalReport,
    args: &EvalArgs,
    baseline: Option<&EvalReport>,
) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    write!(out, "{}", eval::in_words(report)).map_err(stdout_failed)?;
    if let Some(baseline) = baseline {
        let (text, regressed) = eval::compare(report, baseline);
        let head = if regressed {
            "against the baseline: a regression"
        } else {
            "against the baseline:"
        };
        write!(out, "{head}\n{text}").map_err(stdout_failed)?;
    }
    out.flush().map_err(stdout_failed)?;
    write_reports(report, args.json.as_deref(), args.junit.as_deref()).map_err(failed)
}

fn write_reports(
    report: &EvalReport,
    json: Option<&Path>,
    junit: Option<&Path>,
) -> anyhow::Result<()> {
    if let Some(path) = json {
        let mut text = serde_json::to_string_pretty(report)?;
        text.push('\n');
        write_file(path, &text)?;
    }
    if let Some(path) = junit {
        write_file(path, &eval::junit_xml(report))?;
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
