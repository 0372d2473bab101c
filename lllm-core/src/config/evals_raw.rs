//! The eval file exactly as written: every key known, every value optional and located. The eval
//! JSON Schema (`lllm schema --evals`) is derived from these types, so their doc comments are the
//! schema's descriptions.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::json::Json;
use super::span::At;

/// An lllm eval file: a tactic and the cases it must pass.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "lllm evals")]
pub(crate) struct RawEvals {
    /// The tactic file under test, relative to this file.
    pub(crate) tactic: Option<At<String>>,
    /// The share of a case's trials that must pass, from 0.0 to 1.0 (default 1.0: all of them).
    pub(crate) pass_rate: Option<At<f64>>,
    /// The cases, each run `trials` times.
    pub(crate) cases: Option<At<Vec<At<RawCase>>>>,
}

/// One case: an input for the tactic and what its run must show.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Case")]
pub(crate) struct RawCase {
    /// The case's name: letters, digits, `.`, `_` and `-` (it names the case's recordings).
    pub(crate) id: Option<At<String>>,
    /// The run's input (`{{ input }}`).
    pub(crate) input: Option<At<String>>,
    /// Variables for the tactic's templates, as `--var KEY=VALUE` sets them.
    pub(crate) vars: Option<At<BTreeMap<String, Json>>>,
    /// How many times the case runs (default 1; `--trials N` overrides).
    pub(crate) trials: Option<At<u32>>,
    /// What every trial must show.
    pub(crate) expect: Option<At<RawExpect>>,
}

/// What a trial must show; every expectation written must hold.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Expect")]
pub(crate) struct RawExpect {
    /// Tool calls the run must make; `args` are matched as a subset of the call's arguments.
    pub(crate) tools: Option<At<Vec<At<RawToolCall>>>>,
    /// `strict`: the run's tool calls are exactly these, in this order; `any` (the default): each
    /// of these is among the run's calls, in any order.
    pub(crate) tools_order: Option<At<RawToolsOrder>>,
    /// Tools the run must not call.
    pub(crate) forbid_tools: Option<At<Vec<At<String>>>>,
    /// A check of the final answer (one of `equals`, `contains`, `regex`, `json_schema`).
    pub(crate) output: Option<At<RawOutput>>,
    /// An agent of the tactic that judges the answer against criteria.
    pub(crate) judge: Option<At<RawJudge>>,
    /// Most model requests the run may send (the judge's not counted).
    pub(crate) max_requests: Option<At<u64>>,
    /// Most tokens (prompt and completion) the run may use (the judge's not counted).
    pub(crate) max_tokens: Option<At<u64>>,
}

/// An expected tool call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ExpectedToolCall")]
pub(crate) struct RawToolCall {
    /// The tool's name.
    pub(crate) name: Option<At<String>>,
    /// Arguments the call must have (a JSON subset: objects may have more keys; arrays and values
    /// must be equal).
    pub(crate) args: Option<At<Json>>,
}

/// How the expected tool calls are matched.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "ToolsOrder")]
pub(crate) enum RawToolsOrder {
    /// The run's calls are exactly the expected ones, in order.
    Strict,
    /// Each expected call is among the run's calls.
    Any,
}

/// A check of the final answer: exactly one key.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "OutputCheck")]
pub(crate) struct RawOutput {
    /// The answer, whitespace at both ends ignored, is exactly this.
    pub(crate) equals: Option<At<String>>,
    /// The answer contains this text.
    pub(crate) contains: Option<At<String>>,
    /// The answer matches this regular expression (Rust `regex` syntax, linear time).
    pub(crate) regex: Option<At<String>>,
    /// The answer is JSON valid under this JSON Schema.
    pub(crate) json_schema: Option<At<Json>>,
}

/// A judge: an agent of the tactic, asked whether the answer meets the criteria.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Judge")]
pub(crate) struct RawJudge {
    /// The judging agent's name (an agent of the tactic).
    pub(crate) agent: Option<At<String>>,
    /// What the answer must meet, in words.
    pub(crate) criteria: Option<At<String>>,
}
