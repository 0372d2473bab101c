//! Durable runs end to end: `lllm run --journal`, `lllm resume`, confirmations that wait (exit 3),
//! limits, torn journals, changed tactics, and runs killed with SIGKILL at random points.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use crate::support::{arg, lllm, tool_messages, Outcome, TempDir};

/// A steps tactic: `worker` appends lines to `effects.txt` with a tool (asking first when `confirm`),
/// then `reviewer` reviews the work.
fn tactic(api_base: &str, dir: &Path, confirm: bool, extra: &str) -> String {
    let effects = dir.join("effects.txt");
    format!(
        r#"{extra}global:
  model_name: m
  model_args: {{api_base: "{api_base}", timeout: 30}}
  inference_hints: {{profile: dynamo, session_prefix: durable}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    max_tool_rounds: 5
    tools:
      - name: append
        description: Appends a line to the effects file
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" >> "$2"', sh, "{{{{ line }}}}", "{effects}"]
        confirm: {confirm}
  - name: reviewer
    system_prompt: You review.
steps:
  - {{agent: worker, receive: "{{{{ input }}}}", save: work}}
  - {{agent: reviewer, receive: "Review: {{{{ work }}}}", save: review}}
output: "{{{{ review }}}}"
"#,
        effects = effects.display()
    )
}

fn effects(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn events(journal: &Path) -> Vec<Value> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_confirmation_pauses_the_run_and_resume_approves_or_rejects_it() {
    for approve in [true, false] {
        let dir = TempDir::new("journal-pause");
        let server = StubServer::start().await.expect("stub");
        server.push(StubReply::tool_calls(&[(
            "c1",
            "append",
            r#"{"line": "one"}"#,
        )]));
        server.push(StubReply::text("worked"));
        server.push(StubReply::text("reviewed"));
        let file = dir.write("t.yaml", tactic(&server.base_url(), &dir.0, true, ""));
        let journal = dir.path("run.jsonl");
        let paused = lllm(&[
            "run",
            arg(&file),
            "--input",
            "go",
            "--journal",
            arg(&journal),
        ])
        .run()
        .await;
        paused.assert_clean(
            3,
            &[
                "paused: a call of `append` by agent `worker` waits for confirmation",
                "lllm resume",
            ],
        );
        assert!(effects(&dir.0).is_empty(), "nothing ran");
        assert_eq!(server.requests().len(), 1);
        assert!(events(&journal).iter().any(|e| e["event"] == "pending"));

        let flag = if approve { "--yes" } else { "--reject" };
        let resumed = lllm(&["resume", arg(&journal), flag]).run().await;
        resumed.assert_clean(0, &[]);
        assert_eq!(resumed.stdout_text().trim(), "reviewed");
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "the answered request was not sent again");
        let results = tool_messages(&requests[1]);
        if approve {
            assert_eq!(effects(&dir.0), ["one"]);
            assert_eq!(results, [""]);
        } else {
            assert!(effects(&dir.0).is_empty());
            assert!(
                results[0].starts_with("error: the user declined"),
                "{results:?}"
            );
        }
        assert_eq!(
            requests[0].header("x-dynamo-session-id"),
            requests[1].header("x-dynamo-session-id"),
            "the same session before and after the pause"
        );
        // A finished run prints its output and sends nothing.
        let again = lllm(&["resume", arg(&journal)]).run().await;
        again.assert_clean(0, &[]);
        assert_eq!(again.stdout_text().trim(), "reviewed");
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_torn_line_is_ignored_and_a_changed_tactic_is_refused() {
    let dir = TempDir::new("journal-torn");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "append",
        r#"{"line": "one"}"#,
    )]));
    server.push(StubReply::text("worked"));
    server.push(StubReply::text("reviewed"));
    let file = dir.write("t.yaml", tactic(&server.base_url(), &dir.0, true, ""));
    let journal = dir.path("run.jsonl");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
    ])
    .run()
    .await
    .assert_clean(3, &["paused"]);
    // A crash tore the last line.
    let mut text = std::fs::read_to_string(&journal).expect("journal");
    text.push_str("{\"event\":\"tool_fin");
    std::fs::write(&journal, text).expect("tear");
    // The tactic changed: refused, unless --force.
    let original = std::fs::read_to_string(&file).expect("tactic");
    let torn_bytes = std::fs::read(&journal).expect("journal");
    std::fs::write(
        &file,
        original.replace("You review.", "You review harshly."),
    )
    .expect("edit");
    lllm(&["resume", arg(&journal), "--yes"])
        .run()
        .await
        .assert_clean(2, &["changed since the run started", "--force"]);
    assert_eq!(
        std::fs::read(&journal).expect("journal"),
        torn_bytes,
        "a refused resume leaves the journal as it was"
    );
    std::fs::write(&file, &original).expect("restore");
    let resumed = lllm(&["resume", arg(&journal), "--yes"]).run().await;
    resumed.assert_clean(0, &[]);
    assert_eq!(resumed.stdout_text().trim(), "reviewed");
    assert_eq!(effects(&dir.0), ["one"]);
    // Running again into the same journal is refused: it is resume's.
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
    ])
    .run()
    .await
    .assert_clean(2, &["already holds a journal", "lllm resume"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_limit_stops_the_run_and_resume_with_a_raised_limit_finishes_it() {
    let dir = TempDir::new("journal-limit");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "append",
        r#"{"line": "one"}"#,
    )]));
    server.push(StubReply::text("worked"));
    server.push(StubReply::text("reviewed"));
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &dir.0,
            false,
            "limits: {max_requests: 2}\n",
        ),
    );
    let journal = dir.path("run.jsonl");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
    ])
    .run()
    .await
    .assert_clean(1, &["the run reached its limit max_requests = 2"]);
    assert_eq!(server.requests().len(), 2);
    lllm(&["resume", arg(&journal), "--limit", "max_requests=4"])
        .run()
        .await
        .assert_clean(0, &[]);
    assert_eq!(
        server.requests().len(),
        3,
        "only the missing request was sent"
    );
    assert_eq!(effects(&dir.0), ["one"]);
    // A --limit of the run is kept by its journal: resuming without one stops at the same place.
    server.push(StubReply::text("worked again"));
    let second = dir.path("second.jsonl");
    let no_limits = dir.write("u.yaml", tactic(&server.base_url(), &dir.0, false, ""));
    lllm(&[
        "run",
        arg(&no_limits),
        "--input",
        "go",
        "--journal",
        arg(&second),
        "--limit",
        "max_requests=1",
    ])
    .run()
    .await
    .assert_clean(1, &["max_requests = 1"]);
    lllm(&["resume", arg(&second)])
        .run()
        .await
        .assert_clean(1, &["max_requests = 1"]);
    server.push(StubReply::text("reviewed again"));
    lllm(&["resume", arg(&second), "--limit", "max_requests=9"])
        .run()
        .await
        .assert_clean(0, &[]);
    server.push(StubReply::tool_calls(&[(
        "c1",
        "append",
        r#"{"line": "two"}"#,
    )]));
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--limit",
        "max_tool_calls=0",
    ])
    .run()
    .await
    .assert_clean(1, &["max_tool_calls = 0"]);
    assert_eq!(effects(&dir.0), ["one"], "the limit stopped the call");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--limit",
        "max_nonsense=3",
    ])
    .run()
    .await
    .assert_clean(2, &["unknown limit `max_nonsense`"]);
}

