//! `lllm serve` as a process, with real clients: the official OpenAI Python SDK and the Codex CLI
//! (a coding harness), the key rules, and hostile HTTP (slow, idle and malformed clients).
//!
//! `scripts/test.sh` installs the clients (`scripts/servers/clients.sh install`) and sets
//! `LLLM_OPENAI_PYTHON`, `LLLM_CODEX` and `LLLM_REQUIRE_CLIENTS=1`. Without those variables the client
//! tests say so and pass without checking, unless `LLLM_REQUIRE_CLIENTS=1`, which makes them fail.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};

use crate::support::{arg, lllm, TempDir};

/// A running `lllm serve`, killed when dropped.
struct Serving {
    child: Child,
    base: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Serving {
    /// Starts `lllm serve ARGS --listen 127.0.0.1:0` and waits for its address.
    fn start(args: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lllm"));
        command
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("LLLM_SERVE_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("lllm serve starts");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, receiver) = std::sync::mpsc::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("on http://").nth(1) {
                    let address = url.split('/').next().unwrap_or_default().to_owned();
                    sender.send(address).ok();
                }
                kept.lock().expect("log").push_str(&(line + "\n"));
            }
        });
        let address = receiver
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("lllm serve never said where it listens"));
        Serving {
            child,
            base: format!("http://{address}"),
            stderr: log,
        }
    }

    fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }
}

fn chat_tactic(dir: &TempDir, stub: &StubServer) -> PathBuf {
    dir.write(
        "helper.yaml",
        format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: helper
    system_prompt: "You help.{{% if client_system %}} The client says: {{{{ client_system }}}}{{% endif %}}"
"#,
            api = stub.base_url()
        ),
    )
}

/// A client installed by `scripts/servers/clients.sh`, or why the test cannot run.
#[allow(clippy::print_stderr)]
fn client(variable: &str, test: &str) -> Option<String> {
    match std::env::var(variable).ok().filter(|v| !v.is_empty()) {
        Some(path) => Some(path),
        None if std::env::var("LLLM_REQUIRE_CLIENTS").as_deref() == Ok("1") => panic!(
            "{test}: {variable} must be set: run `eval \"$(scripts/servers/clients.sh install)\"` (scripts/test.sh does)"
        ),
        None => {
            eprintln!("{test}: skipped: {variable} is not set (scripts/servers/clients.sh install; scripts/test.sh runs this test)");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_python_sdk_is_served_chat_and_responses() {
    let Some(python) = client("LLLM_OPENAI_PYTHON", "openai sdk") else {
        return;
    };
    let dir = TempDir::new("serve-sdk");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    stub.push(StubReply::text("first answer"));
    stub.push(StubReply::sse_text(&["second ", "answer"]));
    stub.push(StubReply::text("third answer"));
    stub.push(StubReply::text("fourth answer"));
    stub.push(StubReply::text("fifth answer"));
    stub.push(StubReply::sse_text(&["sixth ", "answer"]));
    let state = dir.path("state");
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve/openai_sdk.py");
    let base = format!("{}/v1", serving.base);
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .args([base.as_str(), "helper"])
            .output()
            .expect("python runs")
    })
    .await
    .expect("joined");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        serving.stderr.lock().expect("log")
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        8,
        "{stdout}"
    );
    let requests = stub.requests();
    assert_eq!(requests.len(), 6);
    // The three chat requests of one thread carried its id downstream.
    for request in &requests[..3] {
        assert_eq!(
            request.header("x-dynamo-session-id"),
            Some("sdk-conversation")
        );
    }
    // The continued response kept the first one's session and prefix.
    assert_eq!(
        requests[4].header("x-dynamo-session-id"),
        requests[3].header("x-dynamo-session-id")
    );
    let first = requests[3].body["messages"]
        .as_array()
        .expect("messages")
        .clone();
    let second = requests[4].body["messages"].as_array().expect("messages");
    assert_eq!(second[..first.len()], first[..]);
    assert_eq!(first[0]["content"], "You help. The client says: Be brief.");
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
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 401, "{body}");
    let (status, _) = http(
        serving.address(),
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-serve-secret-1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert!(!serving
        .stderr
        .lock()
        .expect("log")
        .contains("sk-serve-secret-1"));
}

