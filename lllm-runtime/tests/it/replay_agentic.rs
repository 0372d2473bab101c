//! `lllm replay` of NVIDIA Dynamo's agentic traces (`dynamo.agentic_mooncake` version 2) against a
//! recording stub server: every request is sent, each no earlier than what it waits for (the
//! dependency's answer, or its sending for a `spawn` triggered by dispatch) plus the edge's delay,
//! with the recorded session and the parent of a spawned session on the wire; and hostile traces are
//! refused with the line, the field and what is allowed.
//!
//! Timing checks are lower bounds only ("not before"), which hold however slow the machine is.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use lllm_runtime::replay::{replay, replay_trace, ReplayError, ReplayOptions, Replayed, Trace};
use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::{json, Value};

/// Dynamo's own e2e fixture (`tests/e2e/configs/unified_cli/fixtures/traces/agentic-mooncake.jsonl`
/// of `dynamo.replay`), inline: a root, a child spawned 5 ms after the root was *sent*, and a join
/// that waits for both answers.
const DYNAMO_FIXTURE: &str = r#"{"schema":"dynamo.agentic_mooncake","version":2,"block_size":4,"hash_id_scope":"local","source":{"format":"e2e-fixture","digest":"agentic-v1"}}
{"request_id":"agent-root","play_id":"agent-play","session_id":"root","model":"tiny-model","input_length":4,"output_length":2,"hash_ids":[301],"not_before_ms":0,"dependencies":[]}
{"request_id":"agent-child","play_id":"agent-play","session_id":"child","model":"tiny-model","input_length":4,"output_length":2,"hash_ids":[302],"not_before_ms":0,"dependencies":[{"request_id":"agent-root","trigger":"dispatch","delay_ms":5,"relation":"spawn"}]}
{"request_id":"agent-join","play_id":"agent-play","session_id":"root","model":"tiny-model","input_length":4,"output_length":2,"hash_ids":[303],"not_before_ms":0,"dependencies":[{"request_id":"agent-root","trigger":"completion","delay_ms":1,"relation":"sequence"},{"request_id":"agent-child","trigger":"completion","delay_ms":1,"relation":"join"}]}
"#;

const SESSION: &str = "x-dynamo-session-id";
const PARENT: &str = "x-dynamo-parent-session-id";

fn options(server: &StubServer, speed: f64) -> ReplayOptions {
    let mut options = ReplayOptions::new(server.base_url(), "tiny");
    options.speed = speed;
    options
}

fn header(block_size: usize) -> String {
    json!({"schema": "dynamo.agentic_mooncake", "version": 2, "block_size": block_size,
           "hash_id_scope": "local", "source": {"format": "test", "digest": "replay-agentic"}})
    .to_string()
}

/// A row of play `p`, session `s`: `input_length` 4 in one block of the header's 4 tokens.
fn row(id: &str, session: &str, hash_ids: &[u64], dependencies: Value) -> Value {
    json!({"request_id": id, "play_id": "p", "session_id": session, "model": "m",
           "input_length": 4 * hash_ids.len(), "output_length": 7, "hash_ids": hash_ids,
           "not_before_ms": 0, "dependencies": dependencies})
}

fn dep(id: &str, trigger: &str, delay_ms: u64, relation: &str) -> Value {
    json!({"request_id": id, "trigger": trigger, "delay_ms": delay_ms, "relation": relation})
}

fn trace_of(rows: &[Value]) -> String {
    let mut text = header(4);
    for row in rows {
        text.push('\n');
        text.push_str(&row.to_string());
    }
    text
}

fn by_id(report: &[Replayed]) -> HashMap<&str, &Replayed> {
    report
        .iter()
        .map(|r| {
            (
                r.request_id
                    .as_deref()
                    .expect("agentic requests carry their id"),
                r,
            )
        })
        .collect()
}

