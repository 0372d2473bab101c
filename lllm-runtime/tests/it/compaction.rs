//! Context compaction against the recording stub: the summary request rides the previous request's
//! prefix (golden), the new window keeps the session and the pairing of tool calls, the trigger
//! fires at most once per respond, and hostile answers (no usage, a tool call for a summary, a
//! window too small) end sanely.

use std::sync::Arc;

use lllm_core::{
    pair_safe_tail_start, pairing_problem, ContextPolicy, InferenceHints, Message, ModelArgs,
    Profile, SessionOnCompaction, ToolCall, Window,
};
use lllm_runtime::agent::{Summarizer, SUMMARY_HEADING, SUMMARY_INSTRUCTION};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::BoxError;
use lllm_runtime::testing::{RecordedRequest, SharedBuffer, StubReply, StubServer};
use lllm_runtime::{tool_fn, Agent, OpenAiInvoker};
use proptest::prelude::*;
use serde_json::{json, Value};

/// An answer whose prompt the server counted as `prompt_tokens`.
fn answer(text: &str, prompt_tokens: u64) -> StubReply {
    StubReply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}}),
    )
}

fn calls(id: &str, prompt_tokens: u64) -> StubReply {
    StubReply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                 "tool_calls": [{"id": id, "type": "function", "function": {"name": "look", "arguments": "{\"what\":\"x\"}"}}]},
                 "finish_reason": "tool_calls"}],
               "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}}),
    )
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Look {
    what: String,
}

fn agent(server: &StubServer, session: SessionOnCompaction) -> Agent {
    let policy = ContextPolicy::with(Window::Tokens(1000), 0.5, 2, session).expect("policy");
    Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .inference_hints(
            InferenceHints::builder()
                .profile(Profile::Dynamo)
                .build()
                .expect("hints"),
        )
        .max_call_retries(0)
        .tool(tool_fn("look", "Looks", |a: Look| async move {
            Ok::<_, String>(format!("saw {}", a.what))
        }))
        .context(policy)
        .build()
        .expect("agent")
}

fn without(body: &Value, keys: &[&str]) -> Value {
    let mut body = body.clone();
    for key in keys {
        body.as_object_mut().expect("object").remove(*key);
    }
    body
}

fn session(request: &RecordedRequest) -> Option<&str> {
    request.header("x-dynamo-session-id")
}

