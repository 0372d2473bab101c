//! What `lllm eval` reports: per case, its trials and what they cost. The shape is `--json`'s and
//! stable (`format: 1`; fields are only ever added), and it is what `--baseline` reads back.

use lllm_core::eval::MadeCall;
use serde::{Deserialize, Serialize};

use super::tape::Drift;

/// The version of the report's shape.
pub const REPORT_FORMAT: u32 = 1;

/// The report of one eval file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvalReport {
    /// [`REPORT_FORMAT`].
    pub format: u32,
    /// The eval file, as named on the command line.
    pub evals: String,
    /// The tactic file under test.
    pub tactic: String,
    /// The share of trials each case must pass.
    pub pass_rate: f64,
    /// Whether every case reached it.
    pub passed: bool,
    /// Whether the run was stopped (Ctrl-C) before every trial ended: unfinished trials are left
    /// out of the counts.
    pub interrupted: bool,
    /// The cases, in file order.
    pub cases: Vec<CaseReport>,
}

/// One case's trials and what they cost together.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case's id.
    pub id: String,
    /// Trials that ended.
    pub trials: u32,
    /// Trials that passed.
    pub passes: u32,
    /// `passes / trials` (0 without trials).
    pub pass_rate: f64,
    /// Whether the pass rate reached the file's.
    pub passed: bool,
    /// The first failing expectation of the first failed trial, in words.
    pub first_failure: Option<String>,
    /// Model requests of all trials (the judge's not counted).
    pub requests: u64,
    /// Tokens (prompt and completion) of all trials.
    pub tokens: u64,
    /// Prompt tokens the server took from its cache, of all trials.
    pub cached_tokens: u64,
    /// `cached_tokens` over prompt tokens (0 when no prompt token was counted).
    pub cached_share: f64,
    /// Seconds the trials took, added up.
    pub seconds: f64,
    /// Each trial that ended, by its number.
    pub trial_reports: Vec<TrialReport>,
}

/// One trial of a case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialReport {
    /// Its number, from 1.
    pub trial: u32,
    /// Whether every expectation held.
    pub passed: bool,
    /// The first that did not, in words.
    pub failure: Option<String>,
    /// When replayed: the first request the recording did not hold.
    pub drift: Option<Drift>,
    /// The final answer (empty when the run failed).
    pub answer: String,
    /// The tool calls the model asked for, in the order the answers came.
    pub tool_calls: Vec<ToolCallReport>,
    /// The judge's reason, when a judge gave a verdict.
    pub judge: Option<String>,
    /// Model requests sent (the judge's not counted).
    pub requests: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens taken from the server's cache.
    pub cached_tokens: u64,
    /// Seconds the trial took.
    pub seconds: f64,
}

/// A tool call of a trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCallReport {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: serde_json::Value,
}

impl From<&MadeCall> for ToolCallReport {
    fn from(call: &MadeCall) -> Self {
        ToolCallReport {
            name: call.name.clone(),
            args: call.args.clone(),
        }
    }
}

/// Largest report read back as a baseline.
const MAX_REPORT_BYTES: u64 = 64 * 1024 * 1024;

impl EvalReport {
    /// Reads a report written by `--json` (a baseline), within a size limit; the error says why
    /// it cannot be used.
    pub fn read(path: &std::path::Path) -> Result<EvalReport, String> {
        let bytes = lllm_core::read_regular(path, MAX_REPORT_BYTES)
            .map_err(|p| format!("cannot read {}: {p}", path.display()))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{} is not a report of `lllm eval --json`: {e}",
                path.display()
            )
        })
    }
}

impl CaseReport {
    /// The case `id`'s report from the trials that ended, against `threshold`.
    pub fn of(id: &str, mut trials: Vec<TrialReport>, threshold: f64) -> CaseReport {
        trials.sort_by_key(|t| t.trial);
        let count = u32::try_from(trials.len()).unwrap_or(u32::MAX);
        let passes = u32::try_from(trials.iter().filter(|t| t.passed).count()).unwrap_or(u32::MAX);
        let pass_rate = if count == 0 {
            0.0
        } else {
            f64::from(passes) / f64::from(count)
        };
        let sum = |f: fn(&TrialReport) -> u64| trials.iter().map(f).fold(0u64, u64::saturating_add);
        let prompt = sum(|t| t.prompt_tokens);
        let cached = sum(|t| t.cached_tokens);
        CaseReport {
            id: id.to_owned(),
            trials: count,
            passes,
            pass_rate,
            // A tiny tolerance: 2 of 3 passes a `pass_rate: 0.6667` written by hand.
            passed: count > 0 && pass_rate + 1e-9 >= threshold,
            first_failure: trials.iter().find_map(|t| t.failure.clone()),
            requests: sum(|t| t.requests),
            tokens: prompt.saturating_add(sum(|t| t.completion_tokens)),
            cached_tokens: cached,
            cached_share: if prompt == 0 {
                0.0
            } else {
                cached as f64 / prompt as f64
            },
            seconds: trials.iter().map(|t| t.seconds).sum(),
            trial_reports: trials,
        }
    }
}
