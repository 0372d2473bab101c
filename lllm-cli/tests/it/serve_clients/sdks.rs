//! The agent frameworks: the OpenAI Agents SDK (three ways of keeping a conversation), pydantic-ai
//! and the Vercel AI SDK, each a three-turn conversation driven by a script under `tests/serve/`.

use std::process::Command;

use super::{driver, run_client, Conversation};
use crate::serve::client;

/// The Agents SDK in `mode` (`session`, `previous` or `conversation`; see `agents_sdk.py`).
async fn agents_sdk(mode: &str) {
    let test = format!("agents sdk ({mode})");
    let Some(python) = client("LLLM_OPENAI_PYTHON", &test) else {
        return;
    };
    let conversation = Conversation::start(&format!("serve-agents-{mode}"), 3).await;
    let mut command = Command::new(python);
    command
        .arg(driver("agents_sdk.py"))
        .args([mode, &conversation.api(), "helper", "3"]);
    let output = run_client(command).await;
    conversation.assert_answered(&test, &output);
    conversation.assert_one_session_one_prefix(&test);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_sdk_with_a_sqlite_session_is_one_session_with_one_growing_prefix() {
    agents_sdk("session").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_sdk_with_previous_response_id_is_one_session_with_one_growing_prefix() {
    agents_sdk("previous").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_sdk_with_a_conversation_id_is_one_session_with_one_growing_prefix() {
    agents_sdk("conversation").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pydantic_ai_with_message_history_is_one_session_with_one_growing_prefix() {
    let test = "pydantic-ai";
    let Some(python) = client("LLLM_OPENAI_PYTHON", test) else {
        return;
    };
    let conversation = Conversation::start("serve-pydantic-ai", 3).await;
    let mut command = Command::new(python);
    command
        .arg(driver("pydantic_ai_client.py"))
        .args([&conversation.api(), "helper", "3"]);
    let output = run_client(command).await;
    conversation.assert_answered(test, &output);
    conversation.assert_one_session_one_prefix(test);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_vercel_ai_sdk_with_item_references_is_one_session_with_one_growing_prefix() {
    let test = "vercel ai sdk";
    let Some(node) = client("LLLM_NODE_CLIENTS", test) else {
        return;
    };
    let conversation = Conversation::start("serve-vercel-ai", 3).await;
    let mut command = Command::new(node);
    command
        .arg(driver("vercel_ai.mjs"))
        .args([&conversation.api(), "helper", "3"]);
    let output = run_client(command).await;
    conversation.assert_answered(test, &output);
    conversation.assert_one_session_one_prefix(test);
}
