//! A dialog and its fork with the `dynamo` profile: the fork names its parent, so a KV-aware router can
//! place it where the shared prefix already is.
//!
//! ```text
//! cargo run -p lllm-runtime --example fork_dynamo                  # dry run: prints the two requests
//! LLLM_API_BASE=http://127.0.0.1:8000/v1 LLLM_MODEL=Qwen/Qwen3-0.6B \
//!     cargo run -p lllm-runtime --example fork_dynamo              # against a real server
//! ```
#![allow(clippy::print_stdout)]

use std::sync::Arc;

use lllm_runtime::invoker::{DryRunInvoker, PreparedRequest};
use lllm_runtime::{Agent, InferenceHints, Invoker, ModelArgs, OpenAiInvoker, Profile};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let api_base = std::env::var("LLLM_API_BASE").ok();
    let model = std::env::var("LLLM_MODEL").unwrap_or_else(|_| "dynamo/Qwen/Qwen3-0.6B".into());
    let invoker: Arc<dyn Invoker> = match &api_base {
        Some(_) => Arc::new(OpenAiInvoker::new()),
        None => Arc::new(DryRunInvoker::new(
            OpenAiInvoker::new(),
            |request: &PreparedRequest| println!("{}", request.to_redacted_json()),
        )),
    };
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .session_prefix("run-1")
        .priority(5)
        .speculative_prefill(true)
        .build()?;
    let agent = Agent::builder()
        .name("planner")
        .system_prompt("You plan in three short steps.")
        .model(model)
        .invoker(invoker)
        .model_args(
            ModelArgs::new()
                .api_base(api_base.unwrap_or_else(|| "http://127.0.0.1:8000/v1".into()))
                .max_tokens(24),
        )
        .inference_hints(hints)
        .build()?;

    agent.open("main")?;
    agent.receive("Plan a picnic.")?;
    let plan = agent.respond("main").await?;
    println!("main  ({}): {}", agent.dialog_id("main")?, plan.text());

    agent.fork("main", "retry")?; // shares main's three messages, names main as its parent
    agent.receive("Now make it rain-proof.")?;
    let retry = agent.respond("retry").await?;
    println!("retry ({}): {}", agent.dialog_id("retry")?, retry.text());
    Ok(())
}
