//! Tactics: how a team of agents works on an input. Built in: `chat` (the first agent answers) and
//! `steps` (the YAML steps: turns, forks, parallel branches). Tactics written in Rust are registered
//! by name in a [`TacticRegistry`] and chosen with `tactic_type:` in the file.

mod chat;
mod registry;
mod rounds;
mod steps;
mod team;

use async_trait::async_trait;
use lllm_core::{PromptError, PromptVars, TacticSpec};
use lllm_core::{Step, Turn};

pub use chat::ChatTactic;
pub use registry::TacticRegistry;
pub use steps::StepsTactic;
pub use team::{Progress, ProgressEvent, Team, TeamBuilder, ITEM_ID_PLACEHOLDER};

use crate::agent::AgentError;

/// A way of working: given the team and the input, produce the final answer.
#[async_trait]
pub trait Tactic: Send + Sync {
    /// Runs the tactic. `vars` holds `input` (when there is one) and every `--var`.
    async fn run(&self, team: &Team, vars: &PromptVars) -> Result<String, TacticError>;
}

/// A tactic failed.
#[derive(Debug, thiserror::Error)]
pub enum TacticError {
    /// An agent failed (the model call, a dialog operation).
    #[error("the run failed")]
    Agent(#[from] AgentError),
    /// A template of the tactic (a step's `receive`, `output`) could not be rendered; the message
    /// names it by `at`.
    #[error("{problem}")]
    Template {
        /// Where the template is (`t.yaml:12:16: steps[2].receive`).
        at: String,
        /// Why (its message names the template by `at`).
        problem: PromptError,
    },
    /// A chat needs an input and was given none.
    #[error("a chat needs an input: give the run one (`RunPlan::input`)")]
    NoInput,
    /// The tactic has no agent to run.
    #[error("the tactic has no agent")]
    NoAgents,
    /// A step names an agent the tactic does not have.
    #[error("{step}: there is no agent `{agent}`")]
    UnknownAgent {
        /// The step's field path (`steps[2]`).
        step: String,
        /// The agent it names.
        agent: String,
    },
    /// A tactic's configuration (its `config:`, or the team it was given) does not suit it. Made by
    /// [`TacticError::invalid`]; the problem is the message.
    #[error("{problem}")]
    Invalid {
        /// What is wrong, as the tactic explains it.
        problem: BoxError,
    },
    /// No tactic of that type is registered.
    #[error("unknown tactic_type `{name}`; the registered types are: {}", known.join(", "))]
    UnknownType {
        /// The type asked for.
        name: String,
        /// The registered types.
        known: Vec<String>,
    },
    /// A tactic written in Rust failed for its own reasons. Made by [`TacticError::failed`].
    #[error("the tactic failed")]
    Failed {
        /// Why.
        #[source]
        source: BoxError,
    },
}

/// The error type a tactic factory or a Rust tactic reports its own problems with; `&str`, `String`
/// and any error convert into it with `?` or `.into()`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl TacticError {
    /// The tactic cannot run with what it was given (its `config:`, its agents, the input): a usage
    /// error, reported as such by `lllm`.
    pub fn invalid(problem: impl Into<BoxError>) -> Self {
        TacticError::Invalid {
            problem: problem.into(),
        }
    }

    /// The tactic failed for its own reasons while running.
    pub fn failed(source: impl Into<BoxError>) -> Self {
        TacticError::Failed {
            source: source.into(),
        }
    }

    /// Whether the error is the caller's (bad usage or configuration) rather than the run's.
    pub fn is_usage(&self) -> bool {
        match self {
            TacticError::Template { .. }
            | TacticError::NoInput
            | TacticError::NoAgents
            | TacticError::UnknownAgent { .. }
            | TacticError::Invalid { .. }
            | TacticError::UnknownType { .. } => true,
            TacticError::Agent(error) => error.is_config(),
            TacticError::Failed { .. } => false,
        }
    }
}

/// Renders every template of `spec` (system prompts, each step's `receive`, `output`) with `vars` and
/// a stand-in for every answer a step saves, so that a missing variable is reported before any model
/// call is spent.
pub fn preflight(spec: &TacticSpec, vars: &PromptVars) -> Result<(), TacticError> {
    let mut known = vars.clone();
    let turns: Vec<&Turn> = spec.steps().iter().flat_map(Step::turns).collect();
    for name in turns.iter().filter_map(|t| t.save.as_ref()) {
        known.entry(name.clone()).or_insert_with(|| "".into());
    }
    for agent in spec.agents() {
        agent
            .system_prompt()
            .render(&known)
            .map_err(|problem| TacticError::Template {
                at: format!("agent `{}`: system prompt", agent.name()),
                problem,
            })?;
    }
    for turn in turns {
        if let Some(template) = &turn.receive {
            render(template, || steps::receive_at(turn), &known)?;
        }
    }
    if let Some(template) = spec.output() {
        render(template, || "output".to_owned(), &known)?;
    }
    Ok(())
}

/// Renders a tactic's template (named `at()` in errors) with the run's variables.
///
/// The name is made only for an error: a render depends on nothing but the template and the
/// variables, so a failed one is repeated under its name. Formatting it (a file, line and field
/// path) for every turn that renders was a tenth of what a step of a tactic cost (callgrind).
pub(crate) fn render(
    template: &str,
    at: impl Fn() -> String,
    vars: &PromptVars,
) -> Result<String, TacticError> {
    lllm_core::Prompt::named(String::new(), template)
        .render(vars)
        .or_else(|_| {
            let at = at();
            lllm_core::Prompt::named(at.clone(), template)
                .render(vars)
                .map_err(|problem| TacticError::Template { at, problem })
        })
}
