//! The user's confirmation, as a tool-call layer.

use std::sync::Arc;

use async_trait::async_trait;

use super::{CallTool, PreparedCall, Reply, ToolCallError};
use crate::pause::Pause;
use crate::tools::{Confirm, ConfirmRequest, Decision, DECLINED};

/// A call of a tool that needs confirmation runs only when the [`Confirm`] approves it. A declined
/// call is answered with [`DECLINED`]; a call nobody can decide now pauses the run when the run can
/// hold it (it has a journal), and is declined otherwise. Without a `Confirm`, every such call is
/// declined, so that nothing marked `confirm` runs unseen.
#[derive(Debug)]
pub(crate) struct Confirmed<L> {
    inner: L,
    confirm: Option<Arc<dyn Confirm>>,
    /// The run's pause, when the run can hold a paused call (it has a journal).
    pause: Option<Arc<Pause>>,
}

impl<L> Confirmed<L> {
    pub(crate) fn new(
        inner: L,
        confirm: Option<Arc<dyn Confirm>>,
        pause: Option<Arc<Pause>>,
    ) -> Self {
        Confirmed {
            inner,
            confirm,
            pause,
        }
    }
}

#[async_trait]
impl<L: CallTool> CallTool for Confirmed<L> {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        if !call.tool.needs_confirmation() {
            return self.inner.call(call).await;
        }
        let source = call.tool.source();
        let request = ConfirmRequest {
            agent: call.agent,
            call_id: &call.call.id,
            tool: &call.call.name,
            source: &source,
            arguments: call.arguments,
        };
        let decision = match &self.confirm {
            Some(confirm) => confirm.confirm(request).await,
            None => Decision::Decline,
        };
        match decision {
            Decision::Approve => self.inner.call(call).await,
            Decision::Pause if self.pause.is_some() => {
                if let Some(pause) = &self.pause {
                    pause.pause(&call.call.name);
                }
                Err(ToolCallError::Paused {
                    tool: call.call.name.clone(),
                })
            }
            Decision::Decline | Decision::Pause => {
                tracing::info!(agent = call.agent, tool = %call.call.name, "the call was declined");
                Ok(Err(DECLINED.to_owned()))
            }
        }
    }
}
