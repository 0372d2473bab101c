//! What a run reports as it goes: its steps, its answers' text, its tool calls and their results,
//! and its status. A [`RunObserver`] sees each [`RunEvent`] as it happens, on the run's own task, so
//! it must be quick (print a line, push into a channel).

use std::sync::Arc;
use std::time::Duration;

use lllm_core::{DialogId, ToolCall, Usage};

// The namespace's names defined elsewhere.
pub use crate::halt::halt;

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// The run's status changed.
    Status(RunStatus),
    /// A step's model call started.
    StepStarted {
        /// The step's field path (`steps[2].parallel[1]`).
        step: String,
        /// The agent.
        agent: String,
        /// The dialog alias.
        dialog: String,
    },
    /// A step ended.
    StepEnded {
        /// The step's field path.
        step: String,
        /// The agent.
        agent: String,
        /// The dialog alias.
        dialog: String,
        /// How it ended.
        outcome: StepOutcome,
        /// How long it took.
        took: Duration,
    },
    /// A piece of answer text, as it arrives (only when the run streams).
    Text {
        /// The agent answering.
        agent: String,
        /// The piece.
        text: String,
    },
    /// The model called a tool.
    ToolCall {
        /// The agent whose model made the call.
        agent: String,
        /// The call.
        call: ToolCall,
    },
    /// A dialog's window was compacted (`context:`): the respond goes on in a new window.
    Compacted {
        /// The agent.
        agent: String,
        /// The dialog alias.
        dialog: String,
        /// The prompt tokens of the request that made it due.
        tokens_before: u64,
    },
    /// A model call was answered: one per answered attempt, as the serving side saw it.
    ModelCall(Box<ModelCall>),
    /// A tool call was answered.
    ToolResult {
        /// The agent whose model made the call.
        agent: String,
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// What the model reads.
        content: String,
        /// Whether the call failed (the model reads the error).
        is_error: bool,
    },
}

/// One answered model call: which dialog and session it was, what it was sent with and what the
/// server gave back (tokens, cached tokens, the worker when the server names it).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelCall {
    /// The agent that sent it.
    pub agent: String,
    /// The dialog's alias in the agent, when a respond sent it.
    pub alias: Option<String>,
    /// The dialog's id.
    pub dialog: Option<DialogId>,
    /// The dialog it was forked from.
    pub parent_dialog: Option<DialogId>,
    /// The session id the request carried (the dialog's, or the caller's conversation's).
    pub session: Option<String>,
    /// The parent session id it carried.
    pub parent_session: Option<String>,
    /// The priority as sent (after the profile's transformation).
    pub priority: Option<i64>,
    /// The queue tier: Dynamo's `strict_priority` as sent, else the admission tier.
    pub tier: u64,
    /// Its tokens, cached ones among them, when the server counted them.
    pub usage: Option<Usage>,
    /// The worker that served it, when the server names it.
    pub worker: Option<String>,
    /// The endpoint, when a fallback answered (0: the agent's own).
    pub hop: u32,
    /// How many times the dialog's window was compacted before it.
    pub window: u32,
    /// How long it waited for a slot (`max_in_flight`).
    pub queue_wait: Duration,
    /// How long the server took to answer.
    pub took: Duration,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOutcome {
    /// It answered.
    Finished,
    /// It failed.
    Failed,
    /// It was stopped because another branch failed (or the run was cancelled).
    Cancelled,
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// Accepted, not started yet.
    Queued,
    /// Running.
    Running,
    /// Paused: tool calls wait for a confirmation.
    RequiresAction,
    /// Finished with an answer.
    Completed,
    /// Ended with an error.
    Failed,
    /// Stopped on request.
    Cancelled,
}

impl RunStatus {
    /// The status's name on the wire (`requires_action`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::RequiresAction => "requires_action",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the run will not change any more by itself (a paused run changes on an answer).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Sees every event of a run as it happens (cheap to clone: shared).
#[derive(Clone)]
pub struct RunObserver(Arc<dyn Fn(&RunEvent) + Send + Sync>);

impl RunObserver {
    /// An observer calling `see` with each event.
    pub fn new(see: impl Fn(&RunEvent) + Send + Sync + 'static) -> Self {
        RunObserver(Arc::new(see))
    }

    /// Shows it `event`.
    pub fn notify(&self, event: &RunEvent) {
        (self.0)(event);
    }
}

impl std::fmt::Debug for RunObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunObserver")
    }
}
