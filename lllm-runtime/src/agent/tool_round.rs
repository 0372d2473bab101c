//! One round of tool calls: run them (concurrently, bounded), each answered by a result or an error the model reads.

use std::collections::HashSet;

use futures::StreamExt;
use lllm_core::ToolCall;
use serde_json::Value;

use lllm_core::DialogId;

use super::AgentErrorKind;
use crate::budget::RunBudget;
use crate::journal::{Journal, ToolMemory};
use crate::telemetry;
use crate::tools::{Confirm, ConfirmRequest, Decision, Toolbox, DECLINED};
use tracing::Instrument;

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

/// What one round's calls share: the agent, its tools, who confirms, the journal and the dialog.
pub(crate) struct Round<'a> {
    pub(crate) agent: &'a str,
    pub(crate) toolbox: &'a Toolbox,
    pub(crate) confirm: Option<&'a dyn Confirm>,
    pub(crate) journal: Option<&'a Journal>,
    pub(crate) budget: Option<&'a RunBudget>,
    pub(crate) dialog: DialogId,
}

/// Runs one turn's tool calls concurrently (up to [`MAX_CONCURRENT_CALLS`] at a time); the results are
/// in call order. A call that pauses the run (it waits for a confirmation, with a journal) or a
/// journal that cannot be written ends the round with an error.
pub(crate) async fn run_tools(
    round: &Round<'_>,
    calls: &[ToolCall],
    log: &mut CallLog,
) -> Result<Vec<ToolResult>, AgentErrorKind> {
    let runs: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let repeated = log.repeated(call);
            answer_call(round, call, i, repeated)
        })
        .collect();
    futures::stream::iter(runs)
        .buffered(MAX_CONCURRENT_CALLS)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
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
    if crate::halt::halted() {
        return Ok(result("error: not run: the run is stopping", true));
    }
    if i >= MAX_CALLS_PER_TURN {
        return Ok(result(format!("error: not run: at most {MAX_CALLS_PER_TURN} tool calls run per turn; make this call again in a later turn if it is still needed"), true));
    }
    if repeated {
        return Ok(result("note: this exact call was already made while answering this message; its result is above, so it was not run again", false));
    }
    match run_tool(round, call).await? {
        Ok(content) => Ok(result(content, false)),
        Err(problem) => Ok(result(format!("error: {problem}"), true)),
    }
}

/// What the model is told about a call the crash interrupted, when running it again is not safe.
const INTERRUPTED: &str = "this call was interrupted when the run stopped, and its outcome is unknown: it may or may not have taken effect. It was not run again (the tool is not marked idempotent); check its effect before calling it again";

/// Runs one call. The inner error is text for the model (what to fix); the outer one ends the round.
async fn run_tool(
    round: &Round<'_>,
    call: &ToolCall,
) -> Result<Result<String, String>, AgentErrorKind> {
    let Some((tool, schema)) = round.toolbox.get(&call.name) else {
        let name: String = call.name.chars().take(MAX_ECHOED_NAME_CHARS).collect();
        let cut = if name.len() < call.name.len() {
            "…"
        } else {
            ""
        };
        return Ok(Err(format!(
            "there is no tool `{name}{cut}`; the tools are: {}",
            round.toolbox.names().join(", ")
        )));
    };
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    let arguments: Value = match serde_json::from_str(raw) {
        Ok(arguments) => arguments,
        Err(e) => {
            return Ok(Err(format!(
                "the arguments are not valid JSON ({e}); call the tool again with a JSON object"
            )))
        }
    };
    if let Err(problem) = schema.check(&arguments) {
        return Ok(Err(format!(
            "the arguments do not match the tool's parameters: {problem}"
        )));
    }
    // Counted before the journal is asked, as answers are: a resumed run spends what it replays.
    if let Some(budget) = round.budget {
        budget.tool_call()?;
    }
    let journal = round.journal;
    if let Some(journal) = journal {
        match journal.tool(round.dialog, &call.id) {
            ToolMemory::Finished { content, is_error } => {
                let content = if is_error {
                    Err(content
                        .strip_prefix("error: ")
                        .unwrap_or(&content)
                        .to_owned())
                } else {
                    Ok(content)
                };
                return Ok(content);
            }
            ToolMemory::Interrupted if !tool.idempotent() => {
                let content = format!("error: {INTERRUPTED}");
                journal
                    .tool_finished(round.dialog, &call.id, &content, true)
                    .map_err(AgentErrorKind::Journal)?;
                return Ok(Err(INTERRUPTED.to_owned()));
            }
            ToolMemory::Interrupted | ToolMemory::New => {}
        }
    }
    if tool.needs_confirmation() {
        let source = tool.source();
        let request = ConfirmRequest {
            agent: round.agent,
            tool: &call.name,
            source: &source,
            arguments: &arguments,
        };
        let decision = match round.confirm {
            Some(confirm) => confirm.confirm(request).await,
            None => Decision::Decline,
        };
        match (decision, journal) {
            (Decision::Approve, _) => {}
            (Decision::Pause, Some(journal)) => {
                journal
                    .pending(round.dialog, &call.id, &call.name, &arguments)
                    .map_err(AgentErrorKind::Journal)?;
                return Err(AgentErrorKind::Paused {
                    tool: call.name.clone(),
                });
            }
            (Decision::Decline | Decision::Pause, _) => {
                tracing::info!(agent = round.agent, tool = %call.name, "the call was declined");
                let content = Err(DECLINED.to_owned());
                journal_result(round, call, &content)?;
                return Ok(content);
            }
        }
    }
    if let Some(journal) = journal {
        journal
            .tool_started(round.dialog, &call.id, &call.name, &arguments)
            .map_err(AgentErrorKind::Journal)?;
    }
    tracing::debug!(agent = round.agent, tool = %call.name, "calling tool");
    let content = tool
        .call(arguments)
        .await
        .map(|output| output.into_content())
        .map_err(|e| e.message().to_owned());
    if crate::halt::halted() {
        // The stop killed the call: it stays started only, so a resume treats it as interrupted.
        return Ok(content);
    }
    journal_result(round, call, &content)?;
    Ok(content)
}

/// Records a call's result in the journal, as the model reads it.
fn journal_result(
    round: &Round<'_>,
    call: &ToolCall,
    content: &Result<String, String>,
) -> Result<(), AgentErrorKind> {
    let Some(journal) = round.journal else {
        return Ok(());
    };
    let (text, is_error) = match content {
        Ok(text) => (text.clone(), false),
        Err(problem) => (format!("error: {problem}"), true),
    };
    journal
        .tool_finished(round.dialog, &call.id, &text, is_error)
        .map_err(AgentErrorKind::Journal)
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
