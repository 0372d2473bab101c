//! Tool calls answered as tasks: the server answers `tools/call` with a task, which lllm polls
//! (`tasks/get`, at the server's suggested interval, held between bounds) until it ends, and whose
//! result becomes the tool's result. Each change of its status or message reaches the run's events
//! (`tool.progress`). A call given up (its timeout, the run cancelled or halted) sends
//! `tasks/cancel`.
//!
//! Two versions of tasks are spoken: the `io.modelcontextprotocol/tasks` extension of MCP
//! 2026-07-28 (declared by lllm; the result comes with `tasks/get`), and the experimental tasks of
//! 2025-11-25 that servers such as the reference server still use (a tool that requires them
//! refuses a plain call; lllm then calls it with `task` and fetches the result with
//! `tasks/result`).

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, CustomRequest,
    ErrorCode, ErrorData, ServerResult,
};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use serde_json::{json, Value};

use crate::tools::{ToolContext, ToolProgress};

/// The interval between polls when the server suggests none, and the bounds of any it suggests.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
const MIN_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(10);
/// How long lllm asks a 2025-11-25 server to keep a task (the tool's timeout bounds the call).
const LEGACY_TTL_MS: u64 = 24 * 3600 * 1000;

/// The task a call waits on, cancelled with `tasks/cancel` if the call is given up: awaited by
/// [`cancel`](Self::cancel) (a timeout), or sent in the background when it is dropped first (the
/// run cancelled or halted drops the call).
pub(crate) struct OpenTask {
    peer: Peer<RoleClient>,
    id: std::sync::Mutex<Option<String>>,
}

impl OpenTask {
    pub(crate) fn new(peer: &Peer<RoleClient>) -> Self {
        OpenTask {
            peer: peer.clone(),
            id: std::sync::Mutex::new(None),
        }
    }

    fn set(&self, id: Option<String>) {
        *self.id.lock().unwrap_or_else(|p| p.into_inner()) = id;
    }

    fn take(&self) -> Option<String> {
        self.id.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Tells the server to stop the task, if one runs; waits for its acknowledgement (bounded).
    pub(crate) async fn cancel(&self) {
        if let Some(id) = self.take() {
            cancel(self.peer.clone(), id).await;
        }
    }
}

impl Drop for OpenTask {
    fn drop(&mut self) {
        let Some(id) = self.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(cancel(self.peer.clone(), id));
        }
    }
}

async fn cancel(peer: Peer<RoleClient>, id: String) {
    let cancel = send(&peer, "tasks/cancel", json!({ "taskId": id }));
    match tokio::time::timeout(MAX_POLL, cancel).await {
        Ok(Ok(_)) => tracing::debug!(task = %id, "the task was cancelled"),
        _ => tracing::debug!(task = %id, "the server did not acknowledge tasks/cancel"),
    }
}

/// Calls a tool; a task it answers with is polled to its end, noted in `open` while it runs.
pub(crate) async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    context: ToolContext<'_>,
    tool: &str,
    open: &OpenTask,
) -> Result<CallToolResult, ServiceError> {
    match peer.call_tool_once(params.clone()).await {
        Ok(CallToolResponse::Complete(result)) if refused_for_a_task(&result) => {
            legacy(peer, params, context, tool, open).await
        }
        Ok(CallToolResponse::Complete(result)) => Ok(result),
        Ok(CallToolResponse::Task(created)) => {
            let task = Running::new(peer, created.task.task_id.clone(), false, open);
            task.poll(context, tool).await
        }
        Ok(_) => Err(ServiceError::UnexpectedResponse),
        Err(error) if needs_a_task(&error) => legacy(peer, params, context, tool, open).await,
        Err(error) => Err(error),
    }
}

/// The words of a 2025-11-25 server refusing a plain call of a tool that runs only as a task.
const NEEDS_A_TASK: &str = "requires task augmentation";

/// Whether a 2025-11-25 server refused a plain call of a tool that runs only as a task: with an
/// error, or (the TypeScript SDK) with a tool error carrying it. Nothing ran, so calling again as a
/// task runs the tool once.
fn needs_a_task(error: &ServiceError) -> bool {
    matches!(error, ServiceError::McpError(e)
        if e.code == ErrorCode::METHOD_NOT_FOUND && e.message.contains(NEEDS_A_TASK))
}

fn refused_for_a_task(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
        && result.content.len() == 1
        && result.content[0]
            .as_text()
            .is_some_and(|t| t.text.contains(NEEDS_A_TASK) && t.text.contains("-32601"))
}

