//! The queue (`lllm batch --queue`, `lllm worker`) against a hostile user, network and neighbour:
//! credentials in the queue's URL, a port where nothing listens, results forged on the queue, a
//! folder planted where a worker might keep its journals.

use std::time::Duration;

use super::support::{arg, lllm, TempDir};

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
    let file = dir.write(
        "t.yaml",
        "agent_configs:\n  - {name: a, model_name: m, system_prompt: s, model_args: {api_base: \"http://127.0.0.1:9/v1\"}}\n",
    );
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
