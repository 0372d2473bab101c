//! `x-should-retry: false`: the official OpenAI Python SDK, with its default two retries, makes one
//! HTTP request for a call to a tactic whose run failed after lllm's own retries, and keeps its
//! retry when the serving side was overloaded.

use std::path::PathBuf;

use lllm_runtime::testing::{StubReply, StubServer};

use crate::support::{arg, Serving, TempDir};

/// A chat tactic named `name` whose model calls are retried `retries` times by lllm itself.
fn tactic(dir: &TempDir, stub: &StubServer, name: &str, retries: u32) -> PathBuf {
    dir.write(
        &format!("{name}.yaml"),
        format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: {retries}
agent_configs:
  - name: helper
    system_prompt: You help.
"#,
            api = stub.base_url()
        ),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_sdk_does_not_rerun_a_failed_run_but_retries_an_overload() {
    let Some(python) = super::serve::client("LLLM_OPENAI_PYTHON", "openai sdk retries") else {
        return;
    };
    let dir = TempDir::new("serve-no-rerun");
    let stub = StubServer::start().await.expect("stub");
    let failing = tactic(&dir, &stub, "failing", 1);
    let busy = tactic(&dir, &stub, "busy", 0);
    // Two calls to `failing`, each tried twice by lllm; one to `busy`, tried twice by the SDK.
    for _ in 0..4 {
        stub.push(StubReply::error(500, "the GPU caught fire"));
    }
    for _ in 0..2 {
        stub.push(StubReply::error(503, "overloaded"));
    }
    let state = dir.path("state");
    let serving = Serving::start(&[arg(&failing), arg(&busy), "--state", arg(&state)], &[]);
    super::serve::sdk_script(&python, "no_rerun.py", &[], &serving, 3).await;
    // 2 + 2 downstream requests for the failed runs (lllm's own retry), 2 for the overload (the SDK's).
    assert_eq!(stub.requests().len(), 6);
}
