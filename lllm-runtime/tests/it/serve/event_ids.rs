//! The ids of a run's events grow for the life of the run, across restarts of the server: a client
//! that reconnects with the `Last-Event-ID` it saw before a restart gets every later event.

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use super::{get, post, serve_with, tool_tactic, wait_status, Reply};
use crate::support::TempDir;

/// The events of a run's stream: id, name and data, in order.
fn numbered(reply: &Reply) -> Vec<(u64, String, Value)> {
    reply
        .text
        .split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("id: ") {
                    id = value.parse().ok();
                } else if let Some(value) = line.strip_prefix("event: ") {
                    name = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(value).ok();
                }
            }
            Some((id?, name?, data?))
        })
        .collect()
}

async fn events_after(base: &str, id: &str, after: Option<u64>) -> Vec<(u64, String, Value)> {
    let after = after.map(|n| n.to_string());
    let headers: Vec<(&str, &str)> = after
        .iter()
        .map(|n| ("last-event-id", n.as_str()))
        .collect();
    numbered(&get(&format!("{base}/v1/runs/{id}/events"), &headers).await)
}

fn growing(events: &[(u64, String, Value)]) -> bool {
    events.windows(2).all(|w| w[1].0 > w[0].0)
}

#[tokio::test(flavor = "multi_thread")]
async fn event_ids_keep_growing_across_a_restart_and_a_reconnect_gets_the_continuation() {
    let dir = TempDir::new("event-ids");
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
        &[],
        &json!({"model": "worker", "input": "act"}).to_string(),
    )
    .await;
    let id = created.json()["id"].as_str().expect("id").to_owned();
    wait_status(&running.base, &id, "requires_action").await;
    let before = events_after(&running.base, &id, None).await;
    let (seen, name, data) = before.last().cloned().expect("events");
    assert_eq!(
        (name.as_str(), &data["status"]),
        ("status", &json!("requires_action"))
    );
    assert!(seen > 1 && growing(&before), "{before:?}");
    drop(running);

    // Another server: the run's status is its last event, under the same id.
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    let again = events_after(&running.base, &id, None).await;
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].0, seen, "{again:?}");
    assert!(events_after(&running.base, &id, Some(seen))
        .await
        .is_empty());
    stub.push(StubReply::text("done"));
    let approved = post(
        &format!("{}/v1/runs/{id}/approval", running.base),
        &[],
        &json!({"decision": "approve"}).to_string(),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    wait_status(&running.base, &id, "completed").await;
    // The client reconnects with the last id it saw before the restart: it gets the continuation,
    // from its start, numbered after it.
    let after = events_after(&running.base, &id, Some(seen)).await;
    let names: Vec<&str> = after.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(
        after.first().map(|e| &e.2["status"]),
        Some(&json!("running")),
        "{after:?}"
    );
    assert!(names.contains(&"tool_result"), "{names:?}");
    assert_eq!(
        after.last().map(|e| &e.2["status"]),
        Some(&json!("completed")),
        "{after:?}"
    );
    assert!(after[0].0 > seen && growing(&after), "{after:?}");
    let last = after.last().expect("events").0;
    drop(running);

    // And a third server shows the end under the id the second gave it.
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    let end = events_after(&running.base, &id, None).await;
    assert_eq!(
        end.iter().map(|e| e.0).collect::<Vec<_>>(),
        [last],
        "{end:?}"
    );
    assert!(events_after(&running.base, &id, Some(last))
        .await
        .is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_of_a_waiting_run_is_a_new_event_after_the_last_one_seen() {
    let dir = TempDir::new("event-ids-cancel");
    let state = dir.0.join("state");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic(&dir, &stub);
    stub.push(StubReply::tool_calls(&[("c1", "act", r#"{"line": "x"}"#)]));
    stub.push(StubReply::tool_calls(&[("c1", "act", r#"{"line": "y"}"#)]));
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let created = post(
            &format!("{}/v1/runs", running.base),
            &[],
            &json!({"model": "worker", "input": "act"}).to_string(),
        )
        .await;
        let id = created.json()["id"].as_str().expect("id").to_owned();
        wait_status(&running.base, &id, "requires_action").await;
        ids.push(id);
    }
    // One cancelled by the server that started it, one by the next.
    let seen: Vec<u64> = {
        let mut seen = Vec::new();
        for id in &ids {
            seen.push(
                events_after(&running.base, id, None)
                    .await
                    .last()
                    .expect("events")
                    .0,
            );
        }
        seen
    };
    let cancel = |base: String, id: String| async move {
        post(&format!("{base}/v1/runs/{id}/cancel"), &[], "").await
    };
    assert_eq!(
        cancel(running.base.clone(), ids[0].clone()).await.status,
        200
    );
    drop(running);
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    assert_eq!(
        cancel(running.base.clone(), ids[1].clone()).await.status,
        200
    );
    for (id, seen) in ids.iter().zip(seen) {
        let after = events_after(&running.base, id, Some(seen)).await;
        assert_eq!(after.len(), 1, "{after:?}");
        assert_eq!(
            (after[0].0, &after[0].2["status"]),
            (seen + 1, &json!("cancelled"))
        );
    }
}
