//! Errors of agents.

use lllm_core::{HintsError, ModelArgsError, PromptError};

use crate::invoker::InvokeError;

/// An agent operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The builder was missing something or given something invalid.
    #[error("cannot build agent: {0}")]
    Build(String),
    /// Model arguments are invalid.
    #[error("agent `{agent}`: invalid model_args")]
    ModelArgs {
        /// The agent.
        agent: String,
        /// What is wrong.
        source: ModelArgsError,
    },
    /// The system prompt cannot be rendered.
    #[error("agent `{agent}`: cannot render the system prompt")]
    Prompt {
        /// The agent.
        agent: String,
        /// What is wrong.
        source: PromptError,
    },
    /// The inference hints cannot be computed or sent.
    #[error("agent `{agent}`: inference hints")]
    Hints {
        /// The agent.
        agent: String,
        /// What is wrong.
        source: HintsError,
    },
    /// [`Agent::finish`](crate::Agent::finish) needs inference hints with the `dynamo` profile.
    #[error("agent `{0}` has no inference_hints; ending a session needs profile `dynamo`")]
    NoHints(String),
    /// No dialog is active: open or switch to one first.
    #[error("agent `{0}` has no active dialog: call open(alias) or switch(alias) first")]
    NoActiveDialog(String),
    /// No dialog has that alias.
    #[error("agent `{agent}` has no dialog `{alias}` (open dialogs: {})", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    UnknownDialog {
        /// The agent.
        agent: String,
        /// The alias asked for.
        alias: String,
        /// The aliases that exist.
        known: Vec<String>,
    },
    /// The alias is already used by an open dialog.
    #[error(
        "agent `{agent}` already has a dialog `{alias}`: close it first or pick another alias"
    )]
    AliasTaken {
        /// The agent.
        agent: String,
        /// The alias.
        alias: String,
    },
    /// Another respond is under way on this dialog.
    #[error("agent `{agent}`: dialog `{alias}` is already waiting for an answer")]
    DialogBusy {
        /// The agent.
        agent: String,
        /// The alias.
        alias: String,
    },
    /// The dialog was closed while its answer was on the way; the answer was dropped.
    #[error("agent `{agent}`: dialog `{alias}` was closed before its answer arrived")]
    DialogClosed {
        /// The agent.
        agent: String,
        /// The alias.
        alias: String,
    },
    /// The answer never matched the required JSON Schema. The dialog is as it was.
    #[error(
        "agent `{agent}`, dialog `{alias}`: no valid answer after {attempts} attempt(s): {problem}"
    )]
    InvalidAnswer {
        /// The agent.
        agent: String,
        /// The dialog's alias.
        alias: String,
        /// Answers rejected.
        attempts: u32,
        /// Why the last one was rejected.
        problem: String,
    },
    /// The respond took longer than `model_args.deadline`. The dialog is as it was.
    #[error("agent `{agent}`, dialog `{alias}`: no answer within the deadline of {after:?}")]
    Deadline {
        /// The agent.
        agent: String,
        /// The dialog's alias.
        alias: String,
        /// The deadline.
        after: std::time::Duration,
    },
    /// The model call failed, after retries where they were allowed. The dialog is as it was.
    #[error("agent `{agent}`, dialog `{alias}`: model call failed after {attempts} attempt(s)")]
    Invoke {
        /// The agent.
        agent: String,
        /// The dialog's alias.
        alias: String,
        /// Requests sent.
        attempts: u32,
        /// The last failure.
        source: InvokeError,
    },
}
