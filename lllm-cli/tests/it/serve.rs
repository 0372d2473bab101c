//! `lllm serve` as a process, with real clients: the official OpenAI Python SDK and the Codex CLI
//! (a coding harness). The key rules and hostile HTTP are in the adversarial suite.
//!
//! `scripts/test.sh` installs the clients (`scripts/servers/clients.sh install`) and sets
//! `LLLM_OPENAI_PYTHON`, `LLLM_CODEX` and `LLLM_REQUIRE_CLIENTS=1`. Without those variables the client
//! tests say so and pass without checking, unless `LLLM_REQUIRE_CLIENTS=1`, which makes them fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};

use crate::support::{arg, Serving, TempDir};

pub(crate) fn chat_tactic(dir: &TempDir, stub: &StubServer) -> PathBuf {
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
pub(crate) fn client(variable: &str, test: &str) -> Option<String> {
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
    sdk_script(&python, "openai_sdk.py", &["helper"], &serving, 8).await;
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

/// Codex CLI's configuration for a provider at `base` (nothing reaches beyond loopback: no plugin
/// Runs the Python driver `script` (under `tests/serve/`) with the server's API base and `args`:
/// it must exit 0 having printed `ok: ...` `oks` times.
pub(crate) async fn sdk_script(
    python: &str,
    script: &str,
    args: &[&str],
    serving: &Serving,
    oks: usize,
) {
    let mut command = Command::new(python);
    command
        .arg(crate::serve_clients::driver(script))
        .arg(format!("{}/v1", serving.base))
        .args(args);
    let output = crate::serve_clients::run_client(command).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        serving.stderr.lock().expect("log")
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        oks,
        "{stdout}"
    );
}

/// sync, analytics or web search).
pub(crate) fn codex_config(base: &str) -> String {
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
pub(crate) fn codex(program: &str, home: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
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
