//! `lllm batch` end to end against the local stub: bounded concurrency, every item answered once,
//! re-runs that send nothing, failures recorded without stopping the others, and a re-run after
//! SIGKILL that finishes only what was missing.

use std::collections::HashMap;
use std::time::Duration;

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::Value;

use crate::support::{arg, lllm, TempDir};

fn chat(api_base: &str) -> String {
    format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: You answer.\n    max_call_retries: 0\n    model_args: {{api_base: \"{api_base}\", timeout: 30}}\n    inference_hints: {{profile: openai, session_prefix: \"batch-{{item_id}}\"}}\n"
    )
}

fn inputs(dir: &TempDir, n: usize) -> std::path::PathBuf {
    let lines: Vec<String> = (0..n)
        .map(|i| serde_json::json!({"id": i, "input": format!("question {i}")}).to_string())
        .collect();
    dir.write("inputs.jsonl", lines.join("\n") + "\n")
}

/// The output's lines by id: (answers, errors).
fn results(path: &std::path::Path) -> (HashMap<String, Vec<Value>>, HashMap<String, Vec<Value>>) {
    let mut answers: HashMap<String, Vec<Value>> = HashMap::new();
    let mut errors: HashMap<String, Vec<Value>> = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let id = value["id"].to_string();
        if value.get("output").is_some() {
            answers.entry(id).or_default().push(value);
        } else {
            errors.entry(id).or_default().push(value);
        }
    }
    (answers, errors)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_items_at_32_at_a_time_each_answered_once_and_a_rerun_sends_nothing() {
    let server = StubServer::start().await.expect("stub");
    // Each answer takes a few milliseconds, so that items overlap.
    for _ in 0..1000 {
        server.push(StubReply::text("ok").delay(Duration::from_millis(5)));
    }
    let dir = TempDir::new("batch-1000");
    let file = dir.write("t.yaml", chat(&server.base_url()));
    let input = inputs(&dir, 1000);
    let output = dir.path("out.jsonl");
    let args = [
        "batch",
        arg(&file),
        "--inputs",
        arg(&input),
        "--output",
        arg(&output),
        "--concurrency",
        "32",
    ];
    let outcome = lllm(&args).time_limit(Duration::from_secs(120)).run().await;
    outcome.assert_clean(
        0,
        &[
            "1000 item(s) run, 1000 answered, 0 failed, 0 skipped",
            "latency p50",
        ],
    );
    let (answers, errors) = results(&output);
    assert_eq!(answers.len(), 1000);
    assert!(errors.is_empty());
    for (id, lines) in &answers {
        assert_eq!(lines.len(), 1, "{id} answered once");
        assert_eq!(lines[0]["output"], "ok", "{id}");
        assert!(lines[0]["usage"]["total_tokens"].is_number());
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 1000);
    assert!(server.most_in_flight() <= 32, "{}", server.most_in_flight());
    assert!(server.most_in_flight() > 1, "items ran concurrently");
    let seven = requests
        .iter()
        .find(|r| r.body["messages"][1]["content"] == "question 7")
        .expect("item 7");
    assert!(
        seven
            .header("x-session-id")
            .is_some_and(|s| s.starts_with("batch-7:")),
        "{:?}",
        seven.header("x-session-id")
    );
    let again = lllm(&args).run().await;
    again.assert_clean(0, &["0 item(s) run", "1000 skipped"]);
    assert_eq!(server.requests().len(), 1000, "the re-run sent nothing");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&output)
            .expect("output")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the output is its owner's only: {mode:o}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_torn_output_line_is_ended_before_the_next_result() {
    let server = StubServer::start().await.expect("stub");
    let dir = TempDir::new("batch-torn");
    let file = dir.write("t.yaml", chat(&server.base_url()));
    let input = inputs(&dir, 3);
    let output = dir.write(
        "out.jsonl",
        "{\"id\": 0, \"output\": \"stub answer to: question 0\"}\n{\"id\": 1, \"outp",
    );
    let outcome = lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&input),
        "--output",
        arg(&output),
    ])
    .run()
    .await;
    outcome.assert_clean(0, &["2 item(s) run, 2 answered, 0 failed, 1 skipped"]);
    let (answers, _) = results(&output);
    assert_eq!(answers.len(), 3, "the torn line lost nothing but itself");
}

