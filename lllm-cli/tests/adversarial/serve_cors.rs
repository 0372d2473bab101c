//! `--cors-origin`: a browser chat UI of a listed origin may call the API routes, every other origin
//! is refused as before (look-alike names, other schemes and ports, `null`), the console is never
//! shared, a preflight needs no key but the request does, and a bad origin stops the server at
//! start-up with a message saying how to write one.

use std::path::PathBuf;

use lllm_runtime::testing::{StubReply, StubServer};

use super::serve::http;
use crate::support::{arg, lllm, Serving, TempDir};

const UI: &str = "https://chat.example";

fn chat_tactic(dir: &TempDir, stub: &StubServer) -> PathBuf {
    dir.write(
        "helper.yaml",
        format!(
            "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", timeout: 30}}\n  inference_hints: {{profile: dynamo}}\n  max_call_retries: 0\nagent_configs:\n  - name: helper\n    system_prompt: You help.\n",
            stub.base_url()
        ),
    )
}

fn preflight(origin: &str, asked_headers: &str) -> String {
    format!(
        "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: {asked_headers}\r\nSec-Fetch-Site: cross-site\r\nConnection: close\r\n\r\n"
    )
}

fn chat(origin: &str, extra: &str) -> String {
    let body = r#"{"model":"helper","messages":[{"role":"user","content":"hi"}]}"#;
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {origin}\r\nSec-Fetch-Site: cross-site\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The value of header `name` in a raw answer, if present.
fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next().unwrap_or_default();
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_listed_origin_may_call_the_api_from_a_browser() {
    let dir = TempDir::new("serve-cors");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    let state = dir.path("state");
    let serving = Serving::start(
        &[
            arg(&tactic),
            "--state",
            arg(&state),
            "--cors-origin",
            UI,
            "--cors-origin",
            "http://localhost:3000",
        ],
        &[],
    );
    let address = serving.address().to_owned();
    let exchange = move |request: String| {
        let address = address.clone();
        async move {
            tokio::task::spawn_blocking(move || http(&address, &request))
                .await
                .expect("joined")
        }
    };

    let (status, answer) =
        exchange(preflight(UI, "authorization, content-type, x-stainless-os")).await;
    assert_eq!(status, 204, "{answer}");
    assert_eq!(header(&answer, "access-control-allow-origin"), Some(UI));
    assert_eq!(
        header(&answer, "access-control-allow-headers"),
        Some("authorization, content-type, x-stainless-os")
    );
    assert!(header(&answer, "access-control-allow-methods").is_some_and(|m| m.contains("POST")));
    assert_eq!(header(&answer, "access-control-allow-credentials"), None);
    // Asked headers that are not a list of names are not echoed.
    let (status, answer) = exchange(preflight(UI, "x-a=b; \"c\"")).await;
    assert_eq!(status, 204, "{answer}");
    assert_eq!(header(&answer, "access-control-allow-headers"), None);

    stub.push(StubReply::text("hello"));
    let (status, answer) = exchange(chat(UI, "")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(header(&answer, "access-control-allow-origin"), Some(UI));
    assert!(header(&answer, "access-control-expose-headers")
        .is_some_and(|h| h.contains("x-lllm-session-id")));
    assert_eq!(stub.requests().len(), 1);

    for hostile in [
        "https://evil.example",
        "https://chat.example.evil.example",
        "https://evilchat.example",
        "http://chat.example",
        "https://chat.example:8443",
        "http://localhost:3001",
        "null",
    ] {
        let (status, answer) = exchange(preflight(hostile, "content-type")).await;
        assert_ne!(status, 204, "{hostile}: {answer}");
        assert_eq!(
            header(&answer, "access-control-allow-origin"),
            None,
            "{hostile}"
        );
        let (status, answer) = exchange(chat(hostile, "")).await;
        assert_eq!(status, 403, "{hostile}: {answer}");
        assert_eq!(
            header(&answer, "access-control-allow-origin"),
            None,
            "{hostile}"
        );
    }
    assert_eq!(
        stub.requests().len(),
        1,
        "no hostile request reached the server"
    );

    // The console is never shared with another origin.
    let (status, answer) = exchange(format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {UI}\r\nConnection: close\r\n\r\n"
    ))
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(header(&answer, "access-control-allow-origin"), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_key_the_preflight_needs_none_and_the_request_needs_it() {
    let dir = TempDir::new("serve-cors-key");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    let state = dir.path("state");
    let serving = Serving::start(
        &[arg(&tactic), "--state", arg(&state), "--cors-origin", UI],
        &[("LLLM_SERVE_KEY", "sk-cors-key-1")],
    );
    let address = serving.address().to_owned();
    let run = move |request: String| {
        let address = address.clone();
        tokio::task::spawn_blocking(move || http(&address, &request))
    };
    let (status, answer) = run(preflight(UI, "authorization, content-type"))
        .await
        .expect("joined");
    assert_eq!(status, 204, "{answer}");
    let (status, answer) = run(chat(UI, "")).await.expect("joined");
    assert_eq!(status, 401, "{answer}");
    // The UI can read why.
    assert_eq!(header(&answer, "access-control-allow-origin"), Some(UI));
    let (status, _) = run(chat(UI, "Authorization: Bearer wrong\r\n"))
        .await
        .expect("joined");
    assert_eq!(status, 401);
    assert!(stub.requests().is_empty());
    stub.push(StubReply::text("hello"));
    let (status, answer) = run(chat(UI, "Authorization: Bearer sk-cors-key-1\r\n"))
        .await
        .expect("joined");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(stub.requests().len(), 1);
}

#[test]
fn an_origin_that_is_not_one_stops_the_server_saying_how_to_write_it() {
    let dir = TempDir::new("serve-cors-bad");
    let tactic = dir.write(
        "t.yaml",
        "global: {model_name: m}\nagent_configs: [{name: a, system_prompt: s}]\n",
    );
    for bad in [
        "*",
        "null",
        "chat.example",
        "https://chat.example/app",
        "https://chat.example:0",
    ] {
        let outcome = lllm(&[
            "serve",
            arg(&tactic),
            "--cors-origin",
            bad,
            "--listen",
            "127.0.0.1:0",
        ])
        .run_blocking();
        outcome.assert_clean(2, &["--cors-origin", "SCHEME://HOST[:PORT]"]);
    }
}
