//! The `steps:` section: turns, forks and parallel branches, read from YAML with their field paths.

use serde_yaml::{Mapping, Value};

use crate::suggest::closest;

/// The dialog a turn uses when it names none.
pub const DEFAULT_DIALOG: &str = "main";

/// Keys any step item may have (for suggestions).
const STEP_KEYS: [&str; 7] = [
    "agent",
    "dialog",
    "receive",
    "save",
    "fork_from",
    "parallel",
    "steps",
];

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
    /// Where the step's `receive` (else the step) is written, such as `t.yaml:12:16`, when known: errors
    /// found while running name it too.
    pub location: Option<String>,
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

/// Calls `f` on every turn of `steps`, nested ones included.
pub(crate) fn for_each_turn_mut(steps: &mut [Step], f: &mut dyn FnMut(&mut Turn)) {
    for step in steps {
        match step {
            Step::Turn(turn) => f(turn),
            Step::Parallel { branches, .. } => {
                for branch in branches {
                    match branch {
                        Branch::Step(step) => for_each_turn_mut(std::slice::from_mut(step), f),
                        Branch::Sequence { steps, .. } => for_each_turn_mut(steps, f),
                    }
                }
            }
        }
    }
}

/// A problem at a field path.
pub(crate) type PathError = (String, String);

/// Reads a list of steps at `path`.
pub(crate) fn parse_steps(value: &Value, path: &str) -> Result<Vec<Step>, PathError> {
    let Value::Sequence(items) = value else {
        return Err((
            path.to_owned(),
            format!("expected a list of steps, found {}", kind(value)),
        ));
    };
    if items.is_empty() {
        return Err((path.to_owned(), "a list of steps may not be empty".into()));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_step(item, &format!("{path}[{i}]")))
        .collect()
}

fn parse_step(value: &Value, at: &str) -> Result<Step, PathError> {
    let map = mapping(value, at, "a step: a mapping with `agent:` or `parallel:`")?;
    check_keys(map, at, &STEP_KEYS)?;
    if map.contains_key("steps") {
        return Err((
            format!("{at}.steps"),
            "`steps:` makes a sequence only inside a `parallel:` branch; here, list the steps directly".into(),
        ));
    }
    if let Some(parallel) = map.get("parallel") {
        if let Some(other) = map
            .keys()
            .filter_map(Value::as_str)
            .find(|k| *k != "parallel")
        {
            return Err((
                format!("{at}.{other}"),
                "a `parallel:` step has no other keys; put them on its branches".into(),
            ));
        }
        return parse_parallel(parallel, &format!("{at}.parallel")).map(|branches| {
            Step::Parallel {
                branches,
                at: at.to_owned(),
            }
        });
    }
    let agent = string(map, at, "agent")?.ok_or_else(|| {
        (
            at.to_owned(),
            "a step needs `agent:` (or `parallel:`)".to_owned(),
        )
    })?;
    let dialog = string(map, at, "dialog")?.unwrap_or_else(|| DEFAULT_DIALOG.to_owned());
    if dialog.trim().is_empty() {
        return Err((
            format!("{at}.dialog"),
            "a dialog alias may not be empty".into(),
        ));
    }
    let save = string(map, at, "save")?;
    if let Some(name) = &save {
        if !is_variable_name(name) || name == "input" {
            return Err((
                format!("{at}.save"),
                format!("`{name}` cannot be a variable: use letters, digits and _ (not starting with a digit), and not `input`"),
            ));
        }
    }
    Ok(Step::Turn(Turn {
        agent,
        dialog,
        receive: string(map, at, "receive")?,
        save,
        fork_from: string(map, at, "fork_from")?,
        at: at.to_owned(),
        location: None,
    }))
}

fn parse_parallel(value: &Value, at: &str) -> Result<Vec<Branch>, PathError> {
    let Value::Sequence(items) = value else {
        return Err((
            at.to_owned(),
            format!("expected a list of branches, found {}", kind(value)),
        ));
    };
    if items.is_empty() {
        return Err((
            at.to_owned(),
            "`parallel:` needs at least one branch".into(),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let branch_at = format!("{at}[{i}]");
            let map = mapping(
                item,
                &branch_at,
                "a branch: a step, or `steps:` with a list",
            )?;
            match map.get("steps") {
                Some(steps) => {
                    if let Some(other) =
                        map.keys().filter_map(Value::as_str).find(|k| *k != "steps")
                    {
                        return Err((
                            format!("{branch_at}.{other}"),
                            "a `steps:` branch has no other keys; put them on its steps".into(),
                        ));
                    }
                    Ok(Branch::Sequence {
                        steps: parse_steps(steps, &format!("{branch_at}.steps"))?,
                        at: branch_at,
                    })
                }
                None => parse_step(item, &branch_at).map(Branch::Step),
            }
        })
        .collect()
}

fn mapping<'a>(value: &'a Value, at: &str, what: &str) -> Result<&'a Mapping, PathError> {
    value.as_mapping().ok_or_else(|| {
        (
            at.to_owned(),
            format!("expected {what}, found {}", kind(value)),
        )
    })
}

fn check_keys(map: &Mapping, at: &str, allowed: &[&str]) -> Result<(), PathError> {
    for key in map.keys() {
        let Some(name) = key.as_str() else {
            return Err((
                at.to_owned(),
                format!("keys must be text, found {}", kind(key)),
            ));
        };
        if !allowed.contains(&name) {
            let hint = closest(name, allowed.iter().copied())
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err((
                format!("{at}.{name}"),
                format!(
                    "unknown key `{name}`, expected one of {}{hint}",
                    allowed
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn string(map: &Mapping, at: &str, key: &str) -> Result<Option<String>, PathError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err((
            format!("{at}.{key}"),
            format!("expected text, found {}", kind(other)),
        )),
    }
}

/// Whether `name` can be a template variable (letters, digits and `_`, not starting with a digit).
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}
