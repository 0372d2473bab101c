//! Request bodies sent in chunks (no `Content-Length` for the router to refuse first): the handler
//! reads them within the limit, and one byte past it is a 413 on every route that reads a body.

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{chat_tactic, serve_with};
use crate::support::TempDir;

const LIMIT: usize = 4096;

/// `json` padded with spaces (which JSON allows after a value) to `length` bytes.
fn padded(json: &str, length: usize) -> String {
    format!("{json}{}", " ".repeat(length - json.len()))
}

/// A POST of `body` to `path` in chunks of at most 1,000 bytes, on a new connection; its status
/// and JSON answer.
async fn post_chunked(base: &str, path: &str, body: &str) -> (u16, Value) {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    for chunk in body.as_bytes().chunks(1000) {
        request.push_str(&format!("{:x}\r\n", chunk.len()));
        request.push_str(std::str::from_utf8(chunk).expect("ascii"));
        request.push_str("\r\n");
    }
    request.push_str("0\r\n\r\n");
    let mut stream = tokio::net::TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .expect("connect");
    // Written whole before reading: a few kilobytes fit the socket's buffers.
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {text}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, body)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunked_body_past_the_limit_is_413_on_every_route_and_one_at_the_limit_is_read() {
    let dir = TempDir::new("chunked-bodies");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve_with(&[("helper", &helper)], |b| b.max_body_bytes(LIMIT)).await;
    let chat = r#"{"model":"helper","messages":[{"role":"user","content":"hi"}]}"#;
    stub.push(StubReply::text("read"));
    let (status, at_limit) =
        post_chunked(&running.base, "/v1/chat/completions", &padded(chat, LIMIT)).await;
    assert_eq!(status, 200, "{at_limit}");
    assert_eq!(at_limit["choices"][0]["message"]["content"], "read");
    let routes = [
        ("/v1/chat/completions", chat),
        ("/v1/responses", r#"{"model":"helper","input":"hi"}"#),
        ("/v1/runs", r#"{"model":"helper","input":"hi"}"#),
        (
            "/v1/runs/run_0123456789abcdef0123456789abcdef/approval",
            r#"{"decision":"approve"}"#,
        ),
    ];
    for (path, json) in routes {
        let (status, answer) = post_chunked(&running.base, path, &padded(json, LIMIT + 1)).await;
        assert_eq!(
            (status, &answer["error"]["code"]),
            (413, &Value::from("body_too_large")),
            "{path}: {answer}"
        );
    }
    assert_eq!(stub.requests().len(), 1);
}
