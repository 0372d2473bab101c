//! `lllm serve`'s HTTP surface against the recording stub: models, chat completions and responses
//! (streamed or not), the caller's session carried downstream, runs with approvals across a
//! restart, cancellation, admission, keys and bad requests.

mod bodies;
mod caller_tools;
mod conversation;
mod event_ids;
mod races;
mod retry;
mod runs_api;
mod stream_answer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{gone_within, started_pid, TempDir};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::serve::Served;
use lllm_runtime::testing::{StubReply, StubServer};
use lllm_runtime::{load_tactic, Engine, OpenAiInvoker, TacticRegistry};
use serde_json::{json, Value};

/// A chat tactic (one agent, no steps) whose system prompt shows the client's system text.
pub(crate) fn chat_tactic(dir: &TempDir, server: &StubServer, fork_session: &str) -> PathBuf {
    dir.write(
        "helper.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo, fork_session: {fork_session}}}
  max_call_retries: 0
agent_configs:
  - name: helper
    system_prompt: "You help.{{% if client_system %}} The client says: {{{{ client_system }}}}{{% endif %}}"
"#,
            api = server.base_url()
        ),
    )
}

/// A steps tactic: the lead answers, a fork of its dialog checks the answer.
pub(crate) fn fork_tactic(dir: &TempDir, server: &StubServer, fork_session: &str) -> PathBuf {
    dir.write(
        "forks.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo, fork_session: {fork_session}}}
  max_call_retries: 0
agent_configs:
  - name: lead
    system_prompt: You lead.
steps:
  - {{agent: lead, receive: "{{{{ input }}}}", save: draft}}
  - {{agent: lead, fork_from: main, dialog: check, receive: "Check it."}}
"#,
            api = server.base_url()
        ),
    )
}

/// A tactic whose `act` tool needs confirmation, appends its line to `effects.txt` (or sleeps).
pub(crate) fn tool_tactic(dir: &TempDir, server: &StubServer) -> PathBuf {
    tool_tactic_confirming(dir, server, true)
}

pub(crate) fn tool_tactic_confirming(dir: &TempDir, server: &StubServer, confirm: bool) -> PathBuf {
    let effects = dir.0.join("effects.txt");
    let pid = dir.0.join("pid.txt");
    dir.write(
        "worker.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    tools:
      - name: act
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'echo $$ > "$3"; if [ "$1" = sleep ]; then sleep 30; fi; printf "%s\n" "$1" | tee -a "$2"', sh, "{{{{ line }}}}", "{effects}", "{pid}"]
        confirm: {confirm}
"#,
            api = server.base_url(),
            effects = effects.display(),
            pid = pid.display()
        ),
    )
}

/// A running server.
pub(crate) struct Running {
    pub(crate) base: String,
    pub(crate) served: Served,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn serve_with(
    tactics: &[(&str, &Path)],
    configure: impl FnOnce(lllm_runtime::serve::ServedBuilder) -> lllm_runtime::serve::ServedBuilder,
) -> Running {
    let invoker = Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()));
    serve_on(invoker, tactics, configure).await
}

/// Serves `tactics` with every model call going through `invoker` (a test's wrapper around the
/// real one).
pub(crate) async fn serve_through(
    invoker: Arc<dyn lllm_runtime::Invoker>,
    tactics: &[(&str, &Path)],
) -> Running {
    serve_on(invoker, tactics, |b| b).await
}

async fn serve_on(
    invoker: Arc<dyn lllm_runtime::Invoker>,
    tactics: &[(&str, &Path)],
    configure: impl FnOnce(lllm_runtime::serve::ServedBuilder) -> lllm_runtime::serve::ServedBuilder,
) -> Running {
    let engine = Engine::new(TacticRegistry::new()).with_invoker(invoker);
    let mut builder = Served::builder(engine.clone());
    for (name, path) in tactics {
        let tactic = engine
            .prepare(load_tactic(path).expect("tactic"))
            .await
            .expect("prepared");
        builder = builder.tactic(*name, tactic);
    }
    let served = configure(builder).build().expect("served");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let server = served.clone();
    let task = tokio::spawn(async move {
        server
            .serve(listener, std::future::pending())
            .await
            .expect("serve");
    });
    Running { base, served, task }
}

pub(crate) async fn serve(tactics: &[(&str, &Path)]) -> Running {
    serve_with(tactics, |b| b).await
}