/// One raw HTTP exchange: the status and the body.
fn http(address: &str, request: &str) -> (u16, String) {
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
    slow.write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
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
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    drop(idle);
    // A session header that is no text, and one of 8 KiB: served, never forwarded raw.
    stub.push(StubReply::text("ok"));
    stub.push(StubReply::text("ok"));
    let body = r#"{"model":"helper","messages":[{"role":"user","content":"hi"}]}"#;
    // (Control characters other than tab are refused by the HTTP parser itself, with 400.)
    for value in ["bad\tid/..\u{e9}", &"x".repeat(8000)] {
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-session-id: {value}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
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
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\nConnection: close\r\n\r\n{}",
    );
    assert_eq!(status, 413);
    let (status, _) = http(&address, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\n[1]");
    assert_eq!(status, 400);
    assert!(!serving.stderr.lock().expect("log").contains("panicked"));
}

/// Codex CLI's configuration for a provider at `base` (nothing reaches beyond loopback: no plugin
/// sync, analytics or web search).
fn codex_config(base: &str) -> String {
    format!(
        r#"model = "helper"
model_provider = "lllm"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.lllm]
name = "lllm serve"
base_url = "{base}/v1"
wire_api = "responses"
env_key = "LLLM_TEST_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"

[features]
plugins = false
remote_plugin = false
apps = false
"#
    )
}

/// Runs `codex exec ARGS` with `home` as its CODEX_HOME, from `dir`.
fn codex(program: &str, home: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    let mut child = Command::new(program)
        .arg("exec")
        .args([
            "--strict-config",
            "--skip-git-repo-check",
            "--color",
            "never",
        ])
        .args(args)
        .env("CODEX_HOME", home)
        .env("LLLM_TEST_KEY", "unused-on-loopback")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codex starts");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("codex output")
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_cli_gets_the_tactics_answer_and_its_thread_is_the_downstream_session() {
    let Some(program) = client("LLLM_CODEX", "codex") else {
        return;
    };
    let dir = TempDir::new("serve-codex");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    stub.push(StubReply::sse_text(&["PONG", "-42"]));
    stub.push(StubReply::sse_text(&["PONG", "-43"]));
    let state = dir.path("state");
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    let home = dir.path("codex-home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(home.join("config.toml"), codex_config(&serving.base)).expect("config");
    let work = dir.path("work");
    std::fs::create_dir_all(&work).expect("work");

    let (program2, home2, work2) = (program.clone(), home.clone(), work.clone());
    let first =
        tokio::task::spawn_blocking(move || codex(&program2, &home2, &work2, &["say ping"]))
            .await
            .expect("joined");
    let stderr = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(
        first.status.success(),
        "{stderr}\n{}",
        serving.stderr.lock().expect("log")
    );
    assert_eq!(
        String::from_utf8_lossy(&first.stdout).trim(),
        "PONG-42",
        "{stderr}"
    );
    let thread = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("session id: "))
        .expect("codex names its session")
        .trim()
        .to_owned();

    let second = tokio::task::spawn_blocking(move || {
        codex(
            &program,
            &home,
            &work,
            &["resume", "--last", "say ping again"],
        )
    })
    .await
    .expect("joined");
    let stderr = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(second.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&second.stdout).trim(),
        "PONG-43",
        "{stderr}"
    );

    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    // Codex's thread id reached the serving stack as the session of both turns.
    for request in &requests {
        assert_eq!(request.header("x-dynamo-session-id"), Some(thread.as_str()));
    }
    let messages = |i: usize| {
        requests[i].body["messages"]
            .as_array()
            .expect("messages")
            .clone()
    };
    let (one, two) = (messages(0), messages(1));
    // The tactic's own system prompt stays first; Codex's developer text reaches it as
    // `client_system`; the user's words are the input.
    assert!(one[0]["content"]
        .as_str()
        .unwrap_or("")
        .starts_with("You help. The client says: "));
    assert_eq!(one.last().expect("input")["content"], "say ping");
    assert_eq!(two.last().expect("input")["content"], "say ping again");
    assert!(two
        .iter()
        .any(|m| m["role"] == "assistant" && m["content"] == "PONG-42"));
    // The resumed turn extends the first one's prefix downstream: the cache hits.
    assert_eq!(two[..one.len()], one[..]);
}
