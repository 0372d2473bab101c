//! What a run reports as it goes: its steps, its answers' text, its tool calls and their results,
//! and its status. A [`RunObserver`] sees each [`RunEvent`] as it happens, on the run's own task, so
//! it must be quick (print a line, push into a channel).
//!
//! The types here own their JSON: `lllm serve`'s event stream and console send what they serialize
//! to, and nothing else writes an event's JSON.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lllm_core::{DialogId, ToolCall, Usage};
use serde::Serialize;

/// The longest name, alias, session or worker an event's JSON carries, in characters (longer ones
/// are cut, saying how much): a client's session id or a server's worker name cannot grow every
/// event it is in.
pub(crate) const MAX_LABEL: usize = 200;

// The namespace's names defined elsewhere.
pub use crate::halt::halt;

/// One thing that happened in a run.
///
/// It serializes as `{"event": NAME, "data": {...}}`, NAME one of `status`, `step.started`,
/// `step.ended`, `text`, `tool_call`, `compacted`, `model_call`, `tool_result`, `task.started`,
/// `task.ended`, `tool.progress`: `lllm serve`'s
/// `/v1/runs/{id}/events` sends NAME as the server-sent event's name and `data` as its data.
/// Durations are whole milliseconds (`took_ms`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// The run's status changed: `{"status": "running"}`.
    #[serde(serialize_with = "wire::status")]
    Status(RunStatus),
    /// A step's model call started.
    #[serde(rename = "step.started")]
    StepStarted {
        /// The step's field path (`steps[2].parallel[1]`).
        step: String,
        /// The agent.
        agent: String,
        /// The dialog alias.
        dialog: String,
    },
    /// A step ended.
    #[serde(rename = "step.ended")]
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
        #[serde(rename = "took_ms", serialize_with = "wire::millis")]
        took: Duration,
    },
    /// A piece of answer text, as it arrives (only when the run streams). A run's pieces add up
    /// to its answer: the built-in chat shows the break between two rounds' texts as a piece too.
    Text {
        /// The agent answering.
        agent: String,
        /// The piece.
        text: String,
    },
    /// The model called a tool: `{"agent", "id", "tool", "arguments"}`.
    #[serde(serialize_with = "wire::tool_call")]
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
    /// A task (a background subagent) started: its id in the run, the subagent, the agent that
    /// answers it, who started it, its dialog, `fork` or `isolated`, and whether it runs in the
    /// background.
    #[serde(rename = "task.started")]
    TaskStarted {
        /// The task's id in the run (`t1`).
        task: String,
        /// The subagent's name.
        subagent: String,
        /// The agent that answers it.
        agent: String,
        /// The agent that started it.
        parent_agent: String,
        /// The dialog that started it.
        parent_dialog: DialogId,
        /// The task's own dialog.
        dialog: DialogId,
        /// How its dialog began.
        mode: lllm_core::SubagentMode,
        /// Whether `task_start` returned at once.
        background: bool,
    },
    /// A task ended: answered (`finished`), `failed`, or `cancelled`.
    #[serde(rename = "task.ended")]
    TaskEnded {
        /// The task's id in the run.
        task: String,
        /// The agent that answered it.
        agent: String,
        /// How it ended.
        outcome: StepOutcome,
    },
    /// A tool call answered as a task (an MCP server's task) moved on: its status (`working`,
    /// `input_required`, `completed`, `failed`, `cancelled`) and message, as the server reports them.
    #[serde(rename = "tool.progress")]
    ToolProgress {
        /// The agent whose model made the call.
        agent: String,
        /// The call's id.
        #[serde(rename = "id")]
        call_id: String,
        /// The tool.
        tool: String,
        /// The task's status.
        status: String,
        /// The server's message, cut to a few hundred characters.
        message: Option<String>,
    },
    /// A model call was answered: one per answered attempt, as the serving side saw it.
    ModelCall(Box<ModelCall>),
    /// A tool call was answered.
    ToolResult {
        /// The agent whose model made the call.
        agent: String,
        /// The call's id.
        #[serde(rename = "id")]
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
///
/// Its JSON names each field as the console shows it: `dialog` (the alias), `dialog_id`,
/// `parent_dialog_id`, `session_id`, `parent_session_id`, `priority`, `tier`, `prompt_tokens`,
/// `completion_tokens`, `cached_tokens` (each `null` when the server did not count),
/// `worker`, `fallback` (the hop), `window`, `queue_ms`, `took_ms`, and `at` (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ModelCall {
    /// The agent that sent it.
    #[serde(serialize_with = "wire::label")]
    pub agent: String,
    /// The dialog's alias in the agent, when a respond sent it.
    #[serde(rename = "dialog", serialize_with = "wire::maybe_label")]
    pub alias: Option<String>,
    /// The dialog's id.
    #[serde(rename = "dialog_id")]
    pub dialog: Option<DialogId>,
    /// The dialog it was forked from.
    #[serde(rename = "parent_dialog_id")]
    pub parent_dialog: Option<DialogId>,
    /// The session id the request carried (the dialog's, or the caller's conversation's).
    #[serde(rename = "session_id", serialize_with = "wire::maybe_label")]
    pub session: Option<String>,
    /// The parent session id it carried.
    #[serde(rename = "parent_session_id", serialize_with = "wire::maybe_label")]
    pub parent_session: Option<String>,
    /// The priority as sent (after the profile's transformation).
    pub priority: Option<i64>,
    /// The queue tier: Dynamo's `strict_priority` as sent, else the admission tier.
    pub tier: u64,
    /// Its tokens, cached ones among them, when the server counted them.
    #[serde(flatten, serialize_with = "wire::usage")]
    pub usage: Option<Usage>,
    /// The worker that served it, when the server names it.
    #[serde(serialize_with = "wire::maybe_label")]
    pub worker: Option<String>,
    /// The endpoint, when a fallback answered (0: the agent's own).
    #[serde(rename = "fallback")]
    pub hop: u32,
    /// How many times the dialog's window was compacted before it.
    pub window: u32,
    /// How long it waited for a slot (`max_in_flight`).
    #[serde(rename = "queue_ms", serialize_with = "wire::millis")]
    pub queue_wait: Duration,
    /// How long the server took to answer.
    #[serde(rename = "took_ms", serialize_with = "wire::millis")]
    pub took: Duration,
    /// When the answer arrived.
    #[serde(serialize_with = "wire::unix_seconds")]
    pub at: SystemTime,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepOutcome {
    /// It answered.
    Finished,
    /// It failed.
    Failed,
    /// It was stopped because another branch failed (or the run was cancelled).
    Cancelled,
}

/// Where a run is. Its JSON is its [name](Self::as_str).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
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

/// At most `limit` characters of `text`, and how many more there were.
pub(crate) fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((end, _)) => format!(
            "{}… ({} more characters)",
            &text[..end],
            text[end..].chars().count()
        ),
    }
}

