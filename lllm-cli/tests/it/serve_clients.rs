//! Issue 32's proof with real clients: each framework or harness holds a conversation of two or
//! three turns with `lllm serve`, the way its users hold one, through a tactic whose agent calls a
//! tool every turn. Downstream (the recording stub) the conversation must be one session, and each
//! turn's first request must start with the previous turn's last request and its answer, byte for
//! byte, so that a KV-aware router keeps the whole prefix cached across turns.
//!
//! The clients and how each keeps its conversation (what they send was captured on the wire):
//! - the OpenAI Agents SDK: a `SQLiteSession` over Chat Completions (the whole history, no id), the
//!   Responses model with `previous_response_id`, and with `conversation` (only the new input);
//! - pydantic-ai: `message_history` over Chat Completions (the whole history, no id);
//! - the Vercel AI SDK: `openai.responses` with its default store (earlier answers as
//!   `item_reference`s to lllm's output items);
//! - OpenCode (`run`, then `run --continue`): Chat Completions with `x-session-id`;
//! - Codex CLI (`exec`, then `exec resume`): Responses with `thread-id` and `prompt_cache_key`.
//!
//! `scripts/test.sh` installs them (`scripts/servers/clients.sh install`) and sets
//! `LLLM_OPENAI_PYTHON`, `LLLM_NODE_CLIENTS`, `LLLM_OPENCODE`, `LLLM_CODEX` and
//! `LLLM_REQUIRE_CLIENTS=1`; without them each test says so and passes without checking.

mod caller_tools;
mod harnesses;
mod sdks;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::Value;

use crate::support::{arg, Serving, TempDir};

/// How long one client process may take (OpenCode starts in about 7 s on 2 cores).
const CLIENT_LIMIT: Duration = Duration::from_secs(120);

/// A served tool-using tactic, its stub scripted for `turns` turns.
pub(crate) struct Conversation {
    pub(crate) dir: TempDir,
    pub(crate) stub: StubServer,
    pub(crate) serving: Serving,
    pub(crate) turns: usize,
}

impl Conversation {
    /// Serves `helper` (an agent with a `look` tool) whose model, every turn, first calls `look`
    /// and then answers `answer N`.
    pub(crate) async fn start(name: &str, turns: usize) -> Conversation {
        let dir = TempDir::new(name);
        let stub = StubServer::start().await.expect("stub");
        for turn in 1..=turns {
            let call = format!("call-{turn}");
            stub.push(StubReply::tool_calls(&[(&call, "look", "{}")]));
            stub.push(StubReply::text(&format!("answer {turn}")));
        }
        let tactic = tool_tactic(&dir, &stub);
        let state = dir.path("state");
        let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
        Conversation {
            dir,
            stub,
            serving,
            turns,
        }
    }

    /// The API base the clients are pointed at.
    pub(crate) fn api(&self) -> String {
        format!("{}/v1", self.serving.base)
    }

    /// Checks what the client printed ("turn N: answer N" each turn, as the driver scripts print),
    /// then the downstream requests.
    pub(crate) fn assert_answered(&self, client: &str, output: &Output) {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let context = format!(
            "{client}: stdout:\n{stdout}\nstderr:\n{}\nlllm serve:\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.serving.stderr.lock().expect("log")
        );
        assert!(output.status.success(), "{context}");
        let answers: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.split_once(": ").filter(|(k, _)| k.starts_with("turn ")))
            .map(|(_, answer)| answer.trim())
            .collect();
        let expected: Vec<String> = (1..=self.turns).map(|t| format!("answer {t}")).collect();
        assert_eq!(answers, expected, "{context}");
    }

    /// One downstream session across the turns, and each turn's first request extending the
    /// previous turn's last one.
    pub(crate) fn assert_one_session_one_prefix(&self, client: &str) {
        assert_continued(client, &self.stub.requests(), self.turns);
    }
}

/// A chat tactic whose agent has one command tool.
fn tool_tactic(dir: &TempDir, stub: &StubServer) -> PathBuf {
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
    system_prompt: "You help; look before you answer.{{% if client_system %}} The client says: {{{{ client_system }}}}{{% endif %}}"
    tools:
      - {{name: look, description: Looks it up, command: [echo, the finding]}}
"#,
            api = stub.base_url()
        ),
    )
}

fn messages(request: &RecordedRequest) -> &[Value] {
    request.body["messages"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// The continuation contract over the stub's `requests`: each turn two requests (the tool round,
/// then the answer); one `x-dynamo-session-id` throughout; turn N+1's first request starts with
/// turn N's last request followed by its answer.
pub(crate) fn assert_continued(client: &str, requests: &[RecordedRequest], turns: usize) {
    let shown: Vec<String> = requests
        .iter()
        .map(|r| {
            format!(
                "session {:?}: {}",
                r.header("x-dynamo-session-id"),
                serde_json::to_string(messages(r)).unwrap_or_default()
            )
        })
        .collect();
    let shown = shown.join("\n");
    assert_eq!(requests.len(), 2 * turns, "{client}: requests:\n{shown}");
    for turn in 0..turns {
        let (round, answer) = (
            messages(&requests[2 * turn]),
            messages(&requests[2 * turn + 1]),
        );
        assert!(
            answer.len() == round.len() + 2 && answer[..round.len()] == round[..],
            "{client}: turn {}'s answer request extends its tool round by the call and its result:\n{shown}",
            turn + 1
        );
    }
    let session = requests[0].header("x-dynamo-session-id");
    assert!(
        session.is_some(),
        "{client}: no session downstream:\n{shown}"
    );
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(
            request.header("x-dynamo-session-id"),
            session,
            "{client}: request {i} (turn {}) left the conversation's session:\n{shown}",
            i / 2 + 1
        );
    }
    for turn in 1..turns {
        let last = messages(&requests[2 * turn - 1]);
        let first = messages(&requests[2 * turn]);
        let answer = format!("answer {turn}");
        assert!(
            first.len() > last.len() + 1
                && first[..last.len()] == last[..]
                && first[last.len()]["role"] == "assistant"
                && first[last.len()]["content"] == answer.as_str(),
            "{client}: turn {}'s first request does not start with turn {turn}'s last request and \
             its answer (the cached prefix is lost):\nlast of turn {turn}: {}\nfirst of turn {}: {}",
            turn + 1,
            serde_json::to_string(last).unwrap_or_default(),
            turn + 1,
            serde_json::to_string(first).unwrap_or_default()
        );
    }
}

/// Runs `command` (stdin closed, output kept) off the async runtime, killed after [`CLIENT_LIMIT`].
pub(crate) async fn run_client(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the client starts");
        // Read both pipes while waiting, so a chatty client never blocks on a full pipe.
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() > CLIENT_LIMIT {
                child.kill().ok();
                break child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let take = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
        };
        Output {
            status,
            stdout: take(stdout),
            stderr: take(stderr),
        }
    })
    .await
    .expect("joined")
}

fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).ok();
        bytes
    })
}

/// A driver script under `tests/serve/`.
pub(crate) fn driver(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/serve")
        .join(name)
}
