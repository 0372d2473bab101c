//! Conversations `lllm serve` keeps, against hostile callers and a hostile state directory: a flood
//! of one-turn conversations stays within the stated bound (in memory and on disk), a forged
//! history, conversation id, response id or item reference of another key reaches none of its
//! dialogs, and planted files under `conversations/` are skipped, never followed or trusted.

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use crate::serve::{chat_tactic, http, post_request};
use crate::support::{arg, Serving, TempDir};

/// A request with an `Authorization` header, closed after the answer.
fn keyed(path: &str, key: &str, body: &Value) -> String {
    post_request(path, &body.to_string()).replacen(
        "Host: 127.0.0.1\r\n",
        &format!("Host: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"),
        1,
    )
}

fn body_of(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    answer.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_one_turn_conversations_stays_within_the_bound_in_memory_and_on_disk() {
    let dir = TempDir::new("conversations-flood");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    let state = dir.0.join("state");
    // The default bound, as a user runs it: 10,000 conversations of one turn each.
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    let bound = lllm_runtime::serve::DEFAULT_KEPT_CONVERSATIONS;
    for n in 0..10_000 {
        stub.push(StubReply::text(&format!("answer {n}")));
        let body = json!({"model": "helper", "messages": [{"role": "user", "content": format!("question {n}")}]});
        let (status, answer) = http(
            serving.address(),
            &post_request("/v1/chat/completions", &body.to_string()),
        );
        assert_eq!(status, 200, "{answer}");
    }
    let files = std::fs::read_dir(state.join("conversations"))
        .expect("the conversations folder")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json"))
        })
        .count();
    assert_eq!(files, bound, "the most recent ones, no more");
    let rss = serving.rss_mib();
    assert!(rss < 256, "{rss} MiB holding {bound} conversations");
    // The newest is continued; the oldest was forgotten and starts over.
    for (n, source) in [(9_999, "history"), (0, "minted")] {
        stub.push(StubReply::text("next"));
        let body = json!({"model": "helper", "messages": [
            {"role": "user", "content": format!("question {n}")},
            {"role": "assistant", "content": format!("answer {n}")},
            {"role": "user", "content": "and?"}
        ]});
        let (_, answer) = http(
            serving.address(),
            &post_request("/v1/chat/completions", &body.to_string()),
        );
        assert_eq!(
            header(&answer, "x-lllm-session-source"),
            Some(source),
            "{answer}"
        );
    }
    assert!(!serving.stderr.lock().expect("log").contains("panicked"));
}

#[tokio::test(flavor = "multi_thread")]
async fn another_keys_forged_history_ids_and_references_reach_none_of_its_dialogs() {
    let dir = TempDir::new("conversations-forged");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    let serving = Serving::start(
        &[arg(&tactic)],
        &[("LLLM_SERVE_KEY", "sk-alpha-1,sk-beta-2")],
    );
    stub.push(StubReply::text("alpha's private answer"));
    let (status, first) = http(
        serving.address(),
        &keyed(
            "/v1/responses",
            "sk-alpha-1",
            &json!({"model": "helper", "input": "secret question"}),
        ),
    );
    assert_eq!(status, 200, "{first}");
    let response = body_of(&first);
    let session = header(&first, "x-lllm-session-id")
        .expect("session")
        .to_owned();
    let forgeries = [
        (
            "/v1/chat/completions",
            json!({"model": "helper", "messages": [
            {"role": "user", "content": "secret question"},
            {"role": "assistant", "content": "alpha's private answer"},
            {"role": "user", "content": "more"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "helper", "input": "more", "conversation": session}),
        ),
        (
            "/v1/responses",
            json!({"model": "helper", "input": "more", "prompt_cache_key": session}),
        ),
        (
            "/v1/responses",
            json!({"model": "helper", "input": "more", "previous_response_id": response["id"]}),
        ),
        (
            "/v1/responses",
            json!({"model": "helper", "input": [
            {"role": "user", "content": "secret question"},
            {"type": "item_reference", "id": response["output"][0]["id"]},
            {"role": "user", "content": "more"}]}),
        ),
    ];
    for (path, body) in forgeries {
        stub.push(StubReply::text("beta's answer"));
        let before = stub.requests().len();
        let (status, answer) = http(serving.address(), &keyed(path, "sk-beta-2", &body));
        assert!(matches!(status, 200 | 400 | 404), "{answer}");
        for request in &stub.requests()[before..] {
            let sent: Vec<Value> = request.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let texts: Vec<&str> = sent.iter().filter_map(|m| m["content"].as_str()).collect();
            // Exactly what beta sent, after the tactic's system prompt: none of alpha's dialog.
            let expected: Vec<&str> = if path == "/v1/chat/completions" {
                vec!["secret question", "alpha's private answer", "more"]
            } else {
                vec!["more"]
            };
            assert_eq!(texts[1..], expected[..], "{body} reached alpha's dialog");
        }
        assert_ne!(
            header(&answer, "x-lllm-session-source"),
            Some("history"),
            "{answer}"
        );
    }
    assert!(!serving.stderr.lock().expect("log").contains("sk-alpha-1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn planted_files_in_the_conversations_folder_are_skipped_and_the_server_serves() {
    let dir = TempDir::new("conversations-planted");
    let stub = StubServer::start().await.expect("stub");
    let tactic = chat_tactic(&dir, &stub);
    let state = dir.0.join("state");
    let folder = state.join("conversations");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(folder.join("junk.json"), b"{\"key\": 5").expect("junk");
    std::fs::write(folder.join("huge.json"), vec![b' '; 2 << 20]).expect("huge");
    std::os::unix::fs::symlink("/etc/passwd", folder.join("link.json")).expect("symlink");
    std::fs::create_dir(folder.join("dir.json")).expect("dir");
    let made = std::process::Command::new("mkfifo")
        .arg(folder.join("fifo.json"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let serving = Serving::start(
        &[
            arg(&tactic),
            "--state",
            arg(&state),
            "--keep-conversation-bytes",
            "1048576",
        ],
        &[],
    );
    stub.push(StubReply::text("fine"));
    let body = json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]});
    let (status, answer) = http(
        serving.address(),
        &post_request("/v1/chat/completions", &body.to_string()),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        std::fs::read_to_string("/etc/passwd")
            .map(|s| s.is_empty())
            .ok(),
        Some(false)
    );
    assert!(!serving.stderr.lock().expect("log").contains("panicked"));
}
