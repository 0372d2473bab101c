//! The tools of one agent or one respond, with their schemas compiled once.

use std::sync::Arc;

use lllm_core::internal::{object_schema_problem, tool_name_problem};
use lllm_core::Schema;
use lllm_core::ToolSpec;

use super::{Tool, ToolsError};

/// A set of tools with unique names, each with its compiled parameter schema.
#[derive(Debug, Default)]
pub(crate) struct Toolbox {
    tools: Vec<(Arc<dyn Tool>, Schema)>,
}

impl Toolbox {
    /// Checks names (valid and unique) and parameter schemas (object schemas that compile).
    pub(crate) fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Toolbox, ToolsError> {
        let mut checked: Vec<(Arc<dyn Tool>, Schema)> = Vec::with_capacity(tools.len());
        for tool in tools {
            let spec = tool.spec();
            if let Some(problem) = tool_name_problem(&spec.name) {
                return Err(ToolsError::InvalidName {
                    name: spec.name.clone(),
                    problem,
                });
            }
            if checked.iter().any(|(t, _)| t.spec().name == spec.name) {
                return Err(ToolsError::Duplicate {
                    name: spec.name.clone(),
                });
            }
            if let Some(problem) = object_schema_problem(&spec.parameters) {
                return Err(ToolsError::InvalidParameters {
                    tool: spec.name.clone(),
                    problem,
                });
            }
            let schema =
                Schema::compile(&spec.parameters).map_err(|e| ToolsError::InvalidParameters {
                    tool: spec.name.clone(),
                    problem: e.to_string(),
                })?;
            checked.push((tool, schema));
        }
        Ok(Toolbox { tools: checked })
    }

    /// Whether there is no tool.
    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// What the model is told about each tool.
    pub(crate) fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(t, _)| t.spec().clone()).collect()
    }

    /// The names, for messages.
    pub(crate) fn names(&self) -> Vec<&str> {
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