/// Every request of `trace` was sent no earlier than each dependency's trigger plus its delay (at
/// `speed`): for `dispatch` the dependency's sending; for `completion` its sending plus its latency,
/// the earliest its answer can have been seen.
#[track_caller]
fn assert_dependencies_honoured(trace: &str, report: &[Replayed], speed: f64) {
    let sent = by_id(report);
    for line in trace.lines().skip(1) {
        let row: Value = serde_json::from_str(line).expect("row");
        let id = row["request_id"].as_str().expect("id");
        let request = sent[id];
        for dependency in row["dependencies"].as_array().expect("dependencies") {
            let on = sent[dependency["request_id"].as_str().expect("dependency")];
            let delay = Duration::from_secs_f64(
                dependency["delay_ms"].as_f64().expect("delay") / 1000.0 / speed,
            );
            let trigger = match dependency["trigger"].as_str() {
                Some("dispatch") => on.dispatched_at,
                _ => on.dispatched_at + on.latency,
            };
            assert!(
                request.dispatched_at >= trigger + delay,
                "{id} sent at {:?}, before {} was {} ({:?}) + {delay:?}",
                request.dispatched_at,
                dependency["request_id"],
                dependency["trigger"],
                trigger
            );
        }
    }
}

fn session_of<'r>(requests: &'r [RecordedRequest], session: &str) -> Vec<&'r RecordedRequest> {
    requests
        .iter()
        .filter(|r| r.header(SESSION) == Some(session))
        .collect()
}

#[tokio::test]
async fn dynamos_own_fixture_replays_with_its_graph() {
    let trace = Trace::parse(DYNAMO_FIXTURE, 64).expect("Dynamo's fixture reads");
    assert!(trace.is_agentic());
    assert_eq!(
        (trace.requests(), trace.sessions(), trace.block_size()),
        (3, 2, 4)
    );

    let server = StubServer::start().await.expect("server");
    let report = replay_trace(&trace, &options(&server, 1.0))
        .await
        .expect("replays");
    assert!(
        report.requests.iter().all(|r| r.error.is_none()),
        "{:?}",
        report.requests
    );
    let ids: Vec<&str> = report
        .requests
        .iter()
        .map(|r| r.request_id.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        ids,
        ["agent-root", "agent-child", "agent-join"],
        "trace order"
    );
    assert!(report
        .requests
        .iter()
        .all(|r| r.play_id.as_deref() == Some("agent-play")));
    assert_dependencies_honoured(DYNAMO_FIXTURE, &report.requests, 1.0);

    let wire = server.requests();
    assert_eq!(wire.len(), 3);
    let root = session_of(&wire, "root");
    assert_eq!(root.len(), 2, "the root and the join");
    assert!(root.iter().all(|r| r.header_values(PARENT).is_empty()));
    let child = session_of(&wire, "child");
    assert_eq!(child.len(), 1);
    assert_eq!(
        child[0].header(PARENT),
        Some("root"),
        "a spawn names its parent"
    );
    // The join was sent after the child's answer had come back.
    let join = root[1];
    assert!(join.received_at >= child[0].received_at);
    for request in &wire {
        assert_eq!(request.body["max_tokens"], 2, "output_length is max_tokens");
        assert_eq!(request.body["model"], "tiny");
        // One block of 4 tokens: 4 words.
        let prompt = request.body["messages"][0]["content"]
            .as_str()
            .expect("prompt");
        assert_eq!(prompt.split(' ').count(), 4, "{prompt}");
    }
}

#[tokio::test]
async fn the_fixture_files_read() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sample = Trace::open(&root.join("scripts/fixtures/agentic-sample.jsonl"), 64)
        .expect("the hand-written sample reads");
    // play-1: main, main/a, main/b, main/b/c; play-2: main.
    assert_eq!(
        (sample.requests(), sample.sessions(), sample.block_size()),
        (11, 5, 64)
    );
    // Dynamo's own copy, when its virtualenv is installed here.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let dynamo = home.map(|h| {
        h.join(".cache/lllm/dynamo/venv/lib/python3.11/site-packages/dynamo/replay/tests/e2e")
            .join("configs/unified_cli/fixtures/traces/agentic-mooncake.jsonl")
    });
    if let Some(path) = dynamo.filter(|p| p.is_file()) {
        let trace = Trace::open(&path, 64).expect("Dynamo's fixture reads");
        assert_eq!(trace.requests(), 3);
    }
}

