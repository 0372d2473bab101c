//! Signals sent to a running `lllm`: it stops promptly with 128 + the signal's number, says so, keeps
//! what its trace holds, and leaves no process of its tools behind, whatever they did to escape.

use std::path::Path;
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};
use nix::sys::signal::Signal;

use super::support::{arg, lllm, TempDir};

/// A tool that starts a child of every kind (same group; a new session; a new session with a cleared
/// environment, which no marker can find) and records their ids before it waits for ever.
const ESCAPING_TOOL: &str = r#"#!/bin/sh
sleep 300 &
echo $! >> "$1"
setsid sleep 300 &
echo $! >> "$1"
env -i setsid sleep 300 &
echo $! >> "$1"
echo $$ >> "$1"
echo ready >> "$1"
wait
"#;

fn tactic(server: &str, dir: &Path) -> String {
    format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{server}\"}}\n    system_prompt: s\n    tools:\n      - name: hang\n        description: d\n        command: [sh, \"{tool}\", \"{pids}\"]\n        timeout_s: 300\n",
        tool = dir.join("tool.sh").display(),
        pids = dir.join("pids").display(),
    )
}

/// Waits until the tool has written `ready`, and returns the ids it wrote.
fn wait_for_tool(pids: &Path) -> Vec<i32> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        let text = std::fs::read_to_string(pids).unwrap_or_default();
        if text.lines().any(|l| l == "ready") {
            return text.lines().filter_map(|l| l.parse().ok()).collect();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the tool never started");
}

/// Whether a process runs (not a zombie).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// The processes of `pids` still running a moment after lllm exited, as `ps` lists them (from
/// `/proc` when `ps` is not installed).
fn survivors(pids: &[i32]) -> Vec<i32> {
    // Killed processes are reaped by their new parent; give that a moment.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) && pids.iter().any(|p| running(*p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let list: Vec<String> = pids.iter().map(i32::to_string).collect();
    let listed = std::process::Command::new("ps")
        .args(["-o", "pid=,stat=", "-p", &list.join(",")])
        .output();
    match listed {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.split_whitespace().nth(1).unwrap_or("Z").starts_with('Z'))
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect(),
        Err(_) => pids.iter().copied().filter(|p| running(*p)).collect(),
    }
}

async fn interrupt_a_running_tool(signal: Signal, code: i32, name: &str) {
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::tool_calls(&[("c1", "hang", "{}")]));
    let dir = TempDir::new("signal");
    dir.write("tool.sh", ESCAPING_TOOL);
    let file = dir.write("t.yaml", tactic(&server.base_url(), &dir.0));
    let trace = dir.path("trace.jsonl");
    let running_lllm = lllm(&["run", arg(&file), "--input", "go", "--trace", arg(&trace)]).spawn();
    let pids_file = dir.path("pids");
    let pids = tokio::task::spawn_blocking(move || wait_for_tool(&pids_file))
        .await
        .expect("waiter");
    assert_eq!(pids.len(), 4, "{pids:?}");
    running_lllm.signal(signal);
    let outcome = tokio::task::spawn_blocking(move || running_lllm.wait())
        .await
        .expect("waiter");
    outcome.assert_clean(code, &[&format!("stopped by {name}")]);
    let left = tokio::task::spawn_blocking(move || survivors(&pids))
        .await
        .expect("ps");
    assert!(left.is_empty(), "processes left after {name}: {left:?}");
    let rows = std::fs::read_to_string(&trace).expect("the trace was written");
    assert!(
        rows.lines().count() >= 2,
        "the answered request is in the trace: {rows}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_tool_call_exits_130_and_leaves_no_process() {
    interrupt_a_running_tool(Signal::SIGINT, 130, "SIGINT").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_during_a_tool_call_exits_143_and_leaves_no_process() {
    interrupt_a_running_tool(Signal::SIGTERM, 143, "SIGTERM").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_during_a_tool_call_exits_129_and_leaves_no_process() {
    interrupt_a_running_tool(Signal::SIGHUP, 129, "SIGHUP").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_while_waiting_for_the_server_exits_130_at_once() {
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::text("late").delay(Duration::from_secs(120)));
    let dir = TempDir::new("signal-http");
    let file = dir.write(
        "t.yaml",
        format!(
            "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{}\", timeout: 300}}\n    system_prompt: s\n",
            server.base_url()
        ),
    );
    let running_lllm = lllm(&["run", arg(&file), "--input", "go"]).spawn();
    // Signalled once the request has arrived, so that the signal lands mid-request.
    let started = Instant::now();
    while server.requests().is_empty() && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.requests().len(), 1);
    running_lllm.signal(Signal::SIGINT);
    let outcome = tokio::task::spawn_blocking(move || running_lllm.wait())
        .await
        .expect("waiter");
    outcome.assert_clean(130, &["stopped by SIGINT"]);
    assert!(outcome.stdout.is_empty(), "no answer was printed");
}
