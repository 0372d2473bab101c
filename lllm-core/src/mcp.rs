//! MCP tool servers as a tactic declares them (`mcp_servers:`), and which of their tools each agent
//! takes (`mcp:`). Starting and talking to the servers is `lllm-runtime`'s job.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Seconds one MCP tool call may take unless the server's `timeout_s` says otherwise. Longer than a
/// command tool's default: MCP tools often reach other services.
pub const DEFAULT_MCP_TIMEOUT_S: f64 = 60.0;
/// Seconds a server may take to start and list its tools unless `startup_timeout_s` says otherwise.
/// `npx` and `uvx` may download the server first.
pub const DEFAULT_MCP_STARTUP_TIMEOUT_S: f64 = 30.0;
/// The variables a stdio server inherits from lllm's environment (the MCP SDKs' default set); the
/// rest of lllm's environment, API keys included, stays with lllm.
pub const MCP_INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Longest `prefix:`: the prefixed names must still fit the 64 characters a tool name may have.
pub const MAX_MCP_PREFIX_LEN: usize = 32;

/// Why `prefix` cannot be put before a server's tool names, if it cannot: the one rule of `prefix:`
/// in a file and of the MCP server builder's `prefix`.
pub fn prefix_problem(prefix: &str) -> Option<String> {
    let valid = !prefix.is_empty()
        && prefix.len() <= MAX_MCP_PREFIX_LEN
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (!valid).then(|| {
        format!("must have 1 to {MAX_MCP_PREFIX_LEN} letters, digits, `_` or `-`, as tool names do")
    })
}

/// One MCP server under `mcp_servers:`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpServerConfig {
    /// The key it is declared under; agents name it in `mcp:`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Seconds one tool call may take, within [`SecondsRange::TOOL`](crate::SecondsRange::TOOL).
    pub timeout_s: f64,
    /// Seconds starting the server and listing its tools may take, within
    /// [`SecondsRange::TOOL`](crate::SecondsRange::TOOL).
    pub startup_timeout_s: f64,
    /// Put before each tool name the model sees (`fs_` offers `read_file` as `fs_read_file`).
    pub prefix: Option<String>,
    /// Which tools ask the user before they run.
    pub confirm: ConfirmTools,
    /// Most bytes of a result kept; more is an error result, as for command tools.
    pub max_output_bytes: usize,
    /// Whether the server may ask the calling agent's model for completions during a tool call
    /// (`sampling/createMessage`), answered as a child dialog of the calling dialog.
    pub sampling: bool,
    /// Whether agents taking the server are offered its resources as two tools,
    /// `<prefix>list_resources` and `<prefix>read_resource`.
    pub resources: bool,
    /// OAuth 2.1 with the server (`auth:`, streamable HTTP servers only).
    pub auth: Option<crate::McpAuth>,
    /// Whether the server is reached with the 2026-07-28 protocol's `server/discover` instead of the
    /// `initialize` handshake (`protocol: "2026-07-28"`).
    pub discover: bool,
    /// Where `confirm:` is written (`t.yaml:7:14: mcp_servers.files.confirm`), for errors found when
    /// the server lists its tools.
    pub confirm_at: Option<String>,
}

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on its standard input and output.
    Stdio {
        /// The program and its arguments; no shell is used.
        command: Vec<String>,
        /// Variables added to [`MCP_INHERITED_ENV`].
        env: BTreeMap<String, String>,
        /// Where the server runs (the tactic file's folder unless `cwd:` says otherwise).
        cwd: PathBuf,
    },
    /// Streamable HTTP at a URL.
    Http {
        /// The endpoint, such as `http://127.0.0.1:3001/mcp` ([`check_http_url`](crate::check_http_url)).
        url: String,
        /// Headers sent with every request (credentials among them: never logged), each held to
        /// [`check_header`](crate::check_header).
        headers: Vec<(String, String)>,
    },
}

/// Which tools of a server need the user's confirmation before each call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ConfirmTools {
    /// None (the default).
    #[default]
    None,
    /// Every tool (`confirm: true`).
    All,
    /// The tools named, by the server's own names (`confirm: [write_file]`).
    Some(Vec<String>),
}

impl ConfirmTools {
    /// Whether the tool the server calls `name` needs confirmation.
    pub fn covers(&self, name: &str) -> bool {
        match self {
            ConfirmTools::None => false,
            ConfirmTools::All => true,
            ConfirmTools::Some(names) => names.iter().any(|n| n == name),
        }
    }
}

/// Which tools of one server an agent takes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolFilter {
    /// All of them.
    #[default]
    All,
    /// Only these (by the server's own names).
    Include(Vec<String>),
    /// All but these.
    Exclude(Vec<String>),
}

impl ToolFilter {
    /// Whether the tool the server calls `name` is taken.
    pub fn takes(&self, name: &str) -> bool {
        match self {
            ToolFilter::All => true,
            ToolFilter::Include(names) => names.iter().any(|n| n == name),
            ToolFilter::Exclude(names) => !names.iter().any(|n| n == name),
        }
    }

    /// The names the filter lists (each must be a tool of the server).
    pub fn named(&self) -> &[String] {
        match self {
            ToolFilter::All => &[],
            ToolFilter::Include(names) | ToolFilter::Exclude(names) => names,
        }
    }
}

/// One server an agent uses, and which of its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpUse {
    /// The server's name under `mcp_servers:`.
    pub server: String,
    /// Its tools the agent takes.
    pub filter: ToolFilter,
    /// Where the filter is written (`t.yaml:16:11: agent_configs[0] (a).mcp.files.include`), for
    /// errors found when the server lists its tools.
    pub at: Option<String>,
}

/// An agent's system prompt taken from a prompt of one of its MCP servers (`system_prompt_mcp:`):
/// fetched with these arguments when the servers start, its messages' text joined.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpPrompt {
    /// The server's name under `mcp_servers:` (one of the agent's `mcp:`).
    pub server: String,
    /// The prompt's name, as the server lists it.
    pub prompt: String,
    /// The prompt's arguments.
    pub arguments: BTreeMap<String, String>,
    /// Where the prompt is named (`t.yaml:9:40: agent_configs[0] (a).system_prompt_mcp.prompt`),
    /// for errors found when the server starts.
    pub at: Option<String>,
}

impl McpPrompt {
    /// The prompt `prompt` of the server `server`, with no arguments.
    pub fn new(server: impl Into<String>, prompt: impl Into<String>) -> Self {
        McpPrompt {
            server: server.into(),
            prompt: prompt.into(),
            arguments: BTreeMap::new(),
            at: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_and_confirmations_match_by_the_servers_names() {
        let include = ToolFilter::Include(vec!["echo".into()]);
        assert!(include.takes("echo") && !include.takes("add"));
        let exclude = ToolFilter::Exclude(vec!["echo".into()]);
        assert!(!exclude.takes("echo") && exclude.takes("add"));
        assert!(ToolFilter::All.takes("anything"));
        let some = ConfirmTools::Some(vec!["write_file".into()]);
        assert!(some.covers("write_file") && !some.covers("read_file"));
        assert!(ConfirmTools::All.covers("x") && !ConfirmTools::None.covers("x"));
    }
}
