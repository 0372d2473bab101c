//! The caller's tools: function tools a served request brings (Chat or Responses `tools`), offered
//! to agents with `client_tools: true`. lllm never runs them: a call pauses the run and goes back to
//! the caller, whose next request brings the result (see `tools::calls::Handed`).

use async_trait::async_trait;
use lllm_core::ToolSpec;
use serde_json::Value;

use super::{Tool, ToolError, ToolOutput};

/// A tool of the caller, known by its spec only.
#[derive(Debug, Clone)]
pub struct CallerTool {
    spec: ToolSpec,
}

impl CallerTool {
    /// The caller's tool described by `spec`.
    pub fn new(spec: ToolSpec) -> Self {
        CallerTool { spec }
    }
}

#[async_trait]
impl Tool for CallerTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Never reached through an agent (its calls are handed to the caller); called directly, it
    /// says so.
    async fn call(&self, _arguments: Value) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(format!(
            "not run: `{}` is a tool of the caller, which runs it",
            self.spec.name
        )))
    }

    fn is_caller_tool(&self) -> bool {
        true
    }

    fn source(&self) -> String {
        "the caller".to_owned()
    }
}
