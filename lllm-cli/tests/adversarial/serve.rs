//! `lllm serve` under hostile HTTP: a public address without a key, wrong keys, clients that never
//! finish their headers, thousands of idle connections, header values that are not text or are 8 KiB
//! long, bodies announced too large, malformed or followed by more text, two `Host` headers. The
//! server answers, bounded, and never panics.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};

use crate::support::{arg, lllm, Serving, TempDir};

pub(crate) fn chat_tactic(dir: &TempDir, stub: &StubServer) -> PathBuf {
    dir.write(
        "helper.yaml",
        format!(
            "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", timeout: 30}}\n  inference_hints: {{profile: dynamo}}\n  max_call_retries: 0\nagent_configs:\n  - name: helper\n    system_prompt: You help.\n",
            stub.base_url()
        ),
    )
}

#[test]
fn a_public_address_needs_a_key_and_the_key_is_never_shown() {
    let dir = TempDir::new("serve-key");
    let tactic = dir.write(
        "t.yaml",
        "global: {model_name: m}\nagent_configs: [{name: a, system_prompt: s}]\n",
    );
    let refused = lllm(&["serve", arg(&tactic), "--listen", "0.0.0.0:0"]).run_blocking();
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("needs a key"), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("LLLM_SERVE_KEY"),
        "{}",
        refused.stderr
    );

    let serving = Serving::start(&[arg(&tactic)], &[("LLLM_SERVE_KEY", "sk-serve-secret-1")]);
    let (status, body) = http(
        serving.address(),
        "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 401, "{body}");
    let (status, _) = http(
        serving.address(),
        "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk-serve-secret-1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert!(!serving
        .stderr
        .lock()
        .expect("log")
        .contains("sk-serve-secret-1"));
}

