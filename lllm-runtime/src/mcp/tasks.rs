//! Tool calls answered as tasks: the server answers `tools/call` with a task, which lllm polls
//! (`tasks/get`, at the server's suggested interval, held between bounds) until it ends, and whose
//! result becomes the tool's result. Each change of its status or message reaches the run's events
//! (`tool.progress`). A call given up (its timeout, the run cancelled or halted: its future
//! dropped) sends `tasks/cancel`.
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

/// Calls a tool; a task it answers with is polled to its end.
pub(crate) async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    context: ToolContext<'_>,
    tool: &str,
) -> Result<CallToolResult, ServiceError> {
    match peer.call_tool_once(params.clone()).await {
        Ok(CallToolResponse::Complete(result)) => Ok(result),
        Ok(CallToolResponse::Task(created)) => {
            let task = Running::new(peer, created.task.task_id.clone(), false);
            task.poll(context, tool).await
        }
        Ok(_) => Err(ServiceError::UnexpectedResponse),
        Err(error) if needs_a_task(&error) => legacy(peer, params, context, tool).await,
        Err(error) => Err(error),
    }
}

/// Whether a 2025-11-25 server refused a plain call of a tool that runs only as a task.
fn needs_a_task(error: &ServiceError) -> bool {
    matches!(error, ServiceError::McpError(e)
        if e.code == ErrorCode::METHOD_NOT_FOUND && e.message.contains("task augmentation"))
}

/// The call again, as a 2025-11-25 task.
async fn legacy(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    context: ToolContext<'_>,
    tool: &str,
) -> Result<CallToolResult, ServiceError> {
    let mut request = serde_json::to_value(&params).map_err(unexpected)?;
    request["task"] = json!({ "ttl": LEGACY_TTL_MS });
    let created = send(peer, "tools/call", request).await?;
    let id = created
        .pointer("/task/taskId")
        .and_then(Value::as_str)
        .ok_or(ServiceError::UnexpectedResponse)?;
    let task = Running::new(peer, id.to_owned(), true);
    task.poll(context, tool).await
}

/// A task being polled; dropped before its end, it is cancelled.
struct Running<'a> {
    peer: &'a Peer<RoleClient>,
    id: String,
    /// A 2025-11-25 task, whose result comes from `tasks/result`.
    legacy: bool,
    ended: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        // Given up (a timeout, a cancelled run): the server is told, without waiting for it.
        let (peer, id) = (self.peer.clone(), self.id.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let cancel = send(&peer, "tasks/cancel", json!({ "taskId": id }));
                if tokio::time::timeout(MAX_POLL, cancel).await.is_err() {
                    tracing::debug!("the server did not acknowledge tasks/cancel");
                }
            });
        }
    }
}

impl<'a> Running<'a> {
    fn new(peer: &'a Peer<RoleClient>, id: String, legacy: bool) -> Self {
        Running {
            peer,
            id,
            legacy,
            ended: false,
        }
    }

    /// Polls until the task ends; its result.
    async fn poll(
        mut self,
        context: ToolContext<'_>,
        tool: &str,
    ) -> Result<CallToolResult, ServiceError> {
        let mut seen: Option<(String, Option<String>)> = None;
        loop {
            let task = send(self.peer, "tasks/get", json!({ "taskId": self.id })).await?;
            let status = task["status"].as_str().unwrap_or("working").to_owned();
            let message = task["statusMessage"].as_str().map(str::to_owned);
            let now = Some((status.clone(), message.clone()));
            if now != seen {
                context.progress(ToolProgress::new(tool, &status, message.as_deref()));
                seen = now;
            }
            match status.as_str() {
                "completed" => {
                    self.ended = true;
                    return self.result(task).await;
                }
                // A 2025-11-25 task delivers its questions through `tasks/result`, which waits
                // for its end.
                "input_required" if self.legacy => {
                    let result = self.result(task).await;
                    self.ended = result.is_ok();
                    return result;
                }
                "failed" | "cancelled" => {
                    self.ended = true;
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
