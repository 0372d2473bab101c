//! `auth:` of a streamable HTTP MCP server: OAuth 2.1 (discovery, dynamic client registration or a
//! given client id, PKCE with a loopback redirect, refresh). The flow itself is `lllm-runtime`'s.

use std::path::PathBuf;

/// Most scopes `auth.scopes` may list.
pub const MAX_MCP_AUTH_SCOPES: usize = 64;

/// How lllm authorizes with an MCP server that answers 401 (`auth:` under the server).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct McpAuth {
    /// A client id registered with the authorization server beforehand; without it lllm registers
    /// itself (dynamic client registration), which the server must then offer.
    pub client_id: Option<String>,
    /// The scopes asked for; none: the server's own choice (from its metadata or its 401).
    pub scopes: Vec<String>,
    /// Where the tokens are kept (absolute; default: `mcp-auth/` under lllm's cache directory, a
    /// file named after the server's URL).
    pub token_file: Option<PathBuf>,
}

impl McpAuth {
    /// Authorization with a dynamically registered client, the server's scopes, the default file.
    pub fn new() -> Self {
        Self::default()
    }

    /// A client id registered beforehand.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The scopes asked for.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where the tokens are kept.
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.token_file = Some(path.into());
        self
    }
}

/// Why `scope` cannot be asked for, if it cannot: RFC 6749's scope tokens are printable ASCII
/// without spaces, quotes or backslashes.
pub fn scope_problem(scope: &str) -> Option<&'static str> {
    let valid = !scope.is_empty()
        && scope.len() <= 256
        && scope
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
    (!valid).then_some(
        "is not a scope: 1 to 256 printable ASCII characters without spaces, quotes or backslashes",
    )
}

/// Why `client_id` cannot be sent, if it cannot.
pub fn client_id_problem(client_id: &str) -> Option<&'static str> {
    let valid = !client_id.trim().is_empty()
        && client_id.len() <= 1024
        && !client_id.chars().any(char::is_control);
    (!valid).then_some("must have 1 to 1024 characters, no control characters")
}