#[tokio::test]
async fn the_summary_request_is_the_previous_request_plus_the_answer_and_one_instruction() {
    let server = StubServer::start().await.expect("stub");
    let agent = agent(&server, SessionOnCompaction::Keep);
    server.push(answer("first answer", 600));
    server.push(answer("the summary", 650));
    server.push(answer("second answer", 120));
    agent.open("main").expect("open");
    agent.receive("first question").expect("receive");
    agent.respond("main").await.expect("first");
    let old = agent.dialog_id("main").expect("id");
    agent.receive("second question").expect("receive");
    let second = agent.respond("main").await.expect("second");
    assert_eq!(second.text(), "second answer");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let (previous, summary, next) = (&requests[0].body, &requests[1].body, &requests[2].body);
    // Golden: the same body, the same messages, then exactly the answer and the instruction, and
    // tool_choice none; the same tools and hints; the same session on the wire.
    assert_eq!(
        without(summary, &["messages", "tool_choice"]),
        without(previous, &["messages"])
    );
    let before = previous["messages"].as_array().expect("messages");
    let asked = summary["messages"].as_array().expect("messages");
    assert_eq!(asked.len(), before.len() + 2);
    assert_eq!(asked[..before.len()], before[..]);
    assert_eq!(
        asked[before.len()],
        json!({"role": "assistant", "content": "first answer"})
    );
    assert_eq!(
        asked[before.len() + 1],
        json!({"role": "user", "content": SUMMARY_INSTRUCTION})
    );
    assert_eq!(summary["tool_choice"], "none");
    assert!(summary["tools"].is_array());
    let headers = |r: &RecordedRequest| {
        r.headers
            .iter()
            .filter(|(name, _)| name != "content-length")
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(headers(&requests[0]), headers(&requests[1]));
    // The new window: the system message, the summary, the kept tail, the new question; the same
    // session (keep), no parent on the wire.
    let window = next["messages"].as_array().expect("messages");
    assert_eq!(window[0], before[0]);
    assert_eq!(
        window[1]["content"],
        format!("{SUMMARY_HEADING}the summary")
    );
    assert_eq!(window.last().expect("last")["content"], "second question");
    assert_eq!(window.len(), 5, "{window:?}");
    assert_eq!(session(&requests[2]), session(&requests[0]));
    assert_eq!(requests[2].header("x-dynamo-parent-session-id"), None);
    // The dialog is the new window, a child of the old one.
    let dialog = agent.dialog("main").expect("dialog");
    assert_ne!(dialog.id(), old);
    assert_eq!(dialog.parent_id(), Some(old));
    assert_eq!(dialog.len(), 6);
    let stats = agent.context_stats();
    assert_eq!(
        (stats.compactions, stats.tokens_before, stats.tokens_after),
        (1, 600, 120)
    );
}

#[tokio::test]
async fn rotate_gives_the_new_window_a_session_naming_the_old_one_as_parent() {
    let server = StubServer::start().await.expect("stub");
    let agent = agent(&server, SessionOnCompaction::Rotate);
    server.push(answer("a", 600));
    server.push(answer("s", 600));
    server.push(answer("b", 100));
    agent.open("main").expect("open");
    agent.receive("q1").expect("receive");
    agent.respond("main").await.expect("first");
    agent.receive("q2").expect("receive");
    agent.respond("main").await.expect("second");
    let requests = server.requests();
    let old = session(&requests[0]).expect("session");
    assert_eq!(
        session(&requests[1]),
        Some(old),
        "the summary rides the old session"
    );
    assert_ne!(session(&requests[2]), Some(old));
    assert_eq!(requests[2].header("x-dynamo-parent-session-id"), Some(old));
}

#[tokio::test]
async fn tool_rounds_compact_once_and_the_new_window_keeps_calls_with_their_results() {
    let server = StubServer::start().await.expect("stub");
    let agent = agent(&server, SessionOnCompaction::Keep);
    server.push(calls("c1", 600));
    server.push(answer("summary", 700));
    server.push(calls("c2", 800));
    server.push(calls("c3", 900));
    server.push(answer("done", 950));
    agent.open("main").expect("open");
    agent.receive("work").expect("receive");
    let error = agent
        .respond("main")
        .await
        .expect_err("the window is too small");
    // Compacted once (one summary request), then the first request of the new window was still over
    // the threshold: a clear error, and the dialog as it was.
    let summaries = server
        .requests()
        .iter()
        .filter(|r| r.body["tool_choice"] == "none")
        .count();
    assert_eq!(summaries, 1);
    let text = lllm_core::full_message(&error);
    assert!(text.contains("still has 800 prompt tokens"), "{text}");
    assert_eq!(agent.dialog("main").expect("dialog").len(), 2);
    for request in server.requests() {
        let messages = wire_messages(&request.body);
        assert_eq!(pairing_problem(&messages), None, "{:?}", request.body);
    }
}

#[tokio::test]
async fn no_usage_never_compacts_and_a_tool_call_for_a_summary_leaves_the_window() {
    let server = StubServer::start().await.expect("stub");
    let agent = agent(&server, SessionOnCompaction::Keep);
    // No usage at all: the size is unknown, nothing is compacted.
    server.push(StubReply::json(
        200,
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "a"}, "finish_reason": "stop"}]}),
    ));
    server.push(answer("b", 700));
    agent.open("main").expect("open");
    for question in ["q1", "q2"] {
        agent.receive(question).expect("receive");
        agent.respond("main").await.expect("answer");
    }
    assert_eq!(server.requests().len(), 2);
    // Now due: the model answers the summary request with a tool call; the respond goes on in the
    // old window, nothing lost.
    server.push(calls("x", 700));
    server.push(answer("c", 710));
    agent.receive("q3").expect("receive");
    let answer = agent.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "c");
    assert_eq!(agent.context_stats().compactions, 0);
    let dialog = agent.dialog("main").expect("dialog");
    assert_eq!(dialog.len(), 7, "system, three questions, three answers");
}

