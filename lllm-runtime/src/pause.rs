//! A run that pauses for a confirmation stops at safe points: the tool calls already running finish
//! (their results journaled), and nothing new starts.

use std::sync::Mutex;

/// Shared by the agents of one run: set by the first tool call that pauses the run, it stops every
/// later model request and tool call of the run, so that a parallel branch still at work ends at its
/// next safe point instead of being cut off mid-call.
#[derive(Debug, Default)]
pub(crate) struct Pause {
    /// The tool whose call paused the run.
    tool: Mutex<Option<String>>,
}

impl Pause {
    /// The run pauses on a call of `tool` (the first pause is the one reported).
    pub(crate) fn pause(&self, tool: &str) {
        self.lock().get_or_insert_with(|| tool.to_owned());
    }

    /// The tool whose call paused the run, once it did.
    pub(crate) fn paused(&self) -> Option<String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.tool.lock().unwrap_or_else(|p| p.into_inner())
    }
}