/// How the events' fields that are not plain JSON are written.
mod wire {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use lllm_core::{ToolCall, Usage};
    use serde::ser::{SerializeMap, SerializeStruct};
    use serde::{Serialize, Serializer};

    use super::{cut, RunStatus, MAX_LABEL};

    /// `{"status": NAME}`.
    pub(super) fn status<S: Serializer>(status: &RunStatus, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("Status", 1)?;
        out.serialize_field("status", status)?;
        out.end()
    }

    /// `{"agent", "id", "tool", "arguments"}`: the call's name is the tool's.
    pub(super) fn tool_call<A, S>(agent: &A, call: &ToolCall, s: S) -> Result<S::Ok, S::Error>
    where
        A: Serialize + ?Sized,
        S: Serializer,
    {
        let mut out = s.serialize_struct("ToolCall", 4)?;
        out.serialize_field("agent", agent)?;
        out.serialize_field("id", &call.id)?;
        out.serialize_field("tool", &call.name)?;
        out.serialize_field("arguments", &call.arguments)?;
        out.end()
    }

    /// Whole milliseconds.
    pub(super) fn millis<S: Serializer>(took: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(took.as_millis()).unwrap_or(u64::MAX))
    }

    /// Whole seconds since the Unix epoch (0 before it).
    pub(super) fn unix_seconds<S: Serializer>(at: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
    }

    /// At most [`MAX_LABEL`] characters.
    pub(super) fn label<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&cut(text, MAX_LABEL))
    }

    /// At most [`MAX_LABEL`] characters, or `null`.
    pub(super) fn maybe_label<S: Serializer>(
        text: &Option<String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match text {
            Some(text) => label(text, s),
            None => s.serialize_none(),
        }
    }

    /// `prompt_tokens`, `completion_tokens` and `cached_tokens` beside the call's other fields,
    /// each `null` when not counted.
    pub(super) fn usage<S: Serializer>(usage: &Option<Usage>, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(3))?;
        out.serialize_entry("prompt_tokens", &usage.map(|u| u.prompt_tokens))?;
        out.serialize_entry("completion_tokens", &usage.map(|u| u.completion_tokens))?;
        out.serialize_entry("cached_tokens", &usage.and_then(|u| u.cached_tokens))?;
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_serializes_as_its_name() {
        for status in [
            RunStatus::Queued,
            RunStatus::Running,
            RunStatus::RequiresAction,
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ] {
            assert_eq!(
                serde_json::to_value(status).ok(),
                Some(serde_json::Value::from(status.as_str()))
            );
        }
    }
}
