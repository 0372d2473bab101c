//! The `steps:` section: turns, forks and parallel branches, validated from their raw form.

use std::collections::HashMap;

use super::error::ConfigError;
use super::origin::Origin;
use super::raw::RawStep;
use super::span::At;
use super::steps_error::StepsError;

/// The dialog a turn uses when it names none.
pub const DEFAULT_DIALOG: &str = "main";

/// One step of a tactic.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// An agent answers one of its dialogs.
    Turn(Turn),
    /// Branches that run at the same time.
    Parallel {
        /// The branches.
        branches: Vec<Branch>,
        /// Field path, for messages (`steps[3]`).
        at: String,
    },
}

/// A branch of a `parallel` step.
#[derive(Debug, Clone, PartialEq)]
pub enum Branch {
    /// A single step.
    Step(Step),
    /// Steps run in order inside the branch.
    Sequence {
        /// The steps.
        steps: Vec<Step>,
        /// Field path, for messages.
        at: String,
    },
}

/// An agent answers one of its dialogs.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The agent.
    pub agent: String,
    /// The dialog's alias (default `main`); opened on first use.
    pub dialog: String,
    /// A message (minijinja over the variables) received before answering.
    pub receive: Option<String>,
    /// Store the answer text as this variable.
    pub save: Option<String>,
    /// Create `dialog` as a fork of this dialog of the same agent before the turn.
    pub fork_from: Option<String>,
    /// Field path, for messages (`steps[1].parallel[0]`).
    pub at: String,
    /// Where the step's `receive` (else the step) is written: errors found while running name it too.
    pub origin: Origin,
}

impl Step {
    /// The field path of the step.
    pub fn at(&self) -> &str {
        match self {
            Step::Turn(turn) => &turn.at,
            Step::Parallel { at, .. } => at,
        }
    }

    /// Every turn of this step, in file order.
    pub fn turns(&self) -> Vec<&Turn> {
        match self {
            Step::Turn(turn) => vec![turn],
            Step::Parallel { branches, .. } => branches
                .iter()
                .flat_map(|b| match b {
                    Branch::Step(step) => step.turns(),
                    Branch::Sequence { steps, .. } => steps.iter().flat_map(Step::turns).collect(),
                })
                .collect(),
        }
    }
}

/// Where each field of the steps is written, by field path (`steps[1].parallel[0].agent`), so that
/// the checks, which reason in paths, report positions.
#[derive(Debug, Default)]
pub(crate) struct StepOrigins(HashMap<String, Origin>);

impl StepOrigins {
    /// The error at `path`, else at the closest enclosing path that is known.
    pub(crate) fn error(&self, path: &str, problem: StepsError, fallback: &Origin) -> ConfigError {
        let mut key = path;
        let origin = loop {
            if let Some(origin) = self.0.get(key) {
                break origin.clone();
            }
            match key.rfind(['.', '[']) {
                Some(cut) => key = &key[..cut],
                None => break fallback.clone(),
            }
        };
        ConfigError::new(origin, problem).in_field(path)
    }

    /// Records where `output:` is written (its template is checked with the steps).
    pub(crate) fn note_output(&mut self, origin: &Origin) {
        self.0.insert("output".to_owned(), origin.clone());
    }

    /// Records where field `name` of the step at `at` is written, when it is (the path is only
    /// formatted then: most fields of most steps are absent).
    fn note<T>(&mut self, at: &str, name: &str, value: &Option<At<T>>) {
        if let Some(value) = value {
            self.0.insert(format!("{at}.{name}"), value.origin.clone());
        }
    }
}

/// Reads the steps, recording where each field is written.
pub(crate) fn parse_steps(
    raw: At<Vec<At<RawStep>>>,
    path: &str,
    origins: &mut StepOrigins,
) -> Result<Vec<Step>, ConfigError> {
    origins.0.insert(path.to_owned(), raw.origin.clone());
    if raw.value.is_empty() {
        return Err(ConfigError::new(raw.origin, StepsError::Empty).in_field(path));
    }
    raw.value
        .into_iter()
        .enumerate()
        .map(|(i, step)| parse_step(step, &format!("{path}[{i}]"), origins))
        .collect()
}

