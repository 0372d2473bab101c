//! The innermost tool-call layer: the tool itself.

use async_trait::async_trait;

use super::{CallTool, PreparedCall, Reply, ToolCallError};

/// Runs the tool with the checked arguments; its error is text for the model.
#[derive(Debug)]
pub(crate) struct Execute;

#[async_trait]
impl CallTool for Execute {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        tracing::debug!(agent = call.agent, tool = %call.call.name, "calling tool");
        Ok(call
            .tool
            .call_with(call.arguments.clone(), call.context)
            .await
            .map(|output| output.into_content())
            .map_err(|e| e.message().to_owned()))
    }
}
