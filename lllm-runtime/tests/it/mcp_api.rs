//! The Rust API of MCP servers against a real one: the fault server of `lllm-cli/tests/mcp`, written
//! with the official Python SDK. `scripts/test.sh` sets `LLLM_MCP_PYTHON` (the interpreter that has
//! the SDK) and `LLLM_REQUIRE_MCP=1`; without the variable each test says so and passes without
//! checking, unless `LLLM_REQUIRE_MCP=1`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lllm_runtime::agent::{AgentErrorKind, Role};
use lllm_runtime::mcp::{McpError, McpServer};
use lllm_runtime::testing::ScriptedInvoker;
use lllm_runtime::tools::{ApproveAll, ConfirmTools, ToolCall, ToolFilter};
use lllm_runtime::{Agent, InferenceHints, Message, Profile};
use serde_json::json;

#[allow(clippy::print_stderr)]
pub(super) fn python(test: &str) -> Option<String> {
    match std::env::var("LLLM_MCP_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ if std::env::var("LLLM_REQUIRE_MCP").as_deref() == Ok("1") => {
            panic!(
                "{test}: LLLM_MCP_PYTHON must be set: eval \"$(scripts/servers/mcp.sh install)\""
            )
        }
        _ => {
            eprintln!("{test}: skipped: LLLM_MCP_PYTHON is not set (scripts/test.sh sets it)");
            None
        }
    }
}

fn fault_server() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../lllm-cli/tests/mcp/fault_server.py")
        .to_string_lossy()
        .into_owned()
}

fn calls(list: &[(&str, serde_json::Value)]) -> Message {
    let mut message = Message::assistant("");
    message.content = None;
    message.tool_calls = list
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| ToolCall {
            id: format!("c{i}"),
            name: (*name).to_owned(),
            arguments: arguments.to_string(),
        })
        .collect();
    message
}

#[tokio::test(flavor = "multi_thread")]
async fn one_server_shared_by_two_agents_with_their_own_subsets() {
    let Some(python) = python("shared server") else {
        return;
    };
    let server = McpServer::stdio("fault", [python, fault_server()])
        .env("GIVEN", "from-rust")
        .prefix("f_")
        .confirm(ConfirmTools::Some(vec!["env".into()]))
        .timeout(Duration::from_secs(5))
        .start()
        .await
        .expect("the server starts");
    assert!(server.is_running());
    assert!(server.tool_names().contains(&"f_echo".to_owned()));

    let invoker = Arc::new(
        ScriptedInvoker::new()
            .message(calls(&[
                ("f_echo", json!({"text": "shared"})),
                ("f_env", json!({"name": "GIVEN"})),
            ]))
            .reply("done"),
    );
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .build()
        .expect("hints");
    let everything = Agent::builder()
        .name("all")
        .system_prompt("s")
        .model("m")
        .invoker(invoker.clone())
        .inference_hints(hints)
        .mcp(&server)
        .confirm(Arc::new(ApproveAll))
        .build()
        .expect("agent with every tool");
    let only_echo = Agent::builder()
        .name("echo-only")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(ScriptedInvoker::new()))
        .mcp_filtered(&server, ToolFilter::Include(vec!["echo".into()]))
        .build()
        .expect("agent with one tool");
    let _ = only_echo;

    everything.open("main").expect("open");
    everything.receive("go").expect("receive");
    everything.respond("main").await.expect("answer");
    let recorded = invoker.calls();
    assert_eq!(recorded.len(), 2);
    let offered: Vec<&str> = recorded[0].request.body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"f_echo") && offered.contains(&"f_crash"),
        "{offered:?}"
    );
    let results: Vec<&str> = recorded[1]
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results, ["shared", "from-rust"]);
    let session = |i: usize| {
        recorded[i]
            .request
            .headers
            .iter()
            .find(|(name, _)| name == "x-dynamo-session-id")
            .map(|(_, value)| value.clone())
    };
    assert!(session(0).is_some());
    assert_eq!(
        session(0),
        session(1),
        "the tool round keeps the dialog's session"
    );

    server.shutdown().await;
    assert!(!server.is_running());
    let tools = server
        .tools(&ToolFilter::Include(vec!["echo".into()]))
        .expect("tools");
    let error = tools[0]
        .call(json!({"text": "late"}))
        .await
        .expect_err("the server is gone");
    assert!(error.message().contains("MCP server `fault`"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_naming_unknown_tools_fail_the_build() {
    let Some(python) = python("unknown tool") else {
        return;
    };
    let server = McpServer::stdio("fault", [python, fault_server()])
        .start()
        .await
        .expect("starts");
    let error = Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(ScriptedInvoker::new()))
        .mcp_filtered(&server, ToolFilter::Exclude(vec!["nope".into()]))
        .build()
        .expect_err("unknown tool");
    assert!(error.is_config());
    match error.kind() {
        AgentErrorKind::Mcp(e) => assert!(
            matches!(**e, McpError::UnknownTool { ref tool, .. } if tool == "nope"),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn builders_report_bad_settings_at_start() {
    let error = McpServer::http("web", "ftp://127.0.0.1/mcp")
        .start()
        .await
        .expect_err("not http");
    assert!(matches!(error, McpError::Invalid { .. }), "{error}");
    let error = McpServer::stdio("x", Vec::<String>::new())
        .start()
        .await
        .expect_err("no program");
    assert!(error.to_string().contains("must name a program"), "{error}");
    let error = McpServer::stdio("bad name", ["cat"])
        .start()
        .await
        .expect_err("bad name");
    assert!(error.is_config());
    let error = McpServer::stdio("missing", ["/no/such/lllm-program"])
        .startup_timeout(Duration::from_secs(2))
        .start()
        .await
        .expect_err("no such program");
    assert!(
        matches!(error, McpError::Start { .. }) && error.to_string().contains("cannot start"),
        "{error}"
    );
}
