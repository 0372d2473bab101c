//! The stop of the process and the run's budget, as tool-call layers.

use std::sync::Arc;

use async_trait::async_trait;

use super::{CallTool, PreparedCall, Reply, ToolCallError};
use crate::budget::RunBudget;
use crate::pause::Pause;

/// A halted process ([`crate::events::halt`]) starts no more tool calls: each is answered at once. A run
/// that pauses starts no more either: the call ends the branch's respond as the pause does, and a
/// resume makes it (a call of the caller's tool is let through, to be recorded as pending with
/// the others: it runs nothing here).
#[derive(Debug)]
pub(crate) struct Halting<L> {
    inner: L,
    pause: Option<Arc<Pause>>,
}

impl<L> Halting<L> {
    pub(crate) fn new(inner: L, pause: Option<Arc<Pause>>) -> Self {
        Halting { inner, pause }
    }
}

#[async_trait]
impl<L: CallTool> CallTool for Halting<L> {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        if crate::halt::halted() {
            return Ok(Err("not run: the run is stopping".to_owned()));
        }
        if let Some(tool) = self.pause.as_ref().and_then(|p| p.paused()) {
            // A caller's call still goes on to the journal, which records it as pending: the calls
            // of one answer are handed to the caller together.
            if !call.tool.is_caller_tool() {
                return Err(ToolCallError::Paused { tool });
            }
        }
        self.inner.call(call).await
    }
}

/// Counts each call against the run's `max_tool_calls` and `max_seconds`, and stops a call still
/// running when the run's time is up.
#[derive(Debug)]
pub(crate) struct Budgeted<L> {
    inner: L,
    budget: Option<Arc<RunBudget>>,
}

impl<L> Budgeted<L> {
    pub(crate) fn new(inner: L, budget: Option<Arc<RunBudget>>) -> Self {
        Budgeted { inner, budget }
    }
}

#[async_trait]
impl<L: CallTool> CallTool for Budgeted<L> {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        let Some(budget) = &self.budget else {
            return self.inner.call(call).await;
        };
        budget.tool_call().map_err(ToolCallError::Limit)?;
        // A tool still running when the run's time is up is dropped, which kills its process.
        budget
            .within(self.inner.call(call))
            .await
            .map_err(ToolCallError::Limit)?
    }
}
