//! The caller's tools under hostile callers, against the real binary: results for calls of another
//! conversation or another key reach nothing, a result past the body limit is refused and a large
//! one reaches the model whole, a caller that never comes back leaves nothing behind, and a flood
//! of paused runs stays within the stated bound, on disk too.

use std::path::{Path, PathBuf};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use crate::serve::http;
use crate::support::{arg, Serving, TempDir};

/// A chat tactic whose agent takes the caller's tools.
fn coder_tactic(dir: &TempDir, stub: &StubServer) -> PathBuf {
    dir.write(
        "coder.yaml",
        format!(
            "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", timeout: 30}}\n  inference_hints: {{profile: dynamo}}\n  max_call_retries: 0\nagent_configs:\n  - name: coder\n    system_prompt: You code.\n    client_tools: true\n",
            stub.base_url()
        ),
    )
}

fn shell() -> Value {
    json!({"type": "function", "function": {"name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}})
}

/// A chat completion request with a session header and, when given, a key.
fn request(session: &str, key: Option<&str>, body: &Value) -> String {
    let body = body.to_string();
    let auth = key.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nsession-id: {session}\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Pauses a run of `session` on a call `call`, and returns the history a client sends next.
fn pause(
    serving: &Serving,
    stub: &StubServer,
    session: &str,
    key: Option<&str>,
    call: &str,
) -> Vec<Value> {
    stub.push(StubReply::tool_calls(&[(
        call,
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    let question = json!({"role": "user", "content": format!("Go {session}.")});
    let body = json!({"model": "coder", "messages": [question], "tools": [shell()]});
    let (status, answer) = http(serving.address(), &request(session, key, &body));
    assert_eq!(status, 200, "{answer}");
    let body: Value =
        serde_json::from_str(answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)).expect("JSON");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls", "{body}");
    vec![question, body["choices"][0]["message"].clone()]
}

fn with_result(history: &[Value], call: &str, content: &str) -> Value {
    let mut messages = history.to_vec();
    messages.push(json!({"role": "tool", "tool_call_id": call, "content": content}));
    json!({"model": "coder", "messages": messages, "tools": [shell()]})
}

fn files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| entries.count())
}

#[tokio::test(flavor = "multi_thread")]
async fn results_for_another_conversations_or_another_keys_calls_reach_nothing() {
    let dir = TempDir::new("caller-tools-foreign");
    let stub = StubServer::start().await.expect("stub");
    let tactic = coder_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let serving = Serving::start(
        &[arg(&tactic), "--state", arg(&state)],
        &[("LLLM_SERVE_KEY", "key-one,key-two")],
    );
    let history = pause(&serving, &stub, "victim", Some("key-one"), "call_secret");
    for (session, key) in [
        ("victim", "key-two"),
        ("attacker", "key-one"),
        ("attacker", "key-two"),
    ] {
        let body = with_result(&history, "call_secret", "INJECTED");
        let (status, answer) = http(serving.address(), &request(session, Some(key), &body));
        assert_eq!(status, 400, "{session} with {key}: {answer}");
        assert!(
            answer.contains("call_secret") && !answer.contains("INJECTED"),
            "{answer}"
        );
    }
    assert_eq!(
        stub.requests().len(),
        1,
        "no foreign result reached the model"
    );
    stub.push(StubReply::text("ok"));
    let body = with_result(&history, "call_secret", "mine");
    let (status, answer) = http(
        serving.address(),
        &request("victim", Some("key-one"), &body),
    );
    assert_eq!(status, 200, "{answer}");
    let requests = stub.requests();
    let last = requests.last().expect("a request");
    let tool = last.body["messages"]
        .as_array()
        .expect("messages")
        .last()
        .cloned();
    assert_eq!(tool.map(|m| m["content"].clone()), Some(json!("mine")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_past_the_body_limit_is_refused_and_a_large_one_reaches_the_model_whole() {
    let dir = TempDir::new("caller-tools-huge");
    let stub = StubServer::start().await.expect("stub");
    let tactic = coder_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let serving = Serving::start(
        &[
            arg(&tactic),
            "--state",
            arg(&state),
            "--max-body",
            "1048576",
        ],
        &[],
    );
    let history = pause(&serving, &stub, "big", None, "call_big");
    let huge = "x".repeat(2 * 1024 * 1024);
    let (status, _) = http(
        serving.address(),
        &request("big", None, &with_result(&history, "call_big", &huge)),
    );
    assert_eq!(status, 413);
    // The run still waits: a result within the limit continues it, whole.
    let large = "y".repeat(512 * 1024);
    stub.push(StubReply::text("read it"));
    let (status, answer) = http(
        serving.address(),
        &request("big", None, &with_result(&history, "call_big", &large)),
    );
    assert_eq!(status, 200, "{}", &answer[..answer.len().min(500)]);
    let requests = stub.requests();
    let sent = requests.last().expect("a request").body["messages"]
        .as_array()
        .expect("messages")
        .last()
        .map(|m| m["content"].as_str().unwrap_or("").len());
    assert_eq!(sent, Some(large.len()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_that_never_comes_back_leaves_nothing_behind() {
    let dir = TempDir::new("caller-tools-gone");
    let stub = StubServer::start().await.expect("stub");
    let tactic = coder_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let serving = Serving::start(
        &[arg(&tactic), "--state", arg(&state), "--pause-seconds", "0"],
        &[],
    );
    let history = pause(&serving, &stub, "gone", None, "call_gone");
    assert_eq!(
        files(&state.join("handed")),
        0,
        "its journal and record are removed"
    );
    let (status, answer) = http(
        serving.address(),
        &request("gone", None, &with_result(&history, "call_gone", "late")),
    );
    assert_eq!(status, 400, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_paused_runs_stays_within_the_bound_in_memory_and_on_disk() {
    let dir = TempDir::new("caller-tools-flood");
    let stub = StubServer::start().await.expect("stub");
    let tactic = coder_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let serving = Serving::start(
        &[arg(&tactic), "--state", arg(&state), "--keep-paused", "20"],
        &[],
    );
    let mut histories = Vec::new();
    for n in 0..200 {
        histories.push(pause(
            &serving,
            &stub,
            &format!("s{n}"),
            None,
            &format!("call_{n}"),
        ));
    }
    assert_eq!(
        files(&state.join("handed")),
        40,
        "20 runs, a journal and a record each"
    );
    let (status, _) = http(
        serving.address(),
        &request("s0", None, &with_result(&histories[0], "call_0", "x")),
    );
    assert_eq!(status, 400, "the oldest was forgotten");
    stub.push(StubReply::text("newest"));
    let (status, answer) = http(
        serving.address(),
        &request("s199", None, &with_result(&histories[199], "call_199", "x")),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(serving.rss_mib() < 256, "{} MiB", serving.rss_mib());
}