fn parse_step(raw: At<RawStep>, at: &str, origins: &mut StepOrigins) -> Result<Step, ConfigError> {
    let At {
        value: step,
        origin,
    } = raw;
    origins.0.insert(at.to_owned(), origin.clone());
    let fail = |field: &str, value: Option<&Origin>, problem| {
        ConfigError::new(value.unwrap_or(&origin).clone(), problem).in_field(format!("{at}{field}"))
    };
    let turn_keys = [
        &step.agent,
        &step.dialog,
        &step.receive,
        &step.save,
        &step.fork_from,
    ];
    // A sequence inside a branch was taken out by `parse_branches`; anywhere else it is misplaced.
    if let Some(steps) = &step.steps {
        return Err(fail(
            ".steps",
            Some(&steps.origin),
            StepsError::SequenceOutsideBranch,
        ));
    }
    if let Some(parallel) = step.parallel {
        if let Some(other) = turn_keys.iter().find_map(|k| k.as_ref()).map(|k| &k.origin) {
            return Err(fail("", Some(other), StepsError::ParallelWithKeys));
        }
        let path = format!("{at}.parallel");
        return parse_branches(parallel, &path, origins).map(|branches| Step::Parallel {
            branches,
            at: at.to_owned(),
        });
    }
    parse_turn(step, origin, at, origins).map(Step::Turn)
}

/// A step that is a turn: an agent answers one of its dialogs.
fn parse_turn(
    step: RawStep,
    origin: Origin,
    at: &str,
    origins: &mut StepOrigins,
) -> Result<Turn, ConfigError> {
    let fail = |field: &str, value: Option<&Origin>, problem| {
        ConfigError::new(value.unwrap_or(&origin).clone(), problem).in_field(format!("{at}{field}"))
    };
    for (name, value) in [
        ("agent", &step.agent),
        ("dialog", &step.dialog),
        ("receive", &step.receive),
        ("save", &step.save),
        ("fork_from", &step.fork_from),
    ] {
        origins.note(at, name, value);
    }
    let agent = step
        .agent
        .ok_or_else(|| fail("", None, StepsError::NoAgent))?;
    let dialog = match step.dialog {
        Some(d) if d.value.trim().is_empty() => {
            return Err(fail(".dialog", Some(&d.origin), StepsError::EmptyDialog))
        }
        Some(d) => d.value,
        None => DEFAULT_DIALOG.to_owned(),
    };
    if let Some(save) = &step.save {
        if !is_variable_name(&save.value) || save.value == "input" {
            let problem = StepsError::NotAVariable(save.value.clone());
            return Err(fail(".save", Some(&save.origin), problem));
        }
    }
    let turn_origin = step
        .receive
        .as_ref()
        .map_or_else(|| origin.clone(), |r| r.origin.clone());
    Ok(Turn {
        agent: agent.value,
        dialog,
        receive: step.receive.map(|r| r.value),
        save: step.save.map(|s| s.value),
        fork_from: step.fork_from.map(|f| f.value),
        at: at.to_owned(),
        origin: turn_origin,
    })
}

/// Expands `${NAME}` references in every step's `receive`, as in the file's other string values; an
/// error names the step's file, line and column.
pub(crate) fn expand_env(
    steps: &mut [Step],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    for step in steps {
        match step {
            Step::Turn(turn) => {
                if let Some(receive) = turn.receive.as_mut() {
                    *receive = super::env::expand(receive, lookup).map_err(|e| {
                        ConfigError::new(turn.origin.clone(), e)
                            .in_field(format!("{}.receive", turn.at))
                    })?;
                }
            }
            Step::Parallel { branches, .. } => {
                for branch in branches {
                    match branch {
                        Branch::Step(step) => expand_env(std::slice::from_mut(step), lookup)?,
                        Branch::Sequence { steps, .. } => expand_env(steps, lookup)?,
                    }
                }
            }
        }
    }
    Ok(())
}

fn parse_branches(
    raw: At<Vec<At<RawStep>>>,
    at: &str,
    origins: &mut StepOrigins,
) -> Result<Vec<Branch>, ConfigError> {
    origins.0.insert(at.to_owned(), raw.origin.clone());
    if raw.value.is_empty() {
        return Err(ConfigError::new(raw.origin, StepsError::Empty).in_field(at));
    }
    raw.value
        .into_iter()
        .enumerate()
        .map(|(i, branch)| {
            let path = format!("{at}[{i}]");
            let At { mut value, origin } = branch;
            let Some(steps) = value.steps.take() else {
                return parse_step(At { value, origin }, &path, origins).map(Branch::Step);
            };
            let keys = [
                &value.agent,
                &value.dialog,
                &value.receive,
                &value.save,
                &value.fork_from,
            ];
            let other = keys
                .iter()
                .find_map(|k| k.as_ref().map(|k| k.origin.clone()))
                .or_else(|| value.parallel.as_ref().map(|p| p.origin.clone()));
            if let Some(other) = other {
                return Err(ConfigError::new(other, StepsError::SequenceWithKeys).in_field(path));
            }
            origins.0.insert(path.clone(), origin);
            Ok(Branch::Sequence {
                steps: parse_steps(steps, &format!("{path}.steps"), origins)?,
                at: path,
            })
        })
        .collect()
}

/// Whether `name` can be a template variable (letters, digits and `_`, not starting with a digit).
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
