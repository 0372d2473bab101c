//! What a tool call knows of its caller: the dialog whose answer made it, and a way to ask that
//! dialog's model for a completion on its behalf (an MCP server's sampling).

use async_trait::async_trait;
use lllm_core::{DialogId, Message};

use super::elicit::{ElicitRequest, Elicited};

/// A completion a tool asks for during its call (an MCP server's `sampling/createMessage`): the
/// calling agent's model answers it as a child dialog of the calling dialog.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleRequest {
    /// The child dialog's system prompt (none: the child starts with `messages`).
    pub system: Option<String>,
    /// The messages to answer (user and assistant messages).
    pub messages: Vec<Message>,
    /// Most tokens of the answer: held to the agent's own `max_tokens` when it has one.
    pub max_tokens: u32,
    /// Used only when the agent sets no temperature of its own.
    pub temperature: Option<f32>,
    /// Used only when the agent sets no stop sequences of its own.
    pub stop: Vec<String>,
    /// Whether the child is a fork of the calling dialog (its messages, then these) rather than a
    /// dialog of these messages alone (MCP's `includeContext` other than `none`).
    pub include_context: bool,
}

/// The calling model's answer to a [`SampleRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct SampleAnswer {
    /// The answer's text.
    pub text: String,
    /// The model that answered.
    pub model: String,
    /// Whether the answer stopped at its token limit.
    pub truncated: bool,
}

/// Why a [`SampleRequest`] has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleError {
    /// What went wrong, safe to tell the server.
    pub message: String,
    /// Whether the run cannot go on (a limit reached, the journal unwritable, the run paused): the
    /// tool call ends at once instead of waiting for the server.
    pub stops_run: bool,
}

/// Answers completions asked for during a tool call: the agent, for the calling dialog.
#[async_trait]
pub(crate) trait Sampler: Send + Sync {
    async fn sample(&self, request: SampleRequest) -> Result<SampleAnswer, SampleError>;

    /// Tells the run's events that a call answered as a task moved on.
    fn progress(&self, call_id: &str, progress: ToolProgress<'_>) {
        let _ = (call_id, progress);
    }

    /// Asks the user through the agent's confirmations; declined when nobody can be asked.
    async fn elicit(&self, request: ElicitRequest<'_>) -> Elicited {
        let _ = request;
        Elicited::Decline
    }
}

/// How a tool call answered as a task (an MCP server's task) moves on, for the run's events.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolProgress<'a> {
    /// The tool, as the model named it.
    pub tool: &'a str,
    /// The task's status (`working`, `input_required`, `completed`, `failed`, `cancelled`).
    pub status: &'a str,
    /// What the server says of it.
    pub message: Option<&'a str>,
}

impl<'a> ToolProgress<'a> {
    /// The progress of `tool`'s task.
    pub fn new(tool: &'a str, status: &'a str, message: Option<&'a str>) -> Self {
        ToolProgress {
            tool,
            status,
            message,
        }
    }
}

/// What a tool call knows of its caller, handed to [`Tool::call_with`](super::Tool::call_with): the
/// calling dialog and, inside an agent's respond, its model for completions asked on its behalf.
/// Carried down the call (never kept in a global), so that what a server asks during a call is
/// answered for the dialog that made it.
#[derive(Clone, Copy, Default)]
pub struct ToolContext<'a> {
    dialog: Option<DialogId>,
    sampler: Option<&'a dyn Sampler>,
    call: Option<&'a str>,
}

impl std::fmt::Debug for ToolContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("dialog", &self.dialog)
            .field("can_sample", &self.sampler.is_some())
            .field("call", &self.call)
            .finish()
    }
}

impl<'a> ToolContext<'a> {
    /// A call with no caller to ask (a Rust program calling a tool by itself).
    pub fn none() -> Self {
        Self::default()
    }

    pub(crate) fn new(dialog: DialogId, sampler: Option<&'a dyn Sampler>) -> Self {
        ToolContext {
            dialog: Some(dialog),
            sampler,
            call: None,
        }
    }

    /// The same context for the call `id`.
    pub(crate) fn with_call(mut self, id: &'a str) -> Self {
        self.call = Some(id);
        self
    }

    /// The call's id in its dialog, when an agent made it.
    pub fn call_id(&self) -> Option<&str> {
        self.call
    }

    /// Tells the run's events that the call, answered as a task, moved on (nothing without an
    /// agent).
    pub fn progress(&self, progress: ToolProgress<'_>) {
        if let Some(sampler) = self.sampler {
            sampler.progress(self.call.unwrap_or_default(), progress);
        }
    }

    /// The dialog whose answer made the call.
    pub fn dialog(&self) -> Option<DialogId> {
        self.dialog
    }

    /// Whether [`sample`](Self::sample) can be answered.
    pub fn can_sample(&self) -> bool {
        self.sampler.is_some()
    }

    /// Asks the calling agent's model for a completion, as a child dialog of the calling dialog,
    /// through the agent's layers (retries, limits, admission, journal).
    pub async fn sample(&self, request: SampleRequest) -> Result<SampleAnswer, SampleError> {
        match self.sampler {
            Some(sampler) => sampler.sample(request).await,
            None => Err(SampleError {
                message: "no model can answer here: the tool was not called by an agent".into(),
                stops_run: false,
            }),
        }
    }

    /// Asks the user a question on the calling agent's behalf, through the path of its
    /// confirmations (the terminal, `requires_action` on `lllm serve`); declined when the tool was
    /// not called by an agent or nobody can be asked. The request's `agent` is the calling agent's.
    pub async fn elicit(&self, request: ElicitRequest<'_>) -> Elicited {
        match self.sampler {
            Some(sampler) => sampler.elicit(request).await,
            None => Elicited::Decline,
        }
    }
}
