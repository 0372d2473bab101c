//! The call loop against a local scripted HTTP server: tools, structured answers, streaming, faults.
//! Every request of one respond must carry the same session id.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lllm_runtime::agent::{AgentErrorKind, RetryPolicy, Role, StreamEvent};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use lllm_runtime::tools::ToolError;
use lllm_runtime::{
    tool_fn, Agent, InferenceHints, Message, ModelArgs, OpenAiInvoker, Profile, Tool,
};
use serde_json::{json, Value};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    /// The text to count the words of.
    text: String,
}

fn word_count(calls: Arc<AtomicUsize>, delay: Duration) -> Arc<dyn Tool> {
    tool_fn(
        "word_count",
        "Count the words of a text",
        move |args: Text| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                Ok::<_, ToolError>(args.text.split_whitespace().count().to_string())
            }
        },
    )
}

/// Counts its calls, adds a permit to `started` as each starts, then takes 5 s (far past any deadline
/// of the tests).
fn stall(calls: Arc<AtomicUsize>, started: Arc<tokio::sync::Semaphore>) -> Arc<dyn Tool> {
    tool_fn("word_count", "Count the words of a text", move |_: Text| {
        let (calls, started) = (calls.clone(), started.clone());
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            started.add_permits(1);
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, ToolError>("never".to_owned())
        }
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nap {
    ms: u64,
    label: String,
}

/// Sleeps `ms`, then answers its label: calls finish in an order other than the one they were made in.
fn nap(calls: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    tool_fn("nap", "Sleep, then say the label", move |args: Nap| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            Ok::<_, ToolError>(args.label)
        }
    })
}

fn builder(server: &StubServer) -> lllm_runtime::AgentBuilder {
    Agent::builder()
        .name("counter")
        .system_prompt("You count.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .inference_hints(InferenceHints::for_profile(Profile::Dynamo))
        .retry_policy(
            RetryPolicy::default()
                .max_call_retries(2)
                .base_delay(Duration::from_millis(5))
                .max_delay(Duration::from_millis(10))
                .max_retry_after(Duration::from_secs(1)),
        )
}

async fn server() -> StubServer {
    StubServer::start().await.expect("stub server starts")
}

/// Every request carried this one session id.
fn one_session(requests: &[RecordedRequest], agent: &Agent) {
    let id = agent.dialog_id("main").expect("main").to_string();
    for request in requests {
        assert_eq!(request.header("x-dynamo-session-id"), Some(id.as_str()));
    }
}

fn roles(agent: &Agent) -> Vec<Role> {
    agent
        .dialog("main")
        .expect("main")
        .messages()
        .iter()
        .map(|m| m.role)
        .collect()
}

fn tool_messages(request: &RecordedRequest) -> Vec<Value> {
    request.body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn one_tool_round_then_an_answer() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[(
        "c1",
        "word_count",
        r#"{"text": "one two three"}"#,
    )]));
    server.push(StubReply::text("three words"));
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = builder(&server)
        .tool(word_count(calls.clone(), Duration::ZERO))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent
        .receive("How many words: one two three?")
        .expect("receive");
    let answer = agent.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "three words");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        roles(&agent),
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    one_session(&requests, &agent);
    assert_eq!(
        requests[0].body["tools"],
        json!([{"type": "function", "function": {"name": "word_count", "description": "Count the words of a text",
            "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "The text to count the words of."}}, "required": ["text"]}}}])
    );
    assert_eq!(
        tool_messages(&requests[1]),
        [json!({"role": "tool", "tool_call_id": "c1", "content": "3"})]
    );
    assert_eq!(
        requests[1].body["messages"][2]["tool_calls"][0]["function"]["name"],
        "word_count"
    );
    assert!(requests[1].body.get("tool_choice").is_none());
}

/// A tool that answers only once a second call of it has started too; alone, it gives up after 30 s
/// with an error result. The call labelled `slow` then waits until the other has finished, so the
/// calls finish in the opposite order to the one they were made in.
fn meet() -> Arc<dyn Tool> {
    let both_started = Arc::new(tokio::sync::Barrier::new(2));
    let fast_done = Arc::new(tokio::sync::Notify::new());
    tool_fn(
        "meet",
        "Wait for the other call, then say the label",
        move |args: Nap| {
            let both_started = both_started.clone();
            let fast_done = fast_done.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(30), both_started.wait())
                    .await
                    .map_err(|_| ToolError::new("ran alone: the other call had not started"))?;
                if args.label == "slow" {
                    fast_done.notified().await;
                } else {
                    fast_done.notify_one();
                }
                Ok::<_, ToolError>(args.label)
            }
        },
    )
}

#[tokio::test]
async fn two_tool_calls_of_one_turn_run_concurrently_and_answer_in_call_order() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[
        ("a", "meet", r#"{"ms": 200, "label": "slow"}"#),
        ("b", "meet", r#"{"ms": 0, "label": "fast"}"#),
    ]));
    server.push(StubReply::text("done"));
    let agent = builder(&server).tool(meet()).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("meet twice").expect("receive");
    agent.respond("main").await.expect("answer");
    let results = tool_messages(&server.requests()[1]);
    assert_eq!(
        results[0],
        json!({"role": "tool", "tool_call_id": "a", "content": "slow"})
    );
    assert_eq!(
        results[1],
        json!({"role": "tool", "tool_call_id": "b", "content": "fast"})
    );
}

