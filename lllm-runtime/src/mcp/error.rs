//! What can go wrong when starting MCP servers and handing their tools to agents.

/// An MCP server could not be started, or its tools cannot be given to an agent as configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// OAuth with the server failed: discovery, registration, the redirect, the tokens (never
    /// quoted).
    #[error("MCP server `{server}`: OAuth: {problem}")]
    Auth {
        /// The server.
        server: String,
        /// What went wrong.
        problem: String,
    },
    /// The server's settings cannot be used (a builder given no program, a URL that is not http).
    #[error("MCP server `{server}`: {problem}")]
    Invalid {
        /// The server.
        server: String,
        /// What is wrong.
        problem: String,
    },
    /// The server did not start, or did not answer the MCP handshake or the tool listing.
    #[error("MCP server `{server}` did not start: {problem}{}", tail_text(.stderr_tail))]
    Start {
        /// The server.
        server: String,
        /// Why.
        problem: String,
        /// The last lines it wrote on stderr (stdio servers).
        stderr_tail: String,
    },
    /// The server did not start and list its tools within its startup timeout.
    #[error("MCP server `{server}` did not start within {seconds} s (startup_timeout_s){}", tail_text(.stderr_tail))]
    StartTimeout {
        /// The server.
        server: String,
        /// The timeout.
        seconds: f64,
        /// The last lines it wrote on stderr (stdio servers).
        stderr_tail: String,
    },
    /// A setting names a tool the server does not have.
    #[error("{field}: MCP server `{server}` has no tool `{tool}`; its tools are: {}", .known.join(", "))]
    UnknownTool {
        /// The server.
        server: String,
        /// The tool named.
        tool: String,
        /// Where it is named: the file, line and column and the field when it comes from a tactic file
        /// (`t.yaml:16:11: agent_configs[0] (a).mcp.files.include`), else `confirm` or `the filter`.
        field: String,
        /// The server's tools.
        known: Vec<String>,
    },
    /// A tool the server offers cannot be offered to a model.
    #[error("MCP server `{server}`: tool `{tool}` {problem}")]
    InvalidTool {
        /// The server.
        server: String,
        /// The tool, as the server names it.
        tool: String,
        /// What is wrong, and what to do.
        problem: String,
    },
    /// Two tools an agent would offer its model have the same name.
    #[error("agent `{agent}`: two tools are called `{name}`: {first} and {second}; give one server a `prefix:`, or leave one tool out with `exclude:`")]
    Clash {
        /// The agent.
        agent: String,
        /// The name offered to the model.
        name: String,
        /// Where the first comes from (`command tool` or `MCP server `files``).
        first: String,
        /// Where the second comes from.
        second: String,
    },
    /// An agent's system prompt cannot be taken from the server (`system_prompt_mcp:`): it has no
    /// such prompt, refused the arguments, or gave no text.
    #[error("{field}: MCP server `{server}` {problem}")]
    Prompt {
        /// The server.
        server: String,
        /// Where the prompt is named (`t.yaml:9:40: agent_configs[0] (a).system_prompt_mcp.prompt`).
        field: String,
        /// What is wrong, and what to do.
        problem: String,
    },
    /// An agent names a server that was not started.
    #[error("agent `{agent}` uses MCP server `{server}`, which was not started")]
    NotStarted {
        /// The agent.
        agent: String,
        /// The server.
        server: String,
    },
}

impl McpError {
    /// Whether the tactic's settings are at fault (a name clash, an unknown tool) rather than the
    /// server's start: a usage error for `lllm`.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            McpError::Invalid { .. }
                | McpError::UnknownTool { .. }
                | McpError::InvalidTool { .. }
                | McpError::Clash { .. }
                | McpError::Prompt { .. }
                | McpError::NotStarted { .. }
        )
    }
}

fn tail_text(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; its last words on stderr:\n{tail}")
    }
}
