//! Command tools that misbehave, and a model that calls them in hostile ways. Each case runs a real
//! `lllm` against a local server that asks for one round of tool calls and then answers; the case
//! checks what the model was told, that the run ended cleanly within bounds, and that nothing the
//! tool started is still running.

use std::path::Path;
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};

use super::support::{arg, lllm, tool_messages, TempDir};

/// A tactic with one command tool `t` running `command` (YAML flow sequence) with these limits.
fn tactic(server: &str, command: &str, timeout_s: f64, max_output_bytes: u64) -> String {
    format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{server}\"}}\n    system_prompt: s\n    max_tool_rounds: 1\n    tools:\n      - name: t\n        description: d\n        parameters: {{type: object, properties: {{text: {{type: string}}}}}}\n        command: {command}\n        timeout_s: {timeout_s}\n        max_output_bytes: {max_output_bytes}\n"
    )
}

/// Runs the tactic with the server asking for `calls`, and returns what the tools answered.
async fn tool_round(
    dir: &TempDir,
    command: &str,
    timeout_s: f64,
    max_output_bytes: u64,
    calls: &[(&str, &str, &str)],
) -> Vec<String> {
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::tool_calls(calls));
    server.push(StubReply::text("done"));
    let file = dir.write(
        "t.yaml",
        tactic(&server.base_url(), command, timeout_s, max_output_bytes),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"])
        .cwd(&dir.0)
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    assert_eq!(outcome.stdout_text(), "done\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one tool round, then the answer");
    tool_messages(&requests[1])
}