#[tokio::test]
async fn empty_and_reused_call_ids_are_replaced_so_results_match_their_calls() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[
        ("", "nap", r#"{"ms": 1, "label": "x"}"#),
        ("", "nap", r#"{"ms": 1, "label": "y"}"#),
    ]));
    server.push(StubReply::tool_calls(&[(
        "call_0",
        "nap",
        r#"{"ms": 1, "label": "z"}"#,
    )]));
    server.push(StubReply::tool_calls(&[(
        "call_0",
        "nap",
        r#"{"ms": 1, "label": "w"}"#,
    )]));
    server.push(StubReply::text("done"));
    let agent = builder(&server)
        .tool(nap(Arc::new(AtomicUsize::new(0))))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("go").expect("receive");
    agent.respond("main").await.expect("answer");
    let last = &server.requests()[3];
    let messages = last.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let call_ids: Vec<String> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().unwrap_or("").to_owned())
        .collect();
    let result_ids: Vec<String> = tool_messages(last)
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(call_ids.len(), 4);
    assert_eq!(call_ids, result_ids, "each result answers its own call");
    let unique: std::collections::HashSet<_> = call_ids.iter().collect();
    assert_eq!(unique.len(), 4, "{call_ids:?}");
    assert!(call_ids.iter().all(|id| !id.is_empty()));
    assert_eq!(call_ids[2], "call_0", "a fresh id is kept");
}

#[tokio::test]
async fn bad_calls_become_error_results_the_model_reads() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[
        ("u", "nope", "{}"),
        ("j", "word_count", "{not json"),
        ("s", "word_count", r#"{"txt": 1}"#),
    ]));
    server.push(StubReply::text("sorry"));
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = builder(&server)
        .tool(word_count(calls.clone(), Duration::ZERO))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("go").expect("receive");
    assert_eq!(agent.respond("main").await.expect("answer").text(), "sorry");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "no bad call reached the tool"
    );
    let results = tool_messages(&server.requests()[1]);
    let content = |i: usize| results[i]["content"].as_str().unwrap_or("").to_owned();
    assert_eq!(
        content(0),
        "error: there is no tool `nope`; the tools are: word_count"
    );
    assert!(
        content(1).starts_with("error: the arguments are not valid JSON"),
        "{}",
        content(1)
    );
    assert!(
        content(2).starts_with("error: the arguments do not match the tool's parameters"),
        "{}",
        content(2)
    );
    assert!(content(2).contains("\"text\""), "{}", content(2));
}

#[tokio::test]
async fn the_interrupt_bound_ends_with_a_tool_less_final_turn() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[(
        "1",
        "word_count",
        r#"{"text": "a"}"#,
    )]));
    server.push(StubReply::tool_calls(&[(
        "2",
        "word_count",
        r#"{"text": "a b"}"#,
    )]));
    // The final turn still calls a tool: the call is dropped, the text is the answer.
    server.push(StubReply::completion(json!({"role": "assistant", "content": "final",
        "tool_calls": [{"id": "3", "type": "function", "function": {"name": "word_count", "arguments": "{}"}}]})));
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = builder(&server)
        .tool(word_count(calls.clone(), Duration::ZERO))
        .max_tool_rounds(2)
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("loop").expect("receive");
    let answer = agent.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "final");
    assert!(answer.tool_calls.is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    one_session(&requests, &agent);
    assert!(requests[1].body.get("tool_choice").is_none());
    assert_eq!(requests[2].body["tool_choice"], "none");
    let dialog = agent.dialog("main").expect("main");
    let last = dialog.messages().last().expect("last");
    assert_eq!(last.role, Role::Assistant);
    assert!(last.tool_calls.is_empty(), "no unanswered tool call");
}