/// One raw HTTP exchange: the status and the answer (head and body).
pub(crate) fn http(address: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    stream.write_all(request.as_bytes()).expect("write");
    let mut text = String::new();
    stream.read_to_string(&mut text).ok();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_idle_and_hostile_clients_do_not_hold_the_server() {
    let dir = TempDir::new("serve-hostile");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    let serving = Serving::start(&[arg(&tactic), "--read-timeout", "1"], &[]);
    let address = serving.address().to_owned();
    // A client that never finishes its headers is cut off after the read timeout.
    let mut slow = TcpStream::connect(&address).expect("connect");
    slow.write_all(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("write");
    slow.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let started = Instant::now();
    let mut rest = Vec::new();
    slow.read_to_end(&mut rest).ok();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the slow client was kept"
    );
    // Two thousand idle connections, and the server still answers.
    let idle: Vec<TcpStream> = (0..2000)
        .filter_map(|_| TcpStream::connect(&address).ok())
        .collect();
    assert!(idle.len() > 1900, "{} connections", idle.len());
    let (status, _) = http(
        &address,
        "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    // A bound, not a measure (the benchmark measures): idle connections cost kilobytes each.
    let rss = serving.rss_mib();
    assert!(rss < 256, "{rss} MiB with {} idle connections", idle.len());
    drop(idle);
    // A session header that is no text, and one of 8 KiB: served, never forwarded raw.
    stub.push(StubReply::text("ok"));
    stub.push(StubReply::text("ok"));
    let body = r#"{"model":"helper","messages":[{"role":"user","content":"hi"}]}"#;
    // (Control characters other than tab are refused by the HTTP parser itself, with 400.)
    for value in ["bad\tid/..\u{e9}", &"x".repeat(8000)] {
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-session-id: {value}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let (status, text) = http(&address, &request);
        assert_eq!(status, 200, "{text}");
    }
    for request in stub.requests() {
        let session = request.header("x-dynamo-session-id").expect("a session");
        assert!(
            session.len() <= 96
                && session
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-~".contains(&b)),
            "{session}"
        );
    }
    // Truncated and oversized bodies get errors, not a hang or a panic.
    let (status, _) = http(
        &address,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\nConnection: close\r\n\r\n{}",
    );
    assert_eq!(status, 413);
    let (status, _) = http(&address, "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\n[1]");
    assert_eq!(status, 400);
    assert!(!serving.stderr.lock().expect("log").contains("panicked"));
}

#[tokio::test(flavor = "multi_thread")]
async fn console_watchers_and_a_flood_of_runs_neither_hold_the_server_nor_grow_it_without_bound() {
    let dir = TempDir::new("serve-console-flood");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    stub.answer_unscripted(Duration::ZERO, Some(StubReply::text("ok")));
    let serving = Serving::start(&[arg(&tactic)], &[]);
    let address = serving.address().to_owned();
    // 200 browsers watching the run list, none of them reading.
    let watchers: Vec<TcpStream> = (0..200)
        .filter_map(|_| {
            let mut stream = TcpStream::connect(&address).ok()?;
            stream
                .write_all(b"GET /v1/runs?stream=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .ok()?;
            Some(stream)
        })
        .collect();
    assert_eq!(watchers.len(), 200);
    let body = r#"{"model":"helper","messages":[{"role":"user","content":"hi"}]}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let flood = tokio::task::spawn_blocking(move || {
        (0..1200)
            .filter(|_| http(&address, &request).0 == 200)
            .count()
    });
    let answered = flood.await.expect("flood");
    assert_eq!(answered, 1200);
    // The server still answers and lists the runs (1,000 at most per list; how many it keeps is a
    // unit test of the store), and its memory is bounded.
    let (status, text) = http(
        serving.address(),
        "GET /v1/runs?limit=1000 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    let listed = text.matches("\"object\":\"run\"").count();
    assert_eq!(listed, 1000, "{listed} runs listed");
    // Hostile queries and pages that do not exist.
    for path in [
        "/v1/runs?limit=99999999999999999999",
        "/v1/runs?stream=1&stream=2",
        "/v1/runs/run_00000000000000000000000000000000/dialogs",
        "/v1/runs/..%2f..%2fetc%2fpasswd/dialogs",
        "/console/../../etc/passwd",
    ] {
        let (status, _) = http(
            serving.address(),
            &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
        );
        assert!((400..500).contains(&status), "{path}: {status}");
    }
    let rss = serving.rss_mib();
    assert!(rss < 256, "{rss} MiB after 1,200 runs with 200 watchers");
    drop(watchers);
    assert!(!serving.stderr.lock().expect("log").contains("panicked"));
}

/// A raw `POST` of `body` to `path`, closed after the answer.
pub(crate) fn post_request(path: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_with_text_after_its_json_value_is_refused_on_every_route() {
    let dir = TempDir::new("serve-trailing");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    let routes = [
        (
            "/v1/chat/completions",
            r#"{"model":"helper","messages":[{"role":"user","content":"WORDS"}]}"#,
        ),
        ("/v1/responses", r#"{"model":"helper","input":"WORDS"}"#),
        ("/v1/runs", r#"{"model":"helper","input":"WORDS"}"#),
    ];
    for (path, body) in routes {
        // A second request run into the first, a stray character, a closing bracket too many.
        for tail in [r#"{"model":"helper","input":"refused"}"#, "x", "\n]"] {
            let sent = format!("{}{tail}", body.replace("WORDS", "refused"));
            let (status, text) = http(serving.address(), &post_request(path, &sent));
            assert_eq!(status, 400, "{path} {sent}: {text}");
            assert!(
                text.contains("one JSON value and nothing after it") && text.contains("column"),
                "{path}: {text}"
            );
        }
        // The value alone, whitespace after it, is served.
        let sent = format!("{} \r\n", body.replace("WORDS", "served"));
        let (status, text) = http(serving.address(), &post_request(path, &sent));
        assert_eq!(status, 200, "{path}: {text}");
    }
    let records = std::fs::read_dir(state.join("runs"))
        .expect("runs")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(records, 1, "one run: the one whose body was only its value");
    assert!(stub
        .requests()
        .iter()
        .all(|r| !r.body.to_string().contains("refused")));
    assert!(!serving.stderr.lock().expect("log").contains("panicked"));
}

#[test]
fn a_request_with_two_host_headers_is_refused() {
    let dir = TempDir::new("serve-hosts");
    let tactic = dir.write(
        "t.yaml",
        "global: {model_name: m}\nagent_configs: [{name: a, system_prompt: s}]\n",
    );
    let state = dir.0.join("state");
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    let body = r#"{"model":"t","input":"hi"}"#;
    for hosts in [
        "Host: 127.0.0.1\r\nHost: evil.example\r\n",
        "Host: evil.example\r\nHost: 127.0.0.1\r\n",
        "Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n",
        "Host: 127.0.0.1\r\nhost: localhost:1\r\n",
    ] {
        let (status, text) = http(
            serving.address(),
            &format!("GET /v1/models HTTP/1.1\r\n{hosts}Connection: close\r\n\r\n"),
        );
        assert_eq!(status, 400, "{hosts:?}: {text}");
        assert!(text.contains("more than one Host header"), "{text}");
        let (status, text) = http(
            serving.address(),
            &format!(
                "POST /v1/runs HTTP/1.1\r\n{hosts}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        );
        assert_eq!(status, 400, "{hosts:?}: {text}");
    }
    let records = std::fs::read_dir(state.join("runs"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(records, 0, "no run was started");
    let (status, _) = http(
        serving.address(),
        "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "one Host is served");

    // With a key too: the duplicate is refused before the key is looked at.
    let keyed_state = dir.0.join("keyed-state");
    let keyed = Serving::start(
        &[arg(&tactic), "--state", arg(&keyed_state)],
        &[("LLLM_SERVE_KEY", "sk-hosts-1")],
    );
    let (status, text) = http(
        keyed.address(),
        "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nAuthorization: Bearer sk-hosts-1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 400, "{text}");
}
