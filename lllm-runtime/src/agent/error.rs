//! Errors of agents: the agent and dialog held once, what went wrong in [`AgentErrorKind`].

use std::fmt;
use std::time::Duration;

use lllm_core::{HintsError, ModelArgsError, PromptError};

use crate::invoker::InvokeError;
use crate::tools::ToolsError;
use lllm_core::{SchemaError, ToolConfigError};

/// An agent operation failed.
///
/// The agent's name and the dialog's alias are held here once; [`kind`](Self::kind) says what went
/// wrong, and the predicates answer the common questions without matching:
///
/// ```
/// # fn show(err: &lllm_runtime::AgentError) {
/// if err.is_timeout() {
///     eprintln!("{} was too slow", err.agent());
/// } else if let Some(status) = err.status() {
///     eprintln!("the server answered {status}");
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct AgentError {
    agent: String,
    dialog: Option<String>,
    kind: AgentErrorKind,
}

/// What went wrong in an [`AgentError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentErrorKind {
    /// The builder was not given a required setting.
    #[error("{field} is required")]
    Missing {
        /// The setting (`a name`, `a system prompt`, `a model`, `an invoker`).
        field: &'static str,
    },
    /// A setting of the builder is out of the range the tactic file allows (the tactic file
    /// refuses the same value when it loads).
    #[error("{setting} {problem}")]
    Setting {
        /// The setting (`max_parallel_tools`).
        setting: &'static str,
        /// What is wrong, and what is allowed (boxed: it is rare, and keeps every result small).
        problem: Box<lllm_core::ValueError>,
    },
    /// The model arguments are invalid.
    #[error("invalid model_args")]
    ModelArgs(#[source] ModelArgsError),
    /// The system prompt cannot be compiled or rendered.
    #[error("cannot render the system prompt")]
    Prompt(#[source] PromptError),
    /// The inference hints cannot be computed or sent.
    #[error("inference hints")]
    Hints(#[source] HintsError),
    /// The tools of the agent (or of one respond) are invalid.
    #[error("invalid tools")]
    Tools(#[source] ToolsError),
    /// The agent's MCP servers cannot give it their tools as configured (a name clash, an unknown
    /// tool in a filter).
    #[error("MCP tools")]
    Mcp(#[source] Box<crate::mcp::McpError>),
    /// The run's journal cannot be read or written.
    #[error("the journal")]
    Journal(#[source] crate::journal::JournalError),
    /// A tool call waits for the user's confirmation: the run paused (its journal holds the call).
    #[error("paused: the call of `{tool}` waits for the user's confirmation")]
    Paused {
        /// The tool.
        tool: String,
    },
    /// A limit of the run was reached.
    #[error("the run reached its limit {limit} = {value}")]
    Limit {
        /// The limit (`max_requests`, `max_total_tokens`, `max_tool_calls`, `max_seconds`).
        limit: &'static str,
        /// Its value, as written.
        value: String,
    },
    /// A command tool of the tactic file is invalid.
    #[error("invalid command tool")]
    CommandTool(#[source] ToolConfigError),
    /// The output schema is not a JSON Schema that can be compiled.
    #[error("invalid output schema")]
    OutputSchema(#[source] SchemaError),
    /// [`Agent::finish`](crate::Agent::finish) needs inference hints with the `dynamo` profile.
    #[error("no inference_hints; ending a session needs profile `dynamo`")]
    NoHints,
    /// No dialog is active: open or switch to one first.
    #[error("no active dialog: call open(alias) or switch(alias) first")]
    NoActiveDialog,
    /// No dialog has the alias.
    #[error("no such dialog (open dialogs: {})", list(known))]
    UnknownDialog {
        /// The aliases that exist.
        known: Vec<String>,
    },
    /// The alias is already used by an open dialog.
    #[error("the alias is taken: close that dialog first or pick another alias")]
    AliasTaken,
    /// Another respond is under way on the dialog.
    #[error("already waiting for an answer")]
    DialogBusy,
    /// The dialog was closed while its answer was on the way; the answer was dropped.
    #[error("closed before its answer arrived")]
    DialogClosed,
    /// The answer never matched the required JSON Schema (or type). The dialog is as it was.
    #[error("no valid answer after {attempts} attempt(s): {problem}")]
    InvalidAnswer {
        /// Answers rejected.
        attempts: u32,
        /// Why the last one was rejected.
        problem: String,
    },
    /// A request would break the pairing of tool calls and results, which servers refuse: a bug
    /// of lllm or of a custom tactic, caught before anything is sent.
    #[error(
        "the request would break the pairing of tool calls and results ({0}); nothing was sent"
    )]
    Unpaired(lllm_core::PairingProblem),
    /// A task (a subagent) cannot be started.
    #[error("task: {0}")]
    Task(String),
    /// The dialog's window could not be compacted (`context:`). The dialog is as it was.
    #[error("context compaction: {problem}")]
    Compaction {
        /// What went wrong, and what to do.
        problem: String,
    },
    /// The agent's [`Summarizer`](crate::agent::Summarizer) failed (`context:`). The dialog is as
    /// it was.
    #[error("context compaction: the summarizer failed")]
    Summarizer(#[source] crate::tactic::BoxError),
    /// The respond took longer than `model_args.deadline`. The dialog is as it was.
    #[error("no answer within the deadline of {after:?}")]
    Deadline {
        /// The deadline.
        after: Duration,
    },
    /// The model call failed, after retries where they were allowed. The dialog is as it was.
    #[error("model call failed after {attempts} attempt(s)")]
    Invoke {
        /// Requests sent.
        attempts: u32,
        /// The last failure.
        #[source]
        source: InvokeError,
    },
}

impl AgentErrorKind {
    /// A short, stable class of the error, as spans report it in `error.type`.
    pub fn error_type(&self) -> &'static str {
        match self {
            AgentErrorKind::Missing { .. } => "missing",
            AgentErrorKind::Setting { .. } => "setting",
            AgentErrorKind::ModelArgs(_) => "model_args",
            AgentErrorKind::Prompt(_) => "prompt",
            AgentErrorKind::Hints(_) => "hints",
            AgentErrorKind::Tools(_) => "tools",
            AgentErrorKind::Mcp(_) => "mcp",
            AgentErrorKind::Journal(_) => "journal",
            AgentErrorKind::Paused { .. } => "paused",
            AgentErrorKind::Limit { .. } => "limit",
            AgentErrorKind::CommandTool(_) => "command_tool",
            AgentErrorKind::OutputSchema(_) => "output_schema",
            AgentErrorKind::NoHints => "no_hints",
            AgentErrorKind::NoActiveDialog => "no_active_dialog",
            AgentErrorKind::UnknownDialog { .. } => "unknown_dialog",
            AgentErrorKind::AliasTaken => "alias_taken",
            AgentErrorKind::DialogBusy => "dialog_busy",
            AgentErrorKind::DialogClosed => "dialog_closed",
            AgentErrorKind::InvalidAnswer { .. } => "invalid_answer",
            AgentErrorKind::Deadline { .. } => "deadline",
            AgentErrorKind::Invoke { .. } => "invoke",
            AgentErrorKind::Unpaired(_) => "unpaired",
            AgentErrorKind::Task(_) => "task",
            AgentErrorKind::Compaction { .. } | AgentErrorKind::Summarizer(_) => "compaction",
        }
    }
}

impl From<crate::layers::CallError> for AgentErrorKind {
    fn from(error: crate::layers::CallError) -> Self {
        use crate::layers::CallError;
        match error {
            CallError::Limit(reached) => reached.into(),
            CallError::Journal(e) => AgentErrorKind::Journal(e),
            CallError::Paused { tool } => AgentErrorKind::Paused { tool },
            CallError::Invoke {
                attempts, error, ..
            } => AgentErrorKind::Invoke {
                attempts,
                source: error,
            },
        }
    }
}

impl From<crate::tools::calls::ToolCallError> for AgentErrorKind {
    fn from(error: crate::tools::calls::ToolCallError) -> Self {
        use crate::tools::calls::ToolCallError;
        match error {
            ToolCallError::Limit(reached) => reached.into(),
            ToolCallError::Journal(e) => AgentErrorKind::Journal(e),
            ToolCallError::Paused { tool } => AgentErrorKind::Paused { tool },
        }
    }
}

impl From<crate::budget::LimitReached> for AgentErrorKind {
    fn from(reached: crate::budget::LimitReached) -> Self {
        AgentErrorKind::Limit {
            limit: reached.limit,
            value: reached.value,
        }
    }
}

fn list(known: &[String]) -> String {
    if known.is_empty() {
        "none".to_owned()
    } else {
        known.join(", ")
    }
}

impl AgentError {
    pub(crate) fn new(agent: &str, dialog: Option<&str>, kind: AgentErrorKind) -> Self {
        AgentError {
            agent: agent.to_owned(),
            dialog: dialog.map(str::to_owned),
            kind,
        }
    }

    /// The agent's name (empty when a builder failed before it had one).
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The alias of the dialog concerned, if the operation had one.
    pub fn dialog(&self) -> Option<&str> {
        self.dialog.as_deref()
    }

    /// What went wrong.
    pub fn kind(&self) -> &AgentErrorKind {
        &self.kind
    }

    /// Whether the agent could not be built from its settings, or its system prompt cannot be rendered:
    /// the caller's configuration is wrong, not the run.
    pub fn is_config(&self) -> bool {
        use AgentErrorKind::*;
        matches!(
            self.kind,
            Missing { .. }
                | Setting { .. }
                | ModelArgs(_)
                | Prompt(_)
                | Tools(_)
                | CommandTool(_)
                | OutputSchema(_)
        ) || matches!(&self.kind, Mcp(e) if e.is_config())
    }

    /// Whether the run paused for a confirmation (`lllm` exits with 3).
    pub fn is_paused(&self) -> bool {
        matches!(self.kind, AgentErrorKind::Paused { .. })
    }

    /// Whether a time limit ended the respond: the respond deadline, or the per-request timeout on
    /// the last attempt.
    pub fn is_timeout(&self) -> bool {
        match &self.kind {
            AgentErrorKind::Deadline { .. } => true,
            AgentErrorKind::Invoke { source, .. } => source.is_timeout(),
            _ => false,
        }
    }

    /// Whether the server answered with an error status.
    pub fn is_status(&self) -> bool {
        self.status().is_some()
    }

    /// The HTTP status of the server's last answer, when it was an error status.
    pub fn status(&self) -> Option<http::StatusCode> {
        self.invoke_error().and_then(InvokeError::status)
    }

    /// Whether the model call failed (after retries), whatever the reason.
    pub fn is_invoke(&self) -> bool {
        self.invoke_error().is_some()
    }

    /// The model call's last failure, when that is what ended the respond.
    pub fn invoke_error(&self) -> Option<&InvokeError> {
        match &self.kind {
            AgentErrorKind::Invoke { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether the answer never matched the required schema or type.
    pub fn is_invalid_answer(&self) -> bool {
        matches!(self.kind, AgentErrorKind::InvalidAnswer { .. })
    }

    /// Whether the dialog was busy, closed, unknown or its alias taken: the caller's dialog bookkeeping.
    pub fn is_dialog(&self) -> bool {
        use AgentErrorKind::*;
        matches!(
            self.kind,
            NoActiveDialog | UnknownDialog { .. } | AliasTaken | DialogBusy | DialogClosed
        )
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let agent = &self.agent;
        // Prompt errors with a dialog come from `open`, not from building.
        let building = self.is_config()
            && !(matches!(self.kind, AgentErrorKind::Prompt(_)) && self.dialog.is_some());
        if building {
            let agent = if agent.is_empty() {
                String::new()
            } else {
                format!(" `{agent}`")
            };
            return write!(f, "cannot build agent{agent}: {}", self.kind);
        }
        match (&self.kind, self.dialog.as_deref()) {
            (AgentErrorKind::UnknownDialog { known }, Some(dialog)) => write!(
                f,
                "agent `{agent}` has no dialog `{dialog}` (open dialogs: {})",
                list(known)
            ),
            (kind, Some(dialog)) => write!(f, "agent `{agent}`, dialog `{dialog}`: {kind}"),
            (kind, None) => write!(f, "agent `{agent}`: {kind}"),
        }
    }
}

impl std::error::Error for AgentError {
    // The kind's own message is part of this Display, so the chain continues at the kind's source.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}
