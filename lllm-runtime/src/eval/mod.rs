//! Evals: a tactic's cases run as trials, their tool trajectories, answers, budgets and judges
//! checked, reported in words, JSON and JUnit, recorded and replayed without a server.
#![doc = include_str!("../../../docs/eval.md")]

mod baseline;
mod junit;
mod report;
mod suite;
mod tape;
mod trial;
mod words;

pub use baseline::compare;
pub use junit::junit_xml;
pub use lllm_core::eval::{
    check_forbidden, check_tools, json_subset, parse_verdict, Expect, ExpectedCall, Judge,
    MadeCall, OutputCheck, ToolsOrder, Verdict,
};
pub use lllm_core::{evals_schema, load_evals, EvalCase, EvalSuite, MAX_CASES, MAX_TRIALS};
pub use report::{CaseReport, EvalReport, ToolCallReport, TrialReport, REPORT_FORMAT};
pub use suite::{EvalOptions, EvalRun, Tapes, DEFAULT_CONCURRENCY};
pub use tape::{Drift, Recorder, Replayer, WireMessage};
pub use words::in_words;