#[tokio::test]
async fn spawn_sequence_and_join_wait_for_what_they_depend_on() {
    // main-1 ─spawn→ a-1 ─sequence 200 ms→ a-2 ─┐
    //        ─spawn→ b-1 (answers slowly) ──────┼─join→ main-2
    //        ─sequence─────────────────────────┘
    let rows = [
        row("main-1", "main", &[1], json!([])),
        row(
            "a-1",
            "main/a",
            &[1, 4],
            json!([dep("main-1", "completion", 0, "spawn")]),
        ),
        row(
            "a-2",
            "main/a",
            &[1, 4, 6],
            json!([dep("a-1", "completion", 200, "sequence")]),
        ),
        row(
            "b-1",
            "main/b",
            &[1, 5],
            json!([dep("main-1", "completion", 0, "spawn")]),
        ),
        row(
            "main-2",
            "main",
            &[1, 9],
            json!([
                dep("main-1", "completion", 0, "sequence"),
                dep("a-2", "completion", 0, "join"),
                dep("b-1", "completion", 0, "join"),
            ]),
        ),
    ];
    let text = trace_of(&rows);
    let server = StubServer::start().await.expect("server");

    // The slow answer is matched to b-1 by its prompt: learn that prompt from a replay of b-1 alone.
    let alone = trace_of(&[row("b-1", "main/b", &[1, 5], json!([]))]);
    replay(&alone, &options(&server, 1.0)).await.expect("probe");
    let b_prompt = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .expect("prompt")
        .to_owned();
    server.clear_requests();
    let slow = Duration::from_millis(400);
    server.push(StubReply::text("slow").delay(slow).for_message(&b_prompt));

    let report = replay(&text, &options(&server, 1.0))
        .await
        .expect("replays");
    assert_eq!(report.requests.len(), 5);
    assert!(
        report.requests.iter().all(|r| r.error.is_none()),
        "{:?}",
        report.requests
    );
    assert_dependencies_honoured(&text, &report.requests, 1.0);
    let sent = by_id(&report.requests);
    assert!(sent["b-1"].latency >= slow, "b-1 got the slow answer");
    // The join waited for the slow branch; the other branch did not.
    assert!(sent["main-2"].dispatched_at >= sent["b-1"].dispatched_at + slow);
    assert!(
        sent["a-1"].dispatched_at < sent["b-1"].dispatched_at + sent["b-1"].latency,
        "the branches run at the same time"
    );
    assert!(sent["a-2"].dispatched_at >= sent["a-1"].dispatched_at + Duration::from_millis(200));

    // On the wire: every request once, its recorded session, a fork's parent on each of its turns.
    let wire = server.requests();
    assert_eq!(wire.len(), 5);
    let main = session_of(&wire, "main");
    assert_eq!(main.len(), 2);
    assert!(main.iter().all(|r| r.header_values(PARENT).is_empty()));
    let a = session_of(&wire, "main/a");
    assert_eq!(a.len(), 2);
    assert!(
        a.iter().all(|r| r.header(PARENT) == Some("main")),
        "a's turns name main"
    );
    let b = session_of(&wire, "main/b");
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].header(PARENT), Some("main"));
    assert!(main[1].received_at >= b[0].received_at + slow);
    // Shared leading hash ids give shared prompt prefixes.
    let prompt = |r: &RecordedRequest| {
        r.body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let first = prompt(main[0]);
    for request in &wire {
        assert!(prompt(request).starts_with(&first));
        assert_eq!(request.body["max_tokens"], 7);
    }
    assert!(prompt(a[1]).starts_with(&prompt(a[0])));
    assert_eq!(prompt(b[0]), b_prompt);
}

#[tokio::test]
async fn a_failed_dependency_counts_as_answered() {
    let rows = [
        row("first", "s", &[1], json!([])),
        row(
            "second",
            "s",
            &[2],
            json!([dep("first", "completion", 0, "sequence")]),
        ),
    ];
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::error(400, "refused by the stub"));
    let report = replay(&trace_of(&rows), &options(&server, 1.0))
        .await
        .expect("replays");
    let sent = by_id(&report.requests);
    assert!(
        sent["first"]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("refused by the stub")),
        "{:?}",
        sent["first"].error
    );
    assert!(sent["second"].error.is_none(), "{:?}", sent["second"].error);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn not_before_is_relative_and_scaled_by_the_speed() {
    // An hour after the epoch of the trace, then 2 s later: shifted to 0 and 2 s, at speed 10 0.2 s.
    let mut early = row("early", "x", &[1], json!([]));
    early["not_before_ms"] = json!(3_600_000);
    let mut late = row("late", "y", &[2], json!([]));
    late["not_before_ms"] = json!(3_602_000.5);
    let server = StubServer::start().await.expect("server");
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        replay(&trace_of(&[late, early]), &options(&server, 10.0)),
    )
    .await
    .expect("the hour is not waited")
    .expect("replays");
    let sent = by_id(&report.requests);
    assert!(sent["late"].dispatched_at >= Duration::from_millis(200));
    assert_eq!(
        report
            .requests
            .iter()
            .map(|r| r.session_id.as_str())
            .collect::<Vec<_>>(),
        ["y", "x"],
        "trace order"
    );
}

