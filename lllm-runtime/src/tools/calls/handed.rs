//! The caller's tools, as a tool-call layer: their calls are handed back to the caller.

use std::sync::Arc;

use async_trait::async_trait;

use super::{CallTool, PreparedCall, Reply, ToolCallError};
use crate::pause::Pause;

/// What the model reads of a caller's call that cannot be handed back (the run has no journal to
/// hold it until the caller's result comes).
pub(crate) const NOT_HANDED: &str =
    "not run: this tool belongs to the caller, and this run cannot wait for the caller's result";

/// A call of a caller's tool ([`Tool::is_caller_tool`](crate::tools::Tool::is_caller_tool)) pauses the
/// run, so that the caller runs it and brings its result (the journal, around this layer, records
/// the call as pending). Without a journal nothing can hold the call: the model reads that it was
/// not run. Other calls go through.
#[derive(Debug)]
pub(crate) struct Handed<L> {
    inner: L,
    /// The run's pause, when the run can hold a paused call (it has a journal).
    pause: Option<Arc<Pause>>,
}

impl<L> Handed<L> {
    pub(crate) fn new(inner: L, pause: Option<Arc<Pause>>) -> Self {
        Handed { inner, pause }
    }
}

#[async_trait]
impl<L: CallTool> CallTool for Handed<L> {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        if !call.tool.is_caller_tool() {
            return self.inner.call(call).await;
        }
        let Some(pause) = &self.pause else {
            return Ok(Err(NOT_HANDED.to_owned()));
        };
        pause.pause(&call.call.name);
        Err(ToolCallError::Paused {
            tool: call.call.name.clone(),
        })
    }
}
