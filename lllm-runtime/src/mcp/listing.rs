//! The tools a server lists, checked one by one: those a model can be offered, and those it cannot
//! (kept aside with why, an error only for an agent that takes one).

use lllm_core::internal::{object_schema_problem, tool_name_problem};
use lllm_core::Schema;
use rmcp::model::Tool as McpToolInfo;

use super::printable;

/// Longest tool description offered to a model: it is sent with every request.
const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;
/// Most characters of a server's tool name repeated in a message.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// A listed tool that cannot be offered to a model.
#[derive(Debug)]
pub(crate) struct Rejected {
    /// Its name as the server lists it.
    pub(crate) name: String,
    /// Why, and what to do.
    pub(crate) problem: String,
}

/// A tool as the server lists it, checked.
#[derive(Debug)]
pub(crate) struct ServerTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: serde_json::Value,
    pub(crate) compiled: Schema,
    /// The server says so (`annotations.idempotentHint`): a call a crash interrupted may run again.
    pub(crate) idempotent: bool,
}

/// Each listed tool must be offerable to a model: a valid name (with the prefix), listed once,
/// a description of at most [`MAX_DESCRIPTION_BYTES`], and an object schema that compiles. The
/// others are kept aside with why, for the agents that would take them.
pub(crate) fn check_tools(
    listed: Vec<McpToolInfo>,
    prefix: Option<&str>,
) -> (Vec<ServerTool>, Vec<Rejected>) {
    let mut tools: Vec<ServerTool> = Vec::with_capacity(listed.len());
    let mut rejected: Vec<Rejected> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for info in listed {
        let name = info.name.to_string();
        if !seen.insert(name.clone()) {
            tools.retain(|t| t.name != name);
            if !rejected.iter().any(|r| r.name == name) {
                rejected.push(Rejected {
                    name,
                    problem: "is listed twice by the server; leave it out with `exclude:`".into(),
                });
            }
            continue;
        }
        match check_tool(info, prefix) {
            Ok(tool) => tools.push(tool),
            Err(problem) => rejected.push(Rejected {
                name,
                problem: printable(&problem),
            }),
        }
    }
    (tools, rejected)
}

/// One listed tool, checked.
fn check_tool(info: McpToolInfo, prefix: Option<&str>) -> Result<ServerTool, String> {
    let name = info.name.to_string();
    let offered = match prefix {
        Some(prefix) => format!("{prefix}{name}"),
        None => name.clone(),
    };
    if let Some(problem) = tool_name_problem(&offered) {
        let problem = problem.replace(&offered, &excerpt_chars(&offered, MAX_NAME_CHARS));
        // `exclude:` cannot name it (the tactic file takes valid names only); `include:` can leave it out.
        return Err(format!("cannot be offered to a model: its name {problem}; use a shorter `prefix:`, or name the tools to take with `include:`"));
    }
    let description = info
        .description
        .map(|d| d.to_string())
        .or(info.title)
        .unwrap_or_default();
    if description.len() > MAX_DESCRIPTION_BYTES {
        return Err(format!(
            "has a description of {} bytes, more than the {MAX_DESCRIPTION_BYTES} lllm sends a model with every request; leave it out with `exclude:`",
            description.len()
        ));
    }
    let schema = serde_json::Value::Object((*info.input_schema).clone());
    if let Some(problem) = object_schema_problem(&schema) {
        return Err(format!(
            "has an input schema that {problem}; leave it out with `exclude:`"
        ));
    }
    let compiled = Schema::compile(&schema).map_err(|e| {
        format!("has an input schema that does not compile: {e}; leave it out with `exclude:`")
    })?;
    Ok(ServerTool {
        name,
        description: printable(&description),
        schema,
        compiled,
        idempotent: info
            .annotations
            .as_ref()
            .and_then(|a| a.idempotent_hint)
            .unwrap_or(false),
    })
}

/// The first `most` characters of `text`, with `…` when there were more.
pub(crate) fn excerpt_chars(text: &str, most: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(most).collect();
    if chars.next().is_some() {
        head + "…"
    } else {
        head
    }
}
