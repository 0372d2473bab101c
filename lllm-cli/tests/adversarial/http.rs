//! Hostile model servers: `lllm run` against a raw TCP server that redirects to another host, sends
//! endless or dripping bodies, HTML, wrong types, echoes credentials back, asks for absurd waits, or
//! streams without end. Every case: exit 1 with a clear message, no panic, bounded time and memory,
//! and neither the API key nor the `X-Api-Key` header value ever shown.

use std::path::PathBuf;
use std::time::Duration;

use lllm_runtime::testing::{HostileReply, HostileServer};

use super::support::{arg, lllm, Outcome, TempDir};

const KEY: &str = "sk-adversarial-key-7f3a9";
const EXTRA_KEY: &str = "xk-adversarial-extra-5c2e1";

async fn start(reply: HostileReply) -> HostileServer {
    HostileServer::start(reply).await.expect("server starts")
}

/// A tactic against `server` with the key from `${TEST_KEY}` and an `X-Api-Key` header: one step, or
/// with `chat` none (a chat tactic answers `--input` once, and may stream).
fn tactic(dir: &TempDir, server: &HostileServer, timeout_s: u32, chat: bool) -> PathBuf {
    let steps = if chat {
        ""
    } else {
        "steps:\n  - {agent: a, receive: hello}\n"
    };
    dir.write(
        "t.yaml",
        format!(
            "global:\n  model_name: m\n  max_call_retries: 2\n  model_args: {{api_base: \"{}\", \
             api_key: \"${{TEST_KEY}}\", timeout: {timeout_s}, extra_headers: {{X-Api-Key: \"{EXTRA_KEY}\"}}}}\n\
             agent_configs: [{{name: a, system_prompt: s}}]\n{steps}",
            server.base_url()
        ),
    )
}

/// `lllm run` of a tactic against `reply`, streaming (a chat tactic with `--stream`) or not; the
/// server too, to count connections.
async fn run_against(
    reply: HostileReply,
    stream: bool,
    timeout_s: u32,
) -> (Outcome, HostileServer) {
    let server = start(reply).await;
    let dir = TempDir::new("http");
    let file = tactic(&dir, &server, timeout_s, stream);
    let mut args = vec!["run", arg(&file)];
    if stream {
        args.extend(["--input", "hello", "--stream"]);
    }
    // Logging at its most verbose: no log line may show a body or a secret either.
    let outcome = lllm(&args)
        .env("TEST_KEY", KEY)
        .env("LLLM_LOG", "trace")
        .run()
        .await;
    outcome
        .assert_never_shows(KEY)
        .assert_never_shows(EXTRA_KEY);
    (outcome, server)
}

fn completion_chunk(content: &str) -> String {
    serde_json::json!({"choices": [{"delta": {"content": content}}]}).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_another_host_sends_it_nothing() {
    let elsewhere = start(HostileReply::json("{}")).await;
    for status in [301, 307, 308] {
        let location = format!(
            "http://{}/v1/chat/completions?api_key=q-leak",
            elsewhere.addr()
        );
        for stream in [false, true] {
            let (outcome, server) =
                run_against(HostileReply::redirect(status, &location), stream, 5).await;
            outcome
                .assert_clean(
                    1,
                    &[
                        &format!(
                            "the server answered HTTP {status}, a redirect to http://{}",
                            elsewhere.addr()
                        ),
                        "set api_base to the final URL",
                    ],
                )
                .assert_never_shows("q-leak");
            assert_eq!(server.connections(), 1, "a redirect was retried");
        }
    }
    assert_eq!(elsewhere.connections(), 0, "the other host was contacted");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_body_stays_within_the_memory_bound() {
    let (outcome, _) = run_against(HostileReply::endless_body("application/json"), false, 20).await;
    outcome.assert_clean(
        1,
        &["the server's answer body is larger than the limit of 32 MiB"],
    );
    let announced = HostileReply::http(
        200,
        &[
            ("content-type", "application/json"),
            ("content-length", "104857600"),
        ],
        "{",
    );
    let (outcome, _) = run_against(announced, false, 5).await;
    outcome.assert_clean(1, &["larger than the limit of 32 MiB"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_drip_ends_at_the_request_timeout() {
    for (content_type, stream) in [("application/json", false), ("text/event-stream", true)] {
        let drip = HostileReply::drip(content_type, ": wait\n", Duration::from_millis(50));
        let (outcome, _) = run_against(drip, stream, 1).await;
        outcome.assert_clean(1, &["no answer within 1s"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_html_page_is_not_a_chat_completion_and_not_retried() {
    let page = "<!DOCTYPE html><html><body>".to_owned() + &"<p>sign in</p>".repeat(10_000);
    for stream in [false, true] {
        let reply = HostileReply::http(200, &[("content-type", "text/html")], page.clone());
        let (outcome, server) = run_against(reply, stream, 5).await;
        outcome.assert_clean(
            1,
            &[
                "the server's answer is not a chat completion: it is not JSON",
                "<!DOCTYPE html>",
            ],
        );
        // The excerpt shows a dozen; the page has 10 000.
        let shown = outcome.stderr.matches("sign in").count();
        assert!(shown < 30, "the page was printed ({shown} times)");
        assert_eq!(server.connections(), 1, "it was retried");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_types_and_empty_choices_are_named() {
    let cases = [
        (
            r#"{"choices": [{"message": {"content": 42}}]}"#,
            "`choices[0].message.content`: invalid type: integer `42`",
        ),
        (r#"{"choices": []}"#, "it has no choices"),
    ];
    for (body, message) in cases {
        let (outcome, _) = run_against(HostileReply::json(body), false, 5).await;
        outcome.assert_clean(1, &[message]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_echoed_back_are_never_shown() {
    for status in [500, 401, 200] {
        let (outcome, _) = run_against(HostileReply::EchoHead { status }, false, 5).await;
        outcome.assert_clean(1, &["[redacted]"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_after_beyond_the_timeout_fails_at_once() {
    let reply = HostileReply::http(429, &[("retry-after", "3600")], "slow down");
    let (outcome, server) = run_against(reply, false, 5).await;
    outcome.assert_clean(
        1,
        &["asked to wait 3600s before trying again (Retry-After), longer than the 5s allowed by model_args.timeout: slow down"],
    );
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_stream_ends_at_the_stream_limit() {
    let event = format!("data: {}\n\n", completion_chunk(&"x".repeat(4096)));
    let (outcome, _) = run_against(HostileReply::endless_sse(&event), true, 25).await;
    outcome.assert_clean(
        1,
        &["the server's streamed answer is larger than the limit of 64 MiB"],
    );
    let (outcome, _) = run_against(HostileReply::endless_body("text/event-stream"), true, 25).await;
    outcome.assert_clean(
        1,
        &["the server's server-sent event is larger than the limit of 4 MiB"],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gzip_body_is_neither_inflated_nor_printed() {
    let mut gzip = vec![0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03];
    gzip.extend(std::iter::repeat_n(0u8, 4096));
    let reply = HostileReply::http(
        200,
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        gzip,
    );
    let (outcome, _) = run_against(reply, false, 5).await;
    outcome.assert_clean(1, &["(4106 bytes of binary data, not shown)"]);
    assert!(!outcome.stderr.contains('\u{fffd}'), "{}", outcome.stderr);
}
