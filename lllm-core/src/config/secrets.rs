//! The credentials a tactic file holds, so that whatever lllm prints or writes can leave them out.

use super::TacticSpec;
use crate::mcp::McpTransport;
use crate::secret::{is_secret_header, url_credentials};

impl TacticSpec {
    /// Every credential of the tactic: each agent's API key, the values of its credential headers
    /// (see [`is_secret_header`](crate::secret::is_secret_header)), every header value of an MCP
    /// server over HTTP (they are there to authenticate, whatever their names; the token after an
    /// auth scheme too), the credential variables of MCP servers run as programs, and the
    /// credentials written into the URLs of `api_base` and of MCP servers, in every form an HTTP
    /// client derives from them ([`url_credentials`](crate::secret::url_credentials)).
    pub fn secret_values(&self) -> Vec<String> {
        let mut values = Vec::new();
        for agent in self.agents() {
            for args in agent.model_args().endpoints() {
                if let Some(key) = &args.api_key {
                    values.push(key.expose().to_owned());
                }
                if let Some(base) = &args.api_base {
                    values.extend(url_credentials(base));
                }
                for (name, value) in &args.extra_headers {
                    if is_secret_header(name) {
                        values.push(value.clone());
                    }
                }
            }
        }
        for server in self.mcp_servers() {
            match &server.transport {
                McpTransport::Http { url, headers } => {
                    values.extend(url_credentials(url));
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::parse_tactic;

    #[test]
    fn credentials_in_urls_are_secrets_in_every_form() {
        let text = "mcp_servers:\n  h: {url: \"http://ann:mcp-pass-1@127.0.0.1:1/mcp\", headers: {X-Team: blue-team-7}}\nagent_configs:\n  - {name: a, model_name: m, system_prompt: s, model_args: {api_base: \"http://bob:base-pass-2@127.0.0.1:2/v1\"}}\n";
        let spec = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("loads");
        let values = spec.secret_values();
        for expected in [
            "mcp-pass-1",
            "ann:mcp-pass-1",
            "Basic YW5uOm1jcC1wYXNzLTE=",
            "YW5uOm1jcC1wYXNzLTE=",
            "blue-team-7",
            "base-pass-2",
            "Basic Ym9iOmJhc2UtcGFzcy0y",
        ] {
            assert!(
                values.iter().any(|v| v == expected),
                "{expected} in {values:?}"
            );
        }
    }
}
