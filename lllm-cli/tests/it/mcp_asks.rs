//! What MCP servers ask during a tool call, end to end: sampling answered by the calling agent's
//! model as a child of the calling dialog, against the reference server
//! (`@modelcontextprotocol/server-everything`) and `tests/mcp/asking_server.py` (the official
//! Python SDK) for the hostile cases. Gated like `mcp.rs` on `LLLM_MCP_EVERYTHING`.

use std::path::Path;

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use super::mcp::{list, servers, tactic};
use crate::support::{arg, lllm, tool_messages, TempDir};

/// The asking server on stdio, with settings (YAML flow mapping entries).
fn asking(python: &str, settings: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/asking_server.py");
    format!("{{command: {}, {settings}}}", list(&[python, arg(&script)]))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_sampling_request_is_a_child_of_the_calling_dialog_and_its_answer_comes_back() {
    let Some(s) = servers("sampling") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "trigger-sampling-request",
        r#"{"prompt": "name a colour", "maxTokens": 40}"#,
    )]));
    server.push(StubReply::text("teal, said the model"));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-sampling");
    let servers = format!(
        "  every: {{command: {}, sampling: true}}",
        list(&[&s.everything, "stdio"])
    );
    let file = dir.write(
        "t.yaml",
        tactic(&server.base_url(), &servers, "[every]", ""),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go", "--json"])
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    let report: Value = serde_json::from_slice(&outcome.stdout).expect("JSON");
    assert_eq!(report["answer"], "done");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the call, the sample, the answer");
    let calling = requests[0]
        .header("x-dynamo-session-id")
        .expect("the calling dialog's session");
    let sample = &requests[1];
    assert_eq!(sample.header("x-dynamo-parent-session-id"), Some(calling));
    let own = sample.header("x-dynamo-session-id").expect("own session");
    assert!(own.starts_with("mcp-test:") && own != calling, "{own}");
    assert_eq!(
        sample.body["messages"],
        json!([
            {"role": "system", "content": "You are a helpful test server."},
            {"role": "user", "content": "Resource trigger-sampling-request context: name a colour"}
        ])
    );
    assert_eq!(sample.body["max_tokens"], 40);
    assert!(sample.body.get("tools").is_none(), "no tools for a sample");
    assert_eq!(requests[2].header("x-dynamo-session-id"), Some(calling));
    let results = tool_messages(&requests[2]);
    assert!(
        results[0].contains("teal, said the model") && results[0].contains("\"model\": \"m\""),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_sampling_the_server_is_not_told_it_may_sample() {
    let Some(s) = servers("no sampling") else {
        return;
    };
    let dir = TempDir::new("mcp-no-sampling");
    let listed = |sampling: &'static str| {
        let servers = format!(
            "  every: {{command: {}{sampling}}}",
            list(&[&s.everything, "stdio"])
        );
        dir.write(
            "t.yaml",
            tactic("http://127.0.0.1:9/v1", &servers, "[every]", ""),
        )
    };
    for (setting, offered) in [
        ("", false),
        (", sampling: false", false),
        (", sampling: true", true),
    ] {
        let file = listed(setting);
        let outcome = lllm(&["tools", arg(&file), "--json"]).run().await;
        outcome.assert_clean(0, &[]);
        let listing: Value = serde_json::from_slice(&outcome.stdout).expect("JSON");
        let names: Vec<&str> = listing["agents"][0]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(
            names.contains(&"trigger-sampling-request"),
            offered,
            "{setting}: {names:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_sampling_in_a_loop_is_stopped_by_the_runs_limits() {
    let Some(s) = servers("sampling loop, limits") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[("c1", "sample_loop", "{}")]));
    for n in 0..40 {
        server.push(StubReply::text(&format!("answer {n}")));
    }
    let dir = TempDir::new("mcp-sample-loop");
    let servers = format!("  ask: {}", asking(&s.python, "sampling: true"));
    let mut text = tactic(&server.base_url(), &servers, "[ask]", "");
    text.push_str("limits: {max_requests: 4}\n");
    let file = dir.write("t.yaml", text);
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(1, &["max_requests = 4"]);
    assert_eq!(server.requests().len(), 4, "the call and three samples");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_sampling_in_a_loop_gets_a_bounded_number_of_answers_per_call() {
    let Some(s) = servers("sampling loop, per call") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[("c1", "sample_loop", "{}")]));
    for n in 0..32 {
        server.push(StubReply::text(&format!("answer {n}")));
    }
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-sample-cap");
    let servers = format!("  ask: {}", asking(&s.python, "sampling: true"));
    let file = dir.write("t.yaml", tactic(&server.base_url(), &servers, "[ask]", ""));
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    let requests = server.requests();
    assert_eq!(requests.len(), 34);
    let results = tool_messages(&requests[33]);
    assert!(
        results[0].starts_with("answered 32; then refused:")
            && results[0].contains("at most 32 sampling requests per tool call"),
        "{results:?}"
    );
}
