//! What the console reads and how its pages are guarded, over HTTP against the recording stub: the
//! run list (and its stream), a run's dialog tree with the sessions the server received, model
//! calls in a run's events, the page's files and headers, the key as a browser sends it, and
//! requests a foreign page or a rebound host name would make. The browser itself drives the page
//! in `lllm-cli/tests/it/console.rs`.

use std::time::{Duration, Instant};

use base64::Engine as _;
use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use crate::serve::{
    chat_body, fork_tactic, get, post, serve, serve_with, tool_tactic, wait_status,
};
use crate::support::TempDir;

fn cached_answer(text: &str, prompt: u64, cached: u64) -> StubReply {
    StubReply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "stub",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": prompt, "completion_tokens": 4, "total_tokens": prompt + 4,
                         "prompt_tokens_details": {"cached_tokens": cached}}}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_dialogs_are_a_tree_with_the_sessions_the_server_received_and_their_tokens() {
    let dir = TempDir::new("console-tree");
    let stub = StubServer::start().await.expect("stub");
    let forks = fork_tactic(&dir, &stub, "own");
    let running = serve(&[("forks", &forks)]).await;
    stub.push(cached_answer("draft", 100, 0));
    stub.push(cached_answer("checked", 120, 96));
    let created = post(
        &format!("{}/v1/runs", running.base),
        &[("x-session-id", "conv-1")],
        &json!({"model": "forks", "input": "go"}).to_string(),
    )
    .await;
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let run = wait_status(&running.base, &id, "completed").await;
    assert_eq!(
        run["usage"],
        json!({"calls": 2, "prompt_tokens": 220, "completion_tokens": 8, "cached_tokens": 96})
    );
    let log = get(&format!("{}/v1/runs/{id}/dialogs", running.base), &[])
        .await
        .json();
    let dialogs = log["dialogs"].as_array().expect("dialogs");
    assert_eq!(dialogs.len(), 2, "{log}");
    let received: Vec<String> = stub
        .requests()
        .iter()
        .map(|r| {
            r.header("x-dynamo-session-id")
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let (root, fork) = (&dialogs[0], &dialogs[1]);
    assert_eq!(root["session_id"], "conv-1");
    assert_eq!(root["alias"], "main");
    assert_eq!(root["parent"], Value::Null);
    assert_eq!(fork["alias"], "check");
    assert_eq!(fork["parent"], root["id"]);
    assert_eq!(fork["parent_session_id"], "conv-1");
    assert_eq!(
        [&root["session_id"], &fork["session_id"]],
        [&json!(received[0]), &json!(received[1])]
    );
    let call = &fork["calls"][0];
    assert_eq!(
        (
            &call["prompt_tokens"],
            &call["cached_tokens"],
            &call["tier"]
        ),
        (&json!(120), &json!(96), &json!(0))
    );
    // The run's events carry the same calls.
    let events = get(&format!("{}/v1/runs/{id}/events", running.base), &[]).await;
    let calls: Vec<Value> = events
        .events()
        .into_iter()
        .filter(|(name, _)| name.as_deref() == Some("model_call"))
        .map(|(_, data)| serde_json::from_str(&data).expect("json"))
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1]["session_id"], json!(received[1]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_list_holds_every_kind_of_run_and_its_stream_sends_the_list_again_as_runs_change() {
    let dir = TempDir::new("console-list");
    let stub = StubServer::start().await.expect("stub");
    let forks = fork_tactic(&dir, &stub, "own");
    let running = serve(&[("forks", &forks)]).await;
    let stream = reqwest::Client::new()
        .get(format!("{}/v1/runs?stream=true", running.base))
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), 200);
    let mut stream = stream;
    let first = next_list(&mut stream).await;
    assert_eq!(first, json!([]));
    stub.push(StubReply::text("draft"));
    stub.push(StubReply::text("checked"));
    let reply = post(
        &format!("{}/v1/chat/completions", running.base),
        &[],
        &chat_body("forks", json!([{"role": "user", "content": "go"}]), false),
    )
    .await;
    assert_eq!(reply.status, 200);
    // The stream sends the list again until the chat's run shows completed, without being asked.
    let started = Instant::now();
    loop {
        let runs = next_list(&mut stream).await;
        if runs[0]["status"] == "completed" {
            assert_eq!(runs[0]["source"], "chat.completions");
            assert_eq!(runs[0]["usage"]["calls"], 2);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{runs}");
    }
    let list = get(&format!("{}/v1/runs?limit=1", running.base), &[]).await;
    assert_eq!(list.json()["data"].as_array().map(Vec::len), Some(1));
    for bad in ["limit=0", "limit=1001", "limit=x", "stream=maybe", "what=1"] {
        let reply = get(&format!("{}/v1/runs?{bad}", running.base), &[]).await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text);
        assert_eq!(reply.json()["error"]["type"], "invalid_request_error");
    }
}

/// The data of the next `runs` event of a list stream.
async fn next_list(stream: &mut reqwest::Response) -> Value {
    let mut text = String::new();
    loop {
        if let Some(end) = text.find("\n\n") {
            let block = text[..end].to_owned();
            text.drain(..end + 2);
            if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                return serde_json::from_str::<Value>(data).expect("json")["data"].clone();
            }
            continue;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .expect("an event within 10 s")
            .expect("bytes")
            .expect("open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_is_three_embedded_files_under_a_policy_that_runs_no_inline_script() {
    let dir = TempDir::new("console-files");
    let stub = StubServer::start().await.expect("stub");
    let forks = fork_tactic(&dir, &stub, "own");
    let running = serve(&[("forks", &forks)]).await;
    for (path, kind, holds) in [
        ("/", "text/html", "/console/app.js"),
        ("/console/app.js", "text/javascript", "textContent"),
        ("/console/style.css", "text/css", ".dialog"),
    ] {
        let reply = get(&format!("{}{path}", running.base), &[]).await;
        assert_eq!(reply.status, 200, "{path}");
        assert!(reply
            .header("content-type")
            .is_some_and(|t| t.starts_with(kind)));
        assert!(reply.text.contains(holds), "{path}");
        let policy = reply.header("content-security-policy").expect("policy");
        assert!(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"));
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    }
    // Nothing is fetched from elsewhere, and the script never writes markup.
    let page = get(&format!("{}/", running.base), &[]).await.text;
    let script = get(&format!("{}/console/app.js", running.base), &[])
        .await
        .text;
    for text in [&page, &script] {
        assert!(!text.contains("http://") && !text.contains("https://"));
    }
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!script.contains(sink), "{sink}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_key_a_browser_gets_a_password_prompt_and_the_key_as_password_opens_everything() {
    let dir = TempDir::new("console-key");
    let stub = StubServer::start().await.expect("stub");
    let forks = fork_tactic(&dir, &stub, "own");
    let running = serve_with(&[("forks", &forks)], |b| b.api_key("k-123")).await;
    // Bearer for clients; Basic too, for a browser, when asked by address or localhost.
    let challenges = |reply: &crate::serve::Reply| -> Vec<String> {
        reply
            .headers
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(|v| v.split(' ').next().unwrap_or_default().to_owned())
            .collect()
    };
    for path in ["/", "/v1/runs"] {
        let reply = get(&format!("{}{path}", running.base), &[]).await;
        assert_eq!(reply.status, 401);
        assert_eq!(challenges(&reply), ["Bearer", "Basic"], "{path}");
        assert!(!reply.text.contains("k-123"));
    }
    let rebound = get(
        &format!("{}/", running.base),
        &[("host", "evil.example:8642")],
    )
    .await;
    assert_eq!(rebound.status, 401);
    assert_eq!(challenges(&rebound), ["Bearer"]);
    let basic = |credentials: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(credentials)
        )
    };
    for (credentials, status) in [
        ("me:k-123", 200),
        (":k-123", 200),
        ("me:k-12", 401),
        ("k-123", 401),
    ] {
        let header = basic(credentials);
        for path in ["/", "/v1/runs", "/console/app.js"] {
            let reply = get(
                &format!("{}{path}", running.base),
                &[("authorization", &header)],
            )
            .await;
            assert_eq!(reply.status, status, "{credentials} {path}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_page_cannot_start_approve_or_cancel_and_a_rebound_name_gets_nothing() {
    let dir = TempDir::new("console-origin");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    let host = running.base.trim_start_matches("http://").to_owned();
    let body = json!({"model": "worker", "input": "act"}).to_string();
    let url = format!("{}/v1/runs", running.base);
    for headers in [
        vec![("origin", "http://evil.example")],
        vec![("origin", "null")],
        vec![("sec-fetch-site", "cross-site")],
        vec![("origin", "http://127.0.0.1:1")],
    ] {
        let reply = post(&url, &headers, &body).await;
        assert_eq!(reply.status, 403, "{headers:?}: {}", reply.text);
        assert_eq!(reply.json()["error"]["code"], "cross_origin");
    }
    assert!(
        stub.requests().is_empty(),
        "a refused request reached the model"
    );
    // A DNS name pointed at 127.0.0.1 by someone else's server: no page, no runs.
    let rebound = [("host", "evil.example:8642")];
    for path in ["/", "/v1/runs"] {
        let reply = get(&format!("{}{path}", running.base), &rebound).await;
        assert_eq!(reply.status, 403, "{path}");
    }
    // The console's own requests, and clients that are no browser, go through.
    stub.push(StubReply::tool_calls(&[("c1", "act", r#"{"line": "x"}"#)]));
    let own = format!("http://{host}");
    let created = post(
        &url,
        &[("origin", own.as_str()), ("sec-fetch-site", "same-origin")],
        &body,
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let waiting = wait_status(&running.base, &id, "requires_action").await;
    assert_eq!(waiting["pending"][0]["source"], "a command tool");
    let approval = format!("{}/v1/runs/{id}/approval", running.base);
    let foreign = post(
        &approval,
        &[("origin", "http://evil.example")],
        &json!({"decision": "approve"}).to_string(),
    )
    .await;
    assert_eq!(foreign.status, 403);
    // Nothing moved: the run still waits, the model was asked nothing more, the tool never ran.
    let asked = stub.requests().len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let run = get(&format!("{}/v1/runs/{id}", running.base), &[])
        .await
        .json();
    assert_eq!(run["status"], "requires_action");
    assert_eq!(stub.requests().len(), asked);
    assert!(!dir.0.join("effects.txt").exists(), "the tool ran");
    // The same approval from the console's own page goes through.
    stub.push(StubReply::text("done"));
    let own_approval = post(
        &approval,
        &[("origin", own.as_str())],
        &json!({"decision": "approve"}).to_string(),
    )
    .await;
    assert_eq!(own_approval.status, 200, "{}", own_approval.text);
    wait_status(&running.base, &id, "completed").await;
    assert!(dir.0.join("effects.txt").exists(), "the tool did not run");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_run_list_stream_does_not_hold_the_server_at_shutdown() {
    let dir = TempDir::new("console-shutdown");
    let stub = StubServer::start().await.expect("stub");
    let forks = fork_tactic(&dir, &stub, "own");
    let running = serve(&[("forks", &forks)]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = running.served.clone();
    let server = tokio::spawn(async move {
        served
            .serve(listener, async {
                stopped.await.ok();
            })
            .await
    });
    let mut stream = reqwest::Client::new()
        .get(format!("{base}/v1/runs?stream=true"))
        .send()
        .await
        .expect("stream");
    assert_eq!(next_list(&mut stream).await, json!([]));
    stop.send(()).expect("stop");
    let ended = tokio::time::timeout(Duration::from_secs(5), server).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "the server waited for the open stream"
    );
    // The stream was ended by the server, not cut.
    let rest = tokio::time::timeout(Duration::from_secs(5), stream.chunk()).await;
    assert!(matches!(rest, Ok(Ok(None))), "{rest:?}");
}

/// A tactic whose lead has a fork researcher and an isolated outsider (answered by `scout`), both
/// in the background.
fn task_tactic(dir: &TempDir, stub: &StubServer) -> std::path::PathBuf {
    dir.write(
        "tasks.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 60}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: lead
    system_prompt: You lead.
    subagents:
      - {{name: researcher, mode: fork, background: true}}
      - {{name: outsider, agent: scout, mode: isolated, background: true}}
  - {{name: scout, system_prompt: You scout.}}
"#,
            api = stub.base_url()
        ),
    )
}

/// The lead's first answer: one `task_start` per (subagent, instructions).
fn starts(tasks: &[(&str, &str)]) -> StubReply {
    let calls: Vec<(String, String)> = tasks
        .iter()
        .enumerate()
        .map(|(n, (subagent, instructions))| {
            let arguments = json!({"subagent": subagent, "instructions": instructions});
            (format!("call-{n}"), arguments.to_string())
        })
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, arguments)| (id.as_str(), "task_start", arguments.as_str()))
        .collect();
    StubReply::tool_calls(&calls).for_message("Start the research.")
}

async fn start_task_run(base: &str) -> String {
    let created = post(
        &format!("{base}/v1/runs"),
        &[("x-session-id", "conv-tasks")],
        &json!({"model": "tasks", "input": "Start the research."}).to_string(),
    )
    .await;
    created.json()["id"].as_str().expect("id").to_owned()
}

async fn dialogs_of(base: &str, id: &str) -> Value {
    get(&format!("{base}/v1/runs/{id}/dialogs"), &[])
        .await
        .json()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_tasks_are_listed_with_their_status_and_their_dialogs_hang_under_the_one_that_started_them(
) {
    let dir = TempDir::new("console-tasks");
    let stub = StubServer::start().await.expect("stub");
    let tasks = task_tactic(&dir, &stub);
    let running = serve(&[("tasks", &tasks)]).await;
    stub.push(starts(&[
        ("researcher", "Dig into A."),
        ("outsider", "Judge B."),
    ]));
    let id = start_task_run(&running.base).await;
    let run = wait_status(&running.base, &id, "completed").await;
    assert_eq!(run["tasks"], json!({"started": 2, "running": 0}));
    let log = dialogs_of(&running.base, &id).await;
    let listed = log["tasks"].as_array().expect("tasks");
    assert_eq!(listed.len(), 2, "{log}");
    let dialogs = log["dialogs"].as_array().expect("dialogs");
    let lead = dialogs
        .iter()
        .find(|d| d["agent"] == "lead" && d["alias"] == "main")
        .expect("the lead's dialog");
    let dialog = |task: &Value| {
        dialogs
            .iter()
            .find(|d| d["id"] == task["dialog"])
            .unwrap_or_else(|| panic!("the dialog of {task} among {log}"))
    };
    let (fork, isolated) = (&listed[0], &listed[1]);
    assert_eq!(
        (
            &fork["id"],
            &fork["subagent"],
            &fork["agent"],
            &fork["mode"]
        ),
        (
            &json!("t1"),
            &json!("researcher"),
            &json!("lead"),
            &json!("fork")
        )
    );
    assert_eq!(
        (&isolated["id"], &isolated["agent"], &isolated["mode"]),
        (&json!("t2"), &json!("scout"), &json!("isolated"))
    );
    for task in [fork, isolated] {
        assert_eq!(task["status"], "finished", "{task}");
        assert_eq!(task["parent_agent"], "lead");
        assert_eq!(
            task["parent_dialog"], lead["id"],
            "started from the lead's dialog"
        );
        assert_eq!(task["background"], true);
    }
    // The fork's requests name the lead's dialog as their parent; the isolated child's name none:
    // the task list is what puts it under the lead.
    assert_eq!(dialog(fork)["parent"], lead["id"]);
    assert_eq!(dialog(isolated)["parent"], Value::Null);
    assert_eq!(dialog(isolated)["agent"], "scout");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_still_running_shows_running_and_cancelling_the_run_shows_it_cancelled() {
    let dir = TempDir::new("console-task-cancel");
    let stub = StubServer::start().await.expect("stub");
    let tasks = task_tactic(&dir, &stub);
    let running = serve(&[("tasks", &tasks)]).await;
    stub.push(starts(&[("outsider", "Judge B.")]));
    // The child's answer would come long after the test ends: it is running until cancelled.
    stub.push(
        StubReply::text("late")
            .for_message("Judge B.")
            .delay(Duration::from_secs(50)),
    );
    let id = start_task_run(&running.base).await;
    let started = Instant::now();
    let child_asked = || {
        stub.requests()
            .iter()
            .any(|r| r.body.to_string().contains("Judge B."))
    };
    while !child_asked() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the child never asked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let run = get(&format!("{}/v1/runs/{id}", running.base), &[])
        .await
        .json();
    assert_eq!(run["tasks"], json!({"started": 1, "running": 1}), "{run}");
    let log = dialogs_of(&running.base, &id).await;
    assert_eq!(log["tasks"][0]["status"], "running", "{log}");
    assert_eq!(log["tasks"][0]["agent"], "scout");
    let cancel = post(&format!("{}/v1/runs/{id}/cancel", running.base), &[], "{}").await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    wait_status(&running.base, &id, "cancelled").await;
    let started = Instant::now();
    loop {
        let log = dialogs_of(&running.base, &id).await;
        if log["tasks"][0]["status"] == "cancelled" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never cancelled: {log}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
