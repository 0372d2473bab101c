//! Issue 32 on Dynamo: a stateless client (the whole history each turn, no header, no id) holds a
//! three-turn conversation with `lllm serve` through a tactic whose agent calls a tool every turn.
//! Each turn's first request must go to the worker that served the turn before, with at least 0.9
//! of that turn's last prompt served from the cache: only when lllm continues the tactic's stored
//! dialogs (tool call and result included) is that prompt a prefix of the next one. Rebuilt from
//! the client's text, the next request shares just the system prompt and the first question.

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::ToolCall;
use lllm_runtime::agent::Role;
use lllm_runtime::{ChatRequest, ChatResponse, InvokeError, Invoker};
use serde_json::{json, Value};

use super::{assert_rides, dynamo, nonce, Watching};
use crate::serve::{post, serve_through};
use crate::support::TempDir;

/// Dynamo serves every request (its worker and cache counts are real); the mocker's answer, which
/// has no text, is replaced by the script: a request ending with the user's question gets a call
/// of `look`, a request ending with its result gets the turn's answer ("answer N", N the count of
/// user messages, so the same whether lllm continued its dialog or rebuilt it).
#[derive(Debug)]
struct Scripted(Arc<Watching>);

#[async_trait]
impl Invoker for Scripted {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let mut response = self.0.invoke(request).await?;
        let turn = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        let message = &mut response.message;
        if request.messages.last().map(|m| m.role) == Some(Role::Tool) {
            message.content = Some(format!("answer {turn}"));
        } else {
            message.content = None;
            message.tool_calls = vec![ToolCall {
                id: format!("call-{turn}"),
                name: "look".to_owned(),
                arguments: "{}".to_owned(),
            }];
            message.finish_reason = Some("tool_calls".to_owned());
        }
        Ok(response)
    }
}

/// The tactic: a short system prompt, and a tool whose result (a log of about 1,400 tokens) is
/// most of each turn's prompt, so that a lost tool round shows in the cached share. The system
/// prompt starts with a word of this run's own: nothing an earlier run left in the engines' caches
/// counts for this one.
fn tactic(dir: &TempDir, url: &str) -> std::path::PathBuf {
    let nonce = nonce();
    dir.write(
        "looker.yaml",
        &format!(
            r#"global:
  model_name: dynamo/tiny
  model_args: {{api_base: "{url}", max_tokens: 16, extra_body: {{nvext: {{extra_fields: [worker_id]}}}}}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: looker
    system_prompt: Run {nonce}. You read the log before you answer. Be brief.
    tools:
      - name: look
        description: Reads the build log
        command: [sh, -c, 'for i in $(seq 1 30); do echo "line $i: worker-3 ERROR disk quota exceeded writing shard 17"; done']
"#
        ),
    )
}

/// The client's three turns, each resending the whole conversation.
async fn converse(base: &str) {
    let mut history: Vec<Value> = Vec::new();
    for turn in 1..=3 {
        history.push(json!({"role": "user", "content": format!("Why did build {turn} fail?")}));
        let body = json!({"model": "looker", "messages": history}).to_string();
        let reply = post(&format!("{base}/v1/chat/completions"), &[], &body).await;
        assert_eq!(reply.status, 200, "turn {turn}: {}", reply.text);
        let answer = reply.json()["choices"][0]["message"]["content"].clone();
        assert_eq!(
            answer,
            format!("answer {turn}"),
            "turn {turn}: {}",
            reply.text
        );
        history.push(json!({"role": "assistant", "content": answer}));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_three_turn_conversation_stays_on_its_worker_with_its_prefix_cached() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let dir = TempDir::new("dynamo-continuation");
    let watching = Watching::new();
    let tactic = tactic(&dir, &url);
    let running = serve_through(Arc::new(Scripted(watching.clone())), &[("looker", &tactic)]).await;
    converse(&running.base).await;
    let seen = watching.calls();
    assert_eq!(
        seen.len(),
        6,
        "a tool round and an answer per turn: {seen:#?}"
    );
    for (i, call) in seen.iter().enumerate() {
        eprintln!(
            "request {i} (turn {}): session {}, worker {:?}, {} of {} prompt tokens cached",
            i / 2 + 1,
            call.session,
            call.worker,
            call.cached_tokens,
            call.prompt_tokens
        );
    }
    for call in &seen {
        assert!(call.worker.is_some(), "Dynamo names the worker: {call:?}");
        assert_eq!(
            call.session, seen[0].session,
            "one downstream session for the whole conversation"
        );
    }
    for turn in 1..3 {
        let (last, first) = (&seen[2 * turn - 1], &seen[2 * turn]);
        assert_rides(
            last,
            first,
            &format!(
                "turn {}'s first request (after turn {turn}'s last)",
                turn + 1
            ),
        );
    }
}