#[tokio::test]
async fn a_system_prompt_larger_than_the_window_fails_after_one_summary_with_the_dialog_kept() {
    let server = StubServer::start().await.expect("stub");
    let agent = agent(&server, SessionOnCompaction::Keep);
    // The first answer's prompt (the system prompt, mostly) is already twice the window.
    server.push(answer("a", 2000));
    agent.open("main").expect("open");
    agent.receive("q1").expect("receive");
    agent.respond("main").await.expect("answer");
    // Due: one summary request (a summary longer than what it replaces), then the new window's
    // first request is over the threshold as well: an error naming what to change, and no second
    // summary.
    server.push(answer(&"summary ".repeat(500), 2100));
    server.push(answer("b", 2600));
    agent.receive("q2").expect("receive");
    let error = agent.respond("main").await.expect_err("cannot fit");
    let text = lllm_core::full_message(&error);
    assert!(text.contains("still has 2600 prompt tokens"), "{text}");
    assert!(text.contains("raise context.window"), "{text}");
    assert_eq!(
        server.requests().len(),
        3,
        "one summary, one request in the new window"
    );
    let dialog = agent.dialog("main").expect("dialog");
    assert_eq!(dialog.len(), 4, "system, q1, a, q2: as before the respond");
    // The summary request was sent: the counters say so, though its window was not kept.
    assert_eq!(agent.context_stats().compactions, 1);
    assert_eq!(agent.context_stats().tokens_after, 2600);
}

/// The messages of a request body as sent, read back for the pairing check.
fn wire_messages(body: &Value) -> Vec<Message> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            let mut message = match m["role"].as_str() {
                Some("system") => Message::system(text),
                Some("user") => Message::user(text),
                Some("tool") => Message::tool(m["tool_call_id"].as_str().unwrap_or_default(), text),
                _ => Message::assistant(text),
            };
            message.tool_calls = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| ToolCall {
                    id: c["id"].as_str().unwrap_or_default().to_owned(),
                    name: "t".into(),
                    arguments: "{}".into(),
                })
                .collect();
            message
        })
        .collect()
}

fn tool_heavy(turns: &[(u8, bool)]) -> Vec<Message> {
    let mut messages = vec![Message::system("s")];
    let mut n = 0;
    for (i, (tools, text)) in turns.iter().enumerate() {
        messages.push(Message::user(format!("q{i}")));
        for round in 0..*tools {
            let mut call = Message::assistant("");
            let ids: Vec<String> = (0..=round % 3)
                .map(|_| {
                    n += 1;
                    format!("call{n}")
                })
                .collect();
            call.tool_calls = ids
                .iter()
                .map(|id| ToolCall {
                    id: id.clone(),
                    name: "t".into(),
                    arguments: "{}".into(),
                })
                .collect();
            messages.push(call);
            for id in ids.iter().rev() {
                messages.push(Message::tool(id.clone(), "r"));
            }
        }
        if *text || *tools == 0 {
            messages.push(Message::assistant(format!("a{i}")));
        }
    }
    messages
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Over random tool-heavy dialogs and every compaction point and `keep_last`, the new window
    /// (system, summary, tail) never holds a call without its results or a result without its call.
    #[test]
    fn no_compaction_point_orphans_a_call_or_a_result(
        turns in proptest::collection::vec((0u8..4, any::<bool>()), 1..12),
        keep in 0usize..40,
        cut_back in 0usize..30,
    ) {
        let messages = tool_heavy(&turns);
        prop_assert_eq!(pairing_problem(&messages), None);
        // A compaction point: any prefix that ends after a complete round.
        let mut cut = messages.len().saturating_sub(cut_back).max(1);
        while cut > 1 && pairing_problem(&messages[..cut]).is_some() {
            cut -= 1;
        }
        let tail = pair_safe_tail_start(&messages[..cut], 1, keep);
        let window: Vec<Message> = std::iter::once(messages[0].clone())
            .chain(std::iter::once(Message::user("summary")))
            .chain(messages[tail..cut].iter().cloned())
            .collect();
        prop_assert_eq!(pairing_problem(&window), None);
        prop_assert!(tail >= 1 && tail <= cut);
        // Nothing of the last `keep` is dropped, unless it was a result whose call is before the tail.
        prop_assert!(cut - tail >= keep.min(cut - 1) || messages[cut.saturating_sub(keep).max(1)..tail].iter().all(|m| m.role == lllm_core::Role::Tool));
    }
}

