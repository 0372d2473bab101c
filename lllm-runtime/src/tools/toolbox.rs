//! The tools of one agent or one respond, with their schemas compiled once.

use std::sync::Arc;

use lllm_core::internal::{object_schema_problem, tool_name_problem};
use lllm_core::Schema;
use lllm_core::ToolSpec;

use super::{Tool, ToolsError};

/// A set of tools with unique names, each with its compiled parameter schema, and the sets among
/// them that may change (an MCP server's tools, listed again after it says its list changed).
#[derive(Debug, Default)]
pub(crate) struct Toolbox {
    tools: Vec<(Arc<dyn Tool>, Schema)>,
    changing: Vec<Arc<dyn ChangingTools>>,
}

/// Tools of one source that may change during a run: asked before each request is built, so that
/// a request never sees a list change halfway.
#[async_trait::async_trait]
pub(crate) trait ChangingTools: Send + Sync + std::fmt::Debug {
    /// Where its tools come from, as [`Tool::source`] says: the tools a new list replaces.
    fn source(&self) -> String;
    /// Its tools now, when they may have changed since it last answered; `None` when they did not
    /// (or could not be listed, and the tools it had stay).
    async fn changed(&self) -> Option<Vec<Arc<dyn Tool>>>;
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
        Ok(Toolbox {
            tools: checked,
            changing: Vec::new(),
        })
    }

    /// These tools, of which `changing` may change.
    pub(crate) fn changing(
        tools: Vec<Arc<dyn Tool>>,
        changing: Vec<Arc<dyn ChangingTools>>,
    ) -> Result<Toolbox, ToolsError> {
        let mut toolbox = Toolbox::new(tools)?;
        toolbox.changing = changing;
        Ok(toolbox)
    }

    /// A new toolbox when a changing set changed: its old tools replaced by its new ones, in the
    /// place of the first old one (so the order, and a cached prefix, stays when nothing else
    /// changed). A new tool whose name another tool has is left out, with a warning.
    pub(crate) async fn refreshed(&self) -> Option<Toolbox> {
        let mut tools: Option<Vec<Arc<dyn Tool>>> = None;
        for set in &self.changing {
            let Some(new) = set.changed().await else {
                continue;
            };
            let current =
                tools.get_or_insert_with(|| self.tools.iter().map(|(t, _)| t.clone()).collect());
            let source = set.source();
            let place = current.iter().position(|t| t.source() == source);
            current.retain(|t| t.source() != source);
            let mut place = place.unwrap_or(current.len()).min(current.len());
            for tool in new {
                if current.iter().any(|t| t.spec().name == tool.spec().name) {
                    tracing::warn!(tool = %tool.spec().name, %source, "a tool listed again has the name of another tool; left out");
                    continue;
                }
                current.insert(place, tool);
                place += 1;
            }
        }
        let tools = tools?;
        match Toolbox::changing(tools, self.changing.clone()) {
            Ok(toolbox) => Some(toolbox),
            Err(problem) => {
                tracing::warn!(%problem, "the tools listed again cannot be offered; the tools stay as they were");
                None
            }
        }
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
