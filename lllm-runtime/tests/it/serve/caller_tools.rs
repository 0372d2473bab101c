//! The caller's tools: an agent with `client_tools: true` is offered a request's function tools,
//! a call of one pauses the run and is handed back (Chat `tool_calls`, Responses `function_call`
//! items), and the caller's next request, carrying the results, continues the paused run so that
//! its next downstream request extends the paused one byte for byte.

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::{json, Value};

use super::{post, serve, Reply};
use crate::support::TempDir;

/// A chat tactic whose agent takes the caller's tools and has its own `act`, which appends its
/// line to `effects.txt`.
fn coder_tactic(dir: &TempDir, server: &StubServer, client_tools: bool) -> std::path::PathBuf {
    let effects = dir.0.join("effects.txt");
    dir.write(
        "coder.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: coder
    system_prompt: You code.
    client_tools: {client_tools}
    tools:
      - name: act
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" | tee -a "$2"', sh, "{{{{ line }}}}", "{effects}"]
"#,
            api = server.base_url(),
            effects = effects.display(),
        ),
    )
}

fn shell_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "shell",
        "description": "Runs a command on the caller's machine",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
    }})
}

fn chat(messages: Value, tools: Value) -> String {
    json!({"model": "coder", "messages": messages, "tools": tools}).to_string()
}

fn messages(request: &RecordedRequest) -> &Vec<Value> {
    request.body["messages"].as_array().expect("messages")
}

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `next` starts with every message of `paused`, byte for byte, then the answer that made the
/// calls and one tool message per call, in call order, with these contents.
fn assert_continues(paused: &RecordedRequest, next: &RecordedRequest, results: &[(&str, &str)]) {
    let (paused, next) = (messages(paused), messages(next));
    assert_eq!(next.len(), paused.len() + 1 + results.len(), "{next:#?}");
    assert_eq!(
        next[..paused.len()],
        paused[..],
        "the paused prefix is kept"
    );
    assert_eq!(next[paused.len()]["role"], "assistant");
    for (k, (call, content)) in results.iter().enumerate() {
        let message = &next[paused.len() + 1 + k];
        assert_eq!(message["role"], "tool");
        assert_eq!(message["tool_call_id"], *call);
        assert_eq!(message["content"], *content);
    }
}

/// Posts `body` to `url` and asserts the server answered it (200).
async fn answered(url: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let reply = post(url, headers, body).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply
}

/// Posts `body` to `url` and asserts the server refused it (400).
async fn refused(url: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let reply = post(url, headers, body).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    reply
}

