//! The MCP servers of a tactic file: started together, shared by the agents that name them, and shut
//! down together.

use std::collections::HashMap;
use std::sync::Arc;

use lllm_core::{AgentSpec, Prompt, TacticSpec};

use super::{McpError, McpServer};
use crate::tools::Tool;

/// The running servers of a tactic, by name.
#[derive(Debug, Clone, Default)]
pub struct McpServers {
    servers: Vec<McpServer>,
    /// The agents' system prompts taken from a server's prompt (`system_prompt_mcp:`), by agent.
    system_prompts: Vec<(String, Prompt)>,
}

impl McpServers {
    /// No server.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts every server of `spec` that an agent uses, all at once. The first to fail ends the
    /// start: those still starting are stopped (dropping a start kills its process group), those
    /// already started are shut down, and its error is returned.
    pub async fn start(spec: &TacticSpec) -> Result<McpServers, McpError> {
        use futures::StreamExt;
        let mut starts: futures::stream::FuturesUnordered<_> = spec
            .used_mcp_servers()
            .map(|config| McpServer::from_config(config).start())
            .collect();
        let mut servers = McpServers::default();
        while let Some(result) = starts.next().await {
            match result {
                Ok(server) => servers.servers.push(server),
                Err(error) => {
                    drop(starts);
                    servers.shutdown().await;
                    return Err(error);
                }
            }
        }
        // In file order, whatever order they started in.
        let order: Vec<&str> = spec.used_mcp_servers().map(|c| c.name.as_str()).collect();
        servers
            .servers
            .sort_by_key(|s| order.iter().position(|n| *n == s.name()));
        if let Err(error) = servers.fetch_system_prompts(spec).await {
            servers.shutdown().await;
            return Err(error);
        }
        Ok(servers)
    }

    /// Takes each agent's system prompt from its server (`system_prompt_mcp:`), once, so that
    /// every request of the run starts with the same text.
    pub async fn fetch_system_prompts(&mut self, spec: &TacticSpec) -> Result<(), McpError> {
        for agent in spec.agents() {
            let Some(source) = agent.system_prompt_mcp() else {
                continue;
            };
            let server = self
                .get(&source.server)
                .ok_or_else(|| McpError::NotStarted {
                    agent: agent.name().to_owned(),
                    server: source.server.clone(),
                })?;
            let prompt = server.system_prompt(source).await?;
            self.system_prompts.push((agent.name().to_owned(), prompt));
        }
        Ok(())
    }

    /// `agent`'s system prompt when it is taken from a server (`system_prompt_mcp:`), as fetched by
    /// [`start`](Self::start); `None` for an agent whose prompt is in the tactic.
    pub fn system_prompt_for(&self, agent: &AgentSpec) -> Result<Option<Prompt>, McpError> {
        let Some(source) = agent.system_prompt_mcp() else {
            return Ok(None);
        };
        self.system_prompts
            .iter()
            .find(|(name, _)| name == agent.name())
            .map(|(_, prompt)| Some(prompt.clone()))
            .ok_or_else(|| McpError::NotStarted {
                agent: agent.name().to_owned(),
                server: source.server.clone(),
            })
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
            let field = used
                .at
                .clone()
                .unwrap_or_else(|| format!("agent `{}`'s mcp.{}", agent.name(), used.server));
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

    /// The sets of `agent`'s MCP tools that a server's `list_changed` changes between requests.
    pub(crate) fn changing_for(
        &self,
        agent: &AgentSpec,
    ) -> Vec<Arc<dyn crate::tools::ChangingTools>> {
        agent
            .mcp()
            .iter()
            .filter_map(|used| Some(self.get(&used.server)?.changing_tools(used.filter.clone())))
            .collect()
    }

    /// Shuts every server down, all at once.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(McpServer::shutdown)).await;
    }
}