#[tokio::test(flavor = "multi_thread")]
async fn failing_items_are_recorded_and_retried_without_stopping_the_others() {
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::error(500, "the model is down").for_message("topic 5"));
    let dir = TempDir::new("batch-fail");
    let file = dir.write(
        "t.yaml",
        format!(
            "{}steps:\n  - {{agent: a, receive: \"topic {{{{ topic }}}} {{{{ input }}}}\", save: answer}}\noutput: \"{{{{ answer }}}}\"\n",
            chat(&server.base_url())
        ),
    );
    let lines: Vec<String> = (0..10)
        .map(|i| {
            if i == 3 {
                serde_json::json!({"input": "x"}).to_string()
            } else {
                serde_json::json!({"input": "x", "vars": {"topic": i.to_string()}}).to_string()
            }
        })
        .collect();
    let input = dir.write("inputs.jsonl", lines.join("\n"));
    let output = dir.path("out.jsonl");
    let args = [
        "batch",
        arg(&file),
        "--inputs",
        arg(&input),
        "--output",
        arg(&output),
    ];
    let outcome = lllm(&args).run().await;
    outcome.assert_clean(
        1,
        &[
            "10 item(s) run, 8 answered, 2 failed",
            "2 of 10 item(s) failed",
        ],
    );
    let (answers, errors) = results(&output);
    assert_eq!(answers.len(), 8);
    // Ids are the line numbers.
    let missing = errors["4"][0]["error"].as_str().unwrap_or_default();
    assert!(missing.contains("topic"), "preflight: {missing}");
    let down = errors["6"][0]["error"].as_str().unwrap_or_default();
    assert!(down.contains("500"), "server: {down}");
    assert_eq!(
        server.requests().len(),
        9,
        "item 4 never reached the server"
    );
    // Again: the failed items are tried again (the server is fine now), the others skipped.
    let again = lllm(&args).run().await;
    again.assert_clean(1, &["2 item(s) run, 1 answered, 1 failed, 8 skipped"]);
    assert_eq!(server.requests().len(), 10);
    let (answers, _) = results(&output);
    assert_eq!(answers.len(), 9);
    // Bad input lines are usage errors naming the line.
    let bad = dir.write("bad.jsonl", "{\"input\": \"a\"}\n{\"input\": 3}\n");
    lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&bad),
        "--output",
        arg(&output),
    ])
    .run()
    .await
    .assert_clean(2, &["bad.jsonl:2: `input` must be a string"]);
    let twice = dir.write("twice.jsonl", "{\"id\": \"a\"}\n{\"id\": \"a\"}\n");
    lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&twice),
        "--output",
        arg(&output),
    ])
    .run()
    .await
    .assert_clean(2, &["the id `a` is used twice"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rerun_after_sigkill_finishes_only_what_was_missing() {
    let server = StubServer::start().await.expect("stub");
    for i in 0..120 {
        server.push(
            StubReply::text(&format!("answer {i}"))
                .for_message(&format!("question {i}"))
                .delay(Duration::from_millis(40)),
        );
    }
    let dir = TempDir::new("batch-kill");
    let file = dir.write("t.yaml", chat(&server.base_url()));
    let input = inputs(&dir, 120);
    let output = dir.path("out.jsonl");
    let args = [
        "batch",
        arg(&file),
        "--inputs",
        arg(&input),
        "--output",
        arg(&output),
        "--concurrency",
        "4",
    ];
    let running = lllm(&args).spawn();
    std::thread::sleep(Duration::from_millis(500));
    running.signal(nix::sys::signal::Signal::SIGKILL);
    let killed = tokio::task::spawn_blocking(move || running.wait())
        .await
        .expect("wait");
    assert_eq!(killed.signal, Some(9));
    let (before, _) = results(&output);
    assert!(
        !before.is_empty() && before.len() < 120,
        "killed mid-batch: {}",
        before.len()
    );
    let sent_before = server.requests().len();
    let finish = lllm(&args).run().await;
    finish.assert_clean(0, &[]);
    let (answers, errors) = results(&output);
    assert!(errors.is_empty());
    assert_eq!(answers.len(), 120);
    assert!(
        answers.values().all(|lines| lines.len() == 1),
        "no item answered twice"
    );
    let sent_after = server.requests().len() - sent_before;
    assert!(
        sent_after <= 120 - before.len() + 4,
        "only the missing items were sent: {sent_after} for {} missing",
        120 - before.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_items_under_priority_auto_rank_below_interactive_runs_unless_told_otherwise() {
    let server = StubServer::start().await.expect("stub");
    let dir = TempDir::new("batch-priority");
    let tactic = format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: You answer.\n    model_args: {{api_base: \"{}\", max_tokens: 8}}\n    inference_hints: {{profile: dynamo, priority: auto}}\n",
        server.base_url()
    );
    let file = dir.write("t.yaml", tactic);
    let input = inputs(&dir, 2);
    for (class, tier) in [(None, None), (Some("interactive"), Some(1))] {
        server.clear_requests();
        let output = dir.path(&format!("out-{}.jsonl", class.unwrap_or("default")));
        let mut args = vec![
            "batch",
            arg(&file),
            "--inputs",
            arg(&input),
            "--output",
            arg(&output),
        ];
        if let Some(class) = class {
            args.extend(["--priority-class", class]);
        }
        let outcome = lllm(&args).time_limit(Duration::from_secs(60)).run().await;
        outcome.assert_clean(0, &["2 item(s) run, 2 answered"]);
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        for request in requests {
            let hints = &request.body["nvext"]["agent_hints"];
            assert_eq!(hints["priority"], 1, "a lone turn: {hints}");
            assert_eq!(
                hints.get("strict_priority").and_then(Value::as_u64),
                tier,
                "{class:?}: {hints}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn three_shards_of_one_file_are_disjoint_and_together_the_whole_batch() {
    let server = StubServer::start().await.expect("stub");
    let dir = TempDir::new("batch-shards");
    let file = dir.write("t.yaml", chat(&server.base_url()));
    let input = inputs(&dir, 60);
    let mut seen: HashMap<String, String> = HashMap::new();
    for k in 1..=3 {
        let output = dir.path(&format!("out-{k}.jsonl"));
        let shard = format!("{k}/3");
        let args = [
            "batch",
            arg(&file),
            "--inputs",
            arg(&input),
            "--output",
            arg(&output),
            "--shard",
            shard.as_str(),
        ];
        lllm(&args)
            .run()
            .await
            .assert_clean(0, &["answered, 0 failed"]);
        let (answers, errors) = results(&output);
        assert!(errors.is_empty());
        assert!(!answers.is_empty(), "shard {k} has items");
        for id in answers.keys() {
            assert!(
                seen.insert(id.clone(), shard.clone()).is_none(),
                "{id} is in two shards"
            );
        }
    }
    assert_eq!(seen.len(), 60, "every item in one shard");
    assert_eq!(server.requests().len(), 60);
    // A shard written wrongly is a usage error that says how to write it.
    let output = dir.path("out-bad.jsonl");
    lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&input),
        "--output",
        arg(&output),
        "--shard",
        "4/3",
    ])
    .run()
    .await
    .assert_clean(2, &["write K/N"]);
}