#[tokio::test]
async fn without_session_identity_no_session_header_is_sent() {
    let server = StubServer::start().await.expect("server");
    let trace = Trace::parse(DYNAMO_FIXTURE, 64).expect("reads");
    let mut opts = options(&server, 1.0);
    opts.session = false;
    replay_trace(&trace, &opts).await.expect("replays");
    let wire = server.requests();
    assert_eq!(wire.len(), 3);
    assert!(wire
        .iter()
        .all(|r| r.header_values(SESSION).is_empty() && r.header_values(PARENT).is_empty()));
}

// --- hostile traces ---------------------------------------------------------------------------

/// The error of reading `text`, as a line number and message.
fn refused(text: &str) -> (usize, String) {
    match Trace::parse(text, 64) {
        Ok(trace) => panic!("accepted: {} requests", trace.requests()),
        Err(ReplayError::Format { line, message }) => (line, message),
        Err(other) => panic!("not a format error: {other}"),
    }
}

#[track_caller]
fn assert_refused(text: &str, line: usize, expected: &str) {
    let (at, message) = refused(text);
    assert!(
        message.contains(expected) && at == line,
        "expected line {line}: {expected}\n     got line {at}: {message}"
    );
}

/// A valid trace of three rows (lines 2 to 4) with row `index` changed by `change`.
fn with(index: usize, change: impl FnOnce(&mut Value)) -> String {
    let mut rows = vec![
        row("a", "s", &[1], json!([])),
        row(
            "b",
            "s",
            &[1, 2],
            json!([dep("a", "completion", 0, "sequence")]),
        ),
        row(
            "c",
            "t",
            &[1, 3],
            json!([dep("b", "completion", 5, "spawn")]),
        ),
    ];
    change(&mut rows[index]);
    trace_of(&rows)
}

#[test]
fn the_valid_base_trace_reads() {
    let trace = Trace::parse(&with(0, |_| {}), 64).expect("valid");
    assert_eq!((trace.requests(), trace.sessions()), (3, 2));
}

#[test]
fn an_unknown_trigger_is_named() {
    let text = with(1, |r| r["dependencies"][0]["trigger"] = json!("soon"));
    assert_refused(
        &text,
        3,
        "dependencies[0].trigger: `soon` is not one of completion, dispatch",
    );
    let text = with(1, |r| r["dependencies"][0]["relation"] = json!("sibling"));
    assert_refused(
        &text,
        3,
        "dependencies[0].relation: `sibling` is not one of sequence, spawn, join, replay_barrier",
    );
}

#[test]
fn only_spawn_may_be_triggered_by_dispatch() {
    let text = with(1, |r| r["dependencies"][0]["trigger"] = json!("dispatch"));
    assert_refused(
        &text,
        3,
        "dependencies[0].trigger: `dispatch` is allowed only on a `spawn` dependency, and this one \
         is `sequence`; use `completion`",
    );
    // On a spawn it is allowed.
    let text = with(2, |r| r["dependencies"][0]["trigger"] = json!("dispatch"));
    Trace::parse(&text, 64).expect("spawn on dispatch");
}

