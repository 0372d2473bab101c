//! `lllm check` and `lllm schema`.

use std::io::Write;

use anyhow::anyhow;
use lllm_runtime::config::tactic_schema;
use lllm_runtime::{load_tactic, TacticRegistry, TacticSpec};

use crate::cli::{CheckArgs, SchemaArgs};
use crate::exit::{failed, stdout_failed, usage, Failure};

pub(crate) fn check(args: &CheckArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    crate::redact::remember_tactic(&spec);
    // Building the tactic checks its `config:` as the run would.
    registry
        .create(&spec)
        .map_err(|e| usage(anyhow!("{}: {e}", args.tactic.display())))?;
    let agents: Vec<String> = spec
        .agents()
        .iter()
        .map(|a| {
            let profile = a.inference_hints().map_or("hints off".to_owned(), |h| {
                format!("profile {}", h.profile())
            });
            let skills = match a.skills().skills().len() {
                0 => String::new(),
                n => format!(", {n} skill(s)"),
            };
            format!("{} ({}, {profile}{skills})", a.name(), a.model())
        })
        .collect();
    let turns = spec.steps().iter().flat_map(|s| s.turns()).count();
    let steps = if turns > 0 {
        format!("; {turns} turn(s)")
    } else {
        String::new()
    };
    let servers: Vec<&str> = spec.used_mcp_servers().map(|s| s.name.as_str()).collect();
    let servers = if servers.is_empty() {
        String::new()
    } else {
        format!(
            "; MCP server(s) {} (not started: `lllm tools` starts them and checks their tools)",
            servers.join(", ")
        )
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ok: {}: {} tactic; {} agent(s): {}{steps}{servers}",
        args.tactic.display(),
        spec.tactic_type(),
        agents.len(),
        agents.join(", ")
    )
    .map_err(stdout_failed)?;
    for line in fallback_drops(&spec) {
        writeln!(out, "{line}").map_err(stdout_failed)?;
    }
    Ok(())
}

/// A line per fallback endpoint whose profile cannot carry some of its agent's hints: the call
/// goes there without them (`a: fallback[0] (vllm) will not carry strict_priority`).
fn fallback_drops(spec: &TacticSpec) -> Vec<String> {
    let mut lines = Vec::new();
    for agent in spec.agents() {
        let Some(hints) = agent.inference_hints() else {
            continue;
        };
        let carried = hints.carried_by(&agent.model_args().fallback);
        for (i, carried) in carried.iter().enumerate() {
            if carried.dropped().is_empty() {
                continue;
            }
            let dropped: Vec<String> = carried.dropped().iter().map(|f| f.to_string()).collect();
            lines.push(format!(
                "{}: fallback[{i}] ({}) will not carry {}",
                agent.name(),
                carried.profile(),
                dropped.join(", ")
            ));
        }
    }
    lines
}

pub(crate) fn schema(args: &SchemaArgs) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    let schema = if args.evals {
        lllm_runtime::eval::evals_schema()
    } else {
        tactic_schema()
    };
    let text = serde_json::to_string_pretty(&schema).map_err(failed)?;
    writeln!(out, "{text}").map_err(stdout_failed)
}
