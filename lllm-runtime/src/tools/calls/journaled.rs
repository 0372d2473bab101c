//! The run's journal, as tool-call layers: what it remembers answers the call, what happens is
//! written down.

use std::sync::Arc;

use async_trait::async_trait;

use super::{reply_text, CallTool, PreparedCall, Reply, ToolCallError};
use crate::journal::{Journal, PendingCall, ToolMemory};

/// What the model is told about a call the crash interrupted, when running it again is not safe.
const INTERRUPTED: &str = "this call was interrupted when the run stopped, and its outcome is unknown: it may or may not have taken effect. It was not run again (the tool is not marked idempotent); check its effect before calling it again";

/// Answers a call from the journal when it finished before (its result, as the model read it), or
/// when a crash interrupted it and the tool is not idempotent (the model is told the outcome is
/// unknown); otherwise lets it through and records its result, or records it as pending when the run
/// pauses for its confirmation.
#[derive(Debug)]
pub(crate) struct Journaled<L> {
    inner: L,
    journal: Option<Arc<Journal>>,
}

impl<L> Journaled<L> {
    pub(crate) fn new(inner: L, journal: Option<Arc<Journal>>) -> Self {
        Journaled { inner, journal }
    }
}

#[async_trait]
impl<L: CallTool> CallTool for Journaled<L> {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        let Some(journal) = &self.journal else {
            return self.inner.call(call).await;
        };
        let id = &call.call.id;
        match journal.tool(call.dialog, id) {
            ToolMemory::Finished { content, is_error } => {
                return Ok(if is_error {
                    Err(content
                        .strip_prefix("error: ")
                        .unwrap_or(&content)
                        .to_owned())
                } else {
                    Ok(content)
                });
            }
            ToolMemory::Interrupted if !call.tool.idempotent() => {
                let reply = Err(INTERRUPTED.to_owned());
                record(journal, call, &reply)?;
                return Ok(reply);
            }
            ToolMemory::Interrupted | ToolMemory::New => {}
        }
        let reply = match self.inner.call(call).await {
            Err(ToolCallError::Paused { tool }) => {
                let pending = PendingCall {
                    dialog: call.dialog,
                    call: id.clone(),
                    agent: Some(call.agent.to_owned()),
                    tool: call.call.name.clone(),
                    arguments: call.arguments.clone(),
                };
                journal.pending(pending).map_err(ToolCallError::Journal)?;
                return Err(ToolCallError::Paused { tool });
            }
            other => other?,
        };
        if crate::halt::halted() {
            // The stop killed the call: it stays started only, so a resume treats it as interrupted.
            return Ok(reply);
        }
        record(journal, call, &reply)?;
        Ok(reply)
    }
}

/// Records a call's result in the journal, as the model reads it.
fn record(journal: &Journal, call: PreparedCall<'_>, reply: &Reply) -> Result<(), ToolCallError> {
    let (text, is_error) = reply_text(reply);
    journal
        .tool_finished(call.dialog, &call.call.id, &text, is_error)
        .map_err(ToolCallError::Journal)
}

/// Records, just before an approved call runs, that it started: a call started and never finished
/// is one a crash interrupted.
#[derive(Debug)]
pub(crate) struct Started<L> {
    inner: L,
    journal: Option<Arc<Journal>>,
}

impl<L> Started<L> {
    pub(crate) fn new(inner: L, journal: Option<Arc<Journal>>) -> Self {
        Started { inner, journal }
    }
}

#[async_trait]
impl<L: CallTool> CallTool for Started<L> {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        if let Some(journal) = &self.journal {
            journal
                .tool_started(call.dialog, &call.call.id, &call.call.name, call.arguments)
                .map_err(ToolCallError::Journal)?;
        }
        self.inner.call(call).await
    }
}
