//! The invoker against hostile servers: a raw TCP fixture answers with scripted bytes (redirects to a
//! second server, endless and dripping bodies, lies about lengths, HTML, wrong types, echoed
//! credentials, unbounded streams). Every call must end, within a generous bound, in an answer or a
//! typed error that is clear and shows no secret; memory is bounded by the limits.

use std::sync::Arc;
use std::time::Duration;

use lllm_runtime::agent::RetryPolicy;
use lllm_runtime::hints::RequestFields;
use lllm_runtime::invoker::{ResponseLimits, ServerDefaults};
use lllm_runtime::testing::{HostileReply, HostileServer};
use lllm_runtime::{
    Agent, ChatRequest, ChatResponse, InvokeError, Invoker, Message, ModelArgs, OpenAiInvoker,
};

const KEY: &str = "sk-hostile-api-key-0001";
const EXTRA_KEY: &str = "xk-extra-header-secret-0002";
const PROMPT: &str = "PROMPT-MARKER the user's private question";
/// Far beyond what any case needs: only a hang reaches it.
const BOUND: Duration = Duration::from_secs(60);

fn completion(content: &str) -> String {
    serde_json::json!({"id": "c1", "choices": [{"message": {"role": "assistant", "content": content},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    .to_string()
}

fn chunk(content: &str) -> String {
    serde_json::json!({"choices": [{"delta": {"content": content}}]}).to_string()
}

async fn start(reply: HostileReply) -> HostileServer {
    HostileServer::start(reply).await.expect("server starts")
}

fn args(server: &HostileServer) -> ModelArgs {
    ModelArgs::new()
        .api_base(server.base_url())
        .api_key(KEY)
        .extra_header("X-Api-Key", EXTRA_KEY)
        .timeout(Duration::from_secs(10))
}

fn request(args: ModelArgs) -> ChatRequest {
    ChatRequest::new(
        "m",
        [Message::user(PROMPT)].into_iter().collect(),
        Arc::new(args),
        RequestFields::default(),
    )
}

fn invoker() -> OpenAiInvoker {
    OpenAiInvoker::with_defaults(ServerDefaults::none())
}

/// One call, streaming or not, bounded in time; the text streamed comes back too.
async fn call_with(
    invoker: &OpenAiInvoker,
    args: ModelArgs,
    stream: bool,
) -> (Result<ChatResponse, InvokeError>, String) {
    let request = request(args);
    let mut text = String::new();
    let call = async {
        if stream {
            let mut on_delta = |d: lllm_runtime::invoker::Delta<'_>| {
                if let lllm_runtime::invoker::Delta::Text(t) = d {
                    text.push_str(t)
                }
            };
            invoker.invoke_stream(&request, &mut on_delta).await
        } else {
            invoker.invoke(&request).await
        }
    };
    let result = tokio::time::timeout(BOUND, call)
        .await
        .expect("the call ends");
    (result, text)
}

async fn call(server: &HostileServer, stream: bool) -> Result<ChatResponse, InvokeError> {
    call_with(&invoker(), args(server), stream).await.0
}

/// The error, checked to show no credential in its message or its debug form.
#[track_caller]
fn failed(result: Result<ChatResponse, InvokeError>) -> InvokeError {
    let error = result.expect_err("a typed error");
    for shown in [error.to_string(), format!("{error:?}")] {
        assert!(
            !shown.contains(KEY) && !shown.contains(EXTRA_KEY),
            "a secret shows: {shown}"
        );
        assert!(shown.len() < 2_000, "too long: {} bytes", shown.len());
    }
    error
}

fn agent_for(server: &HostileServer, args: ModelArgs) -> Agent {
    Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(invoker()))
        .model_args(args.api_base(server.base_url()))
        .retry_policy(
            RetryPolicy::default()
                .max_call_retries(3)
                .base_delay(Duration::from_millis(5))
                .max_delay(Duration::from_millis(10))
                .max_retry_after(Duration::from_secs(60)),
        )
        .build()
        .expect("agent")
}

/// A respond of a fresh dialog, bounded in time.
async fn respond(agent: &Agent) -> Result<Message, lllm_runtime::AgentError> {
    agent.open("main").expect("open");
    agent.receive(PROMPT).expect("receive");
    tokio::time::timeout(BOUND, agent.respond("main"))
        .await
        .expect("the respond ends")
}

#[tokio::test]
async fn redirects_are_not_followed_so_nothing_reaches_the_other_host() {
    let elsewhere = start(HostileReply::json(&completion("stolen"))).await;
    for status in [301, 302, 303, 307, 308] {
        let location = format!(
            "http://user:pw-in-location@{}/v1/chat/completions?token=q-in-location",
            elsewhere.addr()
        );
        let server = start(HostileReply::redirect(status, &location)).await;
        for stream in [false, true] {
            let error = failed(call(&server, stream).await);
            let InvokeError::Redirect {
                status: got,
                location: Some(shown),
            } = &error
            else {
                panic!("unexpected {error:?}");
            };
            assert_eq!(*got, status);
            assert!(shown.contains(&elsewhere.addr().to_string()), "{shown}");
            assert!(!shown.contains("pw-in-location") && !shown.contains("q-in-location"));
            let message = error.to_string();
            assert!(
                message.contains("set api_base to the final URL"),
                "{message}"
            );
            assert!(!error.is_retryable());
        }
        // An agent does not retry it either.
        let agent = agent_for(&server, ModelArgs::new().api_key(KEY));
        let before = server.connections();
        let error = respond(&agent).await.expect_err("redirect");
        assert_eq!(error.status().map(|s| s.as_u16()), Some(status));
        assert_eq!(server.connections(), before + 1);
    }
    assert_eq!(elsewhere.connections(), 0, "the other host was contacted");
    assert!(elsewhere.received().is_empty());
}

#[tokio::test]
async fn an_endless_body_ends_at_the_answer_limit() {
    let server = start(HostileReply::endless_body("application/json")).await;
    let error = failed(call(&server, false).await);
    assert_eq!(
        error,
        InvokeError::TooLarge {
            what: "answer body",
            limit: 32 * 1024 * 1024
        }
    );
    assert!(error.to_string().contains("32 MiB"), "{error}");
    let small = invoker().with_limits(ResponseLimits::default().max_answer_bytes(100_000));
    let (result, _) = call_with(&small, args(&server), false).await;
    assert!(matches!(
        failed(result),
        InvokeError::TooLarge { limit: 100_000, .. }
    ));
}

#[tokio::test]
async fn an_announced_length_over_the_limit_is_refused_before_reading() {
    let server = start(HostileReply::http(
        200,
        &[
            ("content-type", "application/json"),
            ("content-length", "104857600"),
        ],
        "{\"choices\": [",
    ))
    .await;
    let error = failed(call(&server, false).await);
    assert!(
        matches!(
            error,
            InvokeError::TooLarge {
                what: "answer body",
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_length_that_lies_is_a_broken_connection_or_a_cut_answer() {
    let body = completion("hello");
    // Announces more than comes, then closes: the body is cut.
    let short = start(HostileReply::http(
        200,
        &[
            ("content-type", "application/json"),
            ("content-length", "100000"),
        ],
        body.clone(),
    ))
    .await;
    let error = failed(call(&short, false).await);
    assert!(matches!(error, InvokeError::Connection { .. }), "{error:?}");
    // Announces less than comes: only that much is read, which is not JSON.
    let long = start(HostileReply::http(
        200,
        &[
            ("content-type", "application/json"),
            ("content-length", "20"),
        ],
        body,
    ))
    .await;
    let error = failed(call(&long, false).await);
    assert!(error.to_string().contains("it is not JSON"), "{error}");
}

#[tokio::test]
async fn a_slow_drip_counts_against_the_request_timeout() {
    for (content_type, stream) in [("application/json", false), ("text/event-stream", true)] {
        let server = start(HostileReply::drip(
            content_type,
            ": still here\n",
            Duration::from_millis(20),
        ))
        .await;
        let args = args(&server).timeout(Duration::from_millis(700));
        let (result, _) = call_with(&invoker(), args, stream).await;
        assert_eq!(
            failed(result),
            InvokeError::Timeout(Duration::from_millis(700))
        );
    }
}

#[tokio::test]
async fn an_html_page_with_200_is_not_a_chat_completion_and_is_not_retried() {
    let page = "<!DOCTYPE html>\n<html><head><title>Login</title></head><body>".to_owned()
        + &"<p>Please sign in</p>".repeat(1000)
        + "</body></html>";
    let server = start(HostileReply::http(
        200,
        &[("content-type", "text/html")],
        page,
    ))
    .await;
    for stream in [false, true] {
        let error = failed(call(&server, stream).await);
        let message = error.to_string();
        assert!(
            message.starts_with("the server's answer is not a chat completion: it is not JSON"),
            "{message}"
        );
        assert!(message.contains("<!DOCTYPE html>\\n<html>"), "{message}");
        assert!(message.chars().count() < 400, "{message}");
        assert!(!error.is_retryable());
    }
    let agent = agent_for(&server, ModelArgs::new());
    let before = server.connections();
    respond(&agent).await.expect_err("html");
    assert_eq!(server.connections(), before + 1, "it was retried");
}

#[tokio::test]
async fn wrongly_typed_fields_are_errors_that_name_them() {
    let cases = [
        (
            r#"{"choices": [{"message": {"content": 42}, "finish_reason": "stop"}]}"#,
            "`choices[0].message.content`: invalid type: integer `42`",
        ),
        (
            r#"{"choices": [{"message": {"content": "hi", "tool_calls": {"a": 1}}}]}"#,
            "`choices[0].message.tool_calls`",
        ),
        (
            r#"{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "many"}}"#,
            "`usage.prompt_tokens`",
        ),
        (r#"{"choices": []}"#, "it has no choices"),
        (
            r#"{"choices": [{"finish_reason": "stop"}]}"#,
            "its first choice has no message",
        ),
        (
            r#"{"error": {"message": "quota exceeded"}}"#,
            "the server reported an error: quota exceeded",
        ),
        (r#"[1, 2, 3]"#, "it is JSON but not an object: [1, 2, 3]"),
        ("", "it is empty"),
    ];
    for (body, expected) in cases {
        let server = start(HostileReply::json(body)).await;
        let error = failed(call(&server, false).await);
        assert!(
            matches!(error, InvokeError::InvalidResponse { .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains(expected), "{body}: {error}");
    }
    let stream = start(HostileReply::sse(&[
        r#"{"choices": [{"delta": {"content": 42}}]}"#,
    ]))
    .await;
    let error = failed(call(&stream, true).await);
    assert!(
        error.to_string().contains("`choices[0].delta.content`"),
        "{error}"
    );
}

#[tokio::test]
async fn many_choices_are_skipped_and_too_many_tool_calls_refused() {
    let choice = r#"{"message": {"content": "more"}}"#;
    let body = format!(
        r#"{{"choices": [{{"message": {{"content": "first"}}, "finish_reason": "stop"}}, {}]}}"#,
        vec![choice; 100_000].join(",")
    );
    let server = start(HostileReply::json(&body)).await;
    let answer = call(&server, false).await.expect("the first choice");
    assert_eq!(answer.message.content.as_deref(), Some("first"));

    let call_json = r#"{"function": {"name": "f", "arguments": "{}"}}"#;
    let body = format!(
        r#"{{"choices": [{{"message": {{"tool_calls": [{}]}}}}]}}"#,
        vec![call_json; 5_000].join(",")
    );
    let server = start(HostileReply::json(&body)).await;
    let error = failed(call(&server, false).await);
    assert!(
        error.to_string().contains("more than 1024 tool calls"),
        "{error}"
    );

    let events: Vec<String> = (0..2_000)
        .map(|i| {
            serde_json::json!({"choices": [{"delta": {"tool_calls": [{"index": i, "id": format!("c{i}"),
                "function": {"name": "f", "arguments": "{}"}}]}}]})
            .to_string()
        })
        .collect();
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let server = start(HostileReply::sse(&events)).await;
    let error = failed(call(&server, true).await);
    assert!(
        error.to_string().contains("more than 1024 tool calls"),
        "{error}"
    );
}

#[tokio::test]
async fn credentials_echoed_by_the_server_are_redacted() {
    for status in [500, 400, 200] {
        let server = start(HostileReply::EchoHead { status }).await;
        let error = failed(call(&server, false).await);
        let message = error.to_string();
        assert!(message.contains("[redacted]"), "{message}");
        if status != 200 {
            assert_eq!(error.status().map(|s| s.as_u16()), Some(status));
        }
    }
    let json = format!(
        r#"{{"error": {{"message": "invalid key {KEY} (header X-Api-Key: {EXTRA_KEY})"}}}}"#
    );
    let server = start(HostileReply::http(
        401,
        &[("content-type", "application/json")],
        json,
    ))
    .await;
    let error = failed(call(&server, false).await);
    assert_eq!(
        error.to_string(),
        "the server answered HTTP 401: invalid key [redacted] (header X-Api-Key: [redacted])"
    );
    // Also in a stream's error event.
    let event = format!(r#"{{"error": {{"message": "bad key {KEY}"}}}}"#);
    let server = start(HostileReply::sse(&[&event])).await;
    let error = failed(call(&server, true).await);
    assert!(error.to_string().contains("bad key [redacted]"), "{error}");
}

#[tokio::test]
async fn an_endless_error_body_is_read_only_in_part() {
    let server = start(HostileReply::Endless {
        head: b"HTTP/1.1 500 Oops\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n"
            .to_vec(),
        chunk: b"error! ".repeat(1000),
    })
    .await;
    let error = failed(call(&server, false).await);
    let message = error.to_string();
    assert!(
        message.starts_with("the server answered HTTP 500: error! error!"),
        "{message}"
    );
    assert!(message.ends_with('…'), "{message}");
}

#[tokio::test]
async fn a_retry_after_beyond_the_timeout_fails_at_once_and_saying_what_was_asked() {
    let server = start(HostileReply::http(
        429,
        &[
            ("retry-after", "3600"),
            ("content-type", "application/json"),
        ],
        r#"{"error": {"message": "rate limited"}}"#,
    ))
    .await;
    let agent = agent_for(&server, ModelArgs::new().timeout(Duration::from_secs(5)));
    let error = respond(&agent).await.expect_err("refused");
    assert_eq!(server.connections(), 1, "it waited and retried");
    let Some(InvokeError::RetryAfterTooLong {
        asked, limited_by, ..
    }) = error.invoke_error()
    else {
        panic!("unexpected {error:?}");
    };
    assert_eq!(*asked, Duration::from_secs(3600));
    assert_eq!(*limited_by, lllm_runtime::invoker::WaitLimit::Timeout);
    let shown = lllm_core::full_message(&error);
    assert!(shown.contains("asked to wait 3600s"), "{shown}");
    assert!(shown.contains("rate limited"), "{shown}");

    // A short wait is honoured, and retried.
    let server = start(HostileReply::http(429, &[("retry-after", "0")], "")).await;
    let agent = agent_for(&server, ModelArgs::new().timeout(Duration::from_secs(5)));
    let error = respond(&agent).await.expect_err("still 429");
    assert_eq!(error.status(), Some(http::StatusCode::TOO_MANY_REQUESTS));
    assert_eq!(server.connections(), 4);
}

#[tokio::test]
async fn endless_streams_end_at_the_stream_limit() {
    let small = invoker().with_limits(ResponseLimits::default().max_stream_bytes(2 * 1024 * 1024));
    let text_forever = format!("data: {}\n\n", chunk("x"));
    for reply in [
        HostileReply::endless_sse(&text_forever),
        HostileReply::endless_sse(": keepalive\n\n"),
        HostileReply::endless_sse("event: ping\ndata: {}\n\n"),
    ] {
        let server = start(reply).await;
        let (result, _) = call_with(&small, args(&server), true).await;
        let error = failed(result);
        assert_eq!(
            error,
            InvokeError::TooLarge {
                what: "streamed answer",
                limit: 2 * 1024 * 1024
            }
        );
    }
    // One line without end.
    let server = start(HostileReply::endless_body("text/event-stream")).await;
    let error = failed(call(&server, true).await);
    assert_eq!(
        error,
        InvokeError::TooLarge {
            what: "server-sent event",
            limit: 4 * 1024 * 1024
        }
    );
}

#[tokio::test]
async fn a_stream_that_finished_is_not_waited_on_for_its_done() {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {}\n\ndata: {}\n\n",
        chunk("all"),
        serde_json::json!({"choices": [{"delta": {}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
    );
    let server = start(HostileReply::Drip {
        head: head.into_bytes(),
        body: b": still here\n".to_vec(),
        every: Duration::from_millis(50),
    })
    .await;
    let (result, text) = call_with(&invoker(), args(&server), true).await;
    assert_eq!(
        result.expect("complete").message.content.as_deref(),
        Some("all")
    );
    assert_eq!(text, "all");
}

#[tokio::test]
async fn odd_streams_are_answers_or_typed_errors() {
    // Bytes that are not UTF-8 become U+FFFD.
    let mut body =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec();
    body.extend_from_slice(b"data: {\"choices\": [{\"delta\": {\"content\": \"a\xff\xfeb\"}, \"finish_reason\": \"stop\"}]}\n\ndata: [DONE]\n\n");
    let server = start(HostileReply::Bytes(body)).await;
    let answer = call(&server, true).await.expect("lossy");
    assert_eq!(
        answer.message.content.as_deref(),
        Some("a\u{fffd}\u{fffd}b")
    );
    // No finish reason and no [DONE]: cut off.
    let server = start(HostileReply::sse(&[&chunk("half")])).await;
    let error = failed(call(&server, true).await);
    assert!(error
        .to_string()
        .contains("the stream ended before the answer was complete"));
    // A server that ignores `stream: true` and answers with one body.
    let server = start(HostileReply::json(&completion("whole"))).await;
    let (result, text) = call_with(&invoker(), args(&server), true).await;
    assert_eq!(
        result.expect("answer").message.content.as_deref(),
        Some("whole")
    );
    assert_eq!(text, "whole");
    // Events that are not chunks.
    let server = start(HostileReply::sse(&["<html>oops</html>"])).await;
    let error = failed(call(&server, true).await);
    assert!(
        error
            .to_string()
            .contains("an event of the stream is not a chunk: it is not JSON"),
        "{error}"
    );
}

#[tokio::test]
async fn a_gzip_body_is_not_inflated_and_not_shown() {
    // A gzip member header and deflate data: compressed bytes, as a gzip bomb would send.
    let mut gzip = vec![0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03];
    gzip.extend_from_slice(&[
        0xed, 0xc1, 0x01, 0x0d, 0x00, 0x00, 0x00, 0xc2, 0xa0, 0xf7, 0x4f,
    ]);
    gzip.extend(std::iter::repeat_n(0u8, 2000));
    for status in [200, 500] {
        let server = start(HostileReply::http(
            status,
            &[
                ("content-type", "application/json"),
                ("content-encoding", "gzip"),
            ],
            gzip.clone(),
        ))
        .await;
        let error = failed(call(&server, false).await);
        let message = error.to_string();
        assert!(
            message.contains("bytes of binary data, not shown"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = start(HostileReply::Silent).await;
    let args = args(&server).timeout(Duration::from_millis(300));
    let (result, _) = call_with(&invoker(), args, false).await;
    assert_eq!(
        failed(result),
        InvokeError::Timeout(Duration::from_millis(300))
    );
}

#[tokio::test]
async fn endless_headers_are_a_connection_error() {
    let server = start(HostileReply::Endless {
        head: b"HTTP/1.1 200 OK\r\nx-filler: ".to_vec(),
        chunk: vec![b'a'; 16 * 1024],
    })
    .await;
    for stream in [false, true] {
        let error = failed(call(&server, stream).await);
        assert!(matches!(error, InvokeError::Connection { .. }), "{error:?}");
    }
}
