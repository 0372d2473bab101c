//! One round of tool calls: run them (at once), each answered by a result or an error the model reads.

use std::collections::HashSet;

use futures::future::join_all;
use lllm_core::ToolCall;
use serde_json::Value;

use crate::tools::Toolbox;

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

/// Runs one turn's tool calls concurrently; the results are in call order.
pub(crate) async fn run_tools(
    agent: &str,
    toolbox: &Toolbox,
    calls: &[ToolCall],
    log: &mut CallLog,
) -> Vec<ToolResult> {
    let repeated: Vec<bool> = calls.iter().map(|call| log.repeated(call)).collect();
    let runs = calls.iter().zip(repeated).map(|(call, repeated)| async move {
        if repeated {
            return ToolResult {
                content: "note: this exact call was already made while answering this message; its result is above, so it was not run again".to_owned(),
                is_error: false,
            };
        }
        match run_tool(agent, toolbox, call).await {
            Ok(content) => ToolResult { content, is_error: false },
            Err(problem) => ToolResult { content: format!("error: {problem}"), is_error: true },
        }
    });
    join_all(runs).await
}

/// Runs one call. The error is text for the model (what to fix), not for the caller.
async fn run_tool(agent: &str, toolbox: &Toolbox, call: &ToolCall) -> Result<String, String> {
    let Some((tool, schema)) = toolbox.get(&call.name) else {
        return Err(format!(
            "there is no tool `{}`; the tools are: {}",
            call.name,
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