/// A journal keeps the run's `--limit`s typed (`{"max_requests": 1}`), and a journal written before
/// they were typed (`"max_requests=1"`) still resumes under them.
#[tokio::test(flavor = "multi_thread")]
async fn limits_are_journaled_typed_and_a_journal_of_text_limits_still_resumes() {
    let dir = TempDir::new("journal-text-limits");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::text("worked"));
    let file = dir.write("t.yaml", tactic(&server.base_url(), &dir.0, false, ""));
    let journal = dir.path("run.jsonl");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
        "--limit",
        "max_requests=1",
        "--limit",
        "max_seconds=600",
    ])
    .run()
    .await
    .assert_clean(1, &["the run reached its limit max_requests = 1"]);
    assert_eq!(server.requests().len(), 1);
    let written = std::fs::read_to_string(&journal).expect("journal");
    let (first, rest) = written.split_once('\n').expect("lines");
    let mut start: Value = serde_json::from_str(first).expect("start line");
    assert_eq!(
        start["limits"],
        json!([{"max_requests": 1}, {"max_seconds": 600.0}])
    );
    // The start line as journals wrote it before the limits were typed.
    start["limits"] = json!(["max_requests=1", "max_seconds=600"]);
    std::fs::write(&journal, format!("{start}\n{rest}")).expect("rewrite");

    lllm(&["resume", arg(&journal)])
        .run()
        .await
        .assert_clean(1, &["the run reached its limit max_requests = 1"]);
    assert_eq!(server.requests().len(), 1, "the journal's limit held");
    server.push(StubReply::text("reviewed"));
    lllm(&["resume", arg(&journal), "--limit", "max_requests=2"])
        .run()
        .await
        .assert_clean(0, &[]);
    assert_eq!(server.requests().len(), 2, "only the review was sent");
}

/// A model server whose answer depends only on the request: the worker calls `append` until its
/// dialog holds three tool results, then answers; the reviewer answers at once. Every request is
/// recorded (session id, number of messages) and answered after a short delay, so that a kill can
/// land anywhere.
#[derive(Clone, Default)]
struct Deterministic {
    seen: Arc<Mutex<Vec<(String, usize)>>>,
}

