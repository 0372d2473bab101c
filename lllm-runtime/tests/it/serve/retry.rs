//! Whether a client should retry a failed run: `x-should-retry: false` after lllm's own retries
//! (502), none on an overloaded server downstream (503, its `Retry-After`) or a timeout (504).

use std::time::Duration;

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::json;

use super::{chat_body, post, serve};
use crate::support::TempDir;

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_run_says_not_to_retry_unless_an_overload_or_a_timeout_failed_it() {
    let dir = TempDir::new("serve-retry");
    let stub = StubServer::start().await.expect("stub");
    let tactic = dir.write(
        "helper.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 1}}
  max_call_retries: 0
agent_configs:
  - name: helper
    system_prompt: You help.
"#,
            api = stub.base_url()
        ),
    );
    let running = serve(&[("helper", &tactic)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let body = chat_body("helper", json!([{"role": "user", "content": "hi"}]), false);

    stub.push(StubReply::error(500, "the GPU caught fire"));
    let failed = post(&url, &[], &body).await;
    assert_eq!(failed.status, 502, "{}", failed.text);
    assert_eq!(failed.header("x-should-retry"), Some("false"));

    stub.push(StubReply::error(503, "overloaded").header("retry-after", "7"));
    let busy = post(&url, &[], &body).await;
    assert_eq!(busy.status, 503, "{}", busy.text);
    assert_eq!(busy.header("x-should-retry"), None);
    assert_eq!(busy.header("retry-after"), Some("7"));
    assert_eq!(busy.json()["error"]["code"], "downstream_overloaded");

    stub.push(StubReply::text("late").delay(Duration::from_secs(3)));
    let slow = post(&url, &[], &body).await;
    assert_eq!(slow.status, 504, "{}", slow.text);
    assert_eq!(slow.header("x-should-retry"), None);
    assert_eq!(slow.json()["error"]["code"], "run_timed_out");
}
