//! What a journal remembers of its run.

use std::collections::{HashMap, HashSet};

use lllm_core::{DialogId, Message};
use serde::Serialize;
use serde_json::Value;

use super::event::Event;

/// A tool call that waits for the user's confirmation in a paused run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PendingCall {
    /// The dialog whose answer made the call.
    pub dialog: DialogId,
    /// The call's id (unique in its dialog).
    pub call: String,
    /// The agent whose model made it, when the journal knows.
    pub agent: Option<String>,
    /// The tool.
    pub tool: String,
    /// The arguments, as checked against the tool's parameters.
    pub arguments: Value,
}

/// What the journal remembers of the run so far, and what this process has used of it.
#[derive(Debug, Default)]
pub(super) struct Memory {
    /// Calls that wait for a confirmation, in the order the run paused on them.
    pub(super) pending: Vec<PendingCall>,
    pub(super) dialogs: HashMap<(String, String, u32), DialogId>,
    pub(super) answers: HashMap<(DialogId, u32), Message>,
    pub(super) finished: HashMap<(DialogId, String), (String, bool)>,
    /// The caller's user messages, by the dialog and call of the round they follow.
    pub(super) caller_turns: HashMap<(DialogId, String), String>,
    pub(super) started: HashSet<(DialogId, String)>,
    pub(super) end: Option<String>,
    /// Dialogs of each (agent, alias) opened by this process so far.
    pub(super) opened: HashMap<(String, String), u32>,
    /// Answers asked of each dialog by this process so far.
    pub(super) asked: HashMap<DialogId, u32>,
    /// Answers taken from the journal instead of the server.
    pub(super) replayed: u64,
    /// Whether the run was cancelled and not resumed since.
    pub(super) cancelled: bool,
}

impl Memory {
    /// What an event of a journal read back says about the run.
    pub(super) fn remember(&mut self, event: Event) {
        match event {
            Event::Start { .. } | Event::Saved { .. } => {}
            Event::Resumed => self.cancelled = false,
            Event::Cancelled => self.cancelled = true,
            Event::Pending {
                dialog,
                call,
                agent,
                tool,
                arguments,
            } => self.remember_pending(PendingCall {
                dialog,
                call,
                agent,
                tool,
                arguments,
            }),
            Event::Dialog {
                agent,
                alias,
                nth,
                id,
            } => {
                self.dialogs.insert((agent, alias, nth), id);
            }
            Event::Answer { dialog, n, message } => {
                self.answers.insert((dialog, n), message);
            }
            Event::ToolStarted { dialog, call, .. } => {
                self.settle(dialog, &call);
                self.started.insert((dialog, call));
            }
            Event::ToolFinished {
                dialog,
                call,
                content,
                is_error,
            } => {
                self.settle(dialog, &call);
                self.finished.insert((dialog, call), (content, is_error));
            }
            Event::CallerTurn {
                dialog,
                after,
                text,
            } => {
                self.caller_turns.insert((dialog, after), text);
            }
            Event::End { output } => self.end = Some(output),
        }
    }

    pub(super) fn remember_pending(&mut self, pending: PendingCall) {
        self.settle(pending.dialog, &pending.call);
        self.pending.push(pending);
    }

    /// A call started, finished or was declined: it waits no more.
    pub(super) fn settle(&mut self, dialog: DialogId, call: &str) {
        self.pending
            .retain(|p| !(p.dialog == dialog && p.call == call));
    }
}
