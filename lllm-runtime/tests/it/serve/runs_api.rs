//! `/v1/runs` as its contract says: `text` events as the answer arrives, a `revision` that
//! changes with every status (`queued` to `running` too), a chat without `input` refused before it
//! runs, newest first within one second, and a tool call's `arguments` in one form (a JSON string)
//! in events and in `pending`.

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use super::{chat_tactic, get, post, serve, serve_with, tool_tactic, wait_status};
use crate::support::TempDir;

async fn start(base: &str, body: Value) -> Value {
    let created = post(&format!("{base}/v1/runs"), &[], &body.to_string()).await;
    assert_eq!(created.status, 200, "{}", created.text);
    created.json()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_answer_text_is_in_its_events() {
    let dir = TempDir::new("runs-text");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    stub.push(StubReply::sse_text(&["Hel", "lo"]));
    let run = start(&running.base, json!({"model": "helper", "input": "hi"})).await;
    let id = run["id"].as_str().expect("id");
    let done = wait_status(&running.base, id, "completed").await;
    assert_eq!(done["output"], "Hello");
    let events = get(&format!("{}/v1/runs/{id}/events", running.base), &[]).await;
    let text: String = events
        .events()
        .into_iter()
        .filter(|(name, _)| name.as_deref() == Some("text"))
        .map(|(_, data)| {
            let data: Value = serde_json::from_str(&data).expect("json");
            data["text"].as_str().expect("text").to_owned()
        })
        .collect();
    assert_eq!(text, "Hello", "{}", events.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_revision_changes_with_every_status() {
    let dir = TempDir::new("runs-revision");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    // Held until released: the run is running meanwhile.
    stub.push(StubReply::text("ok").together(2));
    let run = start(&running.base, json!({"model": "helper", "input": "hi"})).await;
    let id = run["id"].as_str().expect("id").to_owned();
    let mut seen: Vec<(String, u64)> = vec![(
        run["status"].as_str().expect("status").to_owned(),
        run["revision"].as_u64().expect("revision"),
    )];
    let running_view = wait_status(&running.base, &id, "running").await;
    seen.push((
        "running".to_owned(),
        running_view["revision"].as_u64().expect("revision"),
    ));
    // The second request releases the first.
    stub.push(StubReply::text("other").together(2));
    let other = start(&running.base, json!({"model": "helper", "input": "hi"})).await;
    let done = wait_status(&running.base, &id, "completed").await;
    seen.push((
        "completed".to_owned(),
        done["revision"].as_u64().expect("revision"),
    ));
    wait_status(
        &running.base,
        other["id"].as_str().expect("id"),
        "completed",
    )
    .await;
    for pair in seen.windows(2) {
        if pair[0].0 != pair[1].0 {
            assert!(pair[1].1 > pair[0].1, "{seen:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_without_input_is_a_400_naming_the_field() {
    let dir = TempDir::new("runs-input");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    let refused = post(
        &format!("{}/v1/runs", running.base),
        &[],
        &json!({"model": "helper"}).to_string(),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    let error = &refused.json()["error"];
    assert_eq!(error["param"], "input");
    let message = error["message"].as_str().expect("message");
    assert!(message.contains("`input`"), "{message}");
    assert!(
        !message.contains("--input") && !message.contains("standard input"),
        "{message}"
    );
    let list = get(&format!("{}/v1/runs", running.base), &[]).await.json();
    assert_eq!(
        list["data"].as_array().map(Vec::len),
        Some(0),
        "no run: {list}"
    );
    assert!(stub.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_are_listed_newest_first_within_one_second() {
    let dir = TempDir::new("runs-order");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let state = dir.0.join("state");
    let running = serve_with(&[("helper", &helper)], |b| b.state_dir(&state)).await;
    let mut ids = Vec::new();
    for n in 0..8 {
        stub.push(StubReply::text("ok"));
        let run = start(
            &running.base,
            json!({"model": "helper", "input": format!("n{n}")}),
        )
        .await;
        ids.push(run["id"].as_str().expect("id").to_owned());
    }
    for id in &ids {
        wait_status(&running.base, id, "completed").await;
    }
    ids.reverse();
    let listed = |list: Value| -> Vec<String> {
        list["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|r| r["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let list = get(&format!("{}/v1/runs", running.base), &[]).await.json();
    assert_eq!(listed(list), ids);
    drop(running);
    // A server started again on the same state keeps the order.
    let running = serve_with(&[("helper", &helper)], |b| b.state_dir(&state)).await;
    let list = get(&format!("{}/v1/runs", running.base), &[]).await.json();
    assert_eq!(listed(list), ids);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_calls_arguments_are_one_json_string_in_events_and_pending() {
    let dir = TempDir::new("runs-arguments");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    stub.push(StubReply::tool_calls(&[("c1", "act", r#"{"line":"x"}"#)]));
    let run = start(&running.base, json!({"model": "worker", "input": "act"})).await;
    let id = run["id"].as_str().expect("id");
    let waiting = wait_status(&running.base, id, "requires_action").await;
    let pending = &waiting["pending"][0]["arguments"];
    let events = get(&format!("{}/v1/runs/{id}/events", running.base), &[]).await;
    let call: Value = events
        .events()
        .into_iter()
        .find(|(name, _)| name.as_deref() == Some("tool_call"))
        .map(|(_, data)| serde_json::from_str(&data).expect("json"))
        .expect("a tool_call event");
    assert!(pending.is_string(), "{waiting}");
    assert!(call["arguments"].is_string(), "{call}");
    let parse =
        |v: &Value| -> Value { serde_json::from_str(v.as_str().expect("text")).expect("json") };
    assert_eq!(parse(pending), parse(&call["arguments"]));
}
