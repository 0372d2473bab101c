//! `auth:` of an MCP server, checked into an [`McpAuth`]: only for `url:` servers, a client id and
//! scopes that can be sent, a token file relative to the file that declares the server.

use std::path::Path;

use super::mcp::ServerCheck;
use super::origin::Origin;
use super::raw::{RawMcpAuth, RawMcpServer};
use super::span::At;
use super::ConfigErrorKind;
use crate::{client_id_problem, scope_problem, McpAuth, MAX_MCP_AUTH_SCOPES};

impl ServerCheck<'_> {
    /// The server's `auth:`, if it has one.
    pub(super) fn auth(
        &self,
        server: &RawMcpServer,
    ) -> Result<Option<McpAuth>, super::ConfigError> {
        let Some(At { value: raw, origin }) = &server.auth else {
            return Ok(None);
        };
        if server.url.is_none() {
            let problem = "`auth` is for servers reached by `url:` (OAuth over HTTP); a `command:` server gets credentials through `env:`";
            return Err(self.fail(origin, "auth", ConfigErrorKind::Mcp(problem.into())));
        }
        let mut auth = McpAuth::new();
        if let Some(id) = &raw.client_id {
            let text = self.expand(&id.value, &id.origin, "auth.client_id")?;
            if let Some(problem) = client_id_problem(&text) {
                return Err(self.fail(
                    &id.origin,
                    "auth.client_id",
                    ConfigErrorKind::Mcp(problem.into()),
                ));
            }
            auth.client_id = Some(text);
        }
        auth.scopes = self.scopes(raw)?;
        if let Some(file) = &raw.token_file {
            let text = self.expand(&file.value, &file.origin, "auth.token_file")?;
            if text.trim().is_empty() || text.contains('\0') || text.ends_with('/') {
                let problem = "must name a file (tokens are written to it, owner-only)";
                return Err(self.fail(
                    &file.origin,
                    "auth.token_file",
                    ConfigErrorKind::Mcp(problem.into()),
                ));
            }
            auth.token_file = Some(beside(&file.origin, &text));
        }
        Ok(Some(auth))
    }

    fn scopes(&self, raw: &RawMcpAuth) -> Result<Vec<String>, super::ConfigError> {
        let Some(scopes) = &raw.scopes else {
            return Ok(Vec::new());
        };
        if scopes.value.len() > MAX_MCP_AUTH_SCOPES {
            let problem = format!("lists more than {MAX_MCP_AUTH_SCOPES} scopes");
            return Err(self.fail(&scopes.origin, "auth.scopes", ConfigErrorKind::Mcp(problem)));
        }
        let mut out: Vec<String> = Vec::new();
        for (i, scope) in scopes.value.iter().enumerate() {
            let field = format!("auth.scopes[{i}]");
            let text = self.expand(&scope.value, &scope.origin, &field)?;
            if let Some(problem) = scope_problem(&text) {
                return Err(self.fail(&scope.origin, &field, ConfigErrorKind::Mcp(problem.into())));
            }
            if !out.contains(&text) {
                out.push(text);
            }
        }
        Ok(out)
    }
}

/// `path` relative to the folder of the file it is written in, made absolute.
fn beside(origin: &Origin, path: &str) -> std::path::PathBuf {
    let dir = origin
        .file()
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    let joined = dir.join(path);
    if joined.is_absolute() {
        return joined;
    }
    std::env::current_dir().map_or(joined.clone(), |cwd| cwd.join(&joined))
}
