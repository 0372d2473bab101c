//! A tactic ready to run: its tactic object built and its MCP servers started, once for every run.

use std::sync::Arc;

use lllm_core::secret::Secrets;
use lllm_core::{TacticSpec, CHAT_TACTIC};

use super::{Engine, RunError};
use crate::mcp::McpServers;
use crate::tactic::Tactic;

/// A loaded tactic with what its runs share: the [`Tactic`] its `tactic_type:` names and its started
/// MCP servers. Made by [`Engine::prepare`]; [`shutdown`](Self::shutdown) stops the servers.
pub struct PreparedTactic {
    spec: TacticSpec,
    name: String,
    tactic: Box<dyn Tactic>,
    servers: McpServers,
    /// The built-in chat (the terminal streams it and may talk with it).
    builtin_chat: bool,
    secrets: Secrets,
}

impl std::fmt::Debug for PreparedTactic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedTactic")
            .field("path", &self.spec.path())
            .field("tactic_type", &self.spec.tactic_type())
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Prepares `spec` for its runs: builds its tactic (an unknown `tactic_type` or a `config:` the
    /// tactic refuses is an error before anything starts), then starts the MCP servers its agents
    /// use, all at once.
    pub async fn prepare(&self, spec: TacticSpec) -> Result<Arc<PreparedTactic>, RunError> {
        let tactic = self.registry.create(&spec)?;
        let servers = McpServers::start(&spec).await?;
        let builtin_chat =
            spec.tactic_type() == CHAT_TACTIC && self.registry.is_builtin(CHAT_TACTIC);
        Ok(Arc::new(PreparedTactic {
            name: super::tactic_name(spec.path()),
            secrets: tactic_secrets(&spec),
            spec,
            tactic,
            servers,
            builtin_chat,
        }))
    }
}

/// The credentials of `spec`, and the API key of the environment that its requests fall back to.
fn tactic_secrets(spec: &TacticSpec) -> Secrets {
    let mut values = spec.secret_values();
    if let Ok(key) = std::env::var("OPENAI_API_KEY") {
        values.push(key);
    }
    Secrets::from_values(values)
}

impl PreparedTactic {
    /// The tactic file's spec.
    pub fn spec(&self) -> &TacticSpec {
        &self.spec
    }

    /// The tactic's name ([`tactic_name`](super::tactic_name) of its file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tactic.
    pub fn tactic(&self) -> &dyn Tactic {
        self.tactic.as_ref()
    }

    /// The started MCP servers.
    pub fn servers(&self) -> &McpServers {
        &self.servers
    }

    /// Whether the tactic is the built-in chat (its first agent answers the input).
    pub fn is_chat(&self) -> bool {
        self.builtin_chat
    }

    /// The tactic's credentials, which nothing the engine reports may show.
    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Stops the MCP servers, all at once.
    pub async fn shutdown(&self) {
        self.servers.shutdown().await;
    }
}
