//! One round of tool calls: run them (concurrently, bounded), each answered by a result or an error the model reads.

use std::collections::HashSet;

use futures::StreamExt;
use lllm_core::ToolCall;
use serde_json::Value;

use crate::tools::{Confirm, ConfirmRequest, Decision, Toolbox, DECLINED};

/// Most calls of one turn that run: a server asking for thousands must not start thousands of
/// programs. The rest are answered with an error that says so.
pub(crate) const MAX_CALLS_PER_TURN: usize = 64;
/// Most calls of one turn running at the same time.
pub(crate) const MAX_CONCURRENT_CALLS: usize = 16;
/// Most characters of a tool name the model made up repeated back to it.
const MAX_ECHOED_NAME_CHARS: usize = 64;

/// What a tool call gave back to the model.
pub(crate) struct ToolResult {
    pub(crate) content: String,
    pub(crate) is_error: bool,
}

/// The calls made so far in one respond, so that a repeated call is not run again.
#[derive(Default)]
pub(crate) struct CallLog {
    done: HashSet<(String, String)>,
}

impl CallLog {
    /// Whether `call` was already made (same tool, same arguments); records it otherwise.
    fn repeated(&mut self, call: &ToolCall) -> bool {
        !self
            .done
            .insert((call.name.clone(), canonical_arguments(&call.arguments)))
    }
}

/// Runs one turn's tool calls concurrently (up to [`MAX_CONCURRENT_CALLS`] at a time); the results are
/// in call order.
pub(crate) async fn run_tools(
    agent: &str,
    toolbox: &Toolbox,
    confirm: Option<&dyn Confirm>,
    calls: &[ToolCall],
    log: &mut CallLog,
) -> Vec<ToolResult> {
    let runs: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let repeated = log.repeated(call);
            answer_call(agent, toolbox, confirm, call, i, repeated)
        })
        .collect();
    futures::stream::iter(runs)
        .buffered(MAX_CONCURRENT_CALLS)
        .collect()
        .await
}

/// The result of the `i`-th call of a turn.
async fn answer_call(
    agent: &str,
    toolbox: &Toolbox,
    confirm: Option<&dyn Confirm>,
    call: &ToolCall,
    i: usize,
    repeated: bool,
) -> ToolResult {
    if i >= MAX_CALLS_PER_TURN {
        return ToolResult {
            content: format!("error: not run: at most {MAX_CALLS_PER_TURN} tool calls run per turn; make this call again in a later turn if it is still needed"),
            is_error: true,
        };
    }
    if crate::halt::halted() {
        return ToolResult {
            content: "error: not run: the run is stopping".to_owned(),
            is_error: true,
        };
    }
    if repeated {
        return ToolResult {
            content: "note: this exact call was already made while answering this message; its result is above, so it was not run again".to_owned(),
            is_error: false,
        };
    }
    match run_tool(agent, toolbox, confirm, call).await {
        Ok(content) => ToolResult {
            content,
            is_error: false,
        },
        Err(problem) => ToolResult {
            content: format!("error: {problem}"),
            is_error: true,
        },
    }
}

/// Runs one call. The error is text for the model (what to fix), not for the caller.
async fn run_tool(
    agent: &str,
    toolbox: &Toolbox,
    confirm: Option<&dyn Confirm>,
    call: &ToolCall,
) -> Result<String, String> {
    let Some((tool, schema)) = toolbox.get(&call.name) else {
        let name: String = call.name.chars().take(MAX_ECHOED_NAME_CHARS).collect();
        let cut = if name.len() < call.name.len() {
            "…"
        } else {
            ""
        };
        return Err(format!(
            "there is no tool `{name}{cut}`; the tools are: {}",
            toolbox.names().join(", ")
        ));
    };
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    let arguments: Value = serde_json::from_str(raw).map_err(|e| {
        format!("the arguments are not valid JSON ({e}); call the tool again with a JSON object")
    })?;
    schema.check(&arguments).map_err(|problem| {
        format!("the arguments do not match the tool's parameters: {problem}")
    })?;
    if tool.needs_confirmation() {
        let source = tool.source();
        let request = ConfirmRequest {
            agent,
            tool: &call.name,
            source: &source,
            arguments: &arguments,
        };
        let decision = match confirm {
            Some(confirm) => confirm.confirm(request).await,
            None => Decision::Decline,
        };
        if decision == Decision::Decline {
            tracing::info!(agent, tool = %call.name, "the call was declined");
            return Err(DECLINED.to_owned());
        }
    }
    tracing::debug!(agent, tool = %call.name, "calling tool");
    tool.call(arguments)
        .await
        .map(|output| output.into_content())
        .map_err(|e| e.message().to_owned())
}

/// Gives every call an id that is neither empty nor used before in the dialog, since results are
/// matched to calls by id (servers send empty ids, or restart `call_0` every turn).
pub(crate) fn unique_call_ids(calls: &mut [ToolCall], round: u32, used: &mut HashSet<String>) {
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.trim().is_empty() || used.contains(&call.id) {
            let mut n = 0;
            call.id = loop {
                let candidate = format!("call_{round}_{i}_{n}");
                if !used.contains(&candidate) {
                    break candidate;
                }
                n += 1;
            };
        }
        used.insert(call.id.clone());
    }
}

/// Arguments in a canonical form, so that `{"a":1, "b":2}` and `{"b":2,"a":1}` count as the same call.
fn canonical_arguments(raw: &str) -> String {
    serde_json::from_str::<Value>(raw)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.trim().to_owned())
}
