//! N turns of one dialog through lllm's agent, for the side-by-side benchmark with Python lllm:
//! `turns <api_base> <n>`.
#![allow(clippy::print_stdout)]

use std::sync::Arc;

use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::{Agent, ModelArgs, OpenAiInvoker};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let api_base = args.next().ok_or("usage: turns <api_base> <n>")?;
    let turns: usize = args.next().ok_or("usage: turns <api_base> <n>")?.parse()?;
    let agent = Agent::builder()
        .name("bench")
        .system_prompt("You are a concise assistant.")
        .model("hosted_vllm/stub")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(api_base).max_tokens(16))
        .build()?;
    agent.open("main")?;
    let mut last = String::new();
    for turn in 0..turns {
        agent.receive(format!("turn {turn}: say something short"))?;
        last = agent.respond("main").await?.content.unwrap_or_default();
    }
    println!("{last}");
    Ok(())
}