#[tokio::test]
async fn an_identical_repeated_call_is_not_run_again() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[(
        "1",
        "nap",
        r#"{"ms": 1, "label": "a b"}"#,
    )]));
    server.push(StubReply::tool_calls(&[(
        "2",
        "nap",
        r#"{ "label":"a b", "ms":1 }"#,
    )]));
    server.push(StubReply::text("2"));
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = builder(&server)
        .tool(nap(calls.clone()))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("count").expect("receive");
    agent.respond("main").await.expect("answer");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "same arguments in another key order"
    );
    let results = tool_messages(&server.requests()[2]);
    assert_eq!(results[0]["content"], "a b");
    assert!(results[1]["content"]
        .as_str()
        .is_some_and(|c| c.contains("already made")));
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
struct Plan {
    steps: u32,
}

#[tokio::test]
async fn structured_answers_are_retried_and_failed_attempts_stay_out_of_the_dialog() {
    let server = server().await;
    server.push(StubReply::text("three steps, I think"));
    server.push(StubReply::text(r#"{"steps": "three"}"#));
    server.push(StubReply::text(r#"{"steps": 3}"#));
    let agent = builder(&server).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("Plan it.").expect("receive");
    let plan: Plan = agent.respond_to("main").structured().await.expect("plan");
    assert_eq!(plan, Plan { steps: 3 });
    let dialog = agent.dialog("main").expect("main");
    let texts: Vec<_> = dialog.messages().iter().map(Message::text).collect();
    assert_eq!(texts, ["You count.", "Plan it.", r#"{"steps": 3}"#]);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    one_session(&requests, &agent);
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    assert_eq!(
        requests[0].body["response_format"]["json_schema"]["schema"]["required"],
        json!(["steps"])
    );
    let second = requests[1].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        second.len(),
        4,
        "the failed answer and the correction are shown to the model"
    );
    assert_eq!(second[2]["content"], "three steps, I think");
    assert!(second[3]["content"]
        .as_str()
        .is_some_and(|c| c.contains("not valid JSON")));
    let third = requests[2].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(third.len(), 4, "only the latest failure is shown");
    assert!(third[3]["content"]
        .as_str()
        .is_some_and(|c| c.contains("/steps")));
}

#[tokio::test]
async fn a_structured_answer_that_fits_the_schema_but_not_the_type_is_retried() {
    let server = server().await;
    server.push(StubReply::text(r#"{"steps": 5000000000}"#));
    server.push(StubReply::text(r#"{"steps": 2}"#));
    let agent = builder(&server).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("Plan it.").expect("receive");
    let plan: Plan = agent.respond_to("main").structured().await.expect("plan");
    assert_eq!(plan, Plan { steps: 2 });
    assert_eq!(agent.dialog("main").expect("main").len(), 3);
}

#[tokio::test]
async fn schema_feedback_is_dropped_once_the_model_moves_on_to_tools() {
    let server = server().await;
    server.push(StubReply::text("not json"));
    server.push(StubReply::tool_calls(&[(
        "n",
        "nap",
        r#"{"ms": 1, "label": "3"}"#,
    )]));
    server.push(StubReply::text(r#"{"steps": 3}"#));
    let agent = builder(&server)
        .tool(nap(Arc::new(AtomicUsize::new(0))))
        .output_schema(json!({"type": "object", "required": ["steps"]}))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("Plan it.").expect("receive");
    agent.respond("main").await.expect("answer");
    let roles_sent: Vec<String> = server.requests()[2].body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|m| m["role"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(roles_sent, ["system", "user", "assistant", "tool"]);
    assert_eq!(
        roles(&agent),
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
}

#[tokio::test]
async fn structured_answers_give_up_after_max_exception_retry() {
    let server = server().await;
    for _ in 0..2 {
        server.push(StubReply::text("nope"));
    }
    let agent = builder(&server)
        .max_answer_retries(1)
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("Plan it.").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent
        .respond_to("main")
        .structured::<Plan>()
        .await
        .expect_err("invalid");
    assert!(
        matches!(
            err.kind(),
            AgentErrorKind::InvalidAnswer { attempts: 2, .. }
        ),
        "{err}"
    );
    assert_eq!(agent.dialog("main").expect("main"), before);
}

#[tokio::test]
async fn a_streamed_answer_arrives_in_pieces() {
    let server = server().await;
    server.push(StubReply::sse_text(&["Hel", "lo", " there"]));
    let agent = builder(&server).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let mut pieces = Vec::new();
    let answer = agent
        .respond_to("main")
        .stream(&mut |event| {
            if let StreamEvent::Text(text) = event {
                pieces.push(text.to_owned());
            }
        })
        .await
        .expect("answer");
    assert_eq!(pieces, ["Hel", "lo", " there"]);
    assert_eq!(answer.text(), "Hello there");
    assert_eq!(answer.usage.map(|u| u.prompt_tokens), Some(11));
    assert_eq!(agent.usage().completion_tokens, 3);
    let request = &server.requests()[0];
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["stream_options"],
        json!({"include_usage": true})
    );
    one_session(&server.requests(), &agent);
}

#[tokio::test]
async fn a_streamed_tool_call_without_index_is_assembled() {
    let server = server().await;
    server.push(StubReply::sse(&[
        json!({"choices": [{"delta": {"tool_calls": [{"id": "t1", "type": "function", "function": {"name": "word_count", "arguments": ""}}]}}]}),
        json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "{\"text\": "}}]}}]}),
        json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "\"a b c d\"}"}}]}}]}),
        json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
    ]));
    server.push(StubReply::sse_text(&["4"]));
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = builder(&server)
        .tool(word_count(calls.clone(), Duration::ZERO))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("count").expect("receive");
    let mut events = Vec::new();
    let answer = agent
        .respond_to("main")
        .stream(&mut |event| match event {
            StreamEvent::ToolCall(call) => {
                events.push(format!("call {} {}", call.name, call.arguments))
            }
            StreamEvent::ToolResult { content, .. } => events.push(format!("result {content}")),
            StreamEvent::Text(text) => events.push(format!("text {text}")),
            StreamEvent::Reasoning(_) => {}
        })
        .await
        .expect("answer");
    assert_eq!(answer.text(), "4");
    assert_eq!(
        events,
        [
            r#"call word_count {"text": "a b c d"}"#,
            "result 4",
            "text 4"
        ]
    );
    assert_eq!(tool_messages(&server.requests()[1])[0]["content"], "4");
    one_session(&server.requests(), &agent);
}

