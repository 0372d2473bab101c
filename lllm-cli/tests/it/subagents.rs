//! Background subagents of a durable run, against the real binary: a run killed with SIGKILL while
//! one child is done and another is in its tool resumes without asking the finished child again and
//! without running a tool twice.

use std::path::Path;
use std::time::Duration;

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::json;

use crate::support::{arg, lllm, TempDir};

fn tactic(api_base: &str, dir: &Path, hold: &str) -> String {
    format!(
        r#"agent_configs:
  - name: lead
    model_name: m
    system_prompt: You lead.
    model_args: {{api_base: "{api_base}", timeout: 30}}
    inference_hints: {{profile: dynamo}}
    max_call_retries: 0
    subagents:
      - {{name: researcher, mode: fork, background: true}}
    tools:
      - name: append
        description: Appends a line to the effects file
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" >> "$2"', sh, "{{{{ line }}}}", "{effects}"]
      - name: hold
        description: Works for a long time
        command: [sh, -c, 'echo $$ >> "$0"; {hold}', "{marker}"]
        timeout_s: 120
"#,
        effects = dir.join("effects.txt").display(),
        marker = dir.join("held.txt").display(),
    )
}

fn last_user(request: &RecordedRequest) -> String {
    request.body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn start(instructions: &str) -> String {
    json!({"subagent": "researcher", "instructions": instructions}).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_killed_while_a_child_works_resumes_without_asking_a_finished_child_again() {
    let dir = TempDir::new("subagents-kill");
    let server = StubServer::start().await.expect("stub");
    let (quick, slow) = (start("Quick part."), start("Slow part."));
    server.push(
        StubReply::tool_calls(&[("c1", "task_start", &quick), ("c2", "task_start", &slow)])
            .for_message("Begin research."),
    );
    server.push(
        StubReply::tool_calls(&[("a1", "append", r#"{"line": "quick"}"#)])
            .for_message("Quick part."),
    );
    server.push(StubReply::text("quick done").for_message("Quick part."));
    server.push(StubReply::tool_calls(&[("h1", "hold", "{}")]).for_message("Slow part."));
    server.push(StubReply::text("waiting").for_message("Begin research."));
    let file = dir.write(
        "t.yaml",
        tactic(&server.base_url(), &dir.0, "exec sleep 60"),
    );
    let journal = dir.path("run.jsonl");
    let running = lllm(&[
        "run",
        arg(&file),
        "--input",
        "Begin research.",
        "--journal",
        arg(&journal),
    ])
    .spawn();
    // Killed once the quick child's answer is journaled and the slow child is in its tool.
    let ready = (0..400).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        let journaled = std::fs::read_to_string(&journal).unwrap_or_default();
        journaled.contains("quick done") && !lines(&dir.path("held.txt")).is_empty()
    });
    assert!(
        ready,
        "the quick child answered and the slow one started its tool"
    );
    running.signal(nix::sys::signal::Signal::SIGKILL);
    tokio::task::spawn_blocking(move || running.wait())
        .await
        .expect("wait");
    let held: Vec<String> = lines(&dir.path("held.txt"));
    for pid in &held {
        // The killed run could not kill its tool: its orphan is ended here.
        if let Ok(pid) = pid.parse::<i32>() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let before = server.requests().len();
    server.push(StubReply::text("slow done").for_message("Slow part."));
    server.push(StubReply::text("waiting").for_message("Begin research."));
    server.push(StubReply::text("both parts done").for_message("background tasks"));
    let resumed = lllm(&["resume", arg(&journal)]).run().await;
    resumed.assert_clean(0, &[]);
    assert!(
        resumed.stdout_text().contains("both parts done"),
        "{}",
        resumed.stdout_text()
    );
    let after: Vec<RecordedRequest> = server.requests().split_off(before);
    assert!(
        after.iter().all(|r| last_user(r) != "Quick part."),
        "the finished child was not asked again: {:?}",
        after.iter().map(last_user).collect::<Vec<_>>()
    );
    assert!(after.iter().any(|r| last_user(r) == "Slow part."));
    assert_eq!(
        lines(&dir.path("effects.txt")),
        ["quick"],
        "no tool effect twice"
    );
    assert_eq!(
        lines(&dir.path("held.txt")).len(),
        1,
        "the held tool did not run again"
    );
    let last = after.last().expect("the parent's last turn");
    let told = last_user(last);
    assert!(
        told.contains("quick done") && told.contains("slow done"),
        "{told}"
    );
}
