//! Hostile model servers: `lllm run` against a raw TCP server that redirects to another host, sends
//! endless or dripping bodies, HTML, wrong types, echoes credentials back, asks for absurd waits, or
//! streams without end. Every case: exit 1 with a clear message, no panic, bounded time and memory,
//! and neither the API key nor the `X-Api-Key` header value ever shown.
//!
//! Hostile OpenTelemetry collectors too (see [`collector`]): the run is not theirs to spoil.

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

/// Hostile OpenTelemetry collectors: one that redirects to another host, one that never takes the
/// connection, one that takes it and never answers. The run succeeds all the same, with one
/// warning that its spans were not delivered, and no `OTEL_EXPORTER_OTLP_HEADERS` value leaves
/// for another host or reaches the terminal.
mod collector {
    use lllm_runtime::testing::StubServer;

    use super::*;

    const HEADER_SECRET: &str = "otlp-tenant-3b7c0d91";

    /// `lllm run` of a one-turn tactic against a stub model server, exporting its spans to
    /// `endpoint` over OTLP/HTTP with two credential headers.
    async fn run_exporting(endpoint: &str) -> Outcome {
        let server = StubServer::start().await.expect("stub server");
        let dir = TempDir::new("otlp");
        let file = dir.write(
            "t.yaml",
            format!(
                "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{}\"}}\n    system_prompt: s\n",
                server.base_url()
            ),
        );
        let headers = format!("x-tenant={HEADER_SECRET},authorization=Bearer {HEADER_SECRET}-b");
        let mut run = lllm(&["run", arg(&file), "--input", "x"])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            .env("OTEL_EXPORTER_OTLP_HEADERS", &headers);
        for inherited in [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_SDK_DISABLED",
            "OTEL_TRACES_EXPORTER",
        ] {
            run.command().env_remove(inherited);
        }
        let outcome = run.run().await;
        outcome
            .assert_clean(0, &["cannot send spans to the OpenTelemetry collector"])
            .assert_never_shows(HEADER_SECRET);
        assert_eq!(
            outcome.stderr.matches("cannot send spans").count(),
            1,
            "one warning: {}",
            outcome.stderr
        );
        assert_eq!(outcome.stdout_text().trim(), "stub answer to: x");
        outcome
    }

    /// Telemetry follows no redirect, as model calls do not: 301 and 302 would resend the headers,
    /// 307 and 308 the spans too. The redirect is a failed export.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_redirect_to_another_host_takes_it_neither_spans_nor_headers() {
        let elsewhere = start(HostileReply::json("{}")).await;
        for status in [301, 302, 307, 308] {
            let location = format!("http://{}/v1/traces", elsewhere.addr());
            let collector = start(HostileReply::redirect(status, &location)).await;
            let outcome = run_exporting(&format!("http://{}", collector.addr())).await;
            assert!(
                outcome.stderr.contains(&format!("status code: {status}")),
                "{}",
                outcome.stderr
            );
            assert!(collector.connections() >= 1, "the collector was asked");
            let followed: Vec<String> = elsewhere
                .received()
                .iter()
                .map(|r| String::from_utf8_lossy(r).into_owned())
                .collect();
            assert!(followed.is_empty(), "{status} was followed: {followed:?}");
        }
    }

    /// A collector that never takes the connection (listening, never accepting), or takes it and
    /// never answers: the spans wait at most the flush time at exit, and that is said once.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_collector_that_never_answers_gets_one_warning() {
        let unaccepting = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let silent = start(HostileReply::Silent).await;
        for address in [unaccepting.local_addr().expect("address"), silent.addr()] {
            let outcome = run_exporting(&format!("http://{address}")).await;
            assert!(
                outcome.stderr.contains("did not take them within 3 s"),
                "{}",
                outcome.stderr
            );
            assert!(
                outcome.elapsed < Duration::from_secs(15),
                "{:?}",
                outcome.elapsed
            );
        }
    }
}
