//! The `lllm` binary end to end: exit codes, messages, and requests received by a local server.

use std::path::{Path, PathBuf};
use std::process::Output;

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "lllm-cli-{name}-{}-{}",
            std::process::id(),
            fastrand_suffix()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("dir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn fastrand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn lllm() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lllm"));
    command
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("LLLM_LOG")
        .kill_on_drop(true);
    command
}

async fn run(args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Output {
    let mut command = lllm();
    command.args(args).envs(env.iter().copied());
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("lllm starts");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        pipe.write_all(bytes).await.expect("write stdin");
    }
    drop(pipe);
    child.wait_with_output().await.expect("lllm ends")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn tactic(server_url: &str, profile: &str) -> String {
    format!(
        "global:\n  model_name: hosted_vllm/Qwen/Qwen2.5-7B-Instruct\n  model_args: {{api_base: \"{server_url}\", max_tokens: 24, api_key: \"${{TEST_KEY:-}}\", extra_headers: {{X-Auth-Token: \"${{TEST_KEY:-none}}\"}}}}\n  inference_hints: {{profile: {profile}, session_prefix: run-1}}\nagent_configs:\n  - name: assistant\n    system_prompt: You help with {{{{ topic }}}}.\n"
    )
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[tokio::test(flavor = "multi_thread")]
async fn check_accepts_a_valid_tactic() {
    let dir = TempDir::new("check-ok");
    let file = dir.write(
        "t.yaml",
        tactic("http://127.0.0.1:9/v1", "dynamo").as_bytes(),
    );
    let out = run(&["check", path_str(&file)], None, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("1 agent(s): assistant"),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn check_says_which_hints_each_fallback_will_not_carry() {
    let dir = TempDir::new("check-drops");
    let file = dir.write(
        "t.yaml",
        b"global:\n  model_name: m\n  model_args:\n    api_base: http://127.0.0.1:9/v1\n    fallback:\n      - {api_base: http://127.0.0.1:10/v1, profile: vllm}\n      - {api_base: http://127.0.0.1:11/v1}\n      - {api_base: http://127.0.0.1:12/v1, profile: openai}\n  inference_hints: {profile: dynamo, priority: 3, strict_priority: 2, cache_salt: t}\nagent_configs:\n  - {name: a, system_prompt: s}\n",
    );
    let out = run(&["check", path_str(&file)], None, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let lines: Vec<&str> = shown.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "a: fallback[0] (vllm) will not carry strict_priority",
            "a: fallback[2] (openai) will not carry priority, strict_priority, cache_salt",
        ],
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn check_reports_a_misspelt_key_with_line_and_suggestion() {
    let dir = TempDir::new("check-typo");
    let file = dir.write(
        "t.yaml",
        b"agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    modle_args: {max_tokens: 3}\n",
    );
    let out = run(&["check", path_str(&file)], None, &[]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("t.yaml:5:5: "), "{err}");
    assert!(err.contains("did you mean `model_args`?"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unreadable_non_utf8_and_invalid_files_exit_2_without_panicking() {
    let dir = TempDir::new("bad-files");
    let missing = dir.0.join("missing.yaml");
    let binary = dir.write("binary.yaml", b"agent_configs:\n  - name: \xfe\xff\n");
    let broken = dir.write("broken.yaml", b"agent_configs: [\n  {name: a\n");
    let folder = dir.0.join("folder.yaml");
    std::fs::create_dir_all(&folder).expect("dir");
    for (file, expected) in [
        (&missing, "cannot read"),
        (&binary, "binary.yaml:2:11: the file is not valid UTF-8"),
        (&broken, "broken.yaml:"),
        (&folder, "a directory, not a regular file"),
    ] {
        for command in ["check", "run"] {
            let out = run(
                &[command, path_str(file), "--input", "x"]
                    [..if command == "check" { 2 } else { 4 }],
                None,
                &[],
            )
            .await;
            let err = text(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command} {}: {err}",
                file.display()
            );
            assert!(err.contains(expected), "{command}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn run_prints_the_answer_from_a_local_server_with_hints_on_the_wire() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("run");
    let file = dir.write("t.yaml", tactic(&server.base_url(), "dynamo").as_bytes());
    let out = run(
        &[
            "run",
            path_str(&file),
            "--input",
            "Why is the sky blue?",
            "--var",
            "topic=physics",
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "stub answer to: Why is the sky blue?\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let session = requests[0]
        .header("x-dynamo-session-id")
        .expect("session header");
    assert!(
        session.starts_with("run-1:") && session.len() == 6 + 32,
        "{session}"
    );
    assert_eq!(requests[0].body["nvext"]["agent_hints"]["osl"], 24);
    assert_eq!(requests[0].body["model"], "Qwen/Qwen2.5-7B-Instruct");
    assert_eq!(
        requests[0].body["messages"][0]["content"],
        "You help with physics."
    );
    assert!(requests[0].header_values("authorization").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn run_reads_piped_stdin_and_reports_json() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("json");
    let file = dir.write("t.yaml", tactic(&server.base_url(), "vllm").as_bytes());
    let out = run(
        &["run", path_str(&file), "--json", "--var", "topic=x"],
        Some(b"from a pipe"),
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["answer"], "stub answer to: from a pipe");
    assert_eq!(report["usage"]["prompt_tokens"], 11);
    assert_eq!(report["usage"]["completion_tokens"], 3);
    let id = report["dialogs"]["assistant"]["main"]
        .as_str()
        .expect("dialog id");
    assert_eq!(
        server.requests()[0].header("x-session-id"),
        Some(format!("run-1:{id}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_prints_requests_without_secrets_or_contacting_the_server() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("dry");
    let file = dir.write("t.yaml", tactic(&server.base_url(), "dynamo").as_bytes());
    let out = run(
        &[
            "run",
            path_str(&file),
            "--dry-run",
            "--input",
            "hello",
            "--var",
            "topic=x",
        ],
        None,
        &[("TEST_KEY", "sk-super-secret-123")],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("sk-super-secret"), "{stdout}");
    assert!(!text(&out.stderr).contains("sk-super-secret"));
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 1);
    let request = &lines[0];
    assert_eq!(
        request["url"],
        format!("{}/chat/completions", server.base_url())
    );
    assert_eq!(request["headers"]["authorization"], "[redacted]");
    assert_eq!(request["headers"]["x-auth-token"], "[redacted]");
    assert!(request["headers"]["x-dynamo-session-id"]
        .as_str()
        .is_some_and(|s| s.starts_with("run-1:")));
    assert_eq!(request["body"]["nvext"]["agent_hints"]["osl"], 24);
    assert_eq!(request["body"]["messages"][1]["content"], "hello");
    assert!(server.requests().is_empty(), "a dry run contacts no server");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_failure_exits_1_with_the_status_and_message() {
    let server = StubServer::start().await.expect("server");
    for _ in 0..2 {
        server.push(StubReply::error(500, "the engine died"));
    }
    let dir = TempDir::new("fail");
    let text_tactic = tactic(&server.base_url(), "openai").replace(
        "  - name: assistant\n",
        "  - name: assistant\n    max_llm_recall: 1\n",
    );
    let file = dir.write("t.yaml", text_tactic.as_bytes());
    let out = run(
        &["run", path_str(&file), "--input", "x", "--var", "topic=x"],
        None,
        &[("TEST_KEY", "sk-never-printed")],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("HTTP 500: the engine died"), "{err}");
    assert!(err.contains("after 2 attempt(s)"), "{err}");
    assert!(!err.contains("sk-never-printed"), "{err}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_usage_exits_2() {
    let dir = TempDir::new("usage");
    let file = dir.write(
        "t.yaml",
        tactic("http://127.0.0.1:9/v1", "openai").as_bytes(),
    );
    let path = path_str(&file);
    for (args, expected) in [
        (
            vec!["run", path, "--input", "x"],
            "uses the variable `topic`",
        ),
        (
            vec!["run", path, "--input", "x", "--var", "topic"],
            "must be KEY=VALUE",
        ),
        (
            vec!["run", path, "--input", "x", "--var", "1x=2"],
            "not a variable name",
        ),
        (vec!["run", path, "--input", "  "], "the input is empty"),
        (vec!["run", path, "--bogus"], "--bogus"),
    ] {
        let out = run(&args, None, &[]).await;
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    let out = run(&["run", path, "--var", "topic=x"], Some(b"\xff\xfe"), &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not valid UTF-8"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_quickstart_example_checks_and_dry_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tactic = root.join("examples/quickstart/tactic.yaml");
    let checked = lllm()
        .current_dir(&root)
        .args(["check", path_str(&tactic)])
        .output()
        .await
        .expect("runs");
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    let mut command = lllm();
    let out = command
        .current_dir(&root)
        .args([
            "run",
            path_str(&tactic),
            "--dry-run",
            "--input",
            "Why is the sky blue?",
        ])
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let request: Value = serde_json::from_slice(&out.stdout).expect("one request line");
    assert_eq!(request["body"]["model"], "SmolLM2-135M-Instruct");
    assert!(request["headers"]["x-session-id"]
        .as_str()
        .is_some_and(|s| s.starts_with("quickstart:")));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_word_count_example_runs_its_command_tool_end_to_end() {
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::tool_calls(&[
        ("c1", "word_count", r#"{"text": "the quick brown fox"}"#),
        ("c2", "word_count", r#"{"text": "  "}"#),
    ]));
    server.push(StubReply::text("The text has 4 words."));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tactic = root.join("examples/word_count/tactic.yaml");
    let out = run(
        &[
            "run",
            path_str(&tactic),
            "--input",
            "How many words in: the quick brown fox?",
            "--json",
        ],
        None,
        &[("LLLM_API_BASE", &server.base_url())],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["answer"], "The text has 4 words.");
    assert_eq!(
        report["usage"]["prompt_tokens"], 22,
        "two calls of 11 prompt tokens each"
    );
    assert_eq!(
        report["dialog_usage"]["counter"]["main"]["completion_tokens"],
        6
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<&Value> = requests[1].body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").collect())
        .unwrap_or_default();
    assert_eq!(
        tools[0]["content"], "4",
        "the real command counted the words"
    );
    assert_eq!(
        tools[1]["content"],
        "error: `python3` exited with status 1: no text given: pass a non-empty `text`",
        "the command's failure is reported to the model"
    );
    assert_eq!(
        requests[0].body["tools"][0]["function"]["name"],
        "word_count"
    );
    let session = requests[0].header("x-session-id");
    assert!(session.is_some());
    assert_eq!(requests[1].header("x-session-id"), session);
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_prints_the_answer_as_it_arrives() {
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::sse_text(&["Blue ", "light ", "scatters."]));
    let dir = TempDir::new("stream");
    let file = dir.write("t.yaml", tactic(&server.base_url(), "openai").as_bytes());
    let out = run(
        &[
            "run",
            path_str(&file),
            "--input",
            "sky?",
            "--var",
            "topic=x",
            "--stream",
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Blue light scatters.\n");
    assert_eq!(server.requests()[0].body["stream"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_answer_with_a_tool_round_prints_what_an_unstreamed_run_prints() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("stream-rounds");
    let body = tactic(&server.base_url(), "openai").replace(
        "  - name: assistant\n",
        "  - name: assistant\n    tools:\n      - {name: add, description: Adds, parameters: {type: object, properties: {}}, command: [sh, -c, 'echo 4']}\n",
    );
    let file = dir.write("t.yaml", body.as_bytes());
    let call = serde_json::json!([{"index": 0, "id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]);
    server.push(StubReply::sse(&[
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": "Let me add."}}]}),
        serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": call}}]}),
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]));
    server.push(StubReply::sse_text(&["It is ", "4."]));
    let args = [
        "run",
        path_str(&file),
        "--input",
        "2+2?",
        "--var",
        "topic=x",
    ];
    let streamed = run(&[&args[..], &["--stream"]].concat(), None, &[]).await;
    assert_eq!(
        streamed.status.code(),
        Some(0),
        "{}",
        text(&streamed.stderr)
    );
    server.push(StubReply::completion(serde_json::json!({
        "role": "assistant", "content": "Let me add.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
    })));
    server.push(StubReply::text("It is 4."));
    let whole = run(&args, None, &[]).await;
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole.stderr));
    assert_eq!(text(&whole.stdout), "Let me add.\n\nIt is 4.\n");
    assert_eq!(text(&streamed.stdout), text(&whole.stdout));
}

#[tokio::test(flavor = "multi_thread")]
async fn output_schema_answers_are_json_and_dry_runs_fill_them() {
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::text(r#"{"words": 4}"#));
    let dir = TempDir::new("schema");
    let body = tactic(&server.base_url(), "openai").replace(
        "  - name: assistant\n",
        "  - name: assistant\n    output_schema: {type: object, required: [words], properties: {words: {type: integer}}}\n",
    );
    let file = dir.write("t.yaml", body.as_bytes());
    let out = run(
        &[
            "run",
            path_str(&file),
            "--input",
            "count",
            "--var",
            "topic=x",
            "--json",
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["answer"], serde_json::json!({"words": 4}));
    assert_eq!(
        server.requests()[0].body["response_format"]["json_schema"]["schema"]["required"],
        serde_json::json!(["words"])
    );
    let dry = run(
        &[
            "run",
            path_str(&file),
            "--input",
            "count",
            "--var",
            "topic=x",
            "--dry-run",
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stderr));
    assert_eq!(
        text(&dry.stdout).lines().count(),
        1,
        "one request, no retry"
    );
    assert!(
        text(&dry.stderr).contains(r#"{"words":0}"#),
        "{}",
        text(&dry.stderr)
    );
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
        .join("tactic.yaml")
}

async fn dry_run_lines(name: &str) -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = lllm()
        .current_dir(&root)
        .args([
            "run",
            path_str(&example(name)),
            "--dry-run",
            "--input",
            "a picnic",
        ])
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn header<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request["headers"][name].as_str()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_examples_dry_run_with_forks_naming_their_parent() {
    assert_eq!(dry_run_lines("quickstart").await.len(), 1);

    let plan = dry_run_lines("plan_and_critique").await;
    assert_eq!(plan.len(), 3);
    let main = header(&plan[0], "x-session-id").expect("session");
    assert!(main.starts_with("plan-and-critique:"));
    assert_eq!(header(&plan[1], "x-parent-session-id"), Some(main));
    assert_ne!(header(&plan[1], "x-session-id"), Some(main));
    assert_eq!(
        header(&plan[2], "x-session-id"),
        Some(main),
        "the revision is main again"
    );

    let fan = dry_run_lines("fan_out").await;
    assert_eq!(fan.len(), 5);
    let lead = header(&fan[0], "x-session-id").expect("session");
    let mut subagents: Vec<&str> = fan[1..4]
        .iter()
        .map(|r| {
            assert_eq!(header(r, "x-parent-session-id"), Some(lead));
            header(r, "x-session-id").expect("session")
        })
        .collect();
    subagents.sort();
    subagents.dedup();
    assert_eq!(subagents.len(), 3, "each subagent has its own session");
    assert_eq!(
        header(&fan[4], "x-session-id"),
        Some(lead),
        "the lead merges"
    );
    assert!(fan[4]["body"]["messages"][3]["content"]
        .as_str()
        .is_some_and(|c| c.contains("1. [dry run")));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_example_checks_and_the_subagents_lead_is_offered_the_task_tools() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(root.join("examples")).expect("examples") {
        let folder = entry.expect("entry").path();
        let tactic = folder.join("tactic.yaml");
        // The debate's tactic type is registered by its Rust program (examples/debate.rs), not
        // known to the binary.
        if !tactic.is_file() || folder.ends_with("debate") {
            continue;
        }
        // `check` looks the MCP server's program up without starting it: any program will do.
        let out = lllm()
            .current_dir(&root)
            .env("LLLM_MCP_TIME", "sh")
            .args(["check", path_str(&tactic)])
            .output()
            .await
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            tactic.display(),
            text(&out.stderr)
        );
        checked.push(tactic);
    }
    assert!(checked.iter().any(|t| t.ends_with("subagents/tactic.yaml")));
    let requests = dry_run_lines("subagents").await;
    assert_eq!(
        requests.len(),
        1,
        "a dry run answers without calling a tool"
    );
    let tools: Vec<&str> = requests[0]["body"]["tools"]
        .as_array()
        .expect("tools offered")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(
        tools,
        [
            "task_start",
            "task_check",
            "task_message",
            "task_cancel",
            "task_list"
        ]
    );
    let start = &requests[0]["body"]["tools"][0]["function"];
    let described = start.to_string();
    assert!(
        described.contains("researcher") && described.contains("critic"),
        "task_start names both subagents: {described}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn steps_print_the_output_template_and_report_json() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("steps");
    let body = format!(
        "global: {{model_name: m, model_args: {{api_base: \"{}\"}}}}\nagent_configs: [{{name: a, system_prompt: s}}]\nsteps:\n  - {{agent: a, receive: \"one {{{{ input }}}}\", save: first}}\n  - parallel:\n      - {{agent: a, dialog: x, fork_from: main, receive: two, save: second}}\n      - {{agent: a, dialog: y, fork_from: main, receive: three}}\noutput: \"{{{{ first }}}} / {{{{ second }}}}\"\n",
        server.base_url()
    );
    let file = dir.write("t.yaml", body.as_bytes());
    let out = run(&["run", path_str(&file), "--input", "go"], None, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "stub answer to: one go / stub answer to: two\n"
    );
    let out = run(
        &["run", path_str(&file), "--input", "go", "--json"],
        None,
        &[],
    )
    .await;
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        report["answer"],
        "stub answer to: one go / stub answer to: two"
    );
    assert_eq!(report["usage"]["prompt_tokens"], 33);
    let dialogs = report["dialogs"]["a"].as_object().expect("dialogs");
    assert_eq!(dialogs.len(), 3);
    // Steps need no input: an empty pipe is fine when no template uses it.
    let quiet = dir.write(
        "quiet.yaml",
        format!("global: {{model_name: m, model_args: {{api_base: \"{}\"}}}}\nagent_configs: [{{name: a, system_prompt: s}}]\nsteps:\n  - {{agent: a, receive: hello}}\n", server.base_url()).as_bytes(),
    );
    let out = run(&["run", path_str(&quiet)], Some(b""), &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "stub answer to: hello\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn check_reports_invalid_steps_with_their_line() {
    let dir = TempDir::new("check-steps");
    let head = "global: {model_name: m}\nagent_configs: [{name: a, system_prompt: s}]\nsteps:\n";
    for (steps, expected) in [
        ("  - {agent: b}\n", "t.yaml:4:13: steps[0].agent: unknown agent `b`"),
        ("  - {agent: a, dialog: x, fork_from: y}\n", "t.yaml:4:38: steps[0].fork_from: dialog `y`"),
        (
            "  - agent: a\n  - parallel:\n      - {agent: a, receive: p}\n      - {agent: a, receive: q}\n",
            "t.yaml:7:9: steps[1].parallel[1]: dialog `main`",
        ),
        ("  - {agent: a, receive: \"{{ late }}\"}\n  - {agent: a, save: late}\n", "t.yaml:4:25: steps[0].receive: uses `late` before it is saved"),
        ("  - {agent: a, save: v}\n  - {agent: a, save: v}\n", "t.yaml:5:22: steps[1].save: `v` is already saved"),
    ] {
        let file = dir.write("t.yaml", format!("{head}{steps}").as_bytes());
        let out = run(&["check", path_str(&file)], None, &[]).await;
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{steps}: {err}");
        assert!(err.contains(expected), "{steps}\n got: {err}\nwant: {expected}");
    }
    let custom = dir.write(
        "custom.yaml",
        format!("tactic_type: debate\n{}", &head[..head.len() - 7]).as_bytes(),
    );
    let out = run(&["check", path_str(&custom)], None, &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr)
        .contains("unknown tactic_type `debate`; the registered types are: chat, steps"));
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_prints_the_json_schema() {
    let out = run(&["schema"], None, &[]).await;
    assert_eq!(out.status.code(), Some(0));
    let schema: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(schema["title"], "lllm tactic");
    assert!(schema["$defs"]["Step"]["properties"]["fork_from"]["description"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_variables_are_reported_before_any_model_call() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("preflight");
    let head = format!(
        "global: {{model_name: m, model_args: {{api_base: \"{}\"}}}}\nagent_configs: [{{name: a, system_prompt: s}}]\nsteps:\n",
        server.base_url()
    );
    let uses_input = dir.write(
        "input.yaml",
        format!("{head}  - {{agent: a, receive: first}}\n  - {{agent: a, receive: \"{{{{ input }}}}\"}}\n").as_bytes(),
    );
    let out = run(&["run", path_str(&uses_input)], Some(b""), &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("pass --input TEXT"),
        "{}",
        text(&out.stderr)
    );
    let unknown = dir.write(
        "output.yaml",
        format!("{head}  - {{agent: a, receive: hi, save: greeting}}\noutput: \"{{{{ greeting }}}} {{{{ nothing }}}}\"\n").as_bytes(),
    );
    let out = run(&["run", path_str(&unknown), "--input", "x"], None, &[]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("output") && err.contains("`nothing`"), "{err}");
    // The library says to give a value; the command says with which flag.
    assert!(err.contains("(`--var nothing=...`)"), "{err}");
    let bad_receive = dir.write(
        "receive.yaml",
        format!("{head}  - {{agent: a, receive: \"{{{{ topic }}}}\"}}\n").as_bytes(),
    );
    let out = run(&["run", path_str(&bad_receive), "--input", "x"], None, &[]).await;
    let err = text(&out.stderr);
    assert!(err.contains("receive.yaml:4:25: steps[0].receive"), "{err}");
    assert!(server.requests().is_empty(), "no request was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_writes_one_content_free_line_per_request() {
    let dir = TempDir::new("trace");
    let trace = dir.0.join("run.jsonl");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = lllm()
        .current_dir(&root)
        .args([
            "run",
            path_str(&example("plan_and_critique")),
            "--dry-run",
            "--input",
            "a secret island getaway",
        ])
        .args(["--trace", path_str(&trace), "--trace-block-size", "32"])
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&trace).expect("trace file");
    assert!(!written.contains("secret island"), "{written}");
    assert!(!written.contains("weakest"), "{written}");
    let lines: Vec<Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines[0]["block_size"], 32);
    assert_eq!(lines.len(), 4, "a header and three requests");
    assert!(
        lines[1..].iter().all(|r| r["lengths_estimated"] == true),
        "a dry run has no usage"
    );
    assert_eq!(lines[2]["parent_session_id"], lines[1]["session_id"]);
    let rows_only = dir.0.join("rows.jsonl");
    let out = lllm()
        .current_dir(&root)
        .args([
            "run",
            path_str(&example("quickstart")),
            "--dry-run",
            "--input",
            "x",
        ])
        .args(["--trace", path_str(&rows_only), "--trace-rows-only"])
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&rows_only)
            .expect("rows")
            .lines()
            .next()
            .expect("a row"),
    )
    .expect("JSON");
    assert!(
        first["hash_ids"].is_array() && first.get("format").is_none(),
        "{first}"
    );
    let bad = lllm()
        .current_dir(&root)
        .args([
            "run",
            path_str(&example("quickstart")),
            "--dry-run",
            "--input",
            "x",
        ])
        .args(["--trace", "/nonexistent/dir/t.jsonl"])
        .output()
        .await
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("cannot write the trace to /nonexistent/dir/t.jsonl"));
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_sends_the_recorded_sessions_with_the_same_prefix_structure() {
    let dir = TempDir::new("replay");
    let trace = dir.0.join("run.jsonl");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let recorded = lllm()
        .current_dir(&root)
        .args([
            "run",
            path_str(&example("plan_and_critique")),
            "--dry-run",
            "--input",
            "a trip",
        ])
        .args(["--trace", path_str(&trace), "--trace-block-size", "16"])
        .output()
        .await
        .expect("runs");
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    let rows: Vec<Value> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();

    let server = StubServer::start().await.expect("server");
    let base = server.base_url();
    let out = run(
        &[
            "replay",
            path_str(&trace),
            "--api-base",
            &base,
            "--model",
            "tiny",
            "--speed",
            "50",
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("total: 3 requests in 2 sessions, 0 errors"),
        "{}",
        text(&out.stdout)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let prompt = |r: &RecordedRequest| {
        r.body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let main = rows[0]["session_id"].as_str().expect("session");
    let by_session: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|r| r.header("x-dynamo-session-id") == Some(main))
        .collect();
    assert_eq!(by_session.len(), 2, "main's two turns");
    let fork = requests
        .iter()
        .find(|r| r.header("x-dynamo-parent-session-id") == Some(main))
        .expect("the fork names its parent");
    // The fork's prompt starts with main's first prompt, block for block (the last block may differ).
    let first = prompt(by_session[0]);
    let blocks: Vec<&str> = first.split('\n').collect();
    let shared = blocks[..blocks.len() - 1].join("\n");
    assert!(!shared.is_empty());
    assert!(prompt(fork).starts_with(&shared));
    assert_eq!(fork.body["max_tokens"], rows[1]["output_length"]);

    let plain = run(
        &[
            "replay",
            path_str(&trace),
            "--api-base",
            &base,
            "--model",
            "tiny",
            "--profile",
            "openai",
            "--no-session",
            "--speed",
            "50",
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    assert!(server.requests()[3..]
        .iter()
        .all(|r| r.header_values("x-session-id").is_empty()));
    let bad = run(
        &[
            "replay",
            path_str(&example("quickstart")),
            "--api-base",
            &base,
            "--model",
            "m",
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("line 1: not a trace header"),
        "{}",
        text(&bad.stderr)
    );
}

/// `lllm run --trace` under `vllm` with `priority: 5` sends `-5`; `lllm replay --profile vllm` of that
/// trace sends `-5` again, and `--profile dynamo` sends `5` in `nvext.agent_hints`.
#[tokio::test(flavor = "multi_thread")]
async fn a_vllm_run_replays_with_the_priority_it_sent() {
    let recording = StubServer::start().await.expect("server");
    let dir = TempDir::new("replay-vllm");
    let file = dir.write(
        "t.yaml",
        tactic(&recording.base_url(), "vllm")
            .replace(
                "session_prefix: run-1",
                "session_prefix: run-1, priority: 5",
            )
            .as_bytes(),
    );
    let trace = dir.0.join("run.jsonl");
    let out = run(
        &[
            "run",
            path_str(&file),
            "--input",
            "hi",
            "--var",
            "topic=x",
            "--trace",
            path_str(&trace),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(recording.requests()[0].body["priority"], -5);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&trace)
            .expect("trace")
            .lines()
            .next()
            .expect("header"),
    )
    .expect("JSON");
    assert_eq!(header["profile"], "vllm", "{header}");

    for (profile, pointer, expected) in [
        ("vllm", "/priority", -5),
        ("dynamo", "/nvext/agent_hints/priority", 5),
    ] {
        let server = StubServer::start().await.expect("server");
        let base = server.base_url();
        let replayed = run(
            &[
                "replay",
                path_str(&trace),
                "--api-base",
                &base,
                "--model",
                "tiny",
                "--profile",
                profile,
                "--speed",
                "50",
            ],
            None,
            &[],
        )
        .await;
        assert_eq!(
            replayed.status.code(),
            Some(0),
            "{}",
            text(&replayed.stderr)
        );
        let body = &server.requests()[0].body;
        assert_eq!(
            body.pointer(pointer),
            Some(&Value::from(expected)),
            "{profile}: {body}"
        );
    }
}

/// `nvext.agent_hints` of each printed request of a dry run, in order.
fn dry_run_hints(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            let request: Value = serde_json::from_str(line).expect("a request line");
            request["body"]["nvext"]["agent_hints"].clone()
        })
        .collect()
}

#[tokio::test]
async fn a_dry_run_shows_the_priority_auto_gives_each_request_and_batch_drops_the_tier() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tactic = root.join("examples/priority_auto/tactic.yaml");
    let dir = TempDir::new("priority-auto");
    let trace = dir.0.join("trace.jsonl");
    let args = |class: &'static str| {
        vec![
            "run".to_owned(),
            path_str(&tactic).to_owned(),
            "--dry-run".to_owned(),
            "--input".to_owned(),
            "a street festival".to_owned(),
            "--priority-class".to_owned(),
            class.to_owned(),
            "--trace".to_owned(),
            path_str(&trace).to_owned(),
        ]
    };
    let out = lllm()
        .current_dir(&root)
        .args(args("interactive"))
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let hints = dry_run_hints(&out.stdout);
    assert_eq!(hints.len(), 5, "{hints:?}");
    assert_eq!(
        hints[0]["priority"], 5,
        "the split: itself, three forks, the merge"
    );
    assert_eq!(hints[4]["priority"], 1, "the merge");
    for part in &hints[1..4] {
        // 2, plus the parts that finished before this one was sent.
        let p = part["priority"].as_u64().unwrap_or(0);
        assert!((2..=4).contains(&p), "{hints:?}");
    }
    assert!(hints.iter().all(|h| h["strict_priority"] == 1), "{hints:?}");

    // The trace records what each request got.
    let rows: Vec<Value> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0]["priority"], 5);
    assert_eq!(rows[0]["strict_priority"], 1);

    let batch = lllm()
        .current_dir(&root)
        .args(args("batch"))
        .output()
        .await
        .expect("runs");
    assert_eq!(batch.status.code(), Some(0), "{}", text(&batch.stderr));
    let hints = dry_run_hints(&batch.stdout);
    assert_eq!(hints[0]["priority"], 5);
    assert!(
        hints.iter().all(|h| h.get("strict_priority").is_none()),
        "{hints:?}"
    );

    let wrong = lllm()
        .current_dir(&root)
        .args([
            "run",
            path_str(&tactic),
            "--dry-run",
            "--priority-class",
            "urgent",
        ])
        .output()
        .await
        .expect("runs");
    assert_eq!(wrong.status.code(), Some(2), "a bad class is a usage error");
}

/// A limit means the same in `limits:` and in `--limit`: `max_tool_calls: 0` is taken by both (the
/// same dry run; against a server, the same refused call), and a value out of its rule is exit 2 by
/// both, naming the limit.
#[tokio::test(flavor = "multi_thread")]
async fn a_limit_means_the_same_in_the_file_and_on_the_command_line() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("limits");
    let tactic = |limits: &str| {
        format!(
            "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{}\"}}\n    inference_hints: {{session: false}}\n    system_prompt: hi\n    tools: [{{name: t, description: d, command: [echo, x]}}]\n{limits}",
            server.base_url()
        )
    };
    let in_file = dir.write(
        "file.yaml",
        tactic("limits: {max_tool_calls: 0}\n").as_bytes(),
    );
    let plain = dir.write("plain.yaml", tactic("").as_bytes());
    let in_file_args = ["run", path_str(&in_file), "--input", "go"];
    let flag_args = [
        "run",
        path_str(&plain),
        "--input",
        "go",
        "--limit",
        "max_tool_calls=0",
    ];

    let by_file = run(&[&in_file_args[..], &["--dry-run"]].concat(), None, &[]).await;
    let by_flag = run(&[&flag_args[..], &["--dry-run"]].concat(), None, &[]).await;
    assert_eq!(by_file.status.code(), Some(0), "{}", text(&by_file.stderr));
    assert_eq!(by_flag.status.code(), Some(0), "{}", text(&by_flag.stderr));
    assert_eq!(text(&by_file.stdout), text(&by_flag.stdout));
    assert!(server.requests().is_empty(), "a dry run contacts no server");

    for args in [&in_file_args[..], &flag_args[..]] {
        server.push(StubReply::tool_calls(&[("c1", "t", "{}")]));
        let out = run(args, None, &[]).await;
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("the run reached its limit max_tool_calls = 0"),
            "{}",
            text(&out.stderr)
        );
    }
    assert_eq!(
        server.requests().len(),
        2,
        "one request per run, no tool ran"
    );

    let refused = dir.write(
        "refused.yaml",
        tactic("limits: {max_tool_calls: -1}\n").as_bytes(),
    );
    let by_file = run(
        &["run", path_str(&refused), "--dry-run", "--input", "go"],
        None,
        &[],
    )
    .await;
    let by_flag = run(
        &[
            &flag_args[..4],
            &["--limit", "max_tool_calls=-1", "--dry-run"],
        ]
        .concat(),
        None,
        &[],
    )
    .await;
    let rule = "must be a whole number from 0 to 18446744073709551615 (0 allows none), not `-1`";
    for (out, field) in [
        (&by_file, "refused.yaml:8:26: limits.max_tool_calls: "),
        (
            &by_flag,
            "invalid value 'max_tool_calls=-1' for '--limit <KEY=VALUE>': max_tool_calls ",
        ),
    ] {
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(&format!("{field}{rule}")),
            "{}",
            text(&out.stderr)
        );
    }
}

/// A bad `--limit` is refused while the arguments are read (exit 2, naming the flag, the value and
/// the rule), before the journal is opened and before any MCP server of the tactic starts: the
/// server here leaves a marker file the moment it starts, and a good limit shows that it would.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_limit_is_refused_before_any_mcp_server_starts() {
    let dir = TempDir::new("limit-before-mcp");
    let marker = dir.0.join("started");
    let touch = serde_json::to_string(&format!("touch '{}'", path_str(&marker))).expect("json");
    let file = dir.write(
        "t.yaml",
        format!(
            "mcp_servers:\n  m: {{command: [sh, -c, {touch}], startup_timeout_s: 5}}\nagent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"http://127.0.0.1:9/v1\"}}\n    system_prompt: hi\n    mcp: [m]\n"
        )
        .as_bytes(),
    );
    let journal = dir.0.join("none.jsonl");
    let cases = [
        (
            "max_requests=-1",
            "max_requests must be a whole number from 0",
        ),
        (
            "max_seconds=0",
            "max_seconds must be a number of seconds from 0.001",
        ),
        (
            "max_tokens=5",
            "unknown limit `max_tokens`; the limits are max_requests",
        ),
        (
            "max_requests",
            "is not KEY=VALUE: write a limit and its value",
        ),
    ];
    for (bad, rule) in cases {
        let commands = [
            vec!["run", path_str(&file), "--input", "go"],
            vec!["resume", path_str(&journal)],
        ];
        for command in commands {
            let out = run(&[&command[..], &["--limit", bad]].concat(), None, &[]).await;
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?} {bad}: {stderr}");
            let expected = format!("invalid value '{bad}' for '--limit <KEY=VALUE>': ");
            assert!(stderr.contains(&expected), "{stderr}");
            assert!(stderr.contains(rule), "{stderr}");
            assert!(
                !marker.exists(),
                "{command:?} {bad}: the MCP server started"
            );
        }
    }
    // With a good limit the run goes on to start the server (which fails its handshake).
    let out = run(
        &[
            "run",
            path_str(&file),
            "--input",
            "go",
            "--limit",
            "max_requests=1",
        ],
        None,
        &[],
    )
    .await;
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(marker.exists(), "{}", text(&out.stderr));
}

/// A chat answer whose prompt the server counted as `prompt_tokens`.
fn counted_answer(text: &str, prompt_tokens: u64) -> StubReply {
    StubReply::json(
        200,
        serde_json::json!({"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 3, "total_tokens": prompt_tokens + 3}}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_with_context_compacts_on_the_wire_and_reports_it_in_json_usage() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("context");
    let body = format!(
        "global:\n  model_name: m\n  model_args: {{api_base: \"{}\"}}\n  inference_hints: {{profile: dynamo, session_prefix: ctx}}\n  context: {{window: 1000, compact_at: 0.5, keep_last: 2}}\nagent_configs: [{{name: a, system_prompt: You read logs.}}]\nsteps:\n  - {{agent: a, receive: first part}}\n  - {{agent: a, receive: second part}}\n",
        server.base_url()
    );
    let file = dir.write("t.yaml", body.as_bytes());
    server.push(counted_answer("noted one", 700));
    server.push(counted_answer("the reader read part one", 720));
    server.push(counted_answer("noted two", 300));
    let out = run(&["run", path_str(&file), "--json"], None, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["answer"], "noted two");
    assert_eq!(
        report["usage"]["context"],
        serde_json::json!({"compactions": 1, "tokens_before": 700, "tokens_after": 300})
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the first step, the summary, the second step"
    );
    let summary = &requests[1].body;
    // No tools, so no `tool_choice` (servers refuse one without tools).
    assert_eq!(summary.get("tool_choice"), None, "{summary}");
    assert_eq!(
        summary["messages"].as_array().map(Vec::len),
        Some(4),
        "system, first part, its answer, the instruction: {summary}"
    );
    let window = requests[2].body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = window.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "user"]);
    assert!(
        window[1]["content"]
            .as_str()
            .is_some_and(|t| t.contains("the reader read part one")),
        "{window:?}"
    );
    let session = |r: &RecordedRequest| r.header("x-dynamo-session-id").map(str::to_owned);
    assert!(session(&requests[0]).is_some());
    assert_eq!(
        session(&requests[2]),
        session(&requests[0]),
        "the window keeps the session"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fallback_and_a_wait_for_a_slot_show_in_json_usage_and_in_the_trace() {
    let (primary, spare) = (
        StubServer::start().await.expect("server"),
        StubServer::start().await.expect("server"),
    );
    // The primary rate-limits every call for two minutes: each turn goes on to the spare, whose
    // one slot makes the two parallel turns take turns.
    primary.answer_unscripted(
        std::time::Duration::ZERO,
        Some(StubReply::error(429, "later").header("retry-after", "120")),
    );
    spare.answer_unscripted(std::time::Duration::from_millis(100), None);
    let dir = TempDir::new("fallback");
    let body = format!(
        "global:
  model_name: big
  model_args: {{api_base: \"{}\", fallback: [{{api_base: \"{}\", model_name: small, max_in_flight: 1, api_key: sk-spare-secret}}]}}
  inference_hints: {{profile: dynamo}}
agent_configs: [{{name: a, system_prompt: You answer.}}]
steps:
  - {{agent: a, receive: first}}
  - parallel:
      - {{agent: a, dialog: x, fork_from: main, receive: two}}
      - {{agent: a, dialog: y, fork_from: main, receive: three}}
",
        primary.base_url(),
        spare.base_url()
    );
    let file = dir.write("t.yaml", body.as_bytes());
    let trace = dir.0.join("trace.jsonl");
    let out = run(
        &[
            "run",
            path_str(&file),
            "--json",
            "--trace",
            path_str(&trace),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let calls = &report["usage"]["calls"];
    assert_eq!(calls["answered_by"][spare.base_url()], 3, "{calls}");
    assert_eq!(calls["fallback_answers"], 3, "{calls}");
    assert!(
        calls["queue_wait_ms"].as_u64().is_some_and(|ms| ms >= 50),
        "{calls}"
    );
    let rows: Vec<Value> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect();
    assert!(
        rows.iter()
            .all(|r| r["fallback"] == 1 && r["endpoint"] == spare.base_url()),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .any(|r| r["queue_ms"].as_u64().is_some_and(|ms| ms >= 50)),
        "{rows:?}"
    );
    let all = format!(
        "{}{}{}",
        text(&out.stdout),
        text(&out.stderr),
        std::fs::read_to_string(&trace).unwrap_or_default()
    );
    assert!(!all.contains("sk-spare-secret"));
    assert_eq!(
        spare.requests()[0].header("authorization"),
        Some("Bearer sk-spare-secret")
    );
    assert_eq!(spare.requests()[0].body["model"], "small");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_fallback_cannot_carry_a_hint_runs_and_hops_without_it() {
    let (primary, spare) = (
        StubServer::start().await.expect("server"),
        StubServer::start().await.expect("server"),
    );
    primary.push(StubReply::error(503, "overloaded"));
    let dir = TempDir::new("fallback-drops");
    let body = format!(
        "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", fallback: [{{api_base: \"{}\", profile: vllm}}]}}\n  inference_hints: {{profile: dynamo, priority: 4, strict_priority: 2}}\nagent_configs: [{{name: a, system_prompt: You answer.}}]\nsteps:\n  - {{agent: a, receive: first}}\n  - {{agent: a, receive: second}}\n",
        primary.base_url(),
        spare.base_url()
    );
    let file = dir.write("t.yaml", body.as_bytes());
    let out = run(&["run", path_str(&file)], None, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The first turn hopped to vLLM: its shape only. The second went to the primary with all.
    let hopped = &spare.requests()[0].body;
    assert_eq!(hopped["priority"], -4, "{hopped}");
    assert!(
        hopped.get("strict_priority").is_none() && hopped.get("nvext").is_none(),
        "{hopped}"
    );
    let second = &primary.requests()[1].body;
    assert_eq!(
        second["nvext"]["agent_hints"]["strict_priority"], 2,
        "{second}"
    );
    assert_eq!(second["nvext"]["agent_hints"]["priority"], 4, "{second}");
}