/// A response: status, headers, body text.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) text: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The events of an SSE body: each one's name (if any) and data, fields in any order.
    pub(crate) fn events(&self) -> Vec<(Option<String>, String)> {
        self.text
            .split("\n\n")
            .filter_map(|block| {
                let mut name = None;
                let mut data = None;
                for line in block.lines() {
                    if let Some(event) = line.strip_prefix("event: ") {
                        name = Some(event.to_owned());
                    } else if let Some(text) = line.strip_prefix("data: ") {
                        data = Some(text.to_owned());
                    }
                }
                data.map(|data| (name, data))
            })
            .collect()
    }
}

pub(crate) async fn post(url: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut request = reqwest::Client::new().post(url).body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("sent");
    Reply {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        text: response.text().await.expect("body"),
    }
}

pub(crate) async fn get(url: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = reqwest::Client::new().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("sent");
    Reply {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        text: response.text().await.expect("body"),
    }
}

pub(crate) fn chat_body(model: &str, messages: Value, stream: bool) -> String {
    json!({"model": model, "messages": messages, "stream": stream, "temperature": 0.2, "tools": []})
        .to_string()
}

fn roles_and_text(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn models_lists_each_tactic_and_unknown_models_and_routes_are_404() {
    let dir = TempDir::new("models");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let forks = fork_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper), ("forks", &forks)]).await;
    let models = get(&format!("{}/v1/models", running.base), &[]).await;
    assert_eq!(models.status, 200);
    let body = models.json();
    assert_eq!(body["object"], "list");
    let ids: Vec<&str> = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| m["id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(ids, ["helper", "forks"]);
    assert_eq!(body["data"][0]["object"], "model");
    let unknown = post(
        &format!("{}/v1/chat/completions", running.base),
        &[],
        &chat_body("nope", json!([{"role": "user", "content": "hi"}]), false),
    )
    .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["error"]["code"], "model_not_found");
    assert!(unknown.json()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("helper, forks"));
    let route = get(&format!("{}/v2/nothing", running.base), &[]).await;
    assert_eq!(route.status, 404);
    assert_eq!(route.json()["error"]["type"], "invalid_request_error");
    assert!(stub.requests().is_empty(), "nothing reached the server");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_conversation_seeds_the_root_dialog_and_keeps_its_session() {
    let dir = TempDir::new("chat");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::text("Paris."));
    let first = post(
        &url,
        &[("thread-id", "conv-1")],
        &chat_body(
            "helper",
            json!([
                {"role": "system", "content": "Answer in one word."},
                {"role": "user", "content": "Capital of France?"}
            ]),
            false,
        ),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let body = first.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "helper");
    assert_eq!(body["choices"][0]["message"]["content"], "Paris.");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["usage"]["total_tokens"].is_u64());
    assert_eq!(first.header("x-lllm-session-id"), Some("conv-1"));
    stub.push(StubReply::text("Rome."));
    let second = post(
        &url,
        &[("thread-id", "conv-1")],
        &chat_body(
            "helper",
            json!([
                {"role": "system", "content": "Answer in one word."},
                {"role": "user", "content": "Capital of France?"},
                {"role": "assistant", "content": "Paris."},
                {"role": "user", "content": "And Italy?"}
            ]),
            false,
        ),
    )
    .await;
    assert_eq!(second.json()["choices"][0]["message"]["content"], "Rome.");
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.header("x-dynamo-session-id"), Some("conv-1"));
    }
    let system = "You help. The client says: Answer in one word.";
    assert_eq!(
        roles_and_text(&requests[0].body),
        [("system", system), ("user", "Capital of France?")]
            .map(|(r, t)| (r.to_owned(), t.to_owned()))
    );
    // The second request extends the first one's prefix: the cache hits.
    assert_eq!(
        roles_and_text(&requests[1].body),
        [
            ("system", system),
            ("user", "Capital of France?"),
            ("assistant", "Paris."),
            ("user", "And Italy?")
        ]
        .map(|(r, t)| (r.to_owned(), t.to_owned()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_session_header_becomes_the_downstream_session_and_unsafe_ids_are_escaped() {
    let dir = TempDir::new("headers");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let body = chat_body("helper", json!([{"role": "user", "content": "hi"}]), false);
    for header in lllm_runtime::serve::SESSION_HEADERS {
        stub.clear_requests();
        for _ in 0..2 {
            stub.push(StubReply::text("ok"));
            let reply = post(&url, &[(header, "id-42")], &body).await;
            assert_eq!(reply.status, 200, "{header}: {}", reply.text);
            assert_eq!(reply.header("x-lllm-session-id"), Some("id-42"), "{header}");
        }
        let sessions: Vec<_> = stub
            .requests()
            .iter()
            .map(|r| r.header("x-dynamo-session-id").map(str::to_owned))
            .collect();
        assert_eq!(
            sessions,
            [Some("id-42".to_owned()), Some("id-42".to_owned())],
            "{header}"
        );
    }
    // Spaces, slashes and colons never go downstream raw.
    stub.clear_requests();
    stub.push(StubReply::text("ok"));
    let reply = post(&url, &[("x-session-id", "team a/b:c")], &body).await;
    assert_eq!(reply.header("x-lllm-session-id"), Some("team~20a~2Fb~3Ac"));
    assert_eq!(
        stub.requests()[0].header("x-dynamo-session-id"),
        Some("team~20a~2Fb~3Ac")
    );
    // A harness's subagent names its parent conversation: the parent header goes downstream.
    stub.clear_requests();
    stub.push(StubReply::text("ok"));
    post(
        &url,
        &[("x-session-id", "sub-1"), ("x-parent-session-id", "lead-1")],
        &body,
    )
    .await;
    let request = &stub.requests()[0];
    assert_eq!(request.header("x-dynamo-session-id"), Some("sub-1"));
    assert_eq!(request.header("x-dynamo-parent-session-id"), Some("lead-1"));
    // No header: a minted id, echoed, is the downstream session.
    stub.clear_requests();
    stub.push(StubReply::text("ok"));
    let reply = post(&url, &[], &body).await;
    let minted = reply
        .header("x-lllm-session-id")
        .expect("echoed")
        .to_owned();
    assert!(!minted.is_empty());
    assert_eq!(
        stub.requests()[0].header("x-dynamo-session-id"),
        Some(minted.as_str())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forks_name_the_conversation_as_parent_or_share_it_under_family() {
    let dir = TempDir::new("forks");
    let stub = StubServer::start().await.expect("stub");
    let own = fork_tactic(&dir, &stub, "own");
    let running = serve(&[("forks", &own)]).await;
    stub.push(StubReply::text("draft"));
    stub.push(StubReply::text("checked"));
    let reply = post(
        &format!("{}/v1/chat/completions", running.base),
        &[("x-claude-code-session-id", "cc-7")],
        &chat_body("forks", json!([{"role": "user", "content": "go"}]), false),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json()["choices"][0]["message"]["content"], "checked");
    let requests = stub.requests();
    assert_eq!(requests[0].header("x-dynamo-session-id"), Some("cc-7"));
    let fork = requests[1]
        .header("x-dynamo-session-id")
        .expect("fork session");
    assert_ne!(fork, "cc-7");
    // Named after the conversation, so that every request of it is recognisable.
    let dialog = fork
        .strip_prefix("cc-7:")
        .expect("the conversation's name first");
    assert!(dialog.parse::<lllm_core::DialogId>().is_ok(), "{fork}");
    assert_eq!(
        requests[1].header("x-dynamo-parent-session-id"),
        Some("cc-7")
    );
    drop(running);

    let dir = TempDir::new("family");
    let family = fork_tactic(&dir, &stub, "family");
    let running = serve(&[("forks", &family)]).await;
    stub.clear_requests();
    stub.push(StubReply::text("draft"));
    stub.push(StubReply::text("checked"));
    post(
        &format!("{}/v1/chat/completions", running.base),
        &[("x-claude-code-session-id", "cc-8")],
        &chat_body("forks", json!([{"role": "user", "content": "go"}]), false),
    )
    .await;
    for request in stub.requests() {
        assert_eq!(request.header("x-dynamo-session-id"), Some("cc-8"));
        assert_eq!(request.header("x-dynamo-parent-session-id"), None);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_chat_sends_chunks_then_done_and_a_failure_is_an_error_event() {
    let dir = TempDir::new("stream");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::sse_text(&["Hel", "lo"]));
    let mut body: Value = serde_json::from_str(&chat_body(
        "helper",
        json!([{"role": "user", "content": "hi"}]),
        true,
    ))
    .expect("json");
    body["stream_options"] = json!({"include_usage": true});
    let reply = post(&url, &[("thread-id", "s-1")], &body.to_string()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("x-lllm-session-id"), Some("s-1"));
    let events = reply.events();
    assert_eq!(events.last().map(|e| e.1.as_str()), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, data)| serde_json::from_str(data).expect("chunk"))
        .collect();
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello");
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("stop")]);
    assert!(chunks.last().expect("usage")["usage"]["total_tokens"].is_u64());
    assert_eq!(stub.requests()[0].body["stream"], true);

    stub.push(StubReply::error(500, "the GPU caught fire"));
    let reply = post(
        &url,
        &[],
        &chat_body("helper", json!([{"role": "user", "content": "hi"}]), true),
    )
    .await;
    assert_eq!(reply.status, 200, "the stream had started");
    let last = reply.events().last().cloned().expect("an event");
    let error: Value = serde_json::from_str(&last.1).expect("error json");
    assert_eq!(error["error"]["type"], "server_error");
    assert!(!reply.text.contains("[DONE]"));

    stub.push(StubReply::error(500, "the GPU caught fire"));
    let reply = post(
        &url,
        &[],
        &chat_body("helper", json!([{"role": "user", "content": "hi"}]), false),
    )
    .await;
    assert_eq!(reply.status, 502);
    assert_eq!(reply.json()["error"]["code"], "run_failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_continue_the_previous_response_and_stream_the_standard_events() {
    let dir = TempDir::new("responses");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    let url = format!("{}/v1/responses", running.base);
    stub.push(StubReply::text("Four."));
    let first = post(
        &url,
        &[],
        &json!({"model": "helper", "input": "2+2?", "instructions": "Be terse."}).to_string(),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let body = first.json();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["output"][0]["content"][0]["text"], "Four.");
    let session = first
        .header("x-lllm-session-id")
        .expect("session")
        .to_owned();
    let id = body["id"].as_str().expect("id").to_owned();
    stub.push(StubReply::sse_text(&["Eig", "ht."]));
    let second = post(
        &url,
        &[],
        &json!({"model": "helper", "input": [{"role": "user", "content": [{"type": "input_text", "text": "Double it?"}]}],
                "previous_response_id": id, "stream": true})
        .to_string(),
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.text);
    let names: Vec<String> = second.events().into_iter().filter_map(|(n, _)| n).collect();
    assert_eq!(names.first().map(String::as_str), Some("response.created"));
    assert_eq!(names.last().map(String::as_str), Some("response.completed"));
    for expected in [
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let events = second.events();
    let completed: Value = serde_json::from_str(&events.last().expect("last").1).expect("json");
    assert_eq!(
        completed["response"]["output"][0]["content"][0]["text"],
        "Eight."
    );
    let numbers: Vec<u64> = events
        .iter()
        .map(|(_, d)| {
            serde_json::from_str::<Value>(d).expect("json")["sequence_number"]
                .as_u64()
                .expect("n")
        })
        .collect();
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
    let requests = stub.requests();
    assert_eq!(
        requests[1].header("x-dynamo-session-id"),
        Some(session.as_str())
    );
    let first_messages = roles_and_text(&requests[0].body);
    let second_messages = roles_and_text(&requests[1].body);
    assert_eq!(second_messages[..2], first_messages[..]);
    assert_eq!(
        second_messages[2],
        ("assistant".to_owned(), "Four.".to_owned())
    );
    assert_eq!(
        second_messages[3],
        ("user".to_owned(), "Double it?".to_owned())
    );
    let missing = post(
        &url,
        &[],
        &json!({"model": "helper", "input": "x", "previous_response_id": "resp_nope"}).to_string(),
    )
    .await;
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.json()["error"]["code"],
        "previous_response_not_found"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_requests_get_openai_errors_and_never_reach_the_server() {
    let dir = TempDir::new("malformed");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve_with(&[("helper", &helper)], |b| b.max_body_bytes(4096)).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let cases = [
        ("{not json".to_owned(), 400),
        (json!({"messages": []}).to_string(), 400),
        (json!({"model": "helper", "messages": "hi"}).to_string(), 400),
        (json!({"model": "helper", "messages": []}).to_string(), 400),
        (json!({"model": "helper", "messages": [{"role": "assistant", "content": "x"}]}).to_string(), 400),
        (json!({"model": "helper", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}).to_string(), 400),
        (json!({"model": "helper", "messages": [{"role": "user", "content": "x".repeat(5000)}]}).to_string(), 413),
    ];
    for (body, status) in cases {
        let reply = post(&url, &[], &body).await;
        assert_eq!(reply.status, status, "{body:.80}: {}", reply.text);
        let error = &reply.json()["error"];
        assert!(
            error["type"].is_string() && error["message"].is_string(),
            "{}",
            reply.text
        );
    }
    let field = post(
        &url,
        &[],
        &json!({"model": "helper", "messages": "hi"}).to_string(),
    )
    .await;
    assert!(field.json()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("messages"));
    assert!(stub.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_key_every_route_needs_it() {
    let dir = TempDir::new("auth");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve_with(&[("helper", &helper)], |b| b.api_key("k-123")).await;
    for (headers, status) in [
        (vec![], 401),
        (vec![("authorization", "Bearer wrong")], 401),
        (vec![("authorization", "k-123")], 401),
        (vec![("authorization", "Bearer k-123")], 200),
    ] {
        let reply = get(&format!("{}/v1/models", running.base), &headers).await;
        assert_eq!(reply.status, status, "{headers:?}");
        assert!(!reply.text.contains("k-123"));
    }
    let reply = get(
        &format!(
            "{}/v1/runs/run_00000000000000000000000000000000",
            running.base
        ),
        &[],
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["error"]["type"], "authentication_error");
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_run_cap_a_request_gets_429_and_one_conversation_runs_in_order() {
    let dir = TempDir::new("cap");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve_with(&[("helper", &helper)], |b| b.max_runs(2)).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let body = chat_body("helper", json!([{"role": "user", "content": "hi"}]), false);
    stub.push(StubReply::text("one").delay(Duration::from_millis(600)));
    stub.push(StubReply::text("two").delay(Duration::from_millis(600)));
    let (a, b) = (url.clone(), body.clone());
    let first = tokio::spawn(async move { post(&a, &[("x-session-id", "same")], &b).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (a, b) = (url.clone(), body.clone());
    let second = tokio::spawn(async move { post(&a, &[("x-session-id", "same")], &b).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = post(&url, &[("x-session-id", "other")], &body).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(first.await.expect("first").status, 200);
    assert_eq!(second.await.expect("second").status, 200);
    assert_eq!(
        stub.most_in_flight(),
        1,
        "the conversation's turns did not overlap"
    );
}

pub(crate) async fn wait_status(base: &str, id: &str, wanted: &str) -> Value {
    let started = Instant::now();
    loop {
        let run = get(&format!("{base}/v1/runs/{id}"), &[]).await.json();
        if run["status"] == wanted {
            return run;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never {wanted}: {run}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_after_a_restart_completes_the_run_and_the_tool_runs_once() {
    let dir = TempDir::new("approval");
    let state = dir.0.join("state");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic(&dir, &stub);
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "did it"}"#,
    )]));
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    let created = post(
        &format!("{}/v1/runs", running.base),
        &[("x-session-id", "ops-1"), ("idempotency-key", "k1")],
        &json!({"model": "worker", "input": "act"}).to_string(),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let waiting = wait_status(&running.base, &id, "requires_action").await;
    assert_eq!(waiting["pending"][0]["id"], "c1");
    assert_eq!(waiting["pending"][0]["tool"], "act");
    // A JSON string, as in the `tool_call` events.
    assert_eq!(waiting["pending"][0]["arguments"], r#"{"line":"did it"}"#);
    // The same key and body: the same run; another body: 409.
    let again = post(
        &format!("{}/v1/runs", running.base),
        &[("idempotency-key", "k1")],
        &json!({"model": "worker", "input": "act"}).to_string(),
    )
    .await;
    assert_eq!(again.json()["id"], id.as_str());
    let conflict = post(
        &format!("{}/v1/runs", running.base),
        &[("idempotency-key", "k1")],
        &json!({"model": "worker", "input": "other"}).to_string(),
    )
    .await;
    assert_eq!(conflict.status, 409);
    drop(running);

    // A new server on the same state: the run still waits, and an approval continues it.
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    let waiting = get(&format!("{}/v1/runs/{id}", running.base), &[])
        .await
        .json();
    assert_eq!(waiting["status"], "requires_action");
    assert_eq!(waiting["pending"][0]["id"], "c1");
    // Where the tool comes from survives the restart (the record keeps it).
    assert_eq!(waiting["pending"][0]["source"], "a command tool");
    stub.push(StubReply::text("done"));
    let approved = post(
        &format!("{}/v1/runs/{id}/approval", running.base),
        &[],
        &json!({"decision": "approve"}).to_string(),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    let done = wait_status(&running.base, &id, "completed").await;
    assert_eq!(done["output"], "done");
    // The console's log: marked as begun by an earlier server, with what this one saw.
    let log = get(&format!("{}/v1/runs/{id}/dialogs", running.base), &[])
        .await
        .json();
    assert_eq!(log["restored"], true, "{log}");
    assert_eq!(log["usage"]["calls"], 1, "{log}");
    assert_eq!(log["tool_calls"][0]["id"], "c1", "{log}");
    assert_eq!(log["tool_calls"][0]["result"], "did it", "{log}");
    let effects = std::fs::read_to_string(dir.0.join("effects.txt")).expect("effects");
    assert_eq!(effects.lines().collect::<Vec<_>>(), ["did it"]);
    // The answered request was not sent again: one request before the pause, one after.
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.header("x-dynamo-session-id"), Some("ops-1"));
    }
    let events = get(&format!("{}/v1/runs/{id}/events", running.base), &[]).await;
    let names: Vec<String> = events.events().into_iter().filter_map(|(n, _)| n).collect();
    assert!(names.contains(&"tool_result".to_owned()), "{names:?}");
    assert_eq!(
        names.last().map(String::as_str),
        Some("status"),
        "{}",
        events.text
    );
    // Resumed after the third event: only the later ones, numbered on.
    let later = get(
        &format!("{}/v1/runs/{id}/events", running.base),
        &[("last-event-id", "3")],
    )
    .await;
    let ids: Vec<u64> = later
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("id: ")?.parse().ok())
        .collect();
    assert!(!ids.is_empty() && ids.iter().all(|&i| i > 3), "{ids:?}");
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let again = post(
        &format!("{}/v1/runs/{id}/approval", running.base),
        &[],
        &json!({"decision": "approve"}).to_string(),
    )
    .await;
    assert_eq!(again.status, 409);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_kills_the_running_tool_and_the_journal_records_it() {
    let dir = TempDir::new("cancel");
    let state = dir.0.join("state");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic(&dir, &stub);
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "sleep"}"#,
    )]));
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    let created = post(
        &format!("{}/v1/runs", running.base),
        &[],
        &json!({"model": "worker", "input": "act"}).to_string(),
    )
    .await;
    let id = created.json()["id"].as_str().expect("id").to_owned();
    wait_status(&running.base, &id, "requires_action").await;
    post(
        &format!("{}/v1/runs/{id}/approval", running.base),
        &[],
        &json!({"decision": "approve", "calls": ["c1"]}).to_string(),
    )
    .await;
    let pid = started_pid(&dir.0.join("pid.txt")).await;
    let cancelled = post(&format!("{}/v1/runs/{id}/cancel", running.base), &[], "").await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    assert_eq!(cancelled.json()["status"], "cancelled");
    gone_within(
        pid,
        Duration::from_secs(2),
        "the tool outlived the cancel by 2 s",
    )
    .await;
    let journal =
        std::fs::read_to_string(state.join("runs").join(format!("{id}.journal"))).expect("journal");
    assert!(
        journal.lines().last().unwrap_or("").contains("cancelled"),
        "{journal}"
    );
    let again = post(&format!("{}/v1/runs/{id}/cancel", running.base), &[], "").await;
    assert_eq!(again.status, 409);
    running.served.cancel_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_goes_away_from_a_stream_cancels_the_run_and_its_tool() {
    let dir = TempDir::new("disconnect");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic_confirming(&dir, &stub, false);
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "sleep"}"#,
    )]));
    let running = serve_with(&[("worker", &worker)], |b| b.max_runs(1)).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let mut response = reqwest::Client::new()
        .post(&url)
        .body(chat_body(
            "worker",
            json!([{"role": "user", "content": "act"}]),
            true,
        ))
        .send()
        .await
        .expect("sent");
    // The role chunk arrives before the tool runs.
    let first = response.chunk().await.expect("a chunk");
    assert!(first.is_some());
    let pid = started_pid(&dir.0.join("pid.txt")).await;
    drop(response);
    gone_within(
        pid,
        Duration::from_secs(2),
        "the tool outlived the client by 2 s",
    )
    .await;
    // Its slot is free again: the next request is served, not refused with 429.
    stub.push(StubReply::text("ok"));
    let mut admitted = false;
    for _ in 0..100 {
        let reply = post(
            &url,
            &[],
            &chat_body("worker", json!([{"role": "user", "content": "hi"}]), false),
        )
        .await;
        if reply.status == 200 {
            admitted = true;
            break;
        }
        assert_eq!(reply.status, 429, "{}", reply.text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(admitted, "the cancelled run kept its slot");
}
