//! One round of tool calls: run them (concurrently, bounded), each answered by a result or an error the model reads.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use lllm_core::{DialogId, ToolCall};
use serde_json::Value;
use tracing::Instrument;

use super::AgentErrorKind;
use crate::tasks::tools::is_task_tool;
use crate::telemetry;
use crate::tools::calls::{reply_text, CallTool, PreparedCall, ToolPipeline};
use crate::tools::{Sampler, Tool, ToolContext, Toolbox};

/// Most calls of one turn that run: a server asking for thousands must not start thousands of
/// programs. The rest are answered with an error that says so.
pub(crate) const MAX_CALLS_PER_TURN: usize = 64;
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

/// What one round's calls share: the agent, its tools, the pipeline its calls go through, the dialog.
pub(crate) struct Round<'a> {
    pub(crate) agent: &'a str,
    pub(crate) toolbox: &'a Toolbox,
    pub(crate) pipeline: &'a ToolPipeline,
    pub(crate) dialog: DialogId,
    /// Calls running at the same time (`max_parallel_tools`).
    pub(crate) parallel: usize,
    /// Who answers the task tools' calls, when the agent has subagents.
    pub(crate) tasks: Option<&'a super::task_calls::TaskCalls<'a>>,
    /// Answers what a tool's server asks the calling dialog's model during a call.
    pub(crate) sampler: &'a dyn Sampler,
    /// The skills loaded in the dialog, whose `allowed-tools` its calls respect.
    pub(crate) loaded_skills: &'a [String],
}

/// Runs one turn's tool calls concurrently (up to `round.parallel` at a time); the results are
/// in call order. The tactic's own calls run first, the caller's after them (a caller's call pauses
/// the run, and a paused run starts nothing more: the own calls of the same answer must have run).
/// A call that pauses the run (a caller's call, or one that waits for a confirmation, with a
/// journal) or a journal that cannot be written ends the round with an error.
pub(crate) async fn run_tools(
    round: &Round<'_>,
    calls: &[ToolCall],
    log: &mut CallLog,
) -> Result<Vec<ToolResult>, AgentErrorKind> {
    let repeated: Vec<bool> = calls.iter().map(|call| log.repeated(call)).collect();
    let (own, callers): (Vec<usize>, Vec<usize>) =
        (0..calls.len()).partition(|&i| !is_caller_tool(round.toolbox, &calls[i]));
    let mut results: Vec<Option<ToolResult>> = calls.iter().map(|_| None).collect();
    for phase in [own, callers] {
        let mut runs = Vec::with_capacity(phase.len());
        for &i in &phase {
            runs.push(answer_call(round, &calls[i], i, repeated[i]));
        }
        let answered: Vec<_> = futures::stream::iter(runs)
            .buffered(round.parallel.max(1))
            .collect()
            .await;
        for (i, answer) in phase.into_iter().zip(answered) {
            results[i] = Some(answer?);
        }
    }
    Ok(results.into_iter().flatten().collect())
}

/// Whether `call` names a tool of the caller.
fn is_caller_tool(toolbox: &Toolbox, call: &ToolCall) -> bool {
    toolbox
        .get(&call.name)
        .is_some_and(|(tool, _)| tool.is_caller_tool())
}

fn result(content: impl Into<String>, is_error: bool) -> ToolResult {
    ToolResult {
        content: content.into(),
        is_error,
    }
}

/// The result of the `i`-th call of a turn, inside its `execute_tool` span.
async fn answer_call(
    round: &Round<'_>,
    call: &ToolCall,
    i: usize,
    repeated: bool,
) -> Result<ToolResult, AgentErrorKind> {
    let source = round.toolbox.get(&call.name).map(|(tool, _)| tool.source());
    let span = telemetry::tool_span(round.agent, call, source.as_deref());
    let answer = answer_unspanned(round, call, i, repeated)
        .instrument(span.clone())
        .await;
    match &answer {
        Ok(result) => telemetry::record_tool_result(&span, &result.content, result.is_error),
        Err(kind) => telemetry::record_failure(&span, kind.error_type(), &kind.to_string()),
    }
    answer
}

async fn answer_unspanned(
    round: &Round<'_>,
    call: &ToolCall,
    i: usize,
    repeated: bool,
) -> Result<ToolResult, AgentErrorKind> {
    if i >= MAX_CALLS_PER_TURN {
        return Ok(result(format!("error: not run: at most {MAX_CALLS_PER_TURN} tool calls run per turn; make this call again in a later turn if it is still needed"), true));
    }
    if repeated {
        return Ok(result("note: this exact call was already made while answering this message; its result is above, so it was not run again", false));
    }
    let reply = match (checked(round, call), round.tasks) {
        // The respond answers task calls itself: they need the calling dialog.
        (Ok((_, arguments)), Some(tasks)) if is_task_tool(&call.name) => {
            let (content, is_error) = tasks.answer(&call.name, &arguments, &call.id).await;
            return Ok(result(content, is_error));
        }
        (Ok((tool, arguments)), _) => {
            let prepared = PreparedCall {
                agent: round.agent,
                dialog: round.dialog,
                call,
                tool,
                arguments: &arguments,
                context: ToolContext::new(round.dialog, Some(round.sampler)).with_call(&call.id),
                loaded_skills: round.loaded_skills,
            };
            round.pipeline.call(prepared).await?
        }
        (Err(problem), _) => Err(problem),
    };
    let (content, is_error) = reply_text(&reply);
    Ok(result(content, is_error))
}

/// The tool a call names and its arguments, checked against the tool's parameters; otherwise what
/// the model must fix.
fn checked<'r>(round: &Round<'r>, call: &ToolCall) -> Result<(&'r Arc<dyn Tool>, Value), String> {
    let Some((tool, schema)) = round.toolbox.get(&call.name) else {
        let name: String = call.name.chars().take(MAX_ECHOED_NAME_CHARS).collect();
        let cut = if name.len() < call.name.len() {
            "…"
        } else {
            ""
        };
        return Err(format!(
            "there is no tool `{name}{cut}`; the tools are: {}",
            round.toolbox.names().join(", ")
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
    Ok((tool, arguments))
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
