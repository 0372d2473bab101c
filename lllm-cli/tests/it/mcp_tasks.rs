//! Tools answered as tasks, end to end against the reference server
//! (`@modelcontextprotocol/server-everything`'s `simulate-research-query`, a tool that runs only as a
//! task): the task is polled to its end and its report is the tool's result; when the research asks
//! the user a question inside the task (`ambiguous`), it reaches lllm through `tasks/result` and,
//! with no terminal, is declined. Gated like `mcp.rs` on `LLLM_MCP_EVERYTHING`.

use lllm_runtime::testing::{StubReply, StubServer};

use super::mcp::{list, servers, tactic};
use crate::support::{arg, lllm, tool_messages, TempDir};

/// Runs an agent calling the research tool with `arguments`; what the tool returned.
async fn research(everything: &str, arguments: &str) -> String {
    let stub = StubServer::start().await.expect("stub");
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "simulate-research-query",
        arguments,
    )]));
    stub.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-task-research");
    let servers = format!("  every: {{command: {}}}", list(&[everything, "stdio"]));
    let file = dir.write("t.yaml", tactic(&stub.base_url(), &servers, "[every]", ""));
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    tool_messages(&requests[1]).remove(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_servers_task_tool_runs_to_its_end() {
    let Some(s) = servers("task, research") else {
        return;
    };
    let result = research(&s.everything, r#"{"topic": "tides"}"#).await;
    assert!(result.contains("# Research Report: tides"), "{result}");
    assert!(
        result.contains("- Stage 4: Generating report ✓"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_inside_a_task_reaches_lllm_and_is_declined_without_a_terminal() {
    let Some(s) = servers("task, research, question") else {
        return;
    };
    let result = research(&s.everything, r#"{"topic": "python", "ambiguous": true}"#).await;
    assert!(
        result.contains("User declined - using default interpretation"),
        "{result}"
    );
}