async fn one_call(dir: &TempDir, command: &str, timeout_s: f64, max_output_bytes: u64) -> String {
    let mut answers = tool_round(
        dir,
        command,
        timeout_s,
        max_output_bytes,
        &[("c1", "t", r#"{"text": "hi"}"#)],
    )
    .await;
    assert_eq!(answers.len(), 1);
    answers.remove(0)
}

/// Whether a process with this id still runs (zombies count as ended), after a moment to be reaped.
fn still_running(pid: i32) -> bool {
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) && running() {
        std::thread::sleep(Duration::from_millis(20));
    }
    running()
}

fn pids_in(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_in_a_new_session_holding_stdout_does_not_hold_the_call() {
    let dir = TempDir::new("tool-setsid");
    let answer = one_call(
        &dir,
        r#"[sh, -c, "setsid sleep 300 & echo $! > pids; echo finished"]"#,
        20.0,
        1000,
    )
    .await;
    assert_eq!(answer, "finished");
    let pids = pids_in(&dir.path("pids"));
    assert_eq!(pids.len(), 1);
    assert!(!still_running(pids[0]), "the setsid child survived");
}

#[tokio::test(flavor = "multi_thread")]
async fn many_background_children_are_all_killed_with_the_call() {
    let dir = TempDir::new("tool-children");
    let answer = one_call(
        &dir,
        r#"[sh, -c, "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 300 & echo $! >> pids; setsid sleep 300 & echo $! >> pids; done; echo started"]"#,
        20.0,
        1000,
    )
    .await;
    assert_eq!(answer, "started");
    let pids = pids_in(&dir.path("pids"));
    assert_eq!(pids.len(), 20);
    let left: Vec<i32> = pids.into_iter().filter(|p| still_running(*p)).collect();
    assert!(left.is_empty(), "survivors: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_on_stderr_neither_blocks_nor_floods_the_model() {
    let dir = TempDir::new("tool-stderr");
    let ok = one_call(
        &dir,
        r#"[sh, -c, "head -c 1000000 /dev/zero | tr '\\0' e >&2; echo fine"]"#,
        20.0,
        1000,
    )
    .await;
    assert_eq!(ok, "fine");
    let failed = one_call(
        &dir,
        r#"[sh, -c, "head -c 1000000 /dev/zero | tr '\\0' e >&2; exit 4"]"#,
        20.0,
        1000,
    )
    .await;
    assert!(
        failed.starts_with("error: `sh` exited with status 4: eee"),
        "{failed}"
    );
    assert!(failed.len() < 1200, "only the tail: {} bytes", failed.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_output_is_cut_at_the_limit_and_the_program_stopped() {
    let dir = TempDir::new("tool-yes");
    let answer = one_call(&dir, "[yes]", 20.0, 4096).await;
    assert_eq!(
        answer,
        "error: the output is longer than the 4096-byte limit"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_closes_its_output_and_hangs_times_out() {
    let dir = TempDir::new("tool-hang");
    let answer = one_call(
        &dir,
        r#"[sh, -c, "exec >&- 2>&-; echo $$ > pids; sleep 300"]"#,
        1.0,
        1000,
    )
    .await;
    assert_eq!(answer, "error: `sh` did not finish within 1 s");
    let pids = pids_in(&dir.path("pids"));
    assert!(!still_running(pids[0]), "the timed-out program survived");
}

#[tokio::test(flavor = "multi_thread")]
async fn binary_output_and_death_by_signal_are_reported_not_fatal() {
    let dir = TempDir::new("tool-binary");
    let binary = one_call(&dir, r#"[sh, -c, "printf 'a\\377\\376b'"]"#, 20.0, 1000).await;
    assert_eq!(binary, "a\u{fffd}\u{fffd}b");
    let killed = one_call(&dir, r#"[sh, -c, "kill -9 $$"]"#, 20.0, 1000).await;
    assert_eq!(killed, "error: `sh` exited with a signal");
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_arguments_are_data_never_code() {
    let dir = TempDir::new("tool-args");
    // Template syntax and shell syntax in a value reach argv as written.
    let answers = tool_round(
        &dir,
        r#"[echo, "{{ text }}"]"#,
        20.0,
        100_000,
        &[
            ("c1", "t", r#"{"text": "{{ 7 * 7 }} $(id) `id`; rm -rf /"}"#),
            ("c2", "t", r#"{"text": "#),
            ("c3", "t", r#"{"text": 5}"#),
            (
                "c4",
                "t",
                &format!(r#"{{"text": "{}"}}"#, "x".repeat(300_000)),
            ),
        ],
    )
    .await;
    assert_eq!(answers[0], "{{ 7 * 7 }} $(id) `id`; rm -rf /");
    assert!(
        answers[1].starts_with("error: the arguments are not valid JSON"),
        "{}",
        answers[1]
    );
    assert!(
        answers[2].starts_with("error: the arguments do not match"),
        "{}",
        answers[2]
    );
    // 300 KB in one argv item is more than Linux allows (128 KiB): the model is told what to do.
    assert!(
        answers[3].contains("pass long values on standard input"),
        "{}",
        answers[3]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_calls_runs_a_bounded_number() {
    let dir = TempDir::new("tool-flood");
    let ids: Vec<String> = (0..200).map(|i| format!("c{i}")).collect();
    let args: Vec<String> = (0..200).map(|i| format!(r#"{{"text": "{i}"}}"#)).collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(&args)
        .map(|(id, args)| (id.as_str(), "t", args.as_str()))
        .collect();
    let answers = tool_round(&dir, r#"[echo, "{{ text }}"]"#, 20.0, 1000, &calls).await;
    assert_eq!(answers.len(), 200, "every call gets an answer");
    assert_eq!(answers[0], "0");
    assert_eq!(answers[63], "63");
    assert!(
        answers[64..]
            .iter()
            .all(|a| a.contains("at most 64 tool calls run per turn")),
        "{}",
        answers[64]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invented_tool_name_is_answered_briefly() {
    let dir = TempDir::new("tool-name");
    let name = "n".repeat(100_000);
    let answers = tool_round(&dir, "[true]", 20.0, 1000, &[("c1", &name, "{}")]).await;
    assert!(
        answers[0].starts_with("error: there is no tool `nnnn"),
        "{}",
        &answers[0][..80]
    );
    assert!(answers[0].len() < 200, "{} bytes", answers[0].len());
}

/// A tool's program sees nothing of lllm's environment but the listed variables.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_never_sees_the_api_key() {
    let dir = TempDir::new("tool-env");
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::tool_calls(&[("c1", "t", "{}")]));
    server.push(StubReply::text("done"));
    let file = dir.write(
        "t.yaml",
        tactic(&server.base_url(), "[env]", 20.0, 100_000)
            .replace("model_args: {", "model_args: {api_key: \"${SECRET_KEY}\", "),
    );
    lllm(&["run", arg(&file), "--input", "go"])
        .env("SECRET_KEY", "sk-adversarial-0123456789")
        .env("OPENAI_API_KEY", "sk-adversarial-0123456789")
        .run()
        .await
        .assert_clean(0, &[])
        .assert_never_shows("sk-adversarial-0123456789");
    let environment = tool_messages(&server.requests()[1]).remove(0);
    assert!(environment.contains("PATH="), "{environment}");
    assert!(!environment.contains("sk-adversarial"), "{environment}");
}
