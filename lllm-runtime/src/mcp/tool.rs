//! One tool of an MCP server, as an agent offers it to its model.

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::ToolSpec;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::content::to_output;
use super::listing::ServerTool;
use super::serve_asks::{answer_asks, Ended};
use super::state::Inner;
use super::tasks;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// A server's tool under the name the model sees.
#[derive(Debug)]
pub(crate) struct McpTool {
    server: Arc<Inner>,
    /// The tool as the server lists it.
    listed: Arc<ServerTool>,
    spec: ToolSpec,
    confirm: bool,
}

impl McpTool {
    pub(crate) fn new(
        server: Arc<Inner>,
        listed: Arc<ServerTool>,
        offered: String,
        confirm: bool,
    ) -> Self {
        let mut parameters = listed.schema.clone();
        // Some chat servers refuse `$schema` in a tool's parameters; the schema is checked here, with
        // its own draft, before a call anyway.
        if let Some(map) = parameters.as_object_mut() {
            map.remove("$schema");
        }
        let spec = ToolSpec {
            name: offered,
            description: listed.description.clone(),
            parameters,
        };
        McpTool {
            server,
            listed,
            spec,
            confirm,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn needs_confirmation(&self) -> bool {
        self.confirm
    }

    fn idempotent(&self) -> bool {
        self.listed.idempotent
    }

    fn source(&self) -> String {
        format!("MCP server `{}`", self.server.name)
    }

    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        self.call_with(arguments, ToolContext::none()).await
    }

    async fn call_with(
        &self,
        arguments: Value,
        context: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let listed = &self.listed;
        // The agent checked the arguments against this schema already; a Rust caller may not have.
        listed.compiled.check(&arguments).map_err(|problem| {
            ToolError::new(format!(
                "the arguments do not match the tool's parameters: {problem}"
            ))
        })?;
        let Value::Object(arguments) = arguments else {
            return Err(ToolError::new("the arguments must be a JSON object"));
        };
        let params = CallToolRequestParams::new(listed.name.clone()).with_arguments(arguments);
        let timeout = self.server.timeout;
        // What the server asks during the call reaches this call (and its dialog) while it runs.
        let (_open, asks) = self.server.calls.open(context.dialog());
        // A tool answered as a task is polled to its end within the same timeout.
        let task = tasks::OpenTask::new(&self.server.peer);
        let call = tasks::call_tool(&self.server.peer, params, context, &self.spec.name, &task);
        // Dropping the call on a timeout tells the server to stop working on it (a task: with
        // `tasks/cancel`).
        let ended = answer_asks(call, asks, context, &self.server.name, timeout).await;
        if matches!(ended, Ended::TimedOut) {
            task.cancel().await;
        }
        match ended {
            Ended::TimedOut => Err(ToolError::new(format!(
                "the tool did not answer within {} s (timeout_s of MCP server `{}`); try a smaller request",
                timeout.as_secs_f64(),
                self.server.name
            ))),
            Ended::Stopped(stopped) => Err(stopped),
            Ended::Done(Err(error)) => Err(self.server.failed_call(&self.spec.name, error).await),
            Ended::Done(Ok(result)) => to_output(&result, self.server.max_output_bytes),
        }
    }
}