#[test]
fn a_cycle_is_named_request_by_request() {
    let text = with(0, |r| {
        r["dependencies"] = json!([dep("c", "completion", 0, "join")]);
    });
    assert_refused(
        &text,
        2,
        "dependencies: the requests `a` → `c` → `b` → `a` wait for each other in a cycle",
    );
    // Two requests waiting for each other, the rest of the trace fine.
    let text = trace_of(&[
        row("root", "s", &[1], json!([])),
        row("x", "s", &[2], json!([dep("y", "completion", 0, "join")])),
        row(
            "y",
            "s",
            &[3],
            json!([
                dep("x", "completion", 0, "join"),
                dep("root", "completion", 0, "sequence")
            ]),
        ),
    ]);
    assert_refused(&text, 3, "the requests `x` → `y` → `x` wait for each other");
}

#[test]
fn a_request_cannot_wait_for_itself() {
    let text = with(1, |r| r["dependencies"][0]["request_id"] = json!("b"));
    assert_refused(
        &text,
        3,
        "dependencies[0].request_id: `b` is this request itself; a request cannot wait for itself",
    );
}

#[test]
fn an_unknown_dependency_is_named() {
    let text = with(2, |r| {
        r["dependencies"] = json!([
            dep("b", "completion", 0, "spawn"),
            dep("zzz", "completion", 0, "join")
        ]);
    });
    assert_refused(
        &text,
        4,
        "dependencies[1].request_id: `zzz` is not the request_id of any request in the trace",
    );
}

#[test]
fn hash_ids_are_exactly_one_per_block() {
    let text = with(1, |r| r["hash_ids"] = json!([1, 2, 3]));
    assert_refused(
        &text,
        3,
        "hash_ids: 3 ids, but input_length 8 in blocks of 4 tokens needs exactly 2 (one per block, \
         the last one may be partial)",
    );
    let text = with(1, |r| r["hash_ids"] = json!([]));
    assert_refused(&text, 3, "hash_ids: 0 ids, but input_length 8");
    // A partial last block: 5 tokens in blocks of 4 is two blocks.
    let text = with(1, |r| r["input_length"] = json!(5));
    Trace::parse(&text, 64).expect("5 tokens, 2 blocks");
    let text = with(1, |r| r["hash_ids"] = json!([1, -2]));
    assert_refused(&text, 3, "hash_ids[1]: expected a block id");
}

#[test]
fn dependencies_stay_within_their_play() {
    let text = with(2, |r| r["play_id"] = json!("other"));
    assert_refused(
        &text,
        4,
        "dependencies[0].request_id: `b` is in play `p`, and this request in play `other`; a \
         request waits only for requests of its own play",
    );
}

#[test]
fn null_dependencies_are_refused_and_missing_ones_are_none() {
    let text = with(0, |r| r["dependencies"] = Value::Null);
    assert_refused(
        &text,
        2,
        "dependencies: null is not allowed; write [] (or leave the field out) for a request that \
         waits for nothing",
    );
    let text = with(0, |r| {
        r.as_object_mut().expect("row").remove("dependencies");
    });
    Trace::parse(&text, 64).expect("no dependencies field");
    let text = with(1, |r| r["dependencies"] = json!({"request_id": "a"}));
    assert_refused(&text, 3, "dependencies: expected an array of");
    let text = with(1, |r| {
        r["dependencies"] = json!([{"request_id": "a", "trigger": "completion"}])
    });
    assert_refused(&text, 3, "dependencies[0]: missing field `delay_ms`");
}

#[test]
fn request_ids_are_unique() {
    let text = with(2, |r| r["request_id"] = json!("a"));
    assert_refused(
        &text,
        4,
        "request_id: `a` is already the request_id of line 2; request ids are unique in a trace",
    );
}

#[test]
fn input_length_is_at_least_1() {
    let text = with(0, |r| r["input_length"] = json!(0));
    assert_refused(
        &text,
        2,
        "input_length: 0 is out of range; use a whole number of tokens from 1 to 16777216",
    );
    let text = with(0, |r| r["input_length"] = json!(-1));
    assert_refused(
        &text,
        2,
        "input_length: expected a whole number of tokens, found -1",
    );
    let text = with(0, |r| r["output_length"] = json!(1 << 25));
    assert_refused(&text, 2, "output_length: 33554432 is out of range");
    // The prompt limit: 2^20 tokens.
    let text = with(0, |r| r["input_length"] = json!((1 << 20) + 1));
    assert_refused(
        &text,
        2,
        "input_length: 1048577 tokens in blocks of 4 is more than the 1048576 tokens a replayed \
         prompt may have",
    );
}

