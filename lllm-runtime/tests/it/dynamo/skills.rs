//! Issue 37 on Dynamo: loading a skill keeps the cached prefix. The request after a `load_skill`
//! call is the previous request, byte for byte, plus the call and the body; it goes to the worker
//! that served the previous one, with at least 0.9 of that prompt served from the cache.

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::ToolCall;
use lllm_runtime::agent::Role;
use lllm_runtime::tools::skills::SkillSet;
use lllm_runtime::{ChatRequest, ChatResponse, InvokeError, Invoker};

use super::{assert_rides, dynamo, long_system_prompt, nonce, Watching};
use crate::support::TempDir;

/// Dynamo serves every request (its worker and cache counts are real); the mocker's answer, which
/// has no text, is replaced: a request ending with the user's question gets a `load_skill` call,
/// a request ending with the skill's body gets a few words.
#[derive(Debug)]
struct Loading(Arc<Watching>);

#[async_trait]
impl Invoker for Loading {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let mut response = self.0.invoke(request).await?;
        let message = &mut response.message;
        if request.messages.last().map(|m| m.role) == Some(Role::Tool) {
            message.content = Some("the mocker's words".to_owned());
        } else {
            message.content = None;
            message.tool_calls = vec![ToolCall {
                id: "call-load".to_owned(),
                name: "load_skill".to_owned(),
                arguments: r#"{"name":"triage"}"#.to_owned(),
            }];
            message.finish_reason = Some("tool_calls".to_owned());
        }
        Ok(response)
    }
}

#[tokio::test]
async fn the_request_after_a_skill_load_rides_the_cached_prefix_on_the_same_worker() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let dir = TempDir::new("dynamo-skills");
    // A word of this run's own: nothing an earlier run left in the engines' caches counts.
    let nonce = nonce();
    for (name, body) in [
        (
            "triage",
            "Read the log from the end; name the first failing component; propose one change.\n"
                .repeat(20),
        ),
        (
            "postmortem",
            "Write what happened, why, and what changes.\n".to_owned(),
        ),
    ] {
        let folder = dir.0.join("skills").join(name);
        std::fs::create_dir_all(&folder).expect("folder");
        let text =
            format!("---\nname: {name}\ndescription: Run {nonce}, how to do {name}.\n---\n{body}");
        std::fs::write(folder.join("SKILL.md"), text).expect("SKILL.md");
    }
    let skills = SkillSet::load(&[dir.0.join("skills")]).expect("skills");
    let invoker = Watching::new();
    let extra = serde_json::json!({"nvext": {"extra_fields": ["worker_id"]}});
    let agent = lllm_runtime::Agent::builder()
        .name("engineer")
        .system_prompt(format!("Run {nonce}. {}", long_system_prompt()))
        .model("tiny")
        .invoker(Arc::new(Loading(invoker.clone())))
        .model_args(
            lllm_runtime::ModelArgs::new()
                .api_base(url)
                .max_tokens(16)
                .extra_body(extra.as_object().cloned().unwrap_or_default()),
        )
        .inference_hints(
            lllm_runtime::InferenceHints::builder()
                .profile(lllm_runtime::Profile::Dynamo)
                .build()
                .expect("hints"),
        )
        .skills(skills)
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent
        .receive("The indexer fails with: disk quota exceeded while writing shard 17. Triage it.")
        .expect("receive");
    agent.respond("main").await.expect("Dynamo answers");
    let seen = invoker.calls();
    assert_eq!(seen.len(), 2, "one request before the load, one after");
    let (before, after) = (&seen[0], &seen[1]);
    eprintln!(
        "skill load on Dynamo: before {} prompt tokens ({:?}); after {} prompt, {} cached ({:?})",
        before.prompt_tokens, before.worker, after.prompt_tokens, after.cached_tokens, after.worker
    );
    assert_rides(before, after, "the request after the load");
    assert_eq!(after.session, before.session);
}
