//! The MCP servers of a tactic file: started together, shared by the agents that name them, and shut
//! down together.

use std::collections::HashMap;
use std::sync::Arc;

use lllm_core::{AgentSpec, TacticSpec};

use super::{McpError, McpServer};
use crate::tools::Tool;

/// The running servers of a tactic, by name.
#[derive(Debug, Clone, Default)]
pub struct McpServers {
    servers: Vec<McpServer>,
}

impl McpServers {
    /// No server.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts every server of `spec` that an agent uses, all at once. When one fails, those already
    /// started are shut down and the first failure (in file order) is returned.
    pub async fn start(spec: &TacticSpec) -> Result<McpServers, McpError> {
        let starts = spec
            .used_mcp_servers()
            .map(|config| McpServer::from_config(config).start());
        let results = futures::future::join_all(starts).await;
        let mut servers = Vec::with_capacity(results.len());
        let mut first_error = None;
        for result in results {
            match result {
                Ok(server) => servers.push(server),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        let servers = McpServers { servers };
        match first_error {
            None => Ok(servers),
            Some(error) => {
                servers.shutdown().await;
                Err(error)
            }
        }
    }

    /// Adds a server started by hand.
    pub fn push(&mut self, server: McpServer) {
        self.servers.push(server);
    }

    /// The server called `name`.
    pub fn get(&self, name: &str) -> Option<&McpServer> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// The servers, in start order.
    pub fn iter(&self) -> impl Iterator<Item = &McpServer> {
        self.servers.iter()
    }

    /// The MCP tools `agent` takes (its `mcp:`), checked against its command tools and each other:
    /// two tools of one name are an error naming both sources.
    pub fn tools_for(&self, agent: &AgentSpec) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let mut sources: HashMap<String, String> = agent
            .tools()
            .iter()
            .map(|t| (t.name.clone(), "a command tool".to_owned()))
            .collect();
        let mut tools = Vec::new();
        for used in agent.mcp() {
            let server = self.get(&used.server).ok_or_else(|| McpError::NotStarted {
                agent: agent.name().to_owned(),
                server: used.server.clone(),
            })?;
            let field = format!("agent `{}`'s mcp.{}", agent.name(), used.server);
            for tool in server.tools_named_in(&used.filter, &field)? {
                let name = tool.spec().name.clone();
                let source = format!("MCP server `{}`", server.name());
                if let Some(first) = sources.insert(name.clone(), source.clone()) {
                    return Err(McpError::Clash {
                        agent: agent.name().to_owned(),
                        name,
                        first,
                        second: source,
                    });
                }
                tools.push(tool);
            }
        }
        Ok(tools)
    }

    /// Shuts every server down, all at once.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(McpServer::shutdown)).await;
    }
}