#[test]
fn required_fields_are_named() {
    for field in [
        "request_id",
        "play_id",
        "session_id",
        "model",
        "input_length",
        "hash_ids",
        "not_before_ms",
    ] {
        let text = with(1, |r| {
            r.as_object_mut().expect("row").remove(field);
        });
        assert_refused(
            &text,
            3,
            &format!("missing field `{field}`; every row needs request_id"),
        );
    }
    for field in ["request_id", "play_id", "session_id", "model"] {
        let text = with(1, |r| r[field] = json!("  "));
        assert_refused(
            &text,
            3,
            &format!("{field}: empty; every request needs a non-empty {field}"),
        );
    }
    let text = with(1, |r| r["model"] = json!(3));
    assert_refused(&text, 3, "model: expected a string, found 3");
    let text = with(1, |r| r["session_id"] = json!("bad\nid"));
    assert_refused(&text, 3, "session_id: ");
}

#[test]
fn times_are_non_negative_and_within_7_days() {
    let text = with(1, |r| r["dependencies"][0]["delay_ms"] = json!(-1));
    assert_refused(
        &text,
        3,
        "dependencies[0].delay_ms: -1 is out of range; use a number of milliseconds from 0 to \
         604800000 (7 days)",
    );
    let text = with(1, |r| r["dependencies"][0]["delay_ms"] = json!("soon"));
    assert_refused(
        &text,
        3,
        "dependencies[0].delay_ms: expected a number of milliseconds",
    );
    let text = with(0, |r| r["not_before_ms"] = json!(-0.5));
    assert_refused(
        &text,
        2,
        "not_before_ms: -0.5 is out of range; use a number of milliseconds from 0",
    );
    let text = with(0, |r| r["not_before_ms"] = json!("1e400"));
    assert_refused(
        &text,
        2,
        "not_before_ms: expected a number of milliseconds from 0",
    );
    // A number beyond a double.
    let text = with(0, |r| r["not_before_ms"] = json!("__")).replace("\"__\"", "1e400");
    assert_refused(&text, 2, "not valid JSON");
    // Two requests more than 7 days apart.
    let text = with(2, |r| r["not_before_ms"] = json!(604_800_001u64));
    assert_refused(
        &text,
        4,
        "not_before_ms: 604800001 is 604800001 ms after the trace's smallest",
    );
    // Far from 0 but close together: fine (relative times).
    let mut rows = [
        row("a", "s", &[1], json!([])),
        row("b", "s", &[2], json!([])),
    ];
    rows[0]["not_before_ms"] = json!(1e15);
    rows[1]["not_before_ms"] = json!(1e15 + 10.0);
    Trace::parse(&trace_of(&rows), 64).expect("relative times");
    // Delays that add up to more than 7 days along a chain.
    let half = 400_000_000u64;
    let text = trace_of(&[
        row("a", "s", &[1], json!([])),
        row(
            "b",
            "s",
            &[2],
            json!([dep("a", "completion", half, "sequence")]),
        ),
        row(
            "c",
            "s",
            &[3],
            json!([dep("b", "completion", half, "sequence")]),
        ),
    ]);
    assert_refused(
        &text,
        4,
        "dependencies: request `c` would be sent 800000000 ms after the start",
    );
}

#[test]
fn priority_fits_32_bits() {
    let text = with(0, |r| r["priority"] = json!(1i64 << 40));
    assert_refused(&text, 2, "priority: 1099511627776 is out of range");
    let text = with(0, |r| r["priority"] = json!(-3));
    Trace::parse(&text, 64).expect("a negative priority");
}

