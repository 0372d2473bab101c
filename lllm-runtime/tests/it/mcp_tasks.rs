//! Tool calls answered as MCP tasks, through the Rust API, against `lllm-cli/tests/mcp/task_server.py`
//! (the `io.modelcontextprotocol/tasks` extension, spoken by a small JSON-RPC server that logs what
//! it receives): a task polled to its end with its progress in the run's events, and a task that
//! never ends stopped by the tool's timeout with `tasks/cancel`, or by the caller dropping the
//! respond. Gated like `mcp_api.rs` on `LLLM_MCP_PYTHON`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lllm_runtime::events::{RunEvent, RunObserver};
use lllm_runtime::mcp::McpServer;
use lllm_runtime::testing::ScriptedInvoker;
use lllm_runtime::tools::ToolCall;
use lllm_runtime::{Agent, Message};

use super::mcp_api::python;
use super::support::TempDir;

/// The task server, logging to `log`.
async fn task_server(python: String, log: &std::path::Path, timeout: Duration) -> McpServer {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../lllm-cli/tests/mcp/task_server.py")
        .to_string_lossy()
        .into_owned();
    McpServer::stdio("tasks", [python, script, log.display().to_string()])
        .timeout(timeout)
        .start()
        .await
        .expect("the task server starts")
}

fn call(name: &str) -> Message {
    let mut message = Message::assistant("");
    message.content = None;
    message.tool_calls = vec![ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments: "{}".into(),
    }];
    message
}

/// An agent calling `tool` once, then answering "done"; the events it sends.
fn agent(
    server: &McpServer,
    tool: &str,
) -> (Agent, Arc<ScriptedInvoker>, Arc<Mutex<Vec<RunEvent>>>) {
    let invoker = Arc::new(ScriptedInvoker::new().message(call(tool)).reply("done"));
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let agent = Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(invoker.clone())
        .mcp(server)
        .observer(RunObserver::new(move |e| {
            seen.lock().expect("events").push(e.clone())
        }))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("go").expect("receive");
    (agent, invoker, events)
}

fn tool_result(invoker: &ScriptedInvoker) -> String {
    let calls = invoker.calls();
    let last = calls.last().expect("a call");
    last.messages
        .iter()
        .rev()
        .find_map(|m| (m.role == lllm_runtime::agent::Role::Tool).then(|| m.text().to_owned()))
        .expect("a tool result")
}

fn logged(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_polled_to_its_end_and_its_progress_reaches_the_events() {
    let Some(python) = python("task to its end") else {
        return;
    };
    let dir = TempDir::new("mcp-task");
    let log = dir.0.join("log");
    let server = task_server(python, &log, Duration::from_secs(30)).await;
    let (agent, invoker, events) = agent(&server, "steps");
    agent.respond("main").await.expect("answer");
    assert_eq!(tool_result(&invoker), "all steps done");
    let progress: Vec<(String, String, Option<String>)> = events
        .lock()
        .expect("events")
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolProgress {
                call_id,
                status,
                message,
                ..
            } => Some((call_id.clone(), status.clone(), message.clone())),
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String, Option<String>)> = [
        ("working", "gathering"),
        ("working", "thinking"),
        ("working", "writing"),
        ("completed", "done"),
    ]
    .iter()
    .map(|(s, m)| ("c1".to_owned(), (*s).to_owned(), Some((*m).to_owned())))
    .collect();
    assert_eq!(progress, expected);
    let wire = serde_json::to_value(
        events
            .lock()
            .expect("events")
            .iter()
            .find(|e| matches!(e, RunEvent::ToolProgress { .. }))
            .expect("one"),
    )
    .expect("JSON");
    assert_eq!(wire["event"], "tool.progress");
    assert_eq!(wire["data"]["tool"], "steps");
    assert_eq!(
        logged(&log),
        [
            "tools/call t1",
            "tasks/get t1",
            "tasks/get t1",
            "tasks/get t1",
            "tasks/get t1"
        ]
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_that_never_ends_is_cancelled_at_the_tools_timeout() {
    let Some(python) = python("task forever, timeout") else {
        return;
    };
    let dir = TempDir::new("mcp-task");
    let log = dir.0.join("log");
    // 3 s: room for a loaded machine to start the task before the timeout.
    let server = task_server(python, &log, Duration::from_secs(3)).await;
    let (agent, invoker, _) = agent(&server, "forever");
    agent.respond("main").await.expect("answer");
    let result = tool_result(&invoker);
    assert!(
        result.contains("the tool did not answer within 3 s"),
        "{result}"
    );
    let log = logged(&log);
    assert_eq!(log.first().map(String::as_str), Some("tools/call t1"));
    // Awaited before the tool's error returns (a poll already in flight may arrive after it).
    let cancels = log.iter().filter(|l| *l == "tasks/cancel t1").count();
    assert_eq!(cancels, 1, "{log:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_cancelled_when_the_respond_is_dropped() {
    let Some(python) = python("task forever, dropped") else {
        return;
    };
    let dir = TempDir::new("mcp-task");
    let log = dir.0.join("log");
    let server = task_server(python, &log, Duration::from_secs(600)).await;
    let (agent, _, _) = agent(&server, "forever");
    let polled = || logged(&log).iter().any(|l| l == "tasks/get t1");
    {
        let respond = agent.respond("main");
        tokio::pin!(respond);
        // Polled at least once, then given up (as a cancelled run drops its respond).
        let mut tries = 0;
        while !polled() {
            tries += 1;
            assert!(tries < 600, "never polled: {:?}", logged(&log));
            tokio::select! {
                _ = &mut respond => panic!("a task that never ends ended"),
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }
    let mut tries = 0;
    while !logged(&log).iter().any(|l| l == "tasks/cancel t1") {
        tries += 1;
        assert!(tries < 200, "no tasks/cancel: {:?}", logged(&log));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.shutdown().await;
}
