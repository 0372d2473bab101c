//! MCP tool servers: agents call the tools of Model Context Protocol servers, reached over stdio (a
//! child process) or streamable HTTP, through the official Rust SDK (`rmcp`).
//!
//! An [`McpServer`] is started once and shared: every agent given a handle (with
//! [`AgentBuilder::mcp`](crate::AgentBuilder::mcp)) offers the server's tools to its model, filtered
//! and prefixed as configured. [`McpServers`] starts a tactic file's servers in parallel and hands each
//! agent its tools. Shutting a stdio server down ends its whole process group; a handle dropped
//! without [`McpServer::shutdown`] kills the group too.
#![doc = include_str!("../../../docs/mcp.md")]

mod asks;
mod auth;
mod changes;
mod child;
mod client;
mod connect;
mod content;
mod elicitation;
mod error;
mod handshake;
mod lines;
mod listing;
mod notices;
mod prompts;
mod resources;
mod sampling;
mod serve_asks;
mod server;
mod servers;
mod state;
mod tasks;
mod tool;
mod transport;
mod transport_error;

pub use auth::{login, token_file, DEFAULT_LOGIN_WAIT};
pub use error::McpError;
pub use server::{McpServer, McpServerBuilder};
pub use servers::McpServers;

// The namespace's names defined elsewhere.
pub use lllm_core::{McpAuth, McpPrompt, McpServerConfig, McpTransport, McpUse};

/// Text from a server made safe to print: control characters (but newlines and tabs) and the
/// Unicode marks that reorder text on screen are left out, so that no escape sequence reaches a
/// terminal.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| (!c.is_control() || matches!(c, '\n' | '\t')) && !reorders(*c))
        .collect()
}

/// Most characters of a server's words repeated in an error message (an answer of the wrong shape
/// is quoted by the SDK, and may have megabytes).
const MAX_PROBLEM_CHARS: usize = 2000;

/// `text` cut to [`MAX_PROBLEM_CHARS`], saying how much was left out.
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(MAX_PROBLEM_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}… ({} bytes in all)", &text[..end], text.len()),
    }
}

/// The bidirectional formatting characters.
fn reorders(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    #[test]
    fn printable_text_has_no_escape_sequences() {
        assert_eq!(
            super::printable("a\u{1b}[31mred\u{7}\r\u{9b}2J\u{202e}b\n\tc"),
            "a[31mred2Jb\n\tc"
        );
    }
}