#[tokio::test]
async fn a_resumed_run_compacts_the_same_way_without_sending_anything() {
    let dir = crate::support::TempDir::new("compaction-journal");
    let path = dir.0.join("run.journal");
    let server = StubServer::start().await.expect("stub");
    server.push(answer("first answer", 600));
    server.push(answer("the summary", 650));
    server.push(answer("second answer", 120));
    let steps = |agent: Agent| async move {
        agent.open("main").expect("open");
        agent.receive("first question").expect("receive");
        agent.respond("main").await.expect("first");
        agent.receive("second question").expect("receive");
        agent.respond("main").await.expect("second");
        agent.dialog("main").expect("dialog")
    };
    let journal =
        lllm_runtime::journal::Journal::create(&path, lllm_runtime::journal::RunStart::default())
            .expect("journal");
    let first = steps(with_journal(&server, Arc::new(journal))).await;
    assert_eq!(server.requests().len(), 3);
    server.clear_requests();
    let journal = lllm_runtime::journal::Journal::resume(&path).expect("resume");
    let again = steps(with_journal(&server, Arc::new(journal))).await;
    assert!(
        server.requests().is_empty(),
        "a resumed run sent {:?}",
        server.requests().len()
    );
    assert_eq!(
        again.id(),
        first.id(),
        "the new window has its journaled id"
    );
    assert_eq!(again.messages().to_vec(), first.messages().to_vec());
}

fn with_journal(server: &StubServer, journal: Arc<lllm_runtime::journal::Journal>) -> Agent {
    let policy = ContextPolicy::with(Window::Tokens(1000), 0.5, 2, SessionOnCompaction::Keep)
        .expect("policy");
    Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .max_call_retries(0)
        .context(policy)
        .journal(journal)
        .build()
        .expect("agent")
}

fn auto_agent(server: &StubServer) -> Agent {
    let auto = Window::Auto(lllm_core::AutoWindow::Auto);
    let policy = ContextPolicy::with(auto, 0.5, 2, SessionOnCompaction::Keep).expect("policy");
    Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("hosted_vllm/m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .max_call_retries(0)
        .context(policy)
        .build()
        .expect("agent")
}

#[tokio::test]
async fn window_auto_is_read_from_the_servers_models_once_or_fails_saying_what_to_set() {
    let server = StubServer::start().await.expect("stub");
    let agent = auto_agent(&server);
    server.push(answer("a", 600));
    server.push(StubReply::json(
        200,
        json!({"object": "list", "data": [{"id": "m", "max_model_len": 1000}]}),
    ));
    server.push(answer("summary", 600));
    server.push(answer("b", 100));
    server.push(answer("c", 100));
    agent.open("main").expect("open");
    for question in ["q1", "q2", "q3"] {
        agent.receive(question).expect("receive");
        agent.respond("main").await.expect("answer");
    }
    let requests = server.requests();
    let paths: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            ("POST", "/v1/chat/completions"),
            ("GET", "/v1/models"),
            ("POST", "/v1/chat/completions"),
            ("POST", "/v1/chat/completions"),
            ("POST", "/v1/chat/completions")
        ],
        "the window is read once, then the run compacts at 500 tokens"
    );
    assert_eq!(agent.context_stats().compactions, 1);

    let server = StubServer::start().await.expect("stub");
    let agent = auto_agent(&server);
    server.push(answer("a", 600));
    server.push(StubReply::json(
        200,
        json!({"object": "list", "data": [{"id": "m", "object": "model"}]}),
    ));
    agent.open("main").expect("open");
    agent.receive("q1").expect("receive");
    agent.respond("main").await.expect("first");
    agent.receive("q2").expect("receive");
    let error = agent.respond("main").await.expect_err("no window reported");
    let text = lllm_core::full_message(&error);
    assert!(
        text.contains("does not report the context length of `hosted_vllm/m`")
            || text.contains("does not report"),
        "{text}"
    );
    assert!(text.contains("set context.window"), "{text}");
}

