//! The tools of one agent or one respond, with their schemas compiled once.

use std::sync::Arc;

use lllm_core::schema::Schema;
use lllm_core::tool::{object_schema_problem, tool_name_problem};
use lllm_core::ToolSpec;

use super::Tool;

/// A set of tools with unique names, each with its compiled parameter schema.
#[derive(Debug, Default)]
pub struct Toolbox {
    tools: Vec<(Arc<dyn Tool>, Schema)>,
}

impl Toolbox {
    /// Checks names (valid and unique) and parameter schemas (object schemas that compile).
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Toolbox, String> {
        let mut checked: Vec<(Arc<dyn Tool>, Schema)> = Vec::with_capacity(tools.len());
        for tool in tools {
            let spec = tool.spec();
            if let Some(problem) = tool_name_problem(&spec.name) {
                return Err(format!("tool name {problem}"));
            }
            if checked.iter().any(|(t, _)| t.spec().name == spec.name) {
                return Err(format!("two tools are called `{}`", spec.name));
            }
            if let Some(problem) = object_schema_problem(&spec.parameters) {
                return Err(format!("tool `{}`: parameters {problem}", spec.name));
            }
            let schema = Schema::compile(&spec.parameters)
                .map_err(|p| format!("tool `{}`: parameters {p}", spec.name))?;
            checked.push((tool, schema));
        }
        Ok(Toolbox { tools: checked })
    }

    /// Whether there is no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// What the model is told about each tool.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(t, _)| t.spec().clone()).collect()
    }

    /// The names, for messages.
    pub fn names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .map(|(t, _)| t.spec().name.as_str())
            .collect()
    }

    /// The tool called `name`, with its schema.
    pub(crate) fn get(&self, name: &str) -> Option<(&Arc<dyn Tool>, &Schema)> {
        self.tools
            .iter()
            .find(|(t, _)| t.spec().name == name)
            .map(|(t, s)| (t, s))
    }
}
