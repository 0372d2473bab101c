//! Running an eval file: every case × trial, concurrently within the tactic's admission limits,
//! each trial with its own tape and journal; what has ended is a report at any moment (a Ctrl-C
//! prints the partial one).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use lllm_core::EvalSuite;

use super::report::{CaseReport, EvalReport, TrialReport, REPORT_FORMAT};
use super::tape::{Recorder, Replayer};
use super::trial::{run_trial, TrialSetup};
use crate::engine::PreparedTactic;
use crate::invoker::Invoker;
use crate::Engine;

/// Trials run at once when no agent of the tactic sets `model_args.max_in_flight`.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Where the trials' answers come from.
#[derive(Debug, Clone, Default)]
pub enum Tapes {
    /// From the tactic's servers, not kept.
    #[default]
    Live,
    /// From the tactic's servers, each trial's kept in `DIR/<case>/<trial>.jsonl`.
    Record(PathBuf),
    /// From the tapes of an earlier `Record` in `DIR`, with no server.
    Replay(PathBuf),
}

/// How an eval file runs.
#[derive(Debug, Clone, Default)]
pub struct EvalOptions {
    /// Trials of every case, over the cases' own `trials`.
    pub trials: Option<u32>,
    /// Where answers come from.
    pub tapes: Tapes,
    /// The folder of the trials' journals (`<case>/<trial>.journal.jsonl`); none: not journaled.
    pub journals: Option<PathBuf>,
    /// Trials at once; `None`: the smallest `max_in_flight` of the tactic's agents, else
    /// [`DEFAULT_CONCURRENCY`].
    pub concurrency: Option<usize>,
}

/// An eval file being run: the trials that ended so far, readable as a report at any time.
#[derive(Debug)]
pub struct EvalRun {
    suite: EvalSuite,
    evals: String,
    ended: Mutex<Vec<Vec<TrialReport>>>,
}

impl EvalRun {
    /// A run of `suite`, named `evals` in its report (the file as the user wrote it).
    pub fn new(suite: EvalSuite, evals: impl Into<String>) -> Arc<EvalRun> {
        let cases = suite.cases.len();
        Arc::new(EvalRun {
            suite,
            evals: evals.into(),
            ended: Mutex::new(vec![Vec::new(); cases]),
        })
    }

    /// The eval file.
    pub fn suite(&self) -> &EvalSuite {
        &self.suite
    }

    /// How many trials the run has in all.
    pub fn total_trials(&self, options: &EvalOptions) -> u64 {
        self.jobs(options).len() as u64
    }

    fn jobs(&self, options: &EvalOptions) -> Vec<(usize, u32)> {
        let mut jobs = Vec::new();
        for (index, case) in self.suite.cases.iter().enumerate() {
            let trials = options.trials.or(case.trials).unwrap_or(1);
            jobs.extend((1..=trials).map(|t| (index, t)));
        }
        jobs
    }

    /// Runs every trial not run yet on `tactic` (prepared from the suite's tactic by `engine`),
    /// calling `ended` after each; returns the report.
    pub async fn run(
        &self,
        engine: &Engine,
        tactic: &PreparedTactic,
        options: &EvalOptions,
        ended: &(dyn Fn(&str, &TrialReport) + Sync),
    ) -> EvalReport {
        let concurrency = options
            .concurrency
            .or_else(|| {
                tactic
                    .spec()
                    .agents()
                    .iter()
                    .filter_map(|a| a.model_args().endpoint.max_in_flight)
                    .min()
                    .map(|n| n as usize)
            })
            .unwrap_or(DEFAULT_CONCURRENCY)
            .max(1);
        let jobs = self.jobs(options);
        let mut trials = futures::stream::iter(jobs)
            .map(|(index, trial)| async move {
                let case = &self.suite.cases[index];
                let report = match setup(engine, options, &case.id, trial) {
                    Ok(setup) => run_trial(engine, tactic, case, trial, setup).await,
                    Err(problem) => TrialReport::failed(trial, problem),
                };
                (index, report)
            })
            .buffer_unordered(concurrency);
        while let Some((index, report)) = trials.next().await {
            ended(&self.suite.cases[index].id, &report);
            self.ended.lock().unwrap_or_else(|p| p.into_inner())[index].push(report);
        }
        self.report(false)
    }

    /// The report of the trials that ended (`interrupted`: the run was stopped).
    pub fn report(&self, interrupted: bool) -> EvalReport {
        let ended = self.ended.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let cases: Vec<CaseReport> = self
            .suite
            .cases
            .iter()
            .zip(ended)
            .map(|(case, trials)| CaseReport::of(&case.id, trials, self.suite.pass_rate))
            .collect();
        EvalReport {
            format: REPORT_FORMAT,
            evals: self.evals.clone(),
            tactic: self.suite.tactic_path.display().to_string(),
            pass_rate: self.suite.pass_rate,
            passed: !interrupted && cases.iter().all(|c| c.passed),
            interrupted,
            cases,
        }
    }
}

/// The invoker and journal of trial `trial` of case `id`.
fn setup(
    engine: &Engine,
    options: &EvalOptions,
    id: &str,
    trial: u32,
) -> Result<TrialSetup, String> {
    let tape = |dir: &PathBuf| dir.join(id).join(format!("{trial}.jsonl"));
    let journal = options
        .journals
        .as_ref()
        .map(|dir| dir.join(id).join(format!("{trial}.journal.jsonl")));
    if let Some(path) = &journal {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create the journal folder {}: {e}", dir.display()))?;
        }
        // A journal is created new: a rerun into the same folder starts afresh.
        std::fs::remove_file(path).ok();
    }
    let live: Arc<dyn Invoker> = engine.invoker().clone();
    let no_drift =
        || Box::new(|| None) as Box<dyn Fn() -> Option<super::tape::Drift> + Send + Sync>;
    let (invoker, drift): (Arc<dyn Invoker>, _) = match &options.tapes {
        Tapes::Live => (live, no_drift()),
        Tapes::Record(dir) => {
            let path = tape(dir);
            let recorder = Recorder::create(&path, live)
                .map_err(|e| format!("cannot record into {}: {e}", path.display()))?;
            (Arc::new(recorder), no_drift())
        }
        Tapes::Replay(dir) => {
            let path = tape(dir);
            let replayer = Arc::new(Replayer::open(&path).map_err(|e| {
                format!("no recording of this trial ({e}); record it with --record")
            })?);
            let seen = replayer.clone();
            (replayer, Box::new(move || seen.drift()) as _)
        }
    };
    Ok(TrialSetup {
        invoker,
        drift,
        journal,
    })
}

impl TrialReport {
    /// A trial that could not start.
    fn failed(trial: u32, problem: String) -> TrialReport {
        TrialReport {
            trial,
            passed: false,
            failure: Some(problem),
            drift: None,
            answer: String::new(),
            tool_calls: Vec::new(),
            judge: None,
            requests: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cached_tokens: 0,
            seconds: 0.0,
        }
    }
}
