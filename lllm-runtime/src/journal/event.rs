//! The lines of a journal.

use lllm_core::{DialogId, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RunStart;

/// One line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(super) enum Event {
    /// The first line.
    Start {
        version: u32,
        #[serde(flatten)]
        start: RunStart,
    },
    /// A resume began here (a torn line just before it is the crash's and is ignored).
    Resumed,
    /// A dialog was opened or forked: the `nth` dialog of that alias in the agent.
    Dialog {
        agent: String,
        alias: String,
        nth: u32,
        id: DialogId,
    },
    /// The `n`-th answer of a dialog, as committed.
    Answer {
        dialog: DialogId,
        n: u32,
        message: Message,
    },
    /// A tool call is about to run.
    ToolStarted {
        dialog: DialogId,
        call: String,
        tool: String,
        arguments: Value,
    },
    /// A tool call's result, as the model reads it.
    ToolFinished {
        dialog: DialogId,
        call: String,
        content: String,
        is_error: bool,
    },
    /// A call waits for the user's confirmation: the run paused.
    Pending {
        dialog: DialogId,
        call: String,
        /// The agent whose model made the call (absent in journals of earlier versions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        tool: String,
        arguments: Value,
    },
    /// The caller moved on without the results of the calls it was handed: its new user message,
    /// given to `dialog` after the results of the round that made call `after`.
    CallerTurn {
        dialog: DialogId,
        after: String,
        text: String,
    },
    /// A step saved an answer as a variable.
    Saved { name: String, value: String },
    /// The run ended with this output.
    End { output: String },
    /// The run was cancelled here (a resume may continue it).
    Cancelled,
}
