//! A server's questions for the user (MCP elicitation) end to end, against the reference server
//! (`@modelcontextprotocol/server-everything`'s `trigger-elicitation-request`): declined without a
//! terminal, answered on a terminal (the real `lllm` under a pseudo-terminal, `script`), answered by
//! `lllm serve`'s approval with `content`; and `tests/mcp/asking_server.py` (the official Python SDK)
//! asking with a 10 MB schema. Gated like `mcp.rs` on `LLLM_MCP_EVERYTHING`.

use std::path::Path;
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use super::mcp::{list, servers, tactic};
use crate::support::{arg, lllm, tool_messages, Serving, TempDir};

/// A tactic whose agent calls the reference server's elicitation tool, then answers "done".
fn asking_tactic(dir: &TempDir, stub: &StubServer, everything: &str) -> std::path::PathBuf {
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "trigger-elicitation-request",
        "{}",
    )]));
    stub.push(StubReply::text("done"));
    let servers = format!("  every: {{command: {}}}", list(&[everything, "stdio"]));
    dir.write("t.yaml", tactic(&stub.base_url(), &servers, "[every]", ""))
}

/// Starts a run of model `t` on `serving` with the input "go"; its id.
async fn start_run(serving: &Serving) -> String {
    let run: Value = reqwest::Client::new()
        .post(format!("{}/v1/runs", serving.base))
        .body(json!({"model": "t", "input": "go"}).to_string())
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    run["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_is_declined_when_there_is_no_terminal() {
    let Some(s) = servers("elicitation, no terminal") else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    let dir = TempDir::new("mcp-elicit-none");
    let file = asking_tactic(&dir, &stub, &s.everything);
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(
        0,
        &["declined a question of MCP server `every` (for agent `a`): there is no terminal to ask"],
    );
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_messages(&requests[1]);
    assert!(
        results[0].contains("User declined to provide the requested information"),
        "{results:?}"
    );
}

/// Runs `lllm` on a pseudo-terminal, answering each prompt as it appears: `answer` maps the
/// prompt's last line to what is typed. What the terminal showed.
pub(super) async fn on_a_terminal(lllm_args: &str, answer: impl Fn(&str) -> String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut child = tokio::process::Command::new("script")
        .args([
            "-qec",
            &format!("{} {lllm_args}", env!("CARGO_BIN_EXE_lllm")),
            "/dev/null",
        ])
        .env_remove("LLLM_LOG")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("script (util-linux) runs");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = child.stdout.take().expect("stdout");
    let mut seen = String::new();
    let mut answered_at = 0;
    let mut buffer = vec![0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match tokio::time::timeout_at(deadline, output.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
        }
        let last = seen.rsplit('\n').next().unwrap_or_default();
        // A prompt: a field's ("  name: ") or the question's ("Answer? ..."); a field's description
        // ("- Title: ...") cut by a read may end with ": " too, and is not one.
        let prompt = last.starts_with("  ") || last.starts_with("Answer?");
        if prompt && last.ends_with(": ") && seen.len() != answered_at {
            answered_at = seen.len();
            let typed = format!("{}\n", answer(last));
            input.write_all(typed.as_bytes()).await.expect("typed");
        }
    }
    child.wait().await.ok();
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_is_answered_on_the_terminal_field_by_field() {
    let Some(s) = servers("elicitation, terminal") else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    let dir = TempDir::new("mcp-elicit-pty");
    let file = asking_tactic(&dir, &stub, &s.everything);
    let args = format!("run {} --input go", arg(&file));
    let shown = on_a_terminal(&args, |prompt| {
        let field = prompt.trim().trim_end_matches(':');
        match field {
            _ if prompt.starts_with("Answer?") => "y",
            "name" => "Ann Example",
            "check" => "yes",
            "email" => "ann@example.com",
            "integer" => "7",
            "untitledSingleSelectEnum" => "3",
            _ => "",
        }
        .to_owned()
    })
    .await;
    assert!(
        shown.contains("lllm: MCP server `every` asks (for agent `a`):"),
        "{shown}"
    );
    assert!(shown.contains("Please provide inputs for the following fields:"));
    assert!(
        shown.contains("- String: Your full, legal name (text, required)"),
        "{shown}"
    );
    assert!(shown.contains("    3) Joey"), "{shown}");
    let requests = stub.requests();
    assert_eq!(requests.len(), 2, "{shown}");
    let result = &tool_messages(&requests[1])[0];
    assert!(
        result.contains("User provided the requested information"),
        "{result}"
    );
    for line in [
        "- Name: Ann Example",
        "- Agreed to terms: true",
        "- Email: ann@example.com",
        "- Favorite Integer: 7",
        // The defaults of the fields left empty.
        "- Favorite Number: 3.14",
    ] {
        assert!(result.contains(line), "{line} not in {result}");
    }
    assert!(
        result.contains("\"untitledSingleSelectEnum\": \"Joey\""),
        "{result}"
    );
}

/// The run's view, once `ready` holds for it.
async fn wait_for(serving: &Serving, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let run: Value = reqwest::get(format!("{}/v1/runs/{id}", serving.base))
            .await
            .expect("sent")
            .json()
            .await
            .expect("JSON");
        if ready(&run) {
            return run;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never ready: {run}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_is_answered_by_the_serve_callers_approval_with_content() {
    let Some(s) = servers("elicitation, serve") else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    let dir = TempDir::new("mcp-elicit-serve");
    let file = asking_tactic(&dir, &stub, &s.everything);
    let serving = Serving::start(&[arg(&file)], &[]);
    let http = reqwest::Client::new();
    let id = start_run(&serving).await;
    let waiting = wait_for(&serving, &id, |r| r["status"] == "requires_action").await;
    let question = &waiting["question"];
    assert_eq!(
        question["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(question["source"], "MCP server `every`");
    assert_eq!(question["requested_schema"]["required"], json!(["name"]));
    assert_eq!(
        question["requested_schema"]["properties"]["integer"]["maximum"],
        100
    );
    let asked = question["id"].as_str().expect("question id").to_owned();
    let approve = |question: &str, content: Value| {
        http.post(format!("{}/v1/runs/{id}/approval", serving.base))
            .body(
                json!({"decision": "approve", "question": question, "content": content})
                    .to_string(),
            )
            .send()
    };
    // An answer meant for another question answers nothing.
    let stale = approve("q999", json!({"name": "Eve"})).await.expect("sent");
    assert_eq!(stale.status(), 409);
    let error: Value = stale.json().await.expect("JSON");
    assert_eq!(
        error["error"]["message"],
        format!("`question`: `q999` does not wait any more; the run now asks `{asked}`")
    );
    let refused = approve(&asked, json!({"name": "Ann", "integer": 500}))
        .await
        .expect("sent");
    assert_eq!(refused.status(), 400);
    let error: Value = refused.json().await.expect("JSON");
    assert_eq!(
        error["error"]["message"],
        "`content.integer`: must be at most 100"
    );
    let taken = approve(&asked, json!({"name": "Ann", "integer": 9}))
        .await
        .expect("sent");
    assert_eq!(taken.status(), 200);
    let done = wait_for(&serving, &id, |r| r["status"] == "completed").await;
    assert_eq!(done["output"], "done");
    assert!(done.get("question").is_none());
    let result = &tool_messages(&stub.requests()[1])[0];
    assert!(
        result.contains("- Name: Ann") && result.contains("- Favorite Integer: 9"),
        "{result}"
    );
    let late = approve(&asked, json!({"name": "Ann"})).await.expect("sent");
    assert_eq!(late.status(), 409, "no question waits any more");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_waiting_on_a_question_can_be_cancelled() {
    let Some(s) = servers("elicitation, serve, cancel") else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    let dir = TempDir::new("mcp-elicit-cancel");
    let file = asking_tactic(&dir, &stub, &s.everything);
    let serving = Serving::start(&[arg(&file)], &[]);
    let http = reqwest::Client::new();
    let id = start_run(&serving).await;
    wait_for(&serving, &id, |r| r["status"] == "requires_action").await;
    let cancelled: Value = http
        .post(format!("{}/v1/runs/{id}/cancel", serving.base))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(cancelled.get("question").is_none(), "{cancelled}");
    assert_eq!(
        stub.requests().len(),
        1,
        "nothing asked of the model after the cancel"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ten_megabyte_schema_is_refused_and_the_run_goes_on() {
    let Some(s) = servers("elicitation, 10 MB schema") else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    stub.push(StubReply::tool_calls(&[("c1", "elicit_huge", "{}")]));
    stub.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-elicit-huge");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/asking_server.py");
    let servers = format!("  ask: {{command: {}}}", list(&[&s.python, arg(&script)]));
    let file = dir.write("t.yaml", tactic(&stub.base_url(), &servers, "[ask]", ""));
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    let result = &tool_messages(&requests[1])[0];
    assert!(
        result.starts_with("refused: ")
            && result.contains("lllm asks forms of at most 65536 bytes of requested schema"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_is_answered_in_the_console() {
    let Some(s) = servers("elicitation, console") else {
        return;
    };
    let Some(browser) = crate::browser::Browser::start("elicitation, console").await else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    let dir = TempDir::new("mcp-elicit-console");
    let file = asking_tactic(&dir, &stub, &s.everything);
    let serving = Serving::start(&[arg(&file)], &[]);
    let id = start_run(&serving).await;
    wait_for(&serving, &id, |r| r["status"] == "requires_action").await;
    browser.goto(&format!("{}/#/runs/{id}", serving.base)).await;
    browser
        .wait_until(
            "the question's form",
            "return !!document.querySelector('#question [name=integer]')",
        )
        .await;
    let shown = browser.text("#question").await.unwrap_or_default();
    assert!(
        shown.contains("Please provide inputs for the following fields:")
            && shown.contains("MCP server `every`")
            && shown.contains("String *"),
        "{shown}"
    );
    browser
        .run(
            "document.querySelector('#question [name=name]').value = 'Ann Console';
             document.querySelector('#question [name=integer]').value = '8';
             document.querySelector('#question [name=check]').checked = true;
             return true;",
        )
        .await;
    browser.click("#question-send").await;
    let done = wait_for(&serving, &id, |r| r["status"] == "completed").await;
    assert_eq!(done["output"], "done");
    let result = &tool_messages(&stub.requests()[1])[0];
    for line in [
        "- Name: Ann Console",
        "- Agreed to terms: true",
        "- Favorite Integer: 8",
        "- Favorite Number: 3.14",
    ] {
        assert!(result.contains(line), "{line} not in {result}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_url_question_shows_the_address_and_takes_no_content() {
    let Some(s) = servers("elicitation, url, serve") else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "trigger-url-elicitation",
        r#"{"url": "https://example.org/consent?x=1", "message": "Please consent"}"#,
    )]));
    stub.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-elicit-url");
    let servers = format!("  every: {{command: {}}}", list(&[&s.everything, "stdio"]));
    let file = dir.write("t.yaml", tactic(&stub.base_url(), &servers, "[every]", ""));
    let serving = Serving::start(&[arg(&file)], &[]);
    let http = reqwest::Client::new();
    let id = start_run(&serving).await;
    let waiting = wait_for(&serving, &id, |r| r["status"] == "requires_action").await;
    assert_eq!(
        waiting["question"]["url"],
        "https://example.org/consent?x=1"
    );
    assert_eq!(waiting["question"]["message"], "Please consent");
    assert!(waiting["question"].get("requested_schema").is_none());
    let approve = |body: Value| {
        http.post(format!("{}/v1/runs/{id}/approval", serving.base))
            .body(body.to_string())
            .send()
    };
    let refused = approve(json!({"decision": "approve", "content": {"a": 1}}))
        .await
        .expect("sent");
    assert_eq!(refused.status(), 400);
    let taken = approve(json!({"decision": "approve"})).await.expect("sent");
    assert_eq!(taken.status(), 200);
    wait_for(&serving, &id, |r| r["status"] == "completed").await;
    let result = &tool_messages(&stub.requests()[1])[0];
    assert!(result.contains("accept"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_asking_in_a_loop_gets_a_bounded_number_of_answers_per_call() {
    let Some(s) = servers("elicitation loop") else {
        return;
    };
    let stub = StubServer::start().await.expect("stub");
    stub.push(StubReply::tool_calls(&[("c1", "elicit_loop", "{}")]));
    stub.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-elicit-loop");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/asking_server.py");
    let servers = format!("  ask: {{command: {}}}", list(&[&s.python, arg(&script)]));
    let file = dir.write("t.yaml", tactic(&stub.base_url(), &servers, "[ask]", ""));
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &["declined a question of MCP server `ask`"]);
    let result = &tool_messages(&stub.requests()[1])[0];
    assert!(
        result.starts_with("decline 8; then refused:")
            && result.contains("at most 8 questions per tool call"),
        "{result}"
    );
}