#[tokio::test]
async fn a_stream_cut_midway_is_an_error_and_the_dialog_is_unchanged() {
    let server = server().await;
    server.push(StubReply::sse_cut(&[
        json!({"choices": [{"delta": {"content": "The answer is"}}]}),
    ]));
    let agent = builder(&server).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let before = agent.dialog("main").expect("main");
    let mut shown = String::new();
    let err = agent
        .respond_to("main")
        .stream(&mut |event| {
            if let StreamEvent::Text(text) = event {
                shown.push_str(text);
            }
        })
        .await
        .expect_err("cut");
    assert!(
        matches!(err.kind(), AgentErrorKind::Invoke { attempts: 1, .. }),
        "{err}"
    );
    assert_eq!(shown, "The answer is");
    assert_eq!(agent.dialog("main").expect("main"), before);
    assert_eq!(
        server.requests().len(),
        1,
        "text already shown is not retried"
    );
}

#[tokio::test]
async fn a_stream_that_ends_early_is_an_error_and_an_unshown_one_is_retried() {
    let server = server().await;
    // Nothing shown yet (no text): retried, and the second try completes.
    server.push(StubReply::sse_unfinished(&[
        json!({"choices": [{"delta": {"role": "assistant", "content": ""}}]}),
    ]));
    server.push(StubReply::sse_text(&["ok"]));
    // Text shown, then the stream just ends: an error, not retried.
    server.push(StubReply::sse_unfinished(&[
        json!({"choices": [{"delta": {"content": "par"}}]}),
    ]));
    let agent = builder(&server).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("one").expect("receive");
    let answer = agent
        .respond_to("main")
        .stream(&mut |_| {})
        .await
        .expect("retried");
    assert_eq!(answer.text(), "ok");
    agent.receive("two").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent
        .respond_to("main")
        .stream(&mut |_| {})
        .await
        .expect_err("ended early");
    let text = lllm_core::full_message(&err);
    assert!(
        text.contains("the stream ended before the answer was complete"),
        "{text}"
    );
    assert_eq!(agent.dialog("main").expect("main"), before);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn streamed_5xx_is_retried_then_reported_with_the_dialog_unchanged() {
    let server = server().await;
    for _ in 0..3 {
        server.push(StubReply::error(502, "bad gateway"));
    }
    let agent = builder(&server).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent
        .respond_to("main")
        .stream(&mut |_| {})
        .await
        .expect_err("5xx");
    assert!(
        matches!(err.kind(), AgentErrorKind::Invoke { attempts: 3, .. }),
        "{err}"
    );
    assert_eq!(agent.dialog("main").expect("main"), before);
    assert_eq!(server.requests().len(), 3);
    one_session(&server.requests(), &agent);
}

#[tokio::test]
async fn invalid_json_from_the_server_is_an_error_with_the_dialog_unchanged() {
    let server = server().await;
    server.push(StubReply::raw(200, "{\"choices\": [oops"));
    let agent = builder(&server).build().expect("agent");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent.respond("main").await.expect_err("invalid");
    assert!(
        matches!(
            err.kind(),
            AgentErrorKind::Invoke {
                source: lllm_runtime::InvokeError::InvalidResponse { .. },
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(agent.dialog("main").expect("main"), before);
}

#[tokio::test]
async fn the_deadline_covers_tool_rounds_and_cancellation_mid_tool_changes_nothing() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[(
        "1",
        "word_count",
        r#"{"text": "slow"}"#,
    )]));
    let calls = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(tokio::sync::Semaphore::new(0));
    let agent = builder(&server)
        .model_args(
            ModelArgs::new()
                .api_base(server.base_url())
                .deadline(Duration::from_millis(300)),
        )
        .tool(stall(calls.clone(), started.clone()))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("count").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent.respond("main").await.expect_err("deadline");
    assert!(
        matches!(err.kind(), AgentErrorKind::Deadline { .. }),
        "{err}"
    );
    assert_eq!(agent.dialog("main").expect("main"), before);
    started.acquire().await.expect("open").forget(); // the first respond's tool call

    server.push(StubReply::tool_calls(&[(
        "2",
        "word_count",
        r#"{"text": "slower"}"#,
    )]));
    // Dropped as soon as the tool has started: the respond is cancelled inside its tool.
    tokio::select! {
        answer = agent.respond("main") => panic!("the tool takes 5 s, yet: {answer:?}"),
        permit = started.acquire() => permit.expect("open").forget(),
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "both responds reached the tool"
    );
    assert_eq!(agent.dialog("main").expect("main"), before);
    agent.receive("free again").expect("not left busy");
}

#[tokio::test]
async fn tools_can_be_replaced_for_one_respond() {
    let server = server().await;
    server.push(StubReply::text("plain"));
    server.push(StubReply::tool_calls(&[(
        "n",
        "nap",
        r#"{"ms": 1, "label": "zz"}"#,
    )]));
    server.push(StubReply::text("napped"));
    let naps = Arc::new(AtomicUsize::new(0));
    let agent = builder(&server)
        .tool(word_count(Arc::new(AtomicUsize::new(0)), Duration::ZERO))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("no tools this time").expect("receive");
    agent
        .respond_to("main")
        .tools(Vec::new())
        .await
        .expect("answer");
    agent.receive("nap instead").expect("receive");
    agent
        .respond_to("main")
        .tools(vec![nap(naps.clone())])
        .await
        .expect("answer");
    let requests = server.requests();
    assert!(requests[0].body.get("tools").is_none());
    assert_eq!(requests[1].body["tools"][0]["function"]["name"], "nap");
    assert_eq!(naps.load(Ordering::SeqCst), 1, "the replacement tool ran");
    assert_eq!(agent.tools().len(), 1, "the agent keeps its own tools");
    assert_eq!(agent.tools()[0].name, "word_count");
}

#[tokio::test]
async fn a_callers_tool_without_a_journal_is_answered_not_run_and_own_calls_still_run() {
    let server = server().await;
    server.push(StubReply::tool_calls(&[
        ("c1", "shell", r#"{"cmd": "ls"}"#),
        ("c2", "word_count", r#"{"text": "a b"}"#),
    ]));
    server.push(StubReply::text("done"));
    let calls = Arc::new(AtomicUsize::new(0));
    let shell = lllm_runtime::tools::CallerTool::new(lllm_runtime::tools::ToolSpec {
        name: "shell".into(),
        description: "the caller's shell".into(),
        parameters: serde_json::json!({"type": "object"}),
    });
    let agent = builder(&server)
        .tool(word_count(calls.clone(), Duration::ZERO))
        .tool(Arc::new(shell))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("Go.").expect("receive");
    let answer = agent.respond("main").await.expect("answered");
    assert_eq!(answer.content.as_deref(), Some("done"));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the own tool ran");
    let results = tool_messages(&server.requests()[1]);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["tool_call_id"], "c1");
    let shell_result = results[0]["content"].as_str().unwrap_or("");
    assert!(shell_result.starts_with("error: not run"), "{shell_result}");
    assert_eq!(results[1]["content"], "2");
}
