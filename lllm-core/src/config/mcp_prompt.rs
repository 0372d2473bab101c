//! An agent's `system_prompt_mcp:`, checked into an [`McpPrompt`]: the server must be one of the
//! agent's; whether the server has the prompt is checked when the servers start.

use std::collections::BTreeMap;

use super::error::{ConfigError, ConfigErrorKind};
use super::raw::RawMcpPrompt;
use super::span::At;
use crate::mcp::{McpPrompt, McpUse};

/// Longest prompt name or argument name.
const MAX_NAME_CHARS: usize = 256;
/// Most arguments of one prompt.
const MAX_ARGUMENTS: usize = 64;
/// Longest argument value.
const MAX_VALUE_BYTES: usize = 64 * 1024;

/// `raw`, whose server must be among the agent's `mcp` (the agent is `label`).
pub(crate) fn prompt_source(
    raw: At<RawMcpPrompt>,
    mcp: &[McpUse],
    label: &str,
) -> Result<McpPrompt, ConfigError> {
    let field = format!("{label}.system_prompt_mcp");
    let fail = |origin: &super::origin::Origin, key: &str, problem: String| {
        ConfigError::new(origin.clone(), ConfigErrorKind::Mcp(problem))
            .in_field(format!("{field}.{key}"))
    };
    let RawMcpPrompt {
        server,
        prompt,
        arguments,
    } = raw.value;
    if !mcp.iter().any(|used| used.server == server.value) {
        let name = super::error::shorten(&server.value);
        let problem = match mcp.len() {
            0 => format!("the agent takes no MCP server; add `{name}` to its `mcp:`"),
            _ => {
                let taken: Vec<&str> = mcp.iter().map(|u| u.server.as_str()).collect();
                format!(
                    "`{name}` is not one of the agent's MCP servers ({}); add it to the agent's `mcp:`",
                    taken.join(", ")
                )
            }
        };
        return Err(fail(&server.origin, "server", problem));
    }
    if let Some(problem) = name_problem(&prompt.value) {
        return Err(fail(
            &prompt.origin,
            "prompt",
            format!("the prompt name {problem}"),
        ));
    }
    let mut checked = BTreeMap::new();
    let entries = arguments.map(|a| a.value.0).unwrap_or_default();
    if entries.len() > MAX_ARGUMENTS {
        let origin = &entries[MAX_ARGUMENTS].0.origin;
        return Err(fail(
            origin,
            "arguments",
            format!("at most {MAX_ARGUMENTS} arguments"),
        ));
    }
    for (name, value) in entries {
        if let Some(problem) = name_problem(&name.value) {
            return Err(fail(
                &name.origin,
                "arguments",
                format!("an argument name {problem}"),
            ));
        }
        if value.value.len() > MAX_VALUE_BYTES {
            let problem = format!("an argument value may have at most {MAX_VALUE_BYTES} bytes");
            return Err(fail(&value.origin, "arguments", problem));
        }
        checked.insert(name.value, value.value);
    }
    Ok(McpPrompt {
        at: Some(format!("{}: {field}.prompt", prompt.origin)),
        server: server.value,
        prompt: prompt.value,
        arguments: checked,
    })
}

/// Why `name` cannot name a prompt or an argument, if it cannot.
fn name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        Some("is empty".into())
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some(format!("has more than {MAX_NAME_CHARS} characters"))
    } else if name.chars().any(char::is_control) {
        Some("has a control character".into())
    } else {
        None
    }
}