fn handed_calls(reply: &Reply) -> Vec<(String, String, Value)> {
    let body = reply.json();
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls", "{body}");
    body["choices"][0]["message"]["tool_calls"]
        .as_array()
        .expect("tool_calls")
        .iter()
        .map(|c| {
            assert_eq!(c["type"], "function");
            let arguments = c["function"]["arguments"].as_str().expect("arguments text");
            (
                c["id"].as_str().expect("id").to_owned(),
                c["function"]["name"].as_str().expect("name").to_owned(),
                serde_json::from_str(arguments).expect("arguments JSON"),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_callers_tool_call_is_handed_back_and_its_result_continues_the_paused_request() {
    let dir = TempDir::new("caller-tools-chat");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::tool_calls(&[(
        "call_1",
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    stub.push(StubReply::text("There is a.txt."));
    let question = json!({"role": "user", "content": "What files are there?"});
    let reply = answered(&url, &[], &chat(json!([question]), json!([shell_tool()]))).await;
    let calls = handed_calls(&reply);
    assert_eq!(
        calls,
        vec![("call_1".into(), "shell".into(), json!({"cmd": "ls"}))]
    );
    let session = reply
        .header("x-lllm-session-id")
        .expect("session")
        .to_owned();
    // Offered downstream beside the agent's own tool.
    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(tool_names(&requests[0]), ["act", "shell"]);
    // The caller ran it; its next request, as a stateless client sends it, carries the result.
    let assistant = reply.json()["choices"][0]["message"].clone();
    let result = json!({"role": "tool", "tool_call_id": "call_1", "content": "a.txt"});
    let body = chat(json!([question, assistant, result]), json!([shell_tool()]));
    let reply = answered(&url, &[], &body).await;
    let answer = reply.json();
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "There is a.txt."
    );
    assert_eq!(reply.header("x-lllm-session-id"), Some(session.as_str()));
    let requests = stub.requests();
    assert_eq!(requests.len(), 2, "nothing answered is sent again");
    assert_continues(&requests[0], &requests[1], &[("call_1", "a.txt")]);
    for request in &requests {
        assert_eq!(
            request.header("x-dynamo-session-id"),
            Some(session.as_str())
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn own_tools_of_the_same_answer_run_first_and_parallel_calls_are_handed_together() {
    let dir = TempDir::new("caller-tools-parallel");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::tool_calls(&[
        ("c1", "shell", r#"{"cmd": "ls"}"#),
        ("c2", "act", r#"{"line": "own"}"#),
        ("c3", "shell", r#"{"cmd": "pwd"}"#),
    ]));
    stub.push(StubReply::text("Done."));
    let question = json!({"role": "user", "content": "Go."});
    let reply = answered(
        &url,
        &[("session-id", "par-1")],
        &chat(json!([question]), json!([shell_tool()])),
    )
    .await;
    let ids: Vec<String> = handed_calls(&reply).into_iter().map(|c| c.0).collect();
    assert_eq!(ids, ["c1", "c3"]);
    // The tactic's own call ran before the run paused.
    let effects = std::fs::read_to_string(dir.0.join("effects.txt")).expect("act ran");
    assert_eq!(effects, "own\n");
    let assistant = reply.json()["choices"][0]["message"].clone();
    let body = chat(
        json!([
            question,
            assistant,
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
            {"role": "tool", "tool_call_id": "c3", "content": "/home"}
        ]),
        json!([shell_tool()]),
    );
    let reply = answered(&url, &[("session-id", "par-1")], &body).await;
    assert_eq!(reply.json()["choices"][0]["message"]["content"], "Done.");
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    assert_continues(
        &requests[0],
        &requests[1],
        &[("c1", "a.txt"), ("c2", "own"), ("c3", "/home")],
    );
    // The own tool ran once: the continuation answered it from the journal.
    let effects = std::fs::read_to_string(dir.0.join("effects.txt")).expect("effects");
    assert_eq!(effects, "own\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_hand_function_calls_and_continue_with_their_outputs() {
    let dir = TempDir::new("caller-tools-responses");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/responses", running.base);
    let tool = json!({"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}});
    for (turn, previous) in [(1, true), (2, false)] {
        let call = format!("call_r{turn}");
        stub.push(StubReply::tool_calls(&[(
            &call,
            "shell",
            r#"{"cmd": "ls"}"#,
        )]));
        stub.push(StubReply::text("Listed."));
        let thread = format!("thread-{turn}");
        let headers = [("thread-id", thread.as_str())];
        let user = json!({"role": "user", "content": "List."});
        let body = json!({"model": "coder", "input": [user], "tools": [tool]});
        let reply = answered(&url, &headers, &body.to_string()).await;
        let paused = reply.json();
        assert_eq!(paused["status"], "completed");
        let item = &paused["output"][0];
        assert_eq!(
            (
                &item["type"],
                &item["call_id"],
                &item["name"],
                &item["status"]
            ),
            (
                &json!("function_call"),
                &json!(call),
                &json!("shell"),
                &json!("completed")
            )
        );
        let output = json!({"type": "function_call_output", "call_id": call, "output": "a.txt"});
        let body = if previous {
            json!({"model": "coder", "input": [output], "previous_response_id": paused["id"], "tools": [tool]})
        } else {
            json!({"model": "coder", "input": [user, item, output], "tools": [tool]})
        };
        let reply = answered(&url, &headers, &body.to_string()).await;
        let done = reply.json();
        assert_eq!(done["output"][0]["content"][0]["text"], "Listed.", "{done}");
        let requests = stub.requests();
        let n = requests.len();
        assert_continues(&requests[n - 2], &requests[n - 1], &[(&call, "a.txt")]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clash_with_an_own_tool_and_an_unknown_call_id_are_refused() {
    let dir = TempDir::new("caller-tools-refused");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let question = json!({"role": "user", "content": "Go."});
    let clash = json!([{"type": "function", "function": {"name": "act", "parameters": {"type": "object"}}}]);
    let reply = refused(&url, &[], &chat(json!([question]), clash)).await;
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        message.contains("`act`") && message.contains("coder"),
        "{message}"
    );
    // A paused run in one conversation; results for its call from another conversation, and for
    // a call never made, are unknown.
    stub.push(StubReply::tool_calls(&[(
        "call_9",
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    stub.push(StubReply::text("Fine."));
    let reply = answered(
        &url,
        &[("session-id", "mine")],
        &chat(json!([question]), json!([shell_tool()])),
    )
    .await;
    let assistant = reply.json()["choices"][0]["message"].clone();
    let with_result = |id: &str| {
        chat(
            json!([question, assistant, {"role": "tool", "tool_call_id": id, "content": "x"}]),
            json!([shell_tool()]),
        )
    };
    for (session, id) in [("other", "call_9"), ("mine", "call_404")] {
        let reply = refused(&url, &[("session-id", session)], &with_result(id)).await;
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert!(message.contains(id), "{message}");
    }
    assert_eq!(stub.requests().len(), 1, "a refused result sends nothing");
    // The right conversation's result still continues it.
    let reply = answered(&url, &[("session-id", "mine")], &with_result("call_9")).await;
    assert_eq!(reply.json()["choices"][0]["message"]["content"], "Fine.");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_an_agent_that_takes_them_a_requests_tools_are_ignored() {
    let dir = TempDir::new("caller-tools-ignored");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, false);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::text("Hi."));
    let question = json!({"role": "user", "content": "Go."});
    let clash = json!([shell_tool(), {"type": "function", "function": {"name": "act"}}]);
    answered(&url, &[], &chat(json!([question]), clash)).await;
    assert_eq!(tool_names(&stub.requests()[0]), ["act"]);
}

/// The `data` of each event of an SSE reply, as JSON (`[DONE]` left out).
fn event_data(reply: &Reply) -> Vec<(Option<String>, Value)> {
    reply
        .events()
        .into_iter()
        .filter(|(_, data)| data != "[DONE]")
        .map(|(name, data)| (name, serde_json::from_str(&data).expect("JSON event")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_chat_hands_tool_call_deltas_and_a_streamed_continuation_answers() {
    let dir = TempDir::new("caller-tools-chat-stream");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::tool_calls(&[
        ("s1", "shell", r#"{"cmd": "ls"}"#),
        ("s2", "shell", r#"{"cmd": "pwd"}"#),
    ]));
    stub.push(StubReply::text("Both ran."));
    let question = json!({"role": "user", "content": "Go."});
    let body =
        json!({"model": "coder", "messages": [question], "tools": [shell_tool()], "stream": true});
    let reply = answered(&url, &[], &body.to_string()).await;
    assert!(
        reply.text.trim_end().ends_with("data: [DONE]"),
        "{}",
        reply.text
    );
    let chunks = event_data(&reply);
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|(_, c)| c["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
        .collect();
    let handed: Vec<(u64, &str, &str, Value)> = calls
        .iter()
        .map(|c| {
            (
                c["index"].as_u64().expect("index"),
                c["id"].as_str().expect("id"),
                c["function"]["name"].as_str().expect("name"),
                serde_json::from_str(c["function"]["arguments"].as_str().expect("text"))
                    .expect("JSON"),
            )
        })
        .collect();
    assert_eq!(
        handed,
        vec![
            (0, "s1", "shell", json!({"cmd": "ls"})),
            (1, "s2", "shell", json!({"cmd": "pwd"}))
        ]
    );
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|(_, c)| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("tool_calls")]);
    let assistant = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "s1", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"ls\"}"}},
        {"id": "s2", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"pwd\"}"}}
    ]});
    let body = json!({"model": "coder", "stream": true, "tools": [shell_tool()], "messages": [
        question, assistant,
        {"role": "tool", "tool_call_id": "s1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "s2", "content": "/home"}
    ]});
    let reply = answered(&url, &[], &body.to_string()).await;
    let text: String = event_data(&reply)
        .iter()
        .filter_map(|(_, c)| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "Both ran.");
    let requests = stub.requests();
    assert_continues(
        &requests[0],
        &requests[1],
        &[("s1", "a.txt"), ("s2", "/home")],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_responses_hand_function_call_items_and_continue_from_the_completed_id() {
    let dir = TempDir::new("caller-tools-responses-stream");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/responses", running.base);
    let tool = json!({"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}});
    stub.push(StubReply::tool_calls(&[(
        "f1",
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    stub.push(StubReply::text("Listed."));
    let body = json!({"model": "coder", "input": "List.", "tools": [tool], "stream": true});
    let reply = answered(&url, &[], &body.to_string()).await;
    let events = event_data(&reply);
    let names: Vec<&str> = events.iter().filter_map(|(n, _)| n.as_deref()).collect();
    for name in [
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let done: Vec<&Value> = events
        .iter()
        .filter(|(n, d)| {
            n.as_deref() == Some("response.output_item.done")
                && d["item"]["type"] == "function_call"
        })
        .map(|(_, d)| &d["item"])
        .collect();
    assert_eq!(done.len(), 1);
    assert_eq!(
        (&done[0]["call_id"], &done[0]["status"]),
        (&json!("f1"), &json!("completed"))
    );
    let completed = &events.last().expect("events").1;
    assert_eq!(completed["type"], "response.completed");
    let output = completed["response"]["output"].as_array().expect("output");
    assert_eq!(
        output.last(),
        Some(done[0]),
        "the completed response holds the call as streamed"
    );
    let id = completed["response"]["id"].as_str().expect("id");
    let output = json!({"type": "function_call_output", "call_id": "f1", "output": "a.txt"});
    let body = json!({"model": "coder", "input": [output], "previous_response_id": id, "tools": [tool], "stream": true});
    let reply = answered(&url, &[], &body.to_string()).await;
    let text: String = event_data(&reply)
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("response.output_text.delta"))
        .filter_map(|(_, d)| d["delta"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "Listed.");
    let requests = stub.requests();
    assert_continues(&requests[0], &requests[1], &[("f1", "a.txt")]);
}

/// Files of the paused runs' folder under `state`.
fn handed_files(state: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(state.join("handed"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

async fn pause_one(url: &str, stub: &StubServer, session: &str, call: &str) -> Value {
    stub.push(StubReply::tool_calls(&[(
        call,
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    let question = json!({"role": "user", "content": format!("Go {session}.")});
    let reply = answered(
        url,
        &[("session-id", session)],
        &chat(json!([question]), json!([shell_tool()])),
    )
    .await;
    json!([question, reply.json()["choices"][0]["message"]])
}

fn with_result(history: &Value, call: &str, content: &str) -> String {
    let mut messages = history.as_array().expect("history").clone();
    messages.push(json!({"role": "tool", "tool_call_id": call, "content": content}));
    chat(json!(messages), json!([shell_tool()]))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_restarted_between_the_two_requests_continues_the_paused_run() {
    let dir = TempDir::new("caller-tools-restart");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let state = dir.0.join("state");
    let history = {
        let running = super::serve_with(&[("coder", &coder)], |b| b.state_dir(&state)).await;
        let url = format!("{}/v1/chat/completions", running.base);
        pause_one(&url, &stub, "restart-1", "call_r").await
    };
    assert_eq!(handed_files(&state).len(), 2, "a journal and its record");
    let running = super::serve_with(&[("coder", &coder)], |b| b.state_dir(&state)).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::text("After the restart."));
    let body = with_result(&history, "call_r", "a.txt");
    let reply = answered(&url, &[("session-id", "restart-1")], &body).await;
    assert_eq!(
        reply.json()["choices"][0]["message"]["content"],
        "After the restart."
    );
    let requests = stub.requests();
    assert_eq!(requests.len(), 2, "the answered request is not sent again");
    assert_continues(&requests[0], &requests[1], &[("call_r", "a.txt")]);
    assert!(
        handed_files(&state).is_empty(),
        "the answered run's files are removed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn paused_runs_are_bounded_in_count_and_time_and_forgotten_ones_leave_no_file() {
    let dir = TempDir::new("caller-tools-bounds");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let state = dir.0.join("state");
    let running = super::serve_with(&[("coder", &coder)], |b| {
        b.state_dir(&state)
            .paused_runs(2, std::time::Duration::from_secs(3600))
    })
    .await;
    let url = format!("{}/v1/chat/completions", running.base);
    let mut histories = Vec::new();
    for n in 0..3 {
        histories.push(pause_one(&url, &stub, &format!("b{n}"), &format!("call_b{n}")).await);
    }
    assert_eq!(
        handed_files(&state).len(),
        4,
        "two runs held, each a journal and a record"
    );
    let reply = post(
        &url,
        &[("session-id", "b0")],
        &with_result(&histories[0], "call_b0", "x"),
    )
    .await;
    assert_eq!(
        reply.status, 400,
        "the oldest was forgotten: {}",
        reply.text
    );
    stub.push(StubReply::text("Still here."));
    answered(
        &url,
        &[("session-id", "b2")],
        &with_result(&histories[2], "call_b2", "x"),
    )
    .await;
    drop(running);
    // A caller that never comes back: kept no time at all, the pause is forgotten at once.
    let state = dir.0.join("state-never");
    let running = super::serve_with(&[("coder", &coder)], |b| {
        b.state_dir(&state)
            .paused_runs(2, std::time::Duration::ZERO)
    })
    .await;
    let url = format!("{}/v1/chat/completions", running.base);
    let history = pause_one(&url, &stub, "gone", "call_g").await;
    assert!(
        handed_files(&state).is_empty(),
        "{:?}",
        handed_files(&state)
    );
    refused(
        &url,
        &[("session-id", "gone")],
        &with_result(&history, "call_g", "x"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_results_sent_many_times_at_once_continue_the_run_once() {
    let dir = TempDir::new("caller-tools-race");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let history = pause_one(&url, &stub, "race", "call_once").await;
    stub.push(StubReply::text("Once."));
    let body = with_result(&history, "call_once", "x");
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let sends = (0..8).map(|_| {
        let (url, body, barrier) = (url.clone(), body.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            post(&url, &[("session-id", "race")], &body).await.status
        })
    });
    let mut statuses: Vec<u16> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|s| s.expect("joined"))
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 400, 400, 400, 400, 400, 400, 400]);
    assert_eq!(stub.requests().len(), 2, "the continuation ran once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_that_goes_away_from_a_continuation_cancels_it_and_its_journal_goes() {
    let dir = TempDir::new("caller-tools-away");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let state = dir.0.join("state");
    let running = super::serve_with(&[("coder", &coder)], |b| b.state_dir(&state)).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let history = pause_one(&url, &stub, "away", "call_a").await;
    // The continued run's request is answered long after the client left.
    stub.push(StubReply::text("too late").delay(std::time::Duration::from_secs(60)));
    let mut body: Value =
        serde_json::from_str(&with_result(&history, "call_a", "x")).expect("body");
    body["stream"] = true.into();
    let mut response = reqwest::Client::new()
        .post(&url)
        .header("session-id", "away")
        .body(body.to_string())
        .send()
        .await
        .expect("sent");
    assert!(response.chunk().await.expect("a chunk").is_some());
    drop(response);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !handed_files(&state).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        handed_files(&state).is_empty(),
        "the cancelled run's journal outlived its client by 10 s: {:?}",
        handed_files(&state)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_that_calls_the_callers_tools_twice_pauses_twice_and_each_request_extends_the_last()
{
    let dir = TempDir::new("caller-tools-twice");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let mut history: Vec<Value> = pause_one(&url, &stub, "twice", "call_t1")
        .await
        .as_array()
        .expect("history")
        .clone();
    stub.push(StubReply::tool_calls(&[(
        "call_t2",
        "shell",
        r#"{"cmd": "pwd"}"#,
    )]));
    stub.push(StubReply::text("Two rounds."));
    for (call, result, last) in [("call_t1", "a.txt", false), ("call_t2", "/home", true)] {
        let body = with_result(&json!(history), call, result);
        let reply = answered(&url, &[("session-id", "twice")], &body).await;
        let answer = reply.json();
        let finish = &answer["choices"][0]["finish_reason"];
        assert_eq!(finish, if last { "stop" } else { "tool_calls" }, "{answer}");
        history = serde_json::from_str::<Value>(&body).expect("body")["messages"]
            .as_array()
            .expect("messages")
            .clone();
        history.push(answer["choices"][0]["message"].clone());
    }
    let requests = stub.requests();
    assert_eq!(requests.len(), 3, "nothing answered is sent again");
    assert_continues(&requests[0], &requests[1], &[("call_t1", "a.txt")]);
    assert_continues(&requests[1], &requests[2], &[("call_t2", "/home")]);
}

/// `next` starts with every message of `paused`, byte for byte, then the answer that made the
/// call, a tool message answering it "not run", and the caller's new user message `text`.
fn assert_moved_on(paused: &RecordedRequest, next: &RecordedRequest, call: &str, text: &str) {
    let (paused, next) = (messages(paused), messages(next));
    assert_eq!(next.len(), paused.len() + 3, "{next:#?}");
    assert_eq!(
        next[..paused.len()],
        paused[..],
        "the paused prefix is kept"
    );
    let called = &next[paused.len()];
    assert_eq!(called["role"], "assistant");
    assert_eq!(called["tool_calls"][0]["id"], call);
    let answered = &next[paused.len() + 1];
    assert_eq!(
        (&answered["role"], &answered["tool_call_id"]),
        (&json!("tool"), &json!(call))
    );
    let content = answered["content"].as_str().expect("tool content");
    assert!(content.contains("not run"), "{content}");
    assert_eq!(
        next[paused.len() + 2],
        json!({"role": "user", "content": text})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_user_message_instead_of_results_answers_the_calls_not_run_and_goes_on_in_the_paused_run(
) {
    let dir = TempDir::new("caller-tools-moved-on");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::tool_calls(&[(
        "m1",
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    stub.push(StubReply::text("Hello."));
    let question = json!({"role": "user", "content": "What files are there?"});
    let reply = answered(&url, &[], &chat(json!([question]), json!([shell_tool()]))).await;
    let session = reply
        .header("x-lllm-session-id")
        .expect("session")
        .to_owned();
    // A stateless client sends its history with the hand-back, and a new message: no results.
    let assistant = reply.json()["choices"][0]["message"].clone();
    let moved = json!({"role": "user", "content": "Never mind: say hello."});
    let body = chat(json!([question, assistant, moved]), json!([shell_tool()]));
    let reply = answered(&url, &[], &body).await;
    assert_eq!(reply.json()["choices"][0]["message"]["content"], "Hello.");
    assert_eq!(reply.header("x-lllm-session-id"), Some(session.as_str()));
    let requests = stub.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_moved_on(&requests[0], &requests[1], "m1", "Never mind: say hello.");
    for request in &requests {
        assert_eq!(
            request.header("x-dynamo-session-id"),
            Some(session.as_str())
        );
    }
    // The same dialog: the continued request carries the paused one's dialog id.
    assert_eq!(
        requests[0].header("x-dynamo-dialog-id"),
        requests[1].header("x-dynamo-dialog-id")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_and_streamed_chat_with_a_new_message_instead_of_outputs_go_on_in_the_paused_run()
{
    let dir = TempDir::new("caller-tools-moved-on-responses");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    // Responses, continued by `previous_response_id`.
    let url = format!("{}/v1/responses", running.base);
    let tool = json!({"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}});
    stub.push(StubReply::tool_calls(&[(
        "r1",
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    stub.push(StubReply::text("Hi."));
    let body = json!({"model": "coder", "input": "List.", "tools": [tool]});
    let reply = answered(&url, &[], &body.to_string()).await;
    let paused = reply.json();
    let session = reply
        .header("x-lllm-session-id")
        .expect("session")
        .to_owned();
    let body = json!({"model": "coder", "input": "Say hi instead.", "previous_response_id": paused["id"], "tools": [tool]});
    let reply = answered(&url, &[], &body.to_string()).await;
    assert_eq!(reply.json()["output"][0]["content"][0]["text"], "Hi.");
    assert_eq!(reply.header("x-lllm-session-id"), Some(session.as_str()));
    let requests = stub.requests();
    assert_moved_on(&requests[0], &requests[1], "r1", "Say hi instead.");
    // Chat, streamed, its conversation named by a header.
    let url = format!("{}/v1/chat/completions", running.base);
    stub.push(StubReply::tool_calls(&[(
        "s1",
        "shell",
        r#"{"cmd": "ls"}"#,
    )]));
    stub.push(StubReply::text("Streamed hi."));
    let headers = [("session-id", "moved-on-stream")];
    let first = json!({"model": "coder", "stream": true, "tools": [shell_tool()],
        "messages": [{"role": "user", "content": "Go."}]});
    let reply = post(&url, &headers, &first.to_string()).await;
    assert!(reply.text.contains("tool_calls"), "{}", reply.text);
    let next = json!({"model": "coder", "stream": true, "tools": [shell_tool()],
        "messages": [{"role": "user", "content": "Stop; say hi."}]});
    let reply = post(&url, &headers, &next.to_string()).await;
    let text: String = event_data(&reply)
        .iter()
        .filter_map(|(_, c)| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "Streamed hi.");
    let requests = stub.requests();
    assert_moved_on(&requests[2], &requests[3], "s1", "Stop; say hi.");
    assert_eq!(
        requests[3].header("x-dynamo-session-id"),
        Some("moved-on-stream")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hand_back_reports_the_runs_usage_so_far_and_the_text_beside_the_calls() {
    let dir = TempDir::new("caller-tools-usage");
    let stub = StubServer::start().await.expect("stub");
    let coder = coder_tactic(&dir, &stub, true);
    let running = serve(&[("coder", &coder)]).await;
    let call = json!({"id": "u1", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\": \"ls\"}"}});
    // The tactic's own tool first (one request), then the caller's with text beside it.
    stub.push(StubReply::tool_calls(&[("own", "act", r#"{"line": "x"}"#)]));
    stub.push(StubReply::completion(
        json!({"role": "assistant", "content": "Let me look.", "tool_calls": [call]}),
    ));
    let url = format!("{}/v1/chat/completions", running.base);
    let question = json!({"role": "user", "content": "Look."});
    let reply = answered(&url, &[], &chat(json!([question]), json!([shell_tool()]))).await;
    let body = reply.json();
    assert_eq!(body["choices"][0]["message"]["content"], "Let me look.");
    // The stub reports 11 prompt and 3 completion tokens per request: two requests made.
    let usage = &body["usage"];
    assert_eq!(
        (
            &usage["prompt_tokens"],
            &usage["completion_tokens"],
            &usage["total_tokens"]
        ),
        (&json!(22), &json!(6), &json!(28)),
        "{body}"
    );
    // Responses: the text as a message item before the call, the usage in its shape.
    stub.push(StubReply::completion(
        json!({"role": "assistant", "content": "Checking.", "tool_calls": [call]}),
    ));
    let url = format!("{}/v1/responses", running.base);
    let tool = json!({"type": "function", "name": "shell", "parameters": {"type": "object"}});
    let body = json!({"model": "coder", "input": "Check.", "tools": [tool]});
    let reply = answered(&url, &[], &body.to_string()).await;
    let body = reply.json();
    assert_eq!(body["output"][0]["type"], "message", "{body}");
    assert_eq!(body["output"][0]["content"][0]["text"], "Checking.");
    assert_eq!(body["output"][1]["type"], "function_call");
    assert_eq!(
        (
            &body["usage"]["input_tokens"],
            &body["usage"]["output_tokens"]
        ),
        (&json!(11), &json!(3))
    );
}