#[test]
fn headers_are_checked() {
    let rows = format!("\n{}", row("a", "s", &[1], json!([])));
    let header_with = |key: &str, value: Value| {
        let mut h: Value = serde_json::from_str(&header(4)).expect("header");
        h[key] = value;
        format!("{h}{rows}")
    };
    assert_refused(&header_with("version", json!(3)), 1, "version: 3 is not 2");
    assert_refused(
        &header_with("schema", json!("dynamo.other")),
        1,
        "schema: the string \"dynamo.other\" is not `dynamo.agentic_mooncake`",
    );
    assert_refused(
        &header_with("block_size", json!(0)),
        1,
        "block_size: 0 is out of range; use a whole number of tokens from 1 to 65536",
    );
    assert_refused(
        &header_with("hash_id_scope", json!("global")),
        1,
        "hash_id_scope: the string \"global\" is not `local`",
    );
    assert_refused(
        &header_with("source", json!({"format": "x"})),
        1,
        "source.digest: missing or empty; the source needs non-empty strings",
    );
    let mut h: Value = serde_json::from_str(&header(4)).expect("header");
    h.as_object_mut().expect("header").remove("source");
    assert_refused(
        &format!("{h}{rows}"),
        1,
        "missing field `source`; the header needs schema",
    );
    // Extra keys are ignored, in the header and in rows.
    let mut extra = header_with("comment", json!("x"));
    extra = extra.replace("\"model\":", "\"future\":{\"a\":1},\"model\":");
    Trace::parse(&extra, 64).expect("extra keys");
    assert_refused(&header(4), 1, "the trace has a header but no rows");
    assert_refused(
        &format!(
            "{}\n{}",
            trace_of(&[row("a", "s", &[1], json!([]))]),
            header(4)
        ),
        3,
        "a second header",
    );
}

#[test]
fn rows_may_come_in_any_order_and_use_dynamos_aliases() {
    let mut late = row(
        "late",
        "s",
        &[1, 2],
        json!([dep("early", "completion", 0, "sequence")]),
    );
    let length = late["input_length"].take();
    late.as_object_mut().expect("row").remove("input_length");
    late["input_tokens"] = length;
    let text = trace_of(&[late, row("early", "s", &[1], json!([]))]);
    let trace = Trace::parse(&text, 64).expect("any order");
    assert_eq!(trace.requests(), 2);
    // Both the name and its alias: refused.
    let text = with(0, |r| r["input_tokens"] = json!(4));
    assert_refused(&text, 2, "duplicate field `input_length`");
}

#[test]
fn a_long_chain_reads_without_recursion() {
    let rows: Vec<Value> = (0..2000)
        .map(|i| {
            let deps = if i == 0 {
                json!([])
            } else {
                json!([dep(&format!("r{}", i - 1), "completion", 0, "sequence")])
            };
            row(&format!("r{i}"), "s", &[i], deps)
        })
        .collect();
    let trace = Trace::parse(&trace_of(&rows), 64).expect("a long chain");
    assert_eq!(trace.requests(), 2000);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Any JSON value a hostile trace might put in a field.
    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (0u64..10).prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-e]{0,3}".prop_map(Value::from),
            prop::collection::vec(0u64..5, 0..4).prop_map(Value::from),
            Just(Value::Null),
            Just(json!({})),
            Just(
                json!([{"request_id": "a", "trigger": "completion", "delay_ms": 0, "relation": "join"}])
            ),
            Just(
                json!([{"request_id": "b", "trigger": "dispatch", "delay_ms": 1.5, "relation": "spawn"}])
            ),
        ]
    }

    fn field() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "request_id",
            "play_id",
            "session_id",
            "model",
            "input_length",
            "output_length",
            "hash_ids",
            "not_before_ms",
            "dependencies",
            "priority",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        /// Rows with fields replaced by anything: a trace that reads, or a format error with a line
        /// number within the file, never a panic.
        #[test]
        fn the_reader_never_panics(changes in prop::collection::vec((0usize..4, field(), value()), 0..6)) {
            let mut rows = vec![
                row("a", "s", &[1], json!([])),
                row("b", "s", &[1, 2], json!([dep("a", "completion", 0, "sequence")])),
                row("c", "t", &[1, 3], json!([dep("b", "completion", 5, "spawn")])),
                row("d", "t", &[1], json!([dep("c", "completion", 0, "join")])),
            ];
            for (i, field, value) in changes {
                rows[i][field] = value;
            }
            match Trace::parse(&trace_of(&rows), 64) {
                Ok(trace) => prop_assert!(trace.requests() == 4),
                Err(ReplayError::Format { line, message }) => {
                    prop_assert!((1..=5).contains(&line), "line {}", line);
                    prop_assert!(!message.is_empty());
                }
                Err(other) => prop_assert!(false, "unexpected error: {}", other),
            }
        }
    }
}
