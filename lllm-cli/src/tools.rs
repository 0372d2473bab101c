//! `lllm tools`: every agent's tools as its model sees them, MCP servers started to list theirs.

use std::io::Write;
use std::sync::Arc;

use lllm_runtime::mcp::McpServers;
use lllm_runtime::tools::skills::skill_tools;
use lllm_runtime::tools::CommandTool;
use lllm_runtime::{load_tactic, Engine, TacticRegistry, TacticSpec, Tool};
use serde_json::{json, Value};

use crate::cli::ToolsArgs;
use crate::exit::{stdout_failed, usage, Failure};

pub(crate) fn tools(args: &ToolsArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    crate::redact::remember_tactic(&spec);
    let host = crate::execute::host()?;
    let engine = Engine::new(registry.clone());
    crate::execute::announce_servers(&spec);
    let listing = host.block_on(async {
        let tactic = engine
            .prepare(spec)
            .await
            .map_err(crate::exit::run_failure)?;
        let listing = listing(tactic.spec(), tactic.servers());
        tactic.shutdown().await;
        listing
    })?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{}", json!({ "agents": listing }))
    } else {
        write!(out, "{}", text(&listing))
    };
    written.and_then(|()| out.flush()).map_err(stdout_failed)
}

/// `[{"name", "tools": [...]}]`, one entry per agent.
fn listing(spec: &TacticSpec, servers: &McpServers) -> Result<Vec<Value>, Failure> {
    spec.agents()
        .iter()
        .map(|agent| {
            let mut tools: Vec<Arc<dyn Tool>> = agent
                .tools()
                .iter()
                .map(|config| {
                    CommandTool::new(config.clone()).map(|t| Arc::new(t) as Arc<dyn Tool>)
                })
                .collect::<Result<_, _>>()
                .map_err(usage)?;
            tools.extend(servers.tools_for(agent).map_err(usage)?);
            let skills = agent.skills();
            if !skills.is_empty() {
                tools.extend(skill_tools(&Arc::new(skills.clone())));
            }
            let tools: Vec<Value> = tools
                .iter()
                .map(|tool| {
                    let spec = tool.spec();
                    json!({
                        "name": spec.name,
                        "source": tool.source(),
                        "description": spec.description,
                        "confirm": tool.needs_confirmation(),
                        "parameters": spec.parameters,
                    })
                })
                .collect();
            let skills: Vec<Value> = skills
                .skills()
                .iter()
                .map(|skill| {
                    json!({
                        "name": skill.name(),
                        "description": skill.description(),
                        "allowed_tools": skill.allowed_tools(),
                        "dir": skill.dir(),
                    })
                })
                .collect();
            Ok(json!({"name": agent.name(), "tools": tools, "skills": skills}))
        })
        .collect()
}

/// The listing for a person: each agent, then each tool with its source and its schema.
fn text(listing: &[Value]) -> String {
    let mut out = String::new();
    for agent in listing {
        let name = agent["name"].as_str().unwrap_or_default();
        let tools = agent["tools"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        out.push_str(&format!("agent `{name}`: {} tool(s)\n", tools.len()));
        for tool in tools {
            let confirm = if tool["confirm"] == Value::Bool(true) {
                ", asks before it runs"
            } else {
                ""
            };
            out.push_str(&format!(
                "  {} ({}{confirm})\n",
                tool["name"].as_str().unwrap_or_default(),
                tool["source"].as_str().unwrap_or_default()
            ));
            let description = tool["description"].as_str().unwrap_or_default().trim();
            for line in description.lines().filter(|l| !l.trim().is_empty()) {
                out.push_str(&format!("    {}\n", line.trim()));
            }
            let schema = serde_json::to_string_pretty(&tool["parameters"]).unwrap_or_default();
            out.push_str("    parameters: ");
            out.push_str(&schema.replace('\n', "\n    "));
            out.push('\n');
        }
        out.push_str(&skills_text(agent));
    }
    out
}

/// An agent's skills for a person: each name, its folder and what it is for.
fn skills_text(agent: &Value) -> String {
    let skills = agent["skills"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if skills.is_empty() {
        return String::new();
    }
    let mut out = format!("  skills ({}):\n", skills.len());
    for skill in skills {
        let allowed = match skill["allowed_tools"].as_array() {
            Some(tools) => {
                let names: Vec<&str> = tools.iter().filter_map(Value::as_str).collect();
                format!(" [allowed-tools: {}]", names.join(", "))
            }
            None => String::new(),
        };
        out.push_str(&format!(
            "    {} ({}){allowed}\n      {}\n",
            skill["name"].as_str().unwrap_or_default(),
            skill["dir"].as_str().unwrap_or_default(),
            skill["description"].as_str().unwrap_or_default()
        ));
    }
    out
}
