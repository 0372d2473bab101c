//! Tools an agent can call: the [`Tool`] trait, tools from Rust closures, and command tools.
#![doc = include_str!("../../../docs/tools.md")]

mod caller;
pub(crate) mod calls;
mod command;
mod confirm;
mod context;
mod elicit;
mod error;
mod function;
pub(crate) mod process;
mod skill_tools;
pub mod skills;
mod toolbox;

use async_trait::async_trait;
use serde_json::Value;

pub use caller::CallerTool;
pub use command::CommandTool;
pub(crate) use confirm::DECLINED;
pub use confirm::{ApproveAll, Confirm, ConfirmRequest, Decision, Decisions, DeclineAll};
pub(crate) use context::Sampler;
pub use context::{SampleAnswer, SampleError, SampleRequest, ToolContext, ToolProgress};
pub use elicit::{
    Choice, ElicitKind, ElicitRequest, Elicited, FieldKind, Form, FormField, MAX_FORM_FIELDS,
};
pub use error::ToolsError;
pub(crate) use function::schema_of;
pub use function::tool_fn;
pub use process::{contain_tool_processes, kill_tool_processes};

// The namespace's names defined elsewhere.
pub use lllm_core::{CommandToolConfig, ConfirmTools, ToolCall, ToolFilter, ToolSpec};
pub(crate) use toolbox::{ChangingTools, Toolbox};

/// What a tool returns to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// Text, sent as written.
    Text(String),
    /// JSON, sent as its compact text.
    Json(Value),
}

impl ToolOutput {
    /// The tool message's content.
    pub fn into_content(self) -> String {
        match self {
            ToolOutput::Text(text) => text,
            ToolOutput::Json(value) => value.to_string(),
        }
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput::Text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        ToolOutput::Text(text.to_owned())
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::Json(value)
    }
}

/// A tool call failed. The message is for the model, which reads it as `error: ...` and may call
/// again: say what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure with this explanation for the model.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }

    /// What the model is told.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A tool the model may call.
///
/// The arguments a tool receives are valid JSON that matches its parameter schema: the agent checks
/// them first and answers the model with an error otherwise.
#[async_trait]
pub trait Tool: Send + Sync + std::fmt::Debug {
    /// Name, description and parameter schema, as the model sees them.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool.
    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError>;

    /// Runs the tool for a caller: what an agent calls, with the calling dialog and its model
    /// (for what a server asks during the call). Runs [`call`](Self::call) unless the tool says
    /// otherwise.
    async fn call_with(
        &self,
        arguments: Value,
        context: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let _ = context;
        self.call(arguments).await
    }

    /// Whether each call must be approved first (through the agent's [`Confirm`]); `false` unless
    /// the tool says otherwise.
    fn needs_confirmation(&self) -> bool {
        false
    }

    /// Whether running a call again has the same effect as running it once, so that a call a crash
    /// interrupted may run again on resume; `false` unless the tool says otherwise.
    fn idempotent(&self) -> bool {
        false
    }

    /// Whether the tool is the caller's (a served request's function tool): its calls are handed
    /// back to the caller instead of run; `false` unless the tool says otherwise.
    fn is_caller_tool(&self) -> bool {
        false
    }

    /// Where the tool comes from, for people (`a Rust tool`, `a command tool`, ``MCP server `x` ``).
    fn source(&self) -> String {
        "a Rust tool".to_owned()
    }
}
