//! `/v1/runs` under requests that arrive at the same instant: each request is sent but for its last
//! byte, then the last bytes all at once, so the server's handlers go on together (no clock decides
//! the outcome). What is counted is the effect: the runs made and the tool's lines.

use futures::FutureExt as _;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::{get, post, serve_with, wait_status};
use crate::support::TempDir;

/// A raw `POST` of `body` with `headers`, closed after the answer.
fn raw_post(path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Sends every request but its last byte, waits until all are sent so, then sends the last bytes
/// together: no handler can go past reading its body before then. The answers, in order: status
/// and JSON body.
async fn released_together(base: &str, requests: &[String]) -> Vec<(u16, Value)> {
    let address = base.trim_start_matches("http://");
    let barrier = Arc::new(tokio::sync::Barrier::new(requests.len()));
    let tasks: Vec<_> = requests
        .iter()
        .map(|request| {
            let (address, barrier) = (address.to_owned(), barrier.clone());
            let bytes = request.clone().into_bytes();
            tokio::spawn(async move {
                let mut stream = tokio::net::TcpStream::connect(&address)
                    .await
                    .expect("connect");
                let (head, last) = bytes.split_at(bytes.len() - 1);
                stream.write_all(head).await.expect("write");
                barrier.wait().await;
                stream.write_all(last).await.expect("write the last byte");
                let mut answer = Vec::new();
                stream.read_to_end(&mut answer).await.expect("read");
                answer_of(&String::from_utf8_lossy(&answer))
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("joined"));
    }
    answers
}

/// The status and JSON body of a raw HTTP/1.1 answer.
fn answer_of(text: &str) -> (u16, Value) {
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {text}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, body)
}

/// A tactic whose `act` tool appends its line to `effects.txt`; one tool round per respond, so a
/// run runs it at most once however often the model asks.
fn once_tool_tactic(dir: &TempDir, server: &StubServer) -> std::path::PathBuf {
    let effects = dir.0.join("effects.txt");
    dir.write(
        "once.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    max_tool_rounds: 1
    tools:
      - name: act
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" >> "$2"', sh, "{{{{ line }}}}", "{effects}"]
"#,
            api = server.base_url(),
            effects = effects.display()
        ),
    )
}

/// The tool's lines so far.
fn effects(dir: &TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.0.join("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until no run of the server is queued, running or waiting, and returns the list.
async fn all_ended(base: &str) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let list = get(&format!("{base}/v1/runs?limit=1000"), &[]).await.json();
        let runs = list["data"].as_array().cloned().unwrap_or_default();
        let ended = |run: &Value| {
            matches!(
                run["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            )
        };
        if runs.iter().all(ended) {
            return runs;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "runs never ended: {list}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_idempotency_key_sent_many_times_at_once_starts_one_run_that_runs_its_tool_once() {
    const ROUNDS: usize = 4;
    const AT_ONCE: usize = 24;
    let dir = TempDir::new("keyed-race");
    let state = dir.0.join("state");
    let stub = StubServer::start().await.expect("stub");
    // Every request of every run asks for the tool: each run made runs it once.
    stub.answer_unscripted(
        Duration::ZERO,
        Some(StubReply::tool_calls(&[(
            "c1",
            "act",
            r#"{"line": "ran"}"#,
        )])),
    );
    let tactic = once_tool_tactic(&dir, &stub);
    let running = serve_with(&[("worker", &tactic)], |b| b.state_dir(&state)).await;
    let body = json!({"model": "worker", "input": "act"}).to_string();
    let mut named = Vec::new();
    for round in 0..ROUNDS {
        let key = format!("key-{round}");
        let requests = vec![raw_post("/v1/runs", &[("idempotency-key", &key)], &body); AT_ONCE];
        let answers = released_together(&running.base, &requests).await;
        let ids: HashSet<String> = answers
            .iter()
            .map(|(status, answer)| {
                assert_eq!(*status, 200, "{answer}");
                answer["id"].as_str().expect("a run id").to_owned()
            })
            .collect();
        named.push(ids);
    }
    let runs = all_ended(&running.base).await;
    assert_eq!(
        effects(&dir),
        vec!["ran"; ROUNDS],
        "the tool ran once per key; the answers named {named:?}"
    );
    assert!(named.iter().all(|ids| ids.len() == 1), "{named:?}");
    assert_eq!(runs.len(), ROUNDS, "one run per key: {runs:?}");
    let records = std::fs::read_dir(state.join("runs"))
        .expect("runs")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(records, ROUNDS);
    // Sent again afterwards, the key still names its run.
    let again = post(
        &format!("{}/v1/runs", running.base),
        &[("idempotency-key", "key-0")],
        &body,
    )
    .await;
    assert!(
        runs.iter().any(|r| r["id"] == again.json()["id"]),
        "{}",
        again.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[allow(clippy::print_stderr)] // How the races went, for a reader of --nocapture.
async fn approvals_and_a_cancel_sent_at_once_have_one_winner_and_the_run_ends_as_answered() {
    const RACES: usize = 32;
    let dir = TempDir::new("decision-race");
    let state = dir.0.join("state");
    let stub = StubServer::start().await.expect("stub");
    let tactic = super::tool_tactic(&dir, &stub);
    let running = serve_with(&[("worker", &tactic)], |b| b.state_dir(&state)).await;
    let mut ids = Vec::new();
    for race in 0..RACES {
        let line = format!("race-{race}");
        let arguments = json!({ "line": line }).to_string();
        stub.push(StubReply::tool_calls(&[("c1", "act", &arguments)]).for_message(&line));
        let created = post(
            &format!("{}/v1/runs", running.base),
            &[],
            &json!({"model": "worker", "input": line}).to_string(),
        )
        .await;
        ids.push(created.json()["id"].as_str().expect("id").to_owned());
    }
    for id in &ids {
        wait_status(&running.base, id, "requires_action").await;
    }
    // For each waiting run: two approvals (a client that retried) and a cancel, all at once.
    let approval = r#"{"decision": "approve"}"#;
    let requests: Vec<String> = ids
        .iter()
        .flat_map(|id| {
            [
                raw_post(&format!("/v1/runs/{id}/approval"), &[], approval),
                raw_post(&format!("/v1/runs/{id}/approval"), &[], approval),
                raw_post(&format!("/v1/runs/{id}/cancel"), &[], ""),
            ]
        })
        .collect();
    let answers = released_together(&running.base, &requests).await;
    all_ended(&running.base).await;
    let lines = effects(&dir);
    let mut tally = std::collections::BTreeMap::new();
    for (race, id) in ids.iter().enumerate() {
        let answers = &answers[3 * race..3 * race + 3];
        let run = get(&format!("{}/v1/runs/{id}", running.base), &[])
            .await
            .json();
        let ran = lines
            .iter()
            .filter(|l| **l == format!("race-{race}"))
            .count();
        let seen = format!("race {race}: answers {answers:?}, run {run}, tool ran {ran}");
        let outcome = decided(answers, &run, ran).unwrap_or_else(|why| panic!("{why}: {seen}"));
        *tally.entry(outcome).or_insert(0) += 1;
    }
    eprintln!("over {RACES} races: {tally:?}");
}

/// Checks that the answers to two approvals and a cancel of one waiting run agree with each other
/// and with how the run ended (`ran`: the tool's lines); names the way it went.
fn decided(answers: &[(u16, Value)], run: &Value, ran: usize) -> Result<&'static str, String> {
    let [(first, _), (second, _), (cancelled, cancel)] = answers else {
        return Err("three answers".into());
    };
    let ended = run["status"].as_str().unwrap_or("");
    let outcome = match (first.min(second), first.max(second), cancelled) {
        // The cancel decided first: both approvals were refused, and nothing ran.
        (409, 409, 200) if ended == "cancelled" && ran == 0 => "cancelled before approval",
        // An approval decided first, the run completed, and the cancel lost and says so.
        (200, 409, 409)
            if ended == "completed" && ran == 1 && cancel["run"]["status"] == "completed" =>
        {
            "approved, then completed"
        }
        // An approval decided first; the cancel then stopped the continued run, for real.
        (200, 409, 200) if ended == "cancelled" && cancel["status"] == "cancelled" && ran <= 1 => {
            "approved, then cancelled"
        }
        _ => return Err("the answers disagree with each other or with the run".into()),
    };
    let mut refused = answers.iter().filter(|(code, _)| *code == 409);
    if !refused.all(|(_, body)| body["run"]["status"].is_string()) {
        return Err("a refused decision does not show the run".into());
    }
    Ok(outcome)
}

/// A tactic with `act` (needs a confirmation; appends its line to `effects.txt`) and `hold` (runs
/// without one, and ends once the file `gate` exists).
fn gated_tactic(dir: &TempDir, server: &StubServer) -> std::path::PathBuf {
    let (effects, gate, pid) = (
        dir.0.join("effects.txt"),
        dir.0.join("gate"),
        dir.0.join("pid.txt"),
    );
    dir.write(
        "gated.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    tools:
      - name: act
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" >> "$2"', sh, "{{{{ line }}}}", "{effects}"]
        confirm: true
      - name: hold
        description: Waits for the gate
        parameters: {{type: object, properties: {{}}}}
        command: [sh, -c, 'echo $$ > "$2"; while [ ! -e "$1" ]; do sleep 0.02; done; echo open', sh, "{gate}", "{pid}"]
"#,
            api = server.base_url(),
            effects = effects.display(),
            gate = gate.display(),
            pid = pid.display(),
        ),
    )
}

/// Sends `request` whole on a new connection and returns the connection, to read the answer from.
async fn sent(base: &str, request: &str) -> tokio::net::TcpStream {
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    stream
}

async fn answer(mut stream: tokio::net::TcpStream) -> (u16, Value) {
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    answer_of(&String::from_utf8_lossy(&answer))
}

/// The approval of a waiting run holds its decision while it waits for its conversation's turn:
/// a cancel sent then is decided after it, and says what became of the run. The turn is held by a
/// chat of the same conversation whose tool waits for a file, so the order is the test's to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_sent_while_an_approval_waits_for_its_turn_is_decided_after_it() {
    let dir = TempDir::new("decision-turn");
    let state = dir.0.join("state");
    let stub = StubServer::start().await.expect("stub");
    let tactic = gated_tactic(&dir, &stub);
    let running = serve_with(&[("worker", &tactic)], |b| b.state_dir(&state).max_runs(2)).await;
    stub.push(StubReply::tool_calls(&[("c1", "act", r#"{"line": "acted"}"#)]).for_message("race"));
    stub.push(StubReply::tool_calls(&[("h1", "hold", "{}")]).for_message("hold"));
    let conversation = [("x-session-id", "conv")];
    let created = post(
        &format!("{}/v1/runs", running.base),
        &conversation,
        &json!({"model": "worker", "input": "race"}).to_string(),
    )
    .await;
    let id = created.json()["id"].as_str().expect("id").to_owned();
    wait_status(&running.base, &id, "requires_action").await;
    // The conversation's turn, and one of the two slots, held until the gate opens.
    let chat = json!({"model": "worker", "messages": [{"role": "user", "content": "hold"}]});
    let holder = sent(
        &running.base,
        &raw_post("/v1/chat/completions", &conversation, &chat.to_string()),
    )
    .await;
    crate::support::started_pid(&dir.0.join("pid.txt")).await;
    let approve = raw_post(
        &format!("/v1/runs/{id}/approval"),
        &[],
        r#"{"decision": "approve"}"#,
    );
    let mut approval = sent(&running.base, &approve).await;
    // The approval holds the other slot once it waits for the turn: then another run is refused.
    // A probe that held that slot for its moment as the approval came made the approval a 429:
    // then it is sent again (on a loaded machine this happens; the order under test does not
    // depend on it).
    let probe = json!({"model": "worker", "messages": [{"role": "user", "content": "probe"}]});
    loop {
        let reply = post(
            &format!("{}/v1/chat/completions", running.base),
            &[],
            &probe.to_string(),
        )
        .await;
        if reply.status == 429 {
            break;
        }
        assert_eq!(reply.status, 200, "{}", reply.text);
        let mut peek = [0u8; 1];
        if matches!(approval.peek(&mut peek).now_or_never(), Some(Ok(n)) if n > 0) {
            let (status, body) = answer(approval).await;
            assert_eq!(status, 429, "the approval answered before its turn: {body}");
            approval = sent(&running.base, &approve).await;
        }
    }
    let cancel = sent(
        &running.base,
        &raw_post(&format!("/v1/runs/{id}/cancel"), &[], ""),
    )
    .await;
    std::fs::write(dir.0.join("gate"), "").expect("gate");
    let (approved, approval) = answer(approval).await;
    let (cancelled, cancel) = answer(cancel).await;
    assert_eq!(answer(holder).await.0, 200);
    let run = wait_ended(&running.base, &id).await;
    let ran = effects(&dir).len();
    let seen = format!(
        "approval {approved} {approval}, cancel {cancelled} {cancel}, run {run}, tool ran {ran}"
    );
    assert_eq!(approved, 200, "the approval decided first: {seen}");
    match cancelled {
        200 => assert_eq!(
            (cancel["status"].as_str(), run["status"].as_str()),
            (Some("cancelled"), Some("cancelled")),
            "{seen}"
        ),
        409 => {
            assert_eq!(
                (run["status"].as_str(), ran),
                (Some("completed"), 1),
                "{seen}"
            );
            assert_eq!(cancel["run"]["status"], "completed", "{seen}");
        }
        _ => panic!("{seen}"),
    }
}

/// Waits until run `id` ended, and returns it.
async fn wait_ended(base: &str, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let run = get(&format!("{base}/v1/runs/{id}"), &[]).await.json();
        if matches!(
            run["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            return run;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never ended: {run}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}
