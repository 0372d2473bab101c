//! The queue (`lllm batch --queue`, `lllm worker`) against a hostile user, network and neighbour:
//! credentials in the queue's URL, a port where nothing listens, results forged on the queue, a
//! folder planted where a worker might keep its journals.

use std::time::Duration;

use lllm_runtime::queue::TacticSha;
use lllm_runtime::testing::NatsServer;
use serde_json::Value;

use super::support::{arg, lllm, lllm_after, TempDir};

/// A tactic whose server is never asked (no worker runs here), and its SHA-256.
fn unasked_tactic(dir: &TempDir) -> (std::path::PathBuf, TacticSha) {
    let file = dir.write(
        "t.yaml",
        "agent_configs:\n  - {name: a, model_name: m, system_prompt: s, model_args: {api_base: \"http://127.0.0.1:9/v1\"}}\n",
    );
    let sha = TacticSha::of(&std::fs::read(&file).expect("tactic"));
    (file, sha)
}

/// A queue URL with credentials, in each spelling, and every form of its secret that must not show.
const QUEUE_CREDENTIALS: [(&str, &[&str]); 5] = [
    (
        "nats://ann:Pa55-word-q1@127.0.0.1:4222/q",
        &["Pa55-word-q1"],
    ),
    ("nats://tok-Secret-q2@127.0.0.1:4222/q", &["tok-Secret-q2"]),
    (
        "nats://ann:Pa%2Fss-q3%40x@127.0.0.1:4222/q",
        &["Pa%2Fss-q3%40x", "Pa/ss-q3@x", "ss-q3"],
    ),
    ("nats://:Empty-user-q4@127.0.0.1:4222/q", &["Empty-user-q4"]),
    // Not percent-encoded: the password holds the `/` that ends a URL's authority.
    (
        "nats://ann:Pa/ss-q5@127.0.0.1:4222/q",
        &["Pa/ss-q5", "ss-q5"],
    ),
];

#[test]
fn no_credential_of_a_queue_url_is_in_any_refusal() {
    for (url, secrets) in QUEUE_CREDENTIALS {
        let batch = [
            "batch", "t.yaml", "--inputs", "i.jsonl", "--output", "o.jsonl",
        ];
        let joined = format!("--queue={url}");
        let mistyped = format!("--queeu={url}");
        let cases: [(Vec<&str>, &str); 5] = [
            ([&batch[..], &["--queue", url]].concat(), "credentials"),
            ([&batch[..], &[joined.as_str()]].concat(), "credentials"),
            (vec!["worker", "t.yaml", "--queue", url], "credentials"),
            (vec!["worker", "t.yaml", joined.as_str()], "credentials"),
            // A mistyped flag: the parser quotes the whole argument back.
            (
                vec!["worker", "t.yaml", mistyped.as_str()],
                "unexpected argument",
            ),
        ];
        for (args, message) in cases {
            let outcome = lllm(&args).run_blocking();
            outcome.assert_clean(2, &[message]);
            for secret in secrets {
                outcome.assert_never_shows(secret);
            }
        }
    }
}

#[test]
fn no_credential_of_a_replay_api_base_is_in_the_parsers_refusals() {
    let base = "http://ann:Replay-pw-7@127.0.0.1:9/v1";
    let mistyped = format!("--api-bse={base}");
    for args in [
        vec!["replay", "t.jsonl", "--model", "m", mistyped.as_str()],
        vec![
            "replay",
            "t.jsonl",
            "--model",
            "m",
            "--api-base",
            base,
            base,
        ],
    ] {
        lllm(&args)
            .run_blocking()
            .assert_clean(2, &["unexpected argument"])
            .assert_never_shows("Replay-pw-7");
    }
}

