//! The credentials a tactic file holds, so that whatever lllm prints or writes can leave them out.

use super::TacticSpec;
use crate::mcp::McpTransport;
use crate::secret::is_secret_header;

impl TacticSpec {
    /// Every credential of the tactic: each agent's API key, the values of its credential headers
    /// (see [`is_secret_header`](crate::internal::is_secret_header)), every header value of an MCP
    /// server over HTTP (they are there to authenticate, whatever their names; the token after an
    /// auth scheme too), and the credential variables of MCP servers run as programs.
    pub fn secret_values(&self) -> Vec<String> {
        let mut values = Vec::new();
        for agent in self.agents() {
            let args = agent.model_args();
            if let Some(key) = &args.api_key {
                values.push(key.expose().to_owned());
            }
            for (name, value) in &args.extra_headers {
                if is_secret_header(name) {
                    values.push(value.clone());
                }
            }
        }
        for server in self.mcp_servers() {
            match &server.transport {
                McpTransport::Http { headers, .. } => {
                    for (_, value) in headers {
                        values.push(value.clone());
                        if let Some((_scheme, token)) = value.trim().split_once(' ') {
                            values.push(token.to_owned());
                        }
                    }
                }
                McpTransport::Stdio { env, .. } => {
                    for (name, value) in env {
                        if is_secret_header(name) {
                            values.push(value.clone());
                        }
                    }
                }
            }
        }
        values
    }
}