#[tokio::test]
async fn the_first_request_of_a_new_window_is_marked_in_the_trace() {
    let server = StubServer::start().await.expect("stub");
    let out = lllm_runtime::testing::SharedBuffer::default();
    let recorder = Arc::new(
        lllm_runtime::trace::TraceRecorder::new(Box::new(out.clone()), 16).expect("recorder"),
    );
    let policy = ContextPolicy::with(Window::Tokens(1000), 0.5, 2, SessionOnCompaction::Keep)
        .expect("policy");
    let agent = Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .context(policy)
        .trace(recorder.clone())
        .build()
        .expect("agent");
    for reply in [
        answer("a", 600),
        answer("s", 620),
        answer("b", 100),
        answer("c", 140),
    ] {
        server.push(reply);
    }
    agent.open("main").expect("open");
    for question in ["q1", "q2", "q3"] {
        agent.receive(question).expect("receive");
        agent.respond("main").await.expect("answer");
    }
    recorder.flush().expect("flush");
    let resets: Vec<bool> = out
        .text()
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str::<Value>(line).expect("row")["prefix_reset"] == true)
        .collect();
    // The first answer, the summary (still the old window), the new window's first request, and
    // its second.
    assert_eq!(resets, [false, false, true, false]);
}

/// A summarizer's own error, which the compaction keeps as its source.
#[derive(Debug, thiserror::Error)]
#[error("the summary model is down")]
struct SummaryDown;

#[derive(Debug)]
struct FailingSummarizer;

#[async_trait::async_trait]
impl Summarizer for FailingSummarizer {
    async fn summarize(&self, _: &[Message]) -> Result<String, BoxError> {
        Err(SummaryDown.into())
    }
}

#[tokio::test]
async fn a_failing_summarizer_leaves_the_window_and_its_error_is_logged_with_its_cause() {
    let server = StubServer::start().await.expect("stub");
    let policy = ContextPolicy::with(Window::Tokens(1000), 0.5, 2, SessionOnCompaction::Keep)
        .expect("policy");
    let agent = Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .max_call_retries(0)
        .context(policy)
        .summarizer(Arc::new(FailingSummarizer))
        .build()
        .expect("agent");
    server.push(answer("first answer", 600));
    server.push(answer("second answer", 650));
    let log = SharedBuffer::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    agent.open("main").expect("open");
    agent.receive("first question").expect("receive");
    agent.respond("main").await.expect("first");
    let old = agent.dialog_id("main").expect("id");
    agent.receive("second question").expect("receive");
    let second = agent
        .respond("main")
        .await
        .expect("second, in the old window");
    assert_eq!(second.text(), "second answer");
    assert_eq!(agent.dialog_id("main").expect("id"), old, "not compacted");
    assert_eq!(
        server.requests().len(),
        2,
        "no summary request: the summarizer writes it"
    );
    assert_eq!(agent.context_stats().compactions, 0);
    let log = log.text();
    assert!(
        log.contains("context compaction: the summarizer failed: the summary model is down"),
        "{log}"
    );
}
