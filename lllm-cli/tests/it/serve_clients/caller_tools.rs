//! Issue 33's proof with real clients: a served tactic whose agent takes the caller's tools
//! (`client_tools: true`) calls a tool the client defined; the client runs it on its side, its
//! result reaches the tactic where the call was, and the tactic's answer comes back. Downstream
//! (the recording stub), the request after the call extends the one that made it, byte for byte,
//! in one session.

use std::path::PathBuf;
use std::process::{Command, Output};

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::Value;

use super::{driver, run_client};
use crate::serve::{client, codex, codex_config};
use crate::support::{arg, Serving, TempDir};

/// A served chat tactic whose agent has no tool of its own and takes the caller's.
struct Served {
    dir: TempDir,
    stub: StubServer,
    serving: Serving,
}

impl Served {
    /// Its model first calls `tool` with `arguments`, then answers `answer`.
    async fn start(name: &str, tool: &str, arguments: &str, answer: &str) -> Served {
        Self::start_in(TempDir::new(name), tool, arguments, answer).await
    }

    /// As [`start`](Self::start), in `dir`.
    async fn start_in(dir: TempDir, tool: &str, arguments: &str, answer: &str) -> Served {
        let stub = StubServer::start().await.expect("stub");
        stub.push(StubReply::tool_calls(&[("call_c1", tool, arguments)]));
        stub.push(StubReply::text(answer));
        let tactic = dir.write(
            "helper.yaml",
            format!(
                "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", timeout: 30}}\n  inference_hints: {{profile: dynamo}}\n  max_call_retries: 0\nagent_configs:\n  - name: helper\n    system_prompt: You help with the caller's tools.\n    client_tools: true\n",
                stub.base_url()
            ),
        );
        let state = dir.path("state");
        let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
        Served { dir, stub, serving }
    }

    fn context(&self, client: &str, output: &Output) -> String {
        format!(
            "{client}: stdout:\n{}\nstderr:\n{}\nlllm serve:\n{}\ndownstream:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.serving.stderr.lock().expect("log"),
            self.stub
                .requests()
                .iter()
                .map(|r| r.body.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    }

    /// The tool was offered downstream; the request after the call extends the one that made it
    /// by the call and the client's result (which contains `result`), in one session.
    fn assert_continued(&self, client: &str, output: &Output, tool: &str, result: &str) {
        let context = self.context(client, output);
        let requests = self.stub.requests();
        assert_eq!(requests.len(), 2, "{context}");
        assert!(
            tool_names(&requests[0]).iter().any(|t| t == tool),
            "{context}"
        );
        let (paused, next) = (messages(&requests[0]), messages(&requests[1]));
        assert_eq!(next.len(), paused.len() + 2, "{context}");
        assert_eq!(next[..paused.len()], paused[..], "{context}");
        assert_eq!(
            next[paused.len()]["tool_calls"][0]["id"],
            "call_c1",
            "{context}"
        );
        let tool_message = &next[paused.len() + 1];
        assert_eq!(tool_message["role"], "tool", "{context}");
        assert!(
            tool_message["content"]
                .as_str()
                .is_some_and(|c| c.contains(result)),
            "{context}"
        );
        let session = requests[0].header("x-dynamo-session-id");
        assert!(session.is_some(), "{context}");
        assert_eq!(
            requests[1].header("x-dynamo-session-id"),
            session,
            "{context}"
        );
    }
}

fn messages(request: &RecordedRequest) -> &[Value] {
    request.body["messages"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// The function tools a request offered (Chat's shape, as lllm sends them downstream).
fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// What the client printed: the tool ran with `city`, and the answer came back.
fn assert_ran_and_answered(served: &Served, client: &str, output: &Output, answer: &str) {
    let context = served.context(client, output);
    assert!(output.status.success(), "{context}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().any(|l| l == "tool ran: Paris"), "{context}");
    assert!(
        stdout.lines().any(|l| l == format!("answer: {answer}")),
        "{context}"
    );
}

async fn agents_sdk(mode: &str) {
    let test = format!("agents sdk caller tool ({mode})");
    let Some(python) = client("LLLM_OPENAI_PYTHON", &test) else {
        return;
    };
    let answer = "It is sunny in Paris.";
    let served = Served::start(
        &format!("caller-tools-agents-{mode}"),
        "weather",
        r#"{"city": "Paris"}"#,
        answer,
    )
    .await;
    let mut command = Command::new(python);
    command.arg(driver("caller_tools_agents.py")).args([
        mode,
        &format!("{}/v1", served.serving.base),
        "helper",
    ]);
    let output = run_client(command).await;
    assert_ran_and_answered(&served, &test, &output, answer);
    served.assert_continued(&test, &output, "weather", "sunny in Paris");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_sdk_chat_model_runs_its_function_tool_for_the_tactic() {
    agents_sdk("chat").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_sdk_responses_model_runs_its_function_tool_for_the_tactic() {
    agents_sdk("responses").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pydantic_ai_runs_its_tool_for_the_tactic() {
    let test = "pydantic-ai caller tool";
    let Some(python) = client("LLLM_OPENAI_PYTHON", test) else {
        return;
    };
    let answer = "Sunny, in Paris.";
    let served = Served::start(
        "caller-tools-pydantic",
        "weather",
        r#"{"city": "Paris"}"#,
        answer,
    )
    .await;
    let mut command = Command::new(python);
    command
        .arg(driver("caller_tools_pydantic.py"))
        .args([&format!("{}/v1", served.serving.base), "helper"]);
    let output = run_client(command).await;
    assert_ran_and_answered(&served, test, &output, answer);
    served.assert_continued(test, &output, "weather", "sunny in Paris");
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_exec_runs_its_shell_tool_for_the_tactic() {
    let test = "codex caller tool";
    let Some(program) = client("LLLM_CODEX", test) else {
        return;
    };
    // Codex 0.171's shell tool: `exec_command`, the command line as `cmd`.
    let (tool, arguments) = ("exec_command", r#"{"cmd": "cat marker.txt"}"#);
    let served = Served::start("caller-tools-codex", tool, arguments, "The marker is read.").await;
    let (home, work): (PathBuf, PathBuf) = (served.dir.path("codex-home"), served.dir.path("work"));
    std::fs::create_dir_all(&work).expect("work");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(work.join("marker.txt"), "marker-8d1f3").expect("marker");
    std::fs::write(home.join("config.toml"), codex_config(&served.serving.base)).expect("config");
    let output =
        tokio::task::spawn_blocking(move || codex(&program, &home, &work, &["Read the marker."]))
            .await
            .expect("joined");
    let context = served.context(test, &output);
    assert!(output.status.success(), "{context}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("The marker is read."),
        "{context}"
    );
    served.assert_continued(test, &output, tool, "marker-8d1f3");
}

#[tokio::test(flavor = "multi_thread")]
async fn opencode_run_runs_its_bash_tool_for_the_tactic() {
    let test = "opencode caller tool";
    let Some(program) = client("LLLM_OPENCODE", test) else {
        return;
    };
    // A file of OpenCode's project read by its full path (its shell's directory is its own choice;
    // a path outside the project would need a permission `opencode run` refuses).
    let dir = TempDir::new("caller-tools-opencode");
    let work = dir.path("work");
    std::fs::create_dir_all(&work).expect("work");
    let marker = work.join("marker.txt");
    std::fs::write(&marker, "marker-5c2e9").expect("marker");
    let tool = "bash";
    let arguments = serde_json::json!({
        "command": format!("cat {}", marker.display()),
        "description": "Reads the marker"
    })
    .to_string();
    let served = Served::start_in(dir, tool, &arguments, "The marker is read.").await;
    let (home, work) = (served.dir.path("home"), served.dir.path("work"));
    std::fs::create_dir_all(&work).expect("work");
    std::fs::create_dir_all(&home).expect("home");
    let api = format!("{}/v1", served.serving.base);
    // `opencode run` refuses what needs a permission, and reading a file by its full path asks
    // one: allowed here.
    let mut config: Value =
        serde_json::from_str(&super::harnesses::opencode_config(&api)).expect("config");
    config["permission"] = serde_json::json!({"external_directory": "allow", "bash": "allow"});
    std::fs::write(home.join("opencode.json"), config.to_string()).expect("config");
    let output = run_client(super::harnesses::opencode(
        &program,
        &home,
        &work,
        &["Read the marker."],
    ))
    .await;
    let context = served.context(test, &output);
    assert!(output.status.success(), "{context}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("The marker is read."),
        "{context}"
    );
    served.assert_continued(test, &output, tool, "marker-5c2e9");
}
