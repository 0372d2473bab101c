//! Eval files (`lllm eval EVALS.yaml`): one parse into located raw types, then the validated
//! [`EvalSuite`], its tactic loaded and every case checked against it, each error at its file, line
//! and column.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::error::{ConfigError, ConfigErrorKind};
use super::evals_raw::{RawCase, RawEvals, RawExpect, RawOutput, RawToolsOrder};
use super::origin::Origin;
use super::source::{parse_yaml, read_error};
use super::span::At;
use super::TacticSpec;
use crate::eval::{Expect, ExpectedCall, Judge, OutputCheck, ToolsOrder};
use crate::files::{read_bounded, DEFAULT_MAX_FILE_BYTES};
use crate::{PromptVars, Schema};

/// Most cases one file may hold.
pub const MAX_CASES: usize = 10_000;
/// Most trials of one case.
pub const MAX_TRIALS: u32 = 1_000;
/// Longest case id, in bytes.
const MAX_ID_LEN: usize = 100;

/// A validated eval file: the tactic under test and its cases.
#[derive(Debug, Clone)]
pub struct EvalSuite {
    /// The eval file.
    pub file: PathBuf,
    /// The tactic file, resolved against the eval file's folder.
    pub tactic_path: PathBuf,
    /// The tactic, loaded.
    pub tactic: TacticSpec,
    /// The share of a case's trials that must pass (0.0 to 1.0).
    pub pass_rate: f64,
    /// The cases, in file order.
    pub cases: Vec<EvalCase>,
}

/// One case of an eval file.
#[derive(Debug, Clone)]
pub struct EvalCase {
    /// Its id (letters, digits, `.`, `_`, `-`; unique in the file).
    pub id: String,
    /// The run's input.
    pub input: Option<String>,
    /// Variables for the templates.
    pub vars: PromptVars,
    /// Trials, when the case sets them (else 1, or `--trials`).
    pub trials: Option<u32>,
    /// What every trial must show.
    pub expect: Expect,
}

/// Reads and checks the eval file at `path`, and loads the tactic it names (with
/// [`load_tactic`](crate::load_tactic)).
pub fn load_evals(path: &Path) -> Result<EvalSuite, ConfigError> {
    let file: Arc<Path> = path.into();
    let bytes = read_bounded(path, DEFAULT_MAX_FILE_BYTES, true)
        .map_err(|p| read_error(Origin::new(file.clone(), None), p))?;
    let raw: RawEvals = parse_yaml(&bytes, &file, ConfigErrorKind::EmptyEvals)?;
    let whole = Origin::new(file.clone(), None);
    let tactic = raw.tactic.ok_or_else(|| {
        missing(
            &whole,
            "`tactic`",
            "name the tactic file under test, relative to this file",
        )
    })?;
    let tactic_path = path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(&tactic.value);
    if !tactic_path.is_file() {
        let kind = ConfigErrorKind::Eval(format!(
            "the tactic {} is not a file",
            tactic_path.display()
        ));
        return Err(ConfigError::new(tactic.origin, kind).in_field("tactic"));
    }
    let spec = crate::load_tactic(&tactic_path)?;
    let pass_rate = match raw.pass_rate {
        None => 1.0,
        Some(at) if (0.0..=1.0).contains(&at.value) => at.value,
        Some(at) => {
            return Err(invalid(
                &at.origin,
                "pass_rate",
                "expected a number from 0.0 to 1.0",
            ))
        }
    };
    let cases = raw.cases.ok_or_else(|| {
        missing(
            &whole,
            "`cases`",
            "list the cases, each with an `id` and `expect`",
        )
    })?;
    if cases.value.is_empty() || cases.value.len() > MAX_CASES {
        let kind = ConfigErrorKind::Eval(format!("expected from 1 to {MAX_CASES} cases"));
        return Err(ConfigError::new(cases.origin, kind).in_field("cases"));
    }
    let mut seen: HashMap<String, Origin> = HashMap::new();
    let mut checked = Vec::with_capacity(cases.value.len());
    for (index, case) in cases.value.into_iter().enumerate() {
        let case = check_case(case, &spec).map_err(|e| e.in_case(index))?;
        let origin = case.1;
        if let Some(first) = seen.get(&case.0.id) {
            let kind = ConfigErrorKind::Duplicate {
                name: case.0.id.clone(),
                first: first.clone(),
                what: "case ids",
            };
            return Err(ConfigError::new(origin, kind).in_field(format!("cases[{index}].id")));
        }
        seen.insert(case.0.id.clone(), origin);
        checked.push(case.0);
    }
    Ok(EvalSuite {
        file: path.to_owned(),
        tactic_path,
        tactic: spec,
        pass_rate,
        cases: checked,
    })
}

/// An error inside one case, its field named relative to the case until [`Self::in_case`].
struct CaseError(ConfigError, String);

impl CaseError {
    fn in_case(self, index: usize) -> ConfigError {
        self.0.in_field(format!("cases[{index}].{}", self.1))
    }
}

fn at(origin: &Origin, field: &str, kind: ConfigErrorKind) -> CaseError {
    CaseError(ConfigError::new(origin.clone(), kind), field.to_owned())
}

fn missing(origin: &Origin, what: &'static str, hint: &'static str) -> ConfigError {
    ConfigError::new(origin.clone(), ConfigErrorKind::Missing { what, hint })
}

fn invalid(origin: &Origin, field: &str, problem: &'static str) -> ConfigError {
    ConfigError::new(origin.clone(), ConfigErrorKind::Invalid(problem)).in_field(field.to_owned())
}

