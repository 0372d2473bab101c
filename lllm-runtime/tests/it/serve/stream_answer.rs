//! The stream is the answer: a model that says a sentence, calls a tool, then answers gives the
//! same text streamed and not, in Chat Completions and in Responses (each round's text, a blank
//! line between rounds).

use std::path::PathBuf;

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use super::{chat_body, post, serve, Reply};
use crate::support::TempDir;

/// The answer both forms must give: the sentence before the tool call, then the last round's.
const ANSWER: &str = "Let me add.\n\nIt is 4.";

/// A chat tactic whose agent has an `add` tool that prints 4.
fn adding_tactic(dir: &TempDir, server: &StubServer) -> PathBuf {
    dir.write(
        "adder.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: adder
    system_prompt: You add.
    tools:
      - name: add
        description: Adds
        parameters: {{type: object, properties: {{}}}}
        command: [sh, -c, 'echo 4']
"#,
            api = server.base_url()
        ),
    )
}

/// Scripts the two rounds: "Let me add." with a call to `add`, then "It is 4.", streamed or not.
fn script(stub: &StubServer, streamed: bool) {
    if streamed {
        stub.push(StubReply::sse(&[
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "add."}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ]));
        stub.push(StubReply::sse_text(&["It is ", "4."]));
    } else {
        stub.push(StubReply::completion(json!({
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
        })));
        stub.push(StubReply::text("It is 4."));
    }
}

fn data(reply: &Reply) -> Vec<(Option<String>, Value)> {
    reply
        .events()
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(n, d)| (n, serde_json::from_str(&d).expect("json event")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_completion_streams_its_answer_with_the_text_of_tool_rounds() {
    let dir = TempDir::new("stream-answer-chat");
    let stub = StubServer::start().await.expect("stub");
    let adder = adding_tactic(&dir, &stub);
    let running = serve(&[("adder", &adder)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let messages = json!([{"role": "user", "content": "2+2?"}]);

    script(&stub, false);
    let whole = post(&url, &[], &chat_body("adder", messages.clone(), false)).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let content = whole.json()["choices"][0]["message"]["content"].clone();
    assert_eq!(content, ANSWER);

    script(&stub, true);
    let streamed = post(&url, &[], &chat_body("adder", messages, true)).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let text: String = data(&streamed)
        .iter()
        .filter_map(|(_, c)| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, ANSWER);
    assert_eq!(stub.requests().len(), 4, "two rounds each");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_response_streams_deltas_that_add_up_to_its_done_text_and_its_completed_output() {
    let dir = TempDir::new("stream-answer-responses");
    let stub = StubServer::start().await.expect("stub");
    let adder = adding_tactic(&dir, &stub);
    let running = serve(&[("adder", &adder)]).await;
    let url = format!("{}/v1/responses", running.base);

    script(&stub, false);
    let whole = post(
        &url,
        &[],
        &json!({"model": "adder", "input": "2+2?"}).to_string(),
    )
    .await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let output = whole.json()["output"].clone();
    assert_eq!(output.as_array().map(Vec::len), Some(1), "{output}");
    assert_eq!(output[0]["content"][0]["text"], ANSWER);

    script(&stub, true);
    let body = json!({"model": "adder", "input": "2+2?", "stream": true}).to_string();
    let streamed = post(&url, &[], &body).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let events = data(&streamed);
    let named = |name: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|(n, _)| n.as_deref() == Some(name))
            .map(|(_, d)| d)
            .collect()
    };
    let deltas: String = named("response.output_text.delta")
        .iter()
        .filter_map(|d| d["delta"].as_str())
        .collect();
    assert_eq!(deltas, ANSWER);
    let done = named("response.output_text.done");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["text"], ANSWER);
    let completed = named("response.completed");
    let streamed_output = &completed[0]["response"]["output"];
    assert_eq!(streamed_output[0]["content"][0]["text"], ANSWER);
    // The same items as the unstreamed response (ids aside).
    let strip = |items: &Value| -> Vec<Value> {
        items
            .as_array()
            .expect("items")
            .iter()
            .map(|item| {
                let mut item = item.clone();
                item["id"] = Value::Null;
                item
            })
            .collect()
    };
    assert_eq!(strip(streamed_output), strip(&output));
}