#[test]
fn a_queue_where_nothing_listens_is_reported_at_once_naming_it() {
    let dir = TempDir::new("queue-closed");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    // The listener is gone: nothing listens there.
    let queue = format!("nats://127.0.0.1:{port}/q");
    let (file, _) = unasked_tactic(&dir);
    let items = dir.write("items.jsonl", "{\"id\": 1, \"input\": \"x\"}\n");
    let output = dir.path("out.jsonl");
    let said = format!("cannot reach the NATS server at nats://127.0.0.1:{port}");
    let batch = [
        "batch",
        arg(&file),
        "--inputs",
        arg(&items),
        "--output",
        arg(&output),
        "--queue",
        &queue,
    ];
    // Before, the batch said "jetstream request timed out" ten seconds later, and the worker
    // retried for ever.
    for args in [&batch[..], &["worker", arg(&file), "--queue", &queue]] {
        lllm(args)
            .time_limit(Duration::from_secs(20))
            .run_blocking()
            .assert_clean(1, &[&said]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_result_is_written_on_one_line_or_as_the_items_failure() {
    let dir = TempDir::new("queue-forged");
    let Some(nats) = NatsServer::start("queue-forged", &dir.path("store")) else {
        return;
    };
    let (file, sha) = unasked_tactic(&dir);
    let items = dir.write(
        "items.jsonl",
        "{\"id\": 1, \"input\": \"a\"}\n{\"id\": 2, \"input\": \"b\"}\n",
    );
    let output = dir.path("out.jsonl");
    let queue = nats.queue("forged");
    let batch = lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&items),
        "--output",
        arg(&output),
        "--queue",
        &queue,
    ])
    .time_limit(Duration::from_secs(60))
    .spawn();
    // A neighbour on the server reads each item's attempt off the queue and answers it first:
    // item 1 with a result spread over lines, item 2 with text that is no result.
    let address: lllm_runtime::queue::QueueAddress = queue.parse().expect("address");
    let js =
        async_nats::jetstream::new(async_nats::connect(address.server()).await.expect("client"));
    let stream = loop {
        if let Ok(mut stream) = js.get_stream("LLLM_forged_ITEMS").await {
            if stream.info().await.is_ok_and(|i| i.state.messages == 2) {
                break stream;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for sequence in [1, 2] {
        let item = stream.get_raw_message(sequence).await.expect("an item");
        let attempt = item
            .headers
            .get("Lllm-Attempt")
            .expect("its attempt")
            .clone();
        let id = serde_json::from_slice::<Value>(&item.payload).expect("json")["id"].clone();
        let forged = match id.as_str() {
            Some("1") => "{\n  \"id\": 1,\n  \"output\": \"forged\",\n  \"seconds\": 1\n}\n",
            _ => "garbage\n{\"id\": 2}\n",
        };
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Lllm-Attempt", attempt);
        js.publish_with_headers(
            format!("lllm.forged.results.{}", &sha.as_str()[..16]),
            headers,
            forged.into(),
        )
        .await
        .expect("published")
        .await
        .expect("stored");
    }
    let batch = tokio::task::spawn_blocking(move || batch.wait())
        .await
        .expect("batch");
    batch.assert_clean(1, &["1 answered, 1 failed"]);
    let text = std::fs::read_to_string(&output).expect("output");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    let one = lines.iter().find(|l| l["id"] == 1).expect("item 1");
    assert_eq!(one["output"], "forged");
    let two = lines.iter().find(|l| l["id"] == 2).expect("item 2");
    assert!(
        two["error"]
            .as_str()
            .is_some_and(|e| e.contains("not a result line")),
        "{two}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_keeps_its_journals_in_a_fresh_private_folder_never_a_planted_one() {
    use std::collections::HashMap;

    use lllm_runtime::batch::BatchItem;
    use lllm_runtime::config::PromptVars;
    use lllm_runtime::queue::Attempts;

    let dir = TempDir::new("queue-planted");
    let Some(nats) = NatsServer::start("queue-planted", &dir.path("store")) else {
        return;
    };
    let server = lllm_runtime::testing::StubServer::start()
        .await
        .expect("stub");
    let file = dir.write(
        "t.yaml",
        format!(
            "agent_configs:\n  - {{name: a, model_name: m, system_prompt: s, max_call_retries: 0, model_args: {{api_base: \"{}\"}}}}\n",
            server.base_url()
        ),
    );
    let sha = TacticSha::of(&std::fs::read(&file).expect("tactic"));
    let items = dir.write("items.jsonl", "{\"id\": 1, \"input\": \"x\"}\n");
    // Another user's folder, linked at the name a worker used to take (lllm-worker-PID under the
    // temporary directory); the item's journal there is a trap that makes its use show (a folder
    // where the journal file would be, which no one can open as a file, root included).
    let item = BatchItem {
        id: "1".into(),
        id_json: serde_json::value::RawValue::from_string("1".into()).expect("id"),
        input: Some("x".into()),
        vars: PromptVars::new(),
    };
    let key = Attempts::new(sha, &[item], &HashMap::new(), &PromptVars::new())
        .key("1")
        .expect("its key");
    let elsewhere = dir.path("elsewhere");
    std::fs::create_dir_all(elsewhere.join(format!("{}.jsonl", &key[..32]))).expect("trap");
    let tmp = dir.path("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let queue = nats.queue("planted");
    let plant = format!("ln -s '{}' \"$TMPDIR/lllm-worker-$$\"", elsewhere.display());
    let worker = lllm_after(&plant, &["worker", arg(&file), "--queue", &queue])
        .env("TMPDIR", arg(&tmp))
        .time_limit(Duration::from_secs(60))
        .spawn();
    lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&items),
        "--output",
        arg(&dir.path("out.jsonl")),
        "--queue",
        &queue,
    ])
    .time_limit(Duration::from_secs(60))
    .run()
    .await
    .assert_clean(0, &["1 answered, 0 failed"]);
    worker.signal(nix::sys::signal::Signal::SIGTERM);
    let worker = tokio::task::spawn_blocking(move || worker.wait())
        .await
        .expect("worker");
    assert_eq!(worker.code, Some(143), "{}", worker.stderr);
    let planted: Vec<_> = std::fs::read_dir(&elsewhere)
        .expect("elsewhere")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(planted.len(), 1, "nothing was written there: {planted:?}");
    // The link is still there; the worker's own folder is gone with it.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("tmp")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
