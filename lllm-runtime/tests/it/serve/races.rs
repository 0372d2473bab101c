//! `/v1/runs` under requests that arrive at the same instant: each request is sent but for its last
//! byte, then the last bytes all at once, so the server's handlers go on together (no clock decides
//! the outcome). What is counted is the effect: the runs made and the tool's lines.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::{get, post, serve_with};
use crate::support::TempDir;

/// A raw `POST` of `body` with `headers`, closed after the answer.
fn raw_post(path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Sends every request but its last byte, waits until all are sent so, then sends the last bytes
/// together: no handler can go past reading its body before then. The answers, in order: status
/// and JSON body.
async fn released_together(base: &str, requests: &[String]) -> Vec<(u16, Value)> {
    let address = base.trim_start_matches("http://");
    let barrier = Arc::new(tokio::sync::Barrier::new(requests.len()));
    let tasks: Vec<_> = requests
        .iter()
        .map(|request| {
            let (address, barrier) = (address.to_owned(), barrier.clone());
            let bytes = request.clone().into_bytes();
            tokio::spawn(async move {
                let mut stream = tokio::net::TcpStream::connect(&address)
                    .await
                    .expect("connect");
                let (head, last) = bytes.split_at(bytes.len() - 1);
                stream.write_all(head).await.expect("write");
                barrier.wait().await;
                stream.write_all(last).await.expect("write the last byte");
                let mut answer = Vec::new();
                stream.read_to_end(&mut answer).await.expect("read");
                answer_of(&String::from_utf8_lossy(&answer))
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("joined"));
    }
    answers
}

/// The status and JSON body of a raw HTTP/1.1 answer.
fn answer_of(text: &str) -> (u16, Value) {
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {text}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, body)
}

/// A tactic whose `act` tool appends its line to `effects.txt`; one tool round per respond, so a
/// run runs it at most once however often the model asks.
fn once_tool_tactic(dir: &TempDir, server: &StubServer) -> std::path::PathBuf {
    let effects = dir.0.join("effects.txt");
    dir.write(
        "once.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    max_tool_rounds: 1
    tools:
      - name: act
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" >> "$2"', sh, "{{{{ line }}}}", "{effects}"]
"#,
            api = server.base_url(),
            effects = effects.display()
        ),
    )
}

/// The tool's lines so far.
fn effects(dir: &TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.0.join("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until no run of the server is queued, running or waiting, and returns the list.
async fn all_ended(base: &str) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let list = get(&format!("{base}/v1/runs?limit=1000"), &[]).await.json();
        let runs = list["data"].as_array().cloned().unwrap_or_default();
        let ended = |run: &Value| {
            matches!(
                run["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            )
        };
        if runs.iter().all(ended) {
            return runs;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "runs never ended: {list}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_idempotency_key_sent_many_times_at_once_starts_one_run_that_runs_its_tool_once() {
    const ROUNDS: usize = 4;
    const AT_ONCE: usize = 24;
    let dir = TempDir::new("keyed-race");
    let state = dir.0.join("state");
    let stub = StubServer::start().await.expect("stub");
    // Every request of every run asks for the tool: each run made runs it once.
    stub.answer_unscripted(
        Duration::ZERO,
        Some(StubReply::tool_calls(&[("c1", "act", r#"{"line": "ran"}"#)])),
    );
    let tactic = once_tool_tactic(&dir, &stub);
    let running = serve_with(&[("worker", &tactic)], |b| b.state_dir(&state)).await;
    let body = json!({"model": "worker", "input": "act"}).to_string();
    let mut named = Vec::new();
    for round in 0..ROUNDS {
        let key = format!("key-{round}");
        let requests = vec![raw_post("/v1/runs", &[("idempotency-key", &key)], &body); AT_ONCE];
        let answers = released_together(&running.base, &requests).await;
        let ids: HashSet<String> = answers
            .iter()
            .map(|(status, answer)| {
                assert_eq!(*status, 200, "{answer}");
                answer["id"].as_str().expect("a run id").to_owned()
            })
            .collect();
        named.push(ids);
    }
    let runs = all_ended(&running.base).await;
    assert_eq!(
        effects(&dir),
        vec!["ran"; ROUNDS],
        "the tool ran once per key; the answers named {named:?}"
    );
    assert!(named.iter().all(|ids| ids.len() == 1), "{named:?}");
    assert_eq!(runs.len(), ROUNDS, "one run per key: {runs:?}");
    let records = std::fs::read_dir(state.join("runs"))
        .expect("runs")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(records, ROUNDS);
    // Sent again afterwards, the key still names its run.
    let again = post(
        &format!("{}/v1/runs", running.base),
        &[("idempotency-key", "key-0")],
        &body,
    )
    .await;
    assert!(runs.iter().any(|r| r["id"] == again.json()["id"]), "{}", again.text);
}