/// One case checked: its id's origin is returned for the duplicate check.
fn check_case(case: At<RawCase>, spec: &TacticSpec) -> Result<(EvalCase, Origin), CaseError> {
    let raw = case.value;
    let id = raw.id.ok_or_else(|| {
        at(
            &case.origin,
            "id",
            ConfigErrorKind::Missing {
                what: "`id`",
                hint: "name the case (letters, digits, `.`, `_`, `-`)",
            },
        )
    })?;
    if !is_case_id(&id.value) {
        let kind = ConfigErrorKind::Invalid(
            "a case id is 1 to 100 letters, digits, `.`, `_` or `-`, not starting with `.`",
        );
        return Err(at(&id.origin, "id", kind));
    }
    let trials = match raw.trials {
        Some(t) if t.value == 0 || t.value > MAX_TRIALS => {
            let kind = ConfigErrorKind::Eval(format!("expected from 1 to {MAX_TRIALS} trials"));
            return Err(at(&t.origin, "trials", kind));
        }
        other => other.map(|t| t.value),
    };
    let vars = raw
        .vars
        .map(|v| v.value.into_iter().map(|(k, json)| (k, json.0)).collect())
        .unwrap_or_default();
    let expect = match raw.expect {
        Some(expect) => check_expect(expect.value, spec)?,
        None => {
            let kind = ConfigErrorKind::Missing {
                what: "`expect`",
                hint: "say what the run must show (tools, output, judge, budgets)",
            };
            return Err(at(&case.origin, "expect", kind));
        }
    };
    let case = EvalCase {
        id: id.value,
        input: raw.input.map(|i| i.value),
        vars,
        trials,
        expect,
    };
    Ok((case, id.origin))
}

fn is_case_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn check_expect(raw: RawExpect, spec: &TacticSpec) -> Result<Expect, CaseError> {
    let mut tools = Vec::new();
    for (i, call) in raw
        .tools
        .map(|t| t.value)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let field = format!("expect.tools[{i}]");
        let name = call.value.name.ok_or_else(|| {
            at(
                &call.origin,
                &field,
                ConfigErrorKind::Missing {
                    what: "`name`",
                    hint: "name the tool the run must call",
                },
            )
        })?;
        tools.push(ExpectedCall {
            name: name.value,
            args: call.value.args.map(|a| a.value.0),
        });
    }
    let output = raw.output.map(check_output).transpose()?;
    let judge = match raw.judge {
        Some(judge) => Some(check_judge(judge, spec)?),
        None => None,
    };
    Ok(Expect {
        tools,
        tools_order: match raw.tools_order.map(|o| o.value) {
            Some(RawToolsOrder::Strict) => ToolsOrder::Strict,
            Some(RawToolsOrder::Any) | None => ToolsOrder::Any,
        },
        forbid_tools: raw
            .forbid_tools
            .map(|t| t.value.into_iter().map(|n| n.value).collect())
            .unwrap_or_default(),
        output,
        judge,
        max_requests: raw.max_requests.map(|m| m.value),
        max_tokens: raw.max_tokens.map(|m| m.value),
    })
}

fn check_output(output: At<RawOutput>) -> Result<OutputCheck, CaseError> {
    let field = "expect.output";
    let raw = output.value;
    let written = [
        raw.equals.is_some(),
        raw.contains.is_some(),
        raw.regex.is_some(),
        raw.json_schema.is_some(),
    ];
    if written.iter().filter(|w| **w).count() != 1 {
        let kind = ConfigErrorKind::Invalid(
            "write exactly one of `equals`, `contains`, `regex`, `json_schema`",
        );
        return Err(at(&output.origin, field, kind));
    }
    if let Some(text) = raw.equals {
        return Ok(OutputCheck::Equals(text.value));
    }
    if let Some(text) = raw.contains {
        return Ok(OutputCheck::Contains(text.value));
    }
    if let Some(pattern) = raw.regex {
        // Bounded compiled size: a pattern is input too.
        let compiled = regex::RegexBuilder::new(&pattern.value)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| {
                let kind = ConfigErrorKind::Eval(format!("is not a valid regular expression: {e}"));
                at(&pattern.origin, "expect.output.regex", kind)
            })?;
        return Ok(OutputCheck::Regex(compiled));
    }
    let schema = raw.json_schema.expect("one key is written");
    let value: Value = schema.value.0;
    let compiled = Schema::compile(&value)
        .map_err(|e| at(&schema.origin, "expect.output.json_schema", e.into()))?;
    Ok(OutputCheck::JsonSchema(compiled))
}

fn check_judge(
    judge: At<super::evals_raw::RawJudge>,
    spec: &TacticSpec,
) -> Result<Judge, CaseError> {
    let field = "expect.judge";
    let raw = judge.value;
    let agent = raw.agent.ok_or_else(|| {
        at(
            &judge.origin,
            field,
            ConfigErrorKind::Missing {
                what: "`agent`",
                hint: "name the agent of the tactic that judges",
            },
        )
    })?;
    let criteria = raw.criteria.ok_or_else(|| {
        at(
            &judge.origin,
            field,
            ConfigErrorKind::Missing {
                what: "`criteria`",
                hint: "say in words what the answer must meet",
            },
        )
    })?;
    if spec.agent(&agent.value).is_none() {
        let names: Vec<&str> = spec.agents().iter().map(|a| a.name()).collect();
        let kind = ConfigErrorKind::Eval(format!(
            "the tactic has no agent `{}`; its agents: {}",
            super::error::shorten(&agent.value),
            names.join(", ")
        ));
        return Err(at(&agent.origin, "expect.judge.agent", kind));
    }
    Ok(Judge {
        agent: agent.value,
        criteria: criteria.value,
    })
}

/// The JSON Schema (draft 2020-12) of the eval file format, derived from the types the loader reads.
pub fn evals_schema() -> Value {
    schemars::schema_for!(RawEvals).to_value()
}