async fn deterministic() -> (String, Deterministic) {
    use axum::{extract::State, http::HeaderMap, routing::post, Json, Router};
    let state = Deterministic::default();
    let app = Router::new()
        .route(
            "/v1/chat/completions",
            post(
                |State(state): State<Deterministic>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    let messages = body["messages"].as_array().cloned().unwrap_or_default();
                    let session = headers
                        .get("x-dynamo-session-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    state
                        .seen
                        .lock()
                        .expect("lock")
                        .push((session, messages.len()));
                    tokio::time::sleep(Duration::from_millis(25)).await;
                    let system = messages[0]["content"].as_str().unwrap_or_default().to_owned();
                    let done = messages.iter().filter(|m| m["role"] == "tool").count();
                    let usage = json!({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12});
                    let message = if system == "You work." && done < 3 {
                        json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{done}"), "type": "function", "function": {"name": "append", "arguments": json!({"line": format!("line {done}")}).to_string()}}]})
                    } else if system == "You work." {
                        json!({"role": "assistant", "content": "three lines written"})
                    } else {
                        json!({"role": "assistant", "content": format!("reviewed {} messages", messages.len())})
                    };
                    Json(json!({"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}))
                },
            ),
        )
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    (url, state)
}

/// The final dialogs of a run, from its `--json` report: each agent's messages without ids.
fn dialogs_of(journal: &Path) -> Vec<(String, String)> {
    // (kind, text) of every answer and tool result, in journal order per dialog.
    let mut out = Vec::new();
    for event in events(journal) {
        match event["event"].as_str() {
            Some("answer") => out.push(("answer".into(), event["message"].to_string())),
            Some("tool_finished") => out.push(("tool".into(), event["content"].to_string())),
            _ => {}
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_killed_at_random_points_resume_to_the_uninterrupted_result() {
    let (url, server) = deterministic().await;
    // The uninterrupted run.
    let reference = TempDir::new("journal-reference");
    let file = reference.write("t.yaml", tactic(&url, &reference.0, false, ""));
    let journal = reference.path("run.jsonl");
    let clean: Outcome = lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
    ])
    .run()
    .await;
    clean.assert_clean(0, &[]);
    let expected_output = clean.stdout_text();
    let expected_dialogs = dialogs_of(&journal);
    assert_eq!(effects(&reference.0), ["line 0", "line 1", "line 2"]);
    let per_run = server.seen.lock().expect("lock").len();
    assert_eq!(per_run, 5, "4 worker requests and 1 reviewer request");

    let mut rng_seed = 0x5eed_u64;
    let mut interrupted_runs = 0;
    for round in 0..12 {
        server.seen.lock().expect("lock").clear();
        let dir = TempDir::new(&format!("journal-crash-{round}"));
        let file = dir.write("t.yaml", tactic(&url, &dir.0, false, ""));
        let journal = dir.path("run.jsonl");
        let mut kills = 0;
        let final_outcome = loop {
            // A run killed before it created its journal left nothing to resume: it starts again.
            let first = !journal.exists();
            let run = if first {
                lllm(&[
                    "run",
                    arg(&file),
                    "--input",
                    "go",
                    "--journal",
                    arg(&journal),
                ])
            } else {
                lllm(&["resume", arg(&journal)])
            };
            let running = run.spawn();
            rng_seed = rng_seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let after = Duration::from_millis(20 + (rng_seed >> 33) % 160);
            std::thread::sleep(after);
            if kills < 4 {
                running.signal(nix::sys::signal::Signal::SIGKILL);
                let outcome = tokio::task::spawn_blocking(move || running.wait())
                    .await
                    .expect("wait");
                if outcome.code == Some(0) {
                    break outcome;
                }
                kills += 1;
                continue;
            }
            let outcome = tokio::task::spawn_blocking(move || running.wait())
                .await
                .expect("wait");
            break outcome;
        };
        final_outcome.assert_clean(0, &[]);
        if kills > 0 {
            interrupted_runs += 1;
        }
        // The output and every committed answer and tool result match the uninterrupted run.
        let resumed = lllm(&["resume", arg(&journal)]).run().await;
        resumed.assert_clean(0, &[]);
        let tool_results: Vec<String> = events(&journal)
            .iter()
            .filter(|e| e["event"] == "tool_finished")
            .map(|e| e["content"].to_string())
            .collect();
        let interrupted = tool_results.iter().any(|r| r.contains("interrupted"));
        if !interrupted {
            assert_eq!(resumed.stdout_text(), expected_output, "round {round}");
            assert_eq!(dialogs_of(&journal), expected_dialogs, "round {round}");
            assert_eq!(
                effects(&dir.0),
                ["line 0", "line 1", "line 2"],
                "round {round}: each effect once"
            );
        } else {
            // A call the crash interrupted is not run again: its effect happened at most once.
            let lines = effects(&dir.0);
            for line in ["line 0", "line 1", "line 2"] {
                assert!(
                    lines.iter().filter(|l| *l == line).count() <= 1,
                    "{lines:?}"
                );
            }
        }
        // No answered request was sent again: a request is repeated at most once per kill (the one
        // in flight), and every dialog kept one session.
        let seen = server.seen.lock().expect("lock").clone();
        let mut counts: HashMap<(String, usize), usize> = HashMap::new();
        for key in &seen {
            *counts.entry(key.clone()).or_default() += 1;
        }
        let repeats: usize = counts.values().map(|n| n - 1).sum();
        assert!(
            repeats <= kills,
            "round {round}: {repeats} repeats for {kills} kills: {seen:?}"
        );
        let sessions: std::collections::HashSet<&str> =
            seen.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            sessions.len(),
            2,
            "round {round}: one session per dialog: {sessions:?}"
        );
    }
    assert!(
        interrupted_runs >= 6,
        "most rounds were killed at least once ({interrupted_runs})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_journal_never_holds_the_api_key_or_headers() {
    let dir = TempDir::new("journal-secret");
    let server = StubServer::start().await.expect("stub");
    let file = dir.write(
        "t.yaml",
        format!(
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    model_args: {{api_base: \"{}\", api_key: \"${{SECRET_KEY}}\", extra_headers: {{X-Api-Token: \"${{SECRET_KEY}}\"}}}}\n",
            server.base_url()
        ),
    );
    let journal = dir.path("run.jsonl");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "hello",
        "--journal",
        arg(&journal),
    ])
    .env("SECRET_KEY", "sk-journal-secret-998877")
    .run()
    .await
    .assert_clean(0, &[]);
    let text = std::fs::read_to_string(&journal).expect("journal");
    assert!(
        text.contains("stub answer to: hello"),
        "the conversation is there: {text}"
    );
    assert!(!text.contains("sk-journal-secret-998877"), "{text}");
    assert!(
        !text.to_ascii_lowercase().contains("authorization"),
        "{text}"
    );
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-journal-secret-998877")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_stopped_by_ctrl_c_is_interrupted_on_resume_unless_idempotent() {
    for idempotent in [false, true] {
        let dir = TempDir::new("journal-sigint");
        let server = StubServer::start().await.expect("stub");
        server.push(StubReply::tool_calls(&[("c1", "slow", "{}")]));
        server.push(StubReply::text("after"));
        let marker = dir.path("ran.txt");
        let file = dir.write(
            "t.yaml",
            format!(
                "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    model_args: {{api_base: \"{}\"}}\n    tools:\n      - {{name: slow, description: d, command: [sh, -c, 'echo once >> \"$0\"; sleep 20', \"{}\"], idempotent: {idempotent}, timeout_s: 60}}\n",
                server.base_url(),
                marker.display()
            ),
        );
        let journal = dir.path("run.jsonl");
        let running = lllm(&[
            "run",
            arg(&file),
            "--input",
            "go",
            "--journal",
            arg(&journal),
        ])
        .spawn();
        let started = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(25));
            std::fs::read_to_string(&marker).is_ok_and(|t| !t.is_empty())
        });
        assert!(started, "the tool started");
        running.signal(nix::sys::signal::Signal::SIGINT);
        let stopped = tokio::task::spawn_blocking(move || running.wait())
            .await
            .expect("wait");
        stopped.assert_clean(130, &["stopped by SIGINT"]);
        let kinds: Vec<String> = events(&journal)
            .iter()
            .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(kinds.contains(&"tool_started".to_owned()), "{kinds:?}");
        assert!(
            !kinds.contains(&"tool_finished".to_owned()),
            "the killed call stays unfinished: {kinds:?}"
        );
        // Resume: the slow tool is not idempotent, so it is not run again; when it is, it is.
        std::fs::write(
            &file,
            std::fs::read_to_string(&file)
                .expect("tactic")
                .replace("sleep 20", "true"),
        )
        .expect("quicker tool");
        let resumed = lllm(&["resume", arg(&journal), "--force"]).run().await;
        resumed.assert_clean(0, &[]);
        let results = tool_messages(&server.requests()[1]);
        if idempotent {
            assert_eq!(results, [""], "run again");
            assert_eq!(
                std::fs::read_to_string(&marker).expect("marker"),
                "once\nonce\n"
            );
        } else {
            assert!(
                results[0].contains("interrupted when the run stopped"),
                "{results:?}"
            );
            assert_eq!(std::fs::read_to_string(&marker).expect("marker"), "once\n");
        }
    }
}