/// The call again, as a 2025-11-25 task.
async fn legacy(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    context: ToolContext<'_>,
    tool: &str,
    open: &OpenTask,
) -> Result<CallToolResult, ServiceError> {
    let mut request = serde_json::to_value(&params).map_err(unexpected)?;
    request["task"] = json!({ "ttl": LEGACY_TTL_MS });
    let created = send(peer, "tools/call", request).await?;
    let id = created
        .pointer("/task/taskId")
        .and_then(Value::as_str)
        .ok_or(ServiceError::UnexpectedResponse)?;
    let task = Running::new(peer, id.to_owned(), true, open);
    task.poll(context, tool).await
}

/// A task being polled.
struct Running<'a> {
    peer: &'a Peer<RoleClient>,
    id: String,
    /// A 2025-11-25 task, whose result comes from `tasks/result`.
    legacy: bool,
    open: &'a OpenTask,
}

impl<'a> Running<'a> {
    fn new(peer: &'a Peer<RoleClient>, id: String, legacy: bool, open: &'a OpenTask) -> Self {
        open.set(Some(id.clone()));
        Running {
            peer,
            id,
            legacy,
            open,
        }
    }

    /// Polls until the task ends; its result.
    async fn poll(
        self,
        context: ToolContext<'_>,
        tool: &str,
    ) -> Result<CallToolResult, ServiceError> {
        let mut seen: Option<(String, Option<String>)> = None;
        // A server changing its message at every poll must not flood the run's events.
        let mut reported = 0;
        loop {
            let task = send(self.peer, "tasks/get", json!({ "taskId": self.id })).await?;
            let status = task["status"].as_str().unwrap_or("working").to_owned();
            let message = task["statusMessage"].as_str().map(str::to_owned);
            let now = Some((status.clone(), message.clone()));
            if now != seen {
                if reported < super::serve_asks::MAX_PROGRESS_PER_CALL {
                    reported += 1;
                    context.progress(ToolProgress::new(tool, &status, message.as_deref()));
                }
                seen = now;
            }
            match status.as_str() {
                "completed" => return self.result(task).await,
                // A 2025-11-25 task delivers its questions through `tasks/result`, which waits
                // for its end.
                "input_required" if self.legacy => return self.result(task).await,
                // Answering inside a task (`tasks/update`) is not done yet: the task is given up,
                // and cancelled when the call's `OpenTask` goes.
                "input_required" => {
                    return Err(ServiceError::McpError(ErrorData::internal_error(
                        "the tool's task asks for input inside the task (tasks/update), which lllm does not answer; the task was cancelled",
                        None,
                    )))
                }
                "failed" | "cancelled" => {
                    self.open.set(None);
                    return Err(failed(&task, &status, message));
                }
                _ => {}
            }
            tokio::time::sleep(interval(&task)).await;
        }
    }

    /// The result of a completed task.
    async fn result(&self, task: Value) -> Result<CallToolResult, ServiceError> {
        let result = if self.legacy {
            send(self.peer, "tasks/result", json!({ "taskId": self.id })).await?
        } else {
            task.get("result").cloned().unwrap_or(Value::Null)
        };
        self.open.set(None);
        serde_json::from_value(result).map_err(unexpected)
    }
}

/// The wait before the next poll: the server's suggestion, within bounds.
fn interval(task: &Value) -> Duration {
    let suggested = ["pollIntervalMs", "pollInterval"]
        .iter()
        .find_map(|key| task[*key].as_u64())
        .map(Duration::from_millis);
    suggested.unwrap_or(DEFAULT_POLL).clamp(MIN_POLL, MAX_POLL)
}

/// The error of a failed or cancelled task, as the tool's error.
fn failed(task: &Value, status: &str, message: Option<String>) -> ServiceError {
    let error = task.get("error");
    let text = error
        .and_then(|e| e["message"].as_str())
        .map(str::to_owned)
        .or(message)
        .unwrap_or_else(|| format!("the task ended {status}"));
    ServiceError::McpError(ErrorData::internal_error(
        format!("the tool's task ended {status}: {text}"),
        None,
    ))
}

/// One request, its answer as JSON.
async fn send(peer: &Peer<RoleClient>, method: &str, params: Value) -> Result<Value, ServiceError> {
    let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let answer: ServerResult = peer.send_request(request).await?;
    serde_json::to_value(&answer).map_err(unexpected)
}

fn unexpected(error: serde_json::Error) -> ServiceError {
    tracing::debug!("a task's answer of the wrong shape: {error}");
    ServiceError::UnexpectedResponse
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_poll_interval_is_held_within_bounds() {
        assert_eq!(interval(&json!({})), DEFAULT_POLL);
        assert_eq!(
            interval(&json!({"pollInterval": 250})),
            Duration::from_millis(250)
        );
        assert_eq!(interval(&json!({"pollIntervalMs": 0})), MIN_POLL);
        assert_eq!(interval(&json!({"pollIntervalMs": 3_600_000})), MAX_POLL);
    }
}
