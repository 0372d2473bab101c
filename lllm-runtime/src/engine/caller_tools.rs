//! Whether a prepared tactic can take a caller's function tools, checked before a run starts.

use std::sync::Arc;

use lllm_core::ToolSpec;

use super::PreparedTactic;
use crate::mcp::McpError;
use crate::tools::{CallerTool, Tool, Toolbox, ToolsError};

/// Why the caller's tools cannot be offered to a tactic's agents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallerToolsError {
    /// A caller's tool has the name of one of the agent's own tools.
    #[error("the tool `{tool}` clashes with a tool of agent `{agent}` ({source_name}): rename the caller's tool")]
    Clash {
        /// The agent.
        agent: String,
        /// The name both have.
        tool: String,
        /// Where the agent's own tool comes from.
        source_name: String,
    },
    /// A caller's tool has a name or parameters no model can be offered (or two have one name).
    #[error(transparent)]
    Invalid(#[from] ToolsError),
    /// The agent's MCP tools cannot be listed.
    #[error(transparent)]
    Mcp(#[from] McpError),
}

impl PreparedTactic {
    /// Whether an agent of the tactic takes the caller's tools (`client_tools: true`).
    pub fn takes_caller_tools(&self) -> bool {
        self.spec().agents().iter().any(|a| a.client_tools())
    }

    /// Checks that `tools` can be offered to every agent with `client_tools: true`: valid names and
    /// parameters, none named like one of the agent's own tools (its command tools and MCP tools).
    pub fn check_caller_tools(&self, tools: &[ToolSpec]) -> Result<(), CallerToolsError> {
        let callers: Vec<Arc<dyn Tool>> = tools
            .iter()
            .map(|spec| Arc::new(CallerTool::new(spec.clone())) as Arc<dyn Tool>)
            .collect();
        Toolbox::new(callers)?;
        for agent in self.spec().agents().iter().filter(|a| a.client_tools()) {
            let own = agent
                .tools()
                .iter()
                .map(|t| (t.name.clone(), "a command tool".to_owned()));
            let mcp = self
                .servers()
                .tools_for(agent)?
                .into_iter()
                .map(|t| (t.spec().name.clone(), t.source()));
            for (name, source_name) in own.chain(mcp) {
                if tools.iter().any(|t| t.name == name) {
                    return Err(CallerToolsError::Clash {
                        agent: agent.name().to_owned(),
                        tool: name,
                        source_name,
                    });
                }
            }
        }
        Ok(())
    }
}
