//! The floor of lllm's stack: a bare async-openai client (the crate and features lllm uses, with its
//! own `Client`) sending the conversation `lllm run` sends in the `floor` benchmark: a system
//! prompt, then `turn {i}: say something short` and the answer, turn after turn, each request
//! carrying the whole conversation so far with `max_tokens: 16`. Prints the last answer.
//! `bare_client <api_base> <turns> [multi|current]`: on Tokio's multi-threaded runtime (what
//! `#[tokio::main]` gives, the default) or its current-thread one.
//!
//! The request is async-openai's typed one, kept from turn to turn (nothing is copied); the answer is
//! read into a lenient type of its own (`create_byot`), as lllm reads answers.
#![allow(clippy::print_stdout)]

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestMessage,
    ChatCompletionRequestSystemMessage, ChatCompletionRequestUserMessage,
    CreateChatCompletionRequest,
};
use async_openai::Client;
use serde::Deserialize;

/// The system prompt of the benchmark's agent (`floor` writes the same into its tactic).
const SYSTEM: &str = "You are a concise assistant.";

/// What is read of an answer.
#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Reply,
}

#[derive(Deserialize)]
struct Reply {
    content: Option<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bare_client <api_base> <turns> [multi|current]";
    let api_base = args.next().ok_or(usage)?;
    let turns: usize = args.next().ok_or(usage)?.parse()?;
    let mut runtime = match args.next().as_deref() {
        None | Some("multi") => tokio::runtime::Builder::new_multi_thread(),
        Some("current") => tokio::runtime::Builder::new_current_thread(),
        Some(_) => return Err(usage.into()),
    };
    let last = runtime
        .enable_all()
        .build()?
        .block_on(talk(api_base, turns))?;
    println!("{last}");
    Ok(())
}

/// Sends the conversation, `turns` turns; the last answer.
async fn talk(api_base: String, turns: usize) -> Result<String, Box<dyn std::error::Error>> {
    let client = Client::with_config(OpenAIConfig::new().with_api_base(api_base));
    // `max_tokens` is what lllm sends for `model_args.max_tokens` (async-openai marks it deprecated
    // in favour of `max_completion_tokens`, which local servers do not all take).
    #[allow(deprecated)]
    let mut request = CreateChatCompletionRequest {
        model: "stub".to_owned(),
        messages: vec![ChatCompletionRequestMessage::System(
            ChatCompletionRequestSystemMessage::from(SYSTEM),
        )],
        max_tokens: Some(16),
        ..Default::default()
    };
    let mut last = String::new();
    for turn in 0..turns {
        request.messages.push(ChatCompletionRequestMessage::User(
            ChatCompletionRequestUserMessage::from(format!("turn {turn}: say something short")),
        ));
        let answer: Completion = client.chat().create_byot(&request).await?;
        last = answer
            .choices
            .into_iter()
            .next()
            .and_then(|choice| choice.message.content)
            .ok_or("an answer without text")?;
        request
            .messages
            .push(ChatCompletionRequestMessage::Assistant(
                ChatCompletionRequestAssistantMessage::from(last.as_str()),
            ));
    }
    Ok(last)
}
