//! `lllm serve`'s runs API against clients that race it and a server killed while a run waits: one
//! `Idempotency-Key` sent many times at once, an approval and a cancel of one waiting run at the
//! same instant, a reconnect with `Last-Event-ID` after a SIGKILL and a restart. Requests "at once"
//! are sent but for their last byte, then finished together; what is counted is the effect (runs
//! made, the tool's lines), never a time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use crate::serve::http;
use crate::support::{arg, Serving, TempDir};

/// A raw HTTP/1.1 request, closed after the answer.
pub(crate) fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The JSON body of a raw answer (`null` when it has none).
pub(crate) fn body_of(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

/// Sends each request but its last byte, then all the last bytes together (a barrier between):
/// no handler goes past reading its request before then. The answers, in order.
fn released_together(address: &str, requests: &[String]) -> Vec<(u16, Value)> {
    let barrier = Arc::new(Barrier::new(requests.len()));
    let threads: Vec<_> = requests
        .iter()
        .map(|request| {
            let (address, barrier) = (address.to_owned(), barrier.clone());
            let bytes = request.clone().into_bytes();
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(&address).expect("connect");
                stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
                let (head, last) = bytes.split_at(bytes.len() - 1);
                stream.write_all(head).expect("write");
                barrier.wait();
                stream.write_all(last).expect("write the last byte");
                let mut text = String::new();
                stream.read_to_string(&mut text).ok();
                let status = text
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                (status, body_of(&text))
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|thread| thread.join().expect("joined"))
        .collect()
}

pub(crate) fn get_json(address: &str, path: &str) -> Value {
    let (status, text) = http(address, &request("GET", path, &[], ""));
    assert_eq!(status, 200, "{path}: {text}");
    body_of(&text)
}

/// Waits until run `id` has `status`.
pub(crate) fn wait_status(address: &str, id: &str, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let run = get_json(address, &format!("/v1/runs/{id}"));
        if run["status"] == status {
            return run;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never {status}: {run}"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// Waits until no run is queued, running or waiting; returns them.
fn all_ended(address: &str) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let list = get_json(address, "/v1/runs?limit=1000");
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
            started.elapsed() < Duration::from_secs(20),
            "runs never ended: {list}"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// A tactic whose `act` tool appends its line to `effects.txt`: `confirm` says whether it waits
/// for an approval; one tool round per respond, so a run runs it once however often it is asked.
pub(crate) fn tool_tactic(dir: &TempDir, stub: &StubServer, confirm: bool) -> PathBuf {
    let effects = dir.path("effects.txt");
    dir.write(
        "worker.yaml",
        format!(
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
        confirm: {confirm}
"#,
            api = stub.base_url(),
            effects = effects.display()
        ),
    )
}

pub(crate) fn effects(dir: &TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.path("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub(crate) fn no_panic(serving: &Serving) {
    let log = serving.stderr.lock().expect("log").clone();
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn one_idempotency_key_sent_32_times_at_once_makes_one_run_whose_tool_runs_once() {
    let dir = TempDir::new("serve-keyed-race");
    let stub = StubServer::start().await.expect("stub");
    // Every request of every run asks for the tool: each run made runs it once.
    stub.answer_unscripted(
        Duration::ZERO,
        Some(StubReply::tool_calls(&[(
            "c1",
            "act",
            r#"{"line": "ran"}"#,
        )])),
    );
    let tactic = tool_tactic(&dir, &stub, false);
    let state = dir.path("state");
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    let address = serving.address().to_owned();
    let body = json!({"model": "worker", "input": "act"}).to_string();
    let keys = ["k-one", "k-two"];
    let named: Vec<Vec<Value>> = tokio::task::spawn_blocking(move || {
        keys.iter()
            .map(|key| {
                let keyed = request("POST", "/v1/runs", &[("Idempotency-Key", key)], &body);
                released_together(&address, &vec![keyed; 32])
                    .into_iter()
                    .map(|(status, answer)| {
                        assert_eq!(status, 200, "{answer}");
                        answer["id"].clone()
                    })
                    .collect()
            })
            .collect()
    })
    .await
    .expect("requests");
    let address = serving.address().to_owned();
    let runs = tokio::task::spawn_blocking(move || all_ended(&address))
        .await
        .expect("runs");
    assert_eq!(effects(&dir), ["ran", "ran"], "one tool run per key");
    for ids in &named {
        assert!(ids.iter().all(|id| id == &ids[0]), "{ids:?}");
    }
    assert_eq!(runs.len(), 2, "{runs:?}");
    no_panic(&serving);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_and_a_cancel_at_the_same_instant_end_the_run_as_they_answered() {
    const RACES: usize = 16;
    let dir = TempDir::new("serve-decision-race");
    let stub = StubServer::start().await.expect("stub");
    let tactic = tool_tactic(&dir, &stub, true);
    let state = dir.path("state");
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    for race in 0..RACES {
        let line = format!("race-{race}");
        let arguments = json!({ "line": line }).to_string();
        stub.push(StubReply::tool_calls(&[("c1", "act", &arguments)]).for_message(&line));
    }
    let address = serving.address().to_owned();
    let (ids, answers) = tokio::task::spawn_blocking(move || {
        let ids: Vec<String> = (0..RACES)
            .map(|race| {
                let body = json!({"model": "worker", "input": format!("race-{race}")});
                let (_, text) = http(
                    &address,
                    &request("POST", "/v1/runs", &[], &body.to_string()),
                );
                let id = body_of(&text)["id"].as_str().expect("id").to_owned();
                wait_status(&address, &id, "requires_action");
                id
            })
            .collect();
        let approve = r#"{"decision": "approve"}"#;
        let requests: Vec<String> = ids
            .iter()
            .flat_map(|id| {
                [
                    request("POST", &format!("/v1/runs/{id}/approval"), &[], approve),
                    request("POST", &format!("/v1/runs/{id}/cancel"), &[], ""),
                ]
            })
            .collect();
        let answers = released_together(&address, &requests);
        all_ended(&address);
        (ids, answers)
    })
    .await
    .expect("races");
    let lines = effects(&dir);
    for (race, id) in ids.iter().enumerate() {
        let (approved, approval) = &answers[2 * race];
        let (cancelled, cancel) = &answers[2 * race + 1];
        let run = get_json(serving.address(), &format!("/v1/runs/{id}"));
        let ended = run["status"].as_str().unwrap_or("");
        let ran = lines
            .iter()
            .filter(|l| **l == format!("race-{race}"))
            .count();
        let seen = format!("race {race}: approval {approved} {approval}, cancel {cancelled} {cancel}, run {run}, tool ran {ran}");
        match (approved, cancelled) {
            // The cancel came first: the approval is refused, showing the run; nothing ran.
            (409, 200) => {
                assert_eq!((ended, ran), ("cancelled", 0), "{seen}");
                assert_eq!(approval["run"]["status"], "cancelled", "{seen}");
            }
            // The approval came first and the run completed: the cancel lost, and says so.
            (200, 409) => {
                assert_eq!((ended, ran), ("completed", 1), "{seen}");
                assert_eq!(cancel["run"]["status"], "completed", "{seen}");
            }
            // The approval came first; the cancel then stopped the continued run.
            (200, 200) => assert_eq!(ended, "cancelled", "{seen}"),
            _ => panic!("{seen}"),
        }
    }
    no_panic(&serving);
}

/// The events of an SSE answer: id, name and data.
pub(crate) fn events(answer: &str) -> Vec<(u64, String, Value)> {
    answer
        .split("\n\n")
        .filter_map(|block| {
            let (mut id, mut name, mut data) = (None, None, None);
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("id: ") {
                    id = value.trim().parse().ok();
                } else if let Some(value) = line.strip_prefix("event: ") {
                    name = Some(value.trim().to_owned());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(value).ok();
                }
            }
            Some((id?, name?, data?))
        })
        .collect()
}

/// A run's events after `after`, over HTTP/1.0 (the stream ends with the run's).
pub(crate) fn events_after(address: &str, id: &str, after: u64) -> Vec<(u64, String, Value)> {
    let (status, text) = http(
        address,
        &format!(
            "GET /v1/runs/{id}/events HTTP/1.0\r\nHost: 127.0.0.1\r\nLast-Event-ID: {after}\r\n\r\n"
        ),
    );
    assert_eq!(status, 200, "{text}");
    events(&text)
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_sigkill_and_a_restart_a_reconnect_gets_the_approved_continuation() {
    let dir = TempDir::new("serve-event-ids");
    let stub = StubServer::start().await.expect("stub");
    let tactic = tool_tactic(&dir, &stub, true);
    let state = dir.path("state");
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "did it"}"#,
    )]));
    let args = [arg(&tactic), "--state", arg(&state)];
    let serving = Serving::start(&args, &[]);
    let address = serving.address().to_owned();
    let (id, seen) = tokio::task::spawn_blocking(move || {
        let body = json!({"model": "worker", "input": "act"}).to_string();
        let (_, text) = http(&address, &request("POST", "/v1/runs", &[], &body));
        let id = body_of(&text)["id"].as_str().expect("id").to_owned();
        wait_status(&address, &id, "requires_action");
        let seen = events_after(&address, &id, 0).last().expect("events").0;
        (id, seen)
    })
    .await
    .expect("first server");
    no_panic(&serving);
    drop(serving); // SIGKILL

    let serving = Serving::start(&args, &[]);
    stub.push(StubReply::text("done"));
    let address = serving.address().to_owned();
    let after = tokio::task::spawn_blocking(move || {
        let (status, text) = http(
            &address,
            &request(
                "POST",
                &format!("/v1/runs/{id}/approval"),
                &[],
                r#"{"decision": "approve"}"#,
            ),
        );
        assert_eq!(status, 200, "{text}");
        wait_status(&address, &id, "completed");
        events_after(&address, &id, seen)
    })
    .await
    .expect("second server");
    let names: Vec<&str> = after.iter().map(|(_, name, _)| name.as_str()).collect();
    assert!(names.contains(&"tool_result"), "after {seen}: {after:?}");
    assert_eq!(
        after.first().map(|e| &e.2["status"]),
        Some(&json!("running")),
        "{after:?}"
    );
    assert_eq!(
        after.last().map(|e| &e.2["status"]),
        Some(&json!("completed")),
        "{after:?}"
    );
    assert!(
        after.first().is_some_and(|e| e.0 > seen) && after.windows(2).all(|w| w[1].0 > w[0].0),
        "after {seen}: {after:?}"
    );
    assert_eq!(effects(&dir), ["did it"]);
    no_panic(&serving);
}
