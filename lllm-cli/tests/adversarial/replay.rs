//! `lllm replay` against hostile traces and arguments: every bad input ends with exit 2, the line,
//! the field and what is allowed, within the time and memory bounds; nothing is allocated from a
//! number in the file, and nothing waits for ever.

use std::io::Write;
use std::time::Duration;

use lllm_runtime::testing::StubServer;

use super::support::{arg, lllm, TempDir};

const HEADER: &str = r#"{"format": "lllm-trace/1", "block_size": 16, "blocks": "chars/4"}"#;
/// Nothing listens here: requests fail at once (exit 1) without a server.
const NOWHERE: &str = "http://127.0.0.1:1/v1";

/// A valid row of session `s` with `field` set to the raw JSON `value` (removed when empty).
fn row_with(field: &str, value: &str) -> String {
    let mut row = serde_json::json!({
        "session_id": "s", "agent": "a", "timestamp": 0, "delay": 0, "tool_wait_ms": 0,
        "input_length": 3, "output_length": 2, "hash_ids": [1, 2], "latency_ms": 1
    });
    if value.is_empty() {
        row.as_object_mut().expect("object").remove(field);
        return row.to_string();
    }
    row[field] = serde_json::Value::from("__value__");
    row.to_string().replace("\"__value__\"", value)
}

fn row() -> String {
    row_with("agent", "\"a\"")
}

fn lines(lines: &[&str]) -> Vec<u8> {
    let mut text = lines.join("\n");
    text.push('\n');
    text.into_bytes()
}

/// Runs `lllm replay FILE --api-base URL --model m` with `extra` arguments.
fn replay_file(path: &str, base: &str, extra: &[&str]) -> super::support::Lllm {
    let mut args = vec!["replay", path, "--api-base", base, "--model", "m"];
    args.extend_from_slice(extra);
    lllm(&args)
}

/// Malformed traces: each is refused with exit 2, its line number and the field at fault.
#[test]
#[allow(clippy::print_stderr)]
fn malformed_traces_are_refused_with_line_and_field() {
    let huge = u64::MAX.to_string();
    let half_week = (7 * 24 * 3_600_000u64 / 2 + 1).to_string();
    let many_ids = format!(
        "[{}]",
        (1..=17)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let big_block = HEADER.replace("16", "65536");
    let mut not_utf8 = lines(&[HEADER]);
    not_utf8.extend_from_slice(b"{\"session_id\": \"\xc3\x28\"}\n");
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "empty file",
            Vec::new(),
            vec!["line 1", "the trace is empty"],
        ),
        (
            "blank lines only",
            b"\n \n\t\n".to_vec(),
            vec!["line 1", "empty"],
        ),
        (
            "header only",
            lines(&[HEADER]),
            vec!["line 1", "header but no rows"],
        ),
        (
            "malformed JSON",
            lines(&[HEADER, &row(), "{\"session_id\": "]),
            vec!["line 3", "not valid JSON"],
        ),
        (
            "a row that is an array",
            lines(&[HEADER, "[1,2]"]),
            vec!["line 2", "JSON object"],
        ),
        (
            "a missing field",
            lines(&[HEADER, &row_with("agent", "")]),
            vec!["line 2", "missing field `agent`", "every row needs"],
        ),
        (
            "a string for a number",
            lines(&[HEADER, &row_with("timestamp", "\"soon\"")]),
            vec!["line 2", "field `timestamp`", "whole number"],
        ),
        (
            "a negative number",
            lines(&[HEADER, &row(), &row_with("delay", "-5")]),
            vec!["line 3", "field `delay`"],
        ),
        (
            "a float for an integer",
            lines(&[HEADER, &row_with("output_length", "2.5")]),
            vec!["line 2", "field `output_length`"],
        ),
        (
            "a number beyond a double",
            lines(&[HEADER, &row_with("input_length", "1e400")]),
            vec!["line 2", "input_length"],
        ),
        (
            "block_size of 4000000000",
            lines(&[&HEADER.replace("16", "4000000000"), &row()]),
            vec!["line 1", "block_size", "from 1 to 65536"],
        ),
        (
            "block_size 0",
            lines(&[&HEADER.replace("16", "0"), &row()]),
            vec!["line 1", "block_size"],
        ),
        (
            "a prompt of more than 2^20 tokens",
            lines(&[&big_block, &row_with("hash_ids", &many_ids)]),
            vec!["line 2", "hash_ids", "1048576"],
        ),
        (
            "a block id beyond 2^53",
            lines(&[HEADER, &row_with("hash_ids", "[1, 9007199254740992]")]),
            vec!["line 2", "hash_ids", "item 2"],
        ),
        (
            "a timestamp of u64::MAX",
            lines(&[HEADER, &row_with("timestamp", &huge)]),
            vec!["line 2", "field `timestamp`", "604800000"],
        ),
        (
            "a delay of u64::MAX",
            lines(&[HEADER, &row(), &row_with("delay", &huge)]),
            vec!["line 3", "field `delay`", "7 days"],
        ),
        (
            "a session of more than 7 days",
            lines(&[
                HEADER,
                &row_with("timestamp", &half_week),
                &row_with("delay", &half_week),
            ]),
            vec!["line 3", "field `delay`", "session `s`"],
        ),
        (
            "a huge ttft",
            lines(&[HEADER, &row_with("ttft_ms", &huge)]),
            vec!["line 2", "field `ttft_ms`"],
        ),
        (
            "a huge input_length",
            lines(&[HEADER, &row_with("input_length", "16777217")]),
            vec!["line 2", "field `input_length`", "16777216"],
        ),
        (
            "a huge osl",
            lines(&[HEADER, &row_with("osl", &huge)]),
            vec!["line 2", "field `osl`"],
        ),
        (
            "a priority beyond 32 bits",
            lines(&[HEADER, &row_with("priority", "4294967296")]),
            vec!["line 2", "field `priority`"],
        ),
        (
            "a session id that cannot be a header",
            lines(&[HEADER, &row_with("session_id", "\"a b\\r\\nX-Evil: 1\"")]),
            vec!["line 2", "field `session_id`"],
        ),
        (
            "a parent id too long",
            lines(&[
                HEADER,
                &row_with("parent_session_id", &format!("\"{}\"", "p".repeat(300))),
            ]),
            vec!["line 2", "field `parent_session_id`", "256 bytes"],
        ),
        (
            "a duplicate field",
            lines(&[HEADER, &row().replacen('{', "{\"timestamp\": 5, ", 1)]),
            vec!["line 2", "duplicate field `timestamp`"],
        ),
        (
            "a second header",
            lines(&[HEADER, &row(), HEADER, &row()]),
            vec!["line 3", "second header"],
        ),
        (
            "a line that is not UTF-8",
            not_utf8,
            vec!["line 2", "not UTF-8"],
        ),
        (
            "another format",
            lines(&[&HEADER.replace("lllm-trace/1", "mooncake/9"), &row()]),
            vec!["line 1", "field `format`", "lllm-trace/1"],
        ),
        (
            "a header missing its block size",
            lines(&[r#"{"format": "lllm-trace/1", "blocks": "x"}"#, &row()]),
            vec!["line 1", "missing field `block_size`"],
        ),
        (
            "a YAML file",
            b"name: x\nagents: []\n".to_vec(),
            vec!["line 1", "not a trace header or row"],
        ),
    ];
    assert!(cases.len() >= 25);
    let dir = TempDir::new("replay-table");
    for (i, (name, bytes, messages)) in cases.iter().enumerate() {
        let path = dir.write(&format!("case{i}.jsonl"), bytes);
        let outcome = replay_file(arg(&path), NOWHERE, &[]).run_blocking();
        // Names the case in the output of a failing run.
        eprintln!("case `{name}`: {}", outcome.stderr.trim());
        outcome.assert_clean(2, messages);
    }
}

/// `--speed` outside 0.001..=1000000 is refused while the arguments are parsed.
#[test]
fn speeds_out_of_range_are_refused_at_parsing() {
    let dir = TempDir::new("replay-speed");
    let path = dir.write("t.jsonl", lines(&[HEADER, &row()]));
    for speed in [
        "1e-300", "0", "-1", "-0", "NaN", "inf", "-inf", "1e300", "0.0001", "fast",
    ] {
        replay_file(arg(&path), NOWHERE, &["--speed", speed])
            .run_blocking()
            .assert_clean(2, &["--speed", "0.001 to 1000000"]);
    }
}

/// Other flags at their extremes.
#[test]
fn block_size_and_model_flags_are_checked() {
    let dir = TempDir::new("replay-flags");
    let rows_only = dir.write("rows.jsonl", lines(&[&row()]));
    for block in ["0", "65537", "18446744073709551616", "-1", "1.5"] {
        replay_file(arg(&rows_only), NOWHERE, &["--block-size", block])
            .run_blocking()
            .assert_clean(2, &["--block-size"]);
    }
    lllm(&[
        "replay",
        arg(&rows_only),
        "--api-base",
        NOWHERE,
        "--model",
        "",
    ])
    .run_blocking()
    .assert_clean(2, &["--model"]);
    replay_file(arg(&rows_only), NOWHERE, &["--profile", "nope"])
        .run_blocking()
        .assert_clean(2, &["--profile"]);
}

/// A bad `--api-base` is a usage error, and a password in it is never printed.
#[test]
fn api_bases_are_checked_and_redacted() {
    let dir = TempDir::new("replay-url");
    let path = dir.write("t.jsonl", lines(&[HEADER, &row()]));
    for base in ["notaurl", "", "ftp://h/v1", "http://", "127.0.0.1:8000/v1"] {
        replay_file(arg(&path), base, &[])
            .run_blocking()
            .assert_clean(2, &["--api-base", "http://127.0.0.1:8000/v1"]);
    }
    replay_file(
        arg(&path),
        "ftp://admin:hunter2@h.invalid/v1?key=sk-leak",
        &[],
    )
    .run_blocking()
    .assert_clean(2, &["--api-base", "[redacted]"])
    .assert_never_shows("hunter2")
    .assert_never_shows("sk-leak");
    // A trace error after a good URL with credentials does not show them either.
    let bad = dir.write("bad.jsonl", lines(&[HEADER, "{"]));
    replay_file(arg(&bad), "http://admin:hunter2@127.0.0.1:1/v1", &[])
        .run_blocking()
        .assert_clean(2, &["line 2"])
        .assert_never_shows("hunter2");
}

/// Only regular files of at most 256 MiB are read: not a FIFO (which would block), a device (which
/// never ends), a folder, or a huge file.
#[test]
fn only_regular_files_of_bounded_size_are_read() {
    let dir = TempDir::new("replay-files");
    let fifo = dir.path("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    for path in [fifo.as_path(), std::path::Path::new("/dev/zero")] {
        replay_file(arg(path), NOWHERE, &[])
            .time_limit(Duration::from_secs(10))
            .run_blocking()
            .assert_clean(2, &["not a regular file"]);
    }
    replay_file(arg(&dir.0), NOWHERE, &[])
        .run_blocking()
        .assert_clean(2, &["is a folder"]);
    replay_file(arg(&dir.path("missing.jsonl")), NOWHERE, &[])
        .run_blocking()
        .assert_clean(2, &["cannot read the trace"]);
    // A sparse file of 257 MiB: refused by its size, before a byte is read.
    let huge = dir.write("huge.jsonl", HEADER);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&huge)
        .and_then(|f| f.set_len(257 * 1024 * 1024))
        .expect("sparse file");
    replay_file(arg(&huge), NOWHERE, &[])
        .run_blocking()
        .assert_clean(2, &["more than the 256 MiB"]);
}

/// Writes a file line by line, so that the test process itself stays small: the harness's memory
/// bound counts the largest process this test process started, and a child can be charged with its
/// parent's pages while it starts.
fn write_streamed(path: &std::path::Path, write: impl FnOnce(&mut dyn Write)) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    write(&mut file);
    file.flush().expect("flush");
}

/// A line longer than 16 MiB is cut while reading: memory stays bounded.
#[test]
fn an_endless_line_is_cut_at_16_mib() {
    let dir = TempDir::new("replay-line");
    let path = dir.path("long.jsonl");
    write_streamed(&path, |out| {
        writeln!(out, "{HEADER}").expect("write");
        let chunk = [b'['; 64 * 1024];
        for _ in 0..(17 * 16) {
            out.write_all(&chunk).expect("write");
        }
    });
    replay_file(arg(&path), NOWHERE, &[])
        .run_blocking()
        .assert_clean(2, &["line 2", "longer than 16 MiB"]);
}

/// Many tiny rows are read in memory proportional to them; an error at the end still names its line.
#[test]
fn many_tiny_rows_are_read_in_proportion() {
    let dir = TempDir::new("replay-many");
    let path = dir.path("many.jsonl");
    let template = row();
    write_streamed(&path, |out| {
        writeln!(out, "{HEADER}").expect("write");
        for i in 0..200_000 {
            let line = template.replace("\"s\"", &format!("\"s{}\"", i % 5000));
            writeln!(out, "{line}").expect("write");
        }
        writeln!(out, "{{\"session_id\": 1}}").expect("write");
    });
    replay_file(arg(&path), NOWHERE, &[])
        .run_blocking()
        .assert_clean(2, &["line 200002", "field `session_id`"]);
}

/// The largest prompts a trace may ask for, many at once, against a closed port: each request fails
/// (exit 1) but memory stays bounded by the in-flight budget, not by the trace.
#[test]
fn the_largest_prompts_stay_within_memory() {
    let dir = TempDir::new("replay-big");
    let ids = format!(
        "[{}]",
        (1..=16)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut rows = vec![HEADER.replace("16", "65536")];
    for i in 0..12 {
        rows.push(row_with("hash_ids", &ids).replace("\"s\"", &format!("\"s{i}\"")));
    }
    let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
    let path = dir.write("big.jsonl", lines(&refs));
    assert!(
        std::fs::metadata(&path).expect("trace").len() < 4096,
        "a trace of a few KiB"
    );
    replay_file(arg(&path), NOWHERE, &[])
        .time_limit(Duration::from_secs(60))
        .run_blocking()
        .assert_clean(1, &["12 of 12 requests failed"]);
}

/// Values at their limits are accepted and replayed: the limits are inclusive, and a credential in
/// the URL reaches the server without being printed.
#[tokio::test(flavor = "multi_thread")]
async fn values_at_their_limits_replay() {
    let server = StubServer::start().await.expect("server");
    let base = server
        .base_url()
        .replace("http://", "http://admin:hunter2@");
    let dir = TempDir::new("replay-limits");
    let max_ms = (7 * 24 * 3_600_000u64).to_string();
    let at_limits = row_with("output_length", "16777216")
        .replace("\"tool_wait_ms\":0", &format!("\"tool_wait_ms\":{max_ms}"))
        .replace("\"latency_ms\":1", &format!("\"latency_ms\":{max_ms}"))
        .replace("\"hash_ids\":[1,2]", "\"hash_ids\":[0,9007199254740991]")
        .replace('{', "{\"priority\": -2147483648, \"osl\": 16777216, ");
    let second = row_with("session_id", "\"t\"").replace("\"delay\":0", "\"delay\":1000");
    let path = dir.write("limits.jsonl", lines(&[HEADER, &at_limits, &second]));
    let outcome = replay_file(arg(&path), &base, &["--speed", "1000000", "--json"])
        .run()
        .await;
    outcome.assert_clean(0, &[]).assert_never_shows("hunter2");
    assert!(
        outcome
            .stdout_text()
            .contains("total: 2 requests in 2 sessions, 0 errors"),
        "{}",
        outcome.stdout_text()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests
        .iter()
        .any(|r| r.body["max_tokens"] == serde_json::json!(16_777_216)));
}

// --- agentic traces (dynamo.agentic_mooncake version 2) ---------------------------------------

const AGENTIC_HEADER: &str = r#"{"schema":"dynamo.agentic_mooncake","version":2,"block_size":4,"hash_id_scope":"local","source":{"format":"test","digest":"adversarial"}}"#;

/// A row of play `p`, session `s`, one block, waiting for `dependencies` (raw JSON).
fn agentic_row(id: &str, dependencies: &str) -> String {
    format!(
        r#"{{"request_id":"{id}","play_id":"p","session_id":"s","model":"m","input_length":4,"output_length":2,"hash_ids":[1],"not_before_ms":0,"dependencies":{dependencies}}}"#
    )
}

fn agentic_dep(id: &str, trigger: &str, relation: &str) -> String {
    format!(r#"{{"request_id":"{id}","trigger":"{trigger}","delay_ms":0,"relation":"{relation}"}}"#)
}

/// Hostile agentic traces: exit 2, the file, the line, the field and what is allowed.
#[test]
#[allow(clippy::print_stderr)]
fn malformed_agentic_traces_are_refused_with_line_and_field() {
    let dir = TempDir::new("replay-agentic-bad");
    let root = agentic_row("a", "[]");
    let cases: Vec<(&str, Vec<String>, Vec<&str>)> = vec![
        (
            "an unknown trigger",
            vec![root.clone(), agentic_row("b", &format!("[{}]", agentic_dep("a", "soon", "sequence")))],
            vec!["line 3: dependencies[0].trigger: `soon` is not one of completion, dispatch"],
        ),
        (
            "dispatch on a sequence edge",
            vec![root.clone(), agentic_row("b", &format!("[{}]", agentic_dep("a", "dispatch", "sequence")))],
            vec!["line 3: dependencies[0].trigger: `dispatch` is allowed only on a `spawn` dependency"],
        ),
        (
            "a cycle",
            vec![
                root.clone(),
                agentic_row("b", &format!("[{}]", agentic_dep("c", "completion", "join"))),
                agentic_row("c", &format!("[{}]", agentic_dep("b", "completion", "sequence"))),
            ],
            vec!["line 3: dependencies: the requests `b` → `c` → `b` wait for each other in a cycle"],
        ),
        (
            "an unknown dependency",
            vec![root.clone(), agentic_row("b", &format!("[{}]", agentic_dep("nowhere", "completion", "join")))],
            vec!["line 3: dependencies[0].request_id: `nowhere` is not the request_id of any request"],
        ),
        (
            "a wrong count of hash ids",
            vec![root.replace("\"hash_ids\":[1]", "\"hash_ids\":[1,2]")],
            vec!["line 2: hash_ids: 2 ids, but input_length 4 in blocks of 4 tokens needs exactly 1"],
        ),
        (
            "a dependency across plays",
            vec![
                root.clone(),
                agentic_row("b", &format!("[{}]", agentic_dep("a", "completion", "sequence")))
                    .replace("\"play_id\":\"p\"", "\"play_id\":\"q\""),
            ],
            vec!["line 3: dependencies[0].request_id: `a` is in play `p`, and this request in play `q`"],
        ),
        (
            "null dependencies",
            vec![agentic_row("a", "null")],
            vec!["line 2: dependencies: null is not allowed"],
        ),
        (
            "a duplicate request id",
            vec![root.clone(), root.clone()],
            vec!["line 3: request_id: `a` is already the request_id of line 2"],
        ),
        (
            "an input_length of 0",
            vec![root.replace("\"input_length\":4", "\"input_length\":0")],
            vec!["line 2: input_length: 0 is out of range; use a whole number of tokens from 1"],
        ),
        (
            "version 3",
            vec![root.clone()],
            vec!["line 1: version: 3 is not 2"],
        ),
    ];
    for (name, rows, messages) in cases {
        let header = if name == "version 3" {
            AGENTIC_HEADER.replace("\"version\":2", "\"version\":3")
        } else {
            AGENTIC_HEADER.to_owned()
        };
        let mut text = vec![header.as_str()];
        text.extend(rows.iter().map(String::as_str));
        let path = dir.write("t.jsonl", lines(&text));
        let mut expected = vec!["t.jsonl: "];
        expected.extend(messages);
        eprintln!("case: {name}");
        replay_file(arg(&path), NOWHERE, &[])
            .run_blocking()
            .assert_clean(2, &expected);
    }
}

/// A long agentic chain with a cycle at its end is read in memory proportional to it, and the cycle
/// still names its requests and line.
#[test]
fn a_long_agentic_chain_is_read_in_proportion() {
    let dir = TempDir::new("replay-agentic-many");
    let path = dir.path("chain.jsonl");
    let rows = 200_000;
    write_streamed(&path, |out| {
        writeln!(out, "{AGENTIC_HEADER}").expect("write");
        // Rows in reverse order: each waits for one written after it.
        for i in (1..rows).rev() {
            let dep = agentic_dep(&format!("r{}", i - 1), "completion", "sequence");
            writeln!(
                out,
                "{}",
                agentic_row(&format!("r{i}"), &format!("[{dep}]"))
            )
            .expect("write");
        }
        let back = agentic_dep("r199999", "completion", "join");
        writeln!(out, "{}", agentic_row("r0", &format!("[{back}]"))).expect("write");
    });
    replay_file(arg(&path), NOWHERE, &[])
        .run_blocking()
        .assert_clean(
            2,
            &[
                "line 2: dependencies: the requests `r199999` → `r199998`",
                "(200000 requests in all)",
            ],
        );
}

/// A trace recorded with `--trace-format agentic-mooncake` replays: every request once, each sent
/// no earlier than what it waits for, and `--json` names each request and when it was sent.
#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_agentic_trace_replays_with_its_graph() {
    let dir = TempDir::new("replay-agentic-run");
    let trace = dir.path("agentic.jsonl");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tactic = root.join("examples/plan_and_critique/tactic.yaml");
    lllm(&[
        "run",
        arg(&tactic),
        "--dry-run",
        "--input",
        "a trip",
        "--trace",
        arg(&trace),
        "--trace-format",
        "agentic-mooncake",
        "--trace-block-size",
        "16",
    ])
    .cwd(&root)
    .run()
    .await
    .assert_clean(0, &[]);
    let recorded: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert!(recorded.len() >= 2, "{recorded:?}");

    let server = StubServer::start().await.expect("server");
    let outcome = replay_file(
        arg(&trace),
        &server.base_url(),
        &["--json", "--speed", "50"],
    )
    .run()
    .await;
    outcome.assert_clean(0, &[]);
    let stdout = outcome.stdout_text();
    let sent: std::collections::HashMap<String, serde_json::Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON line"))
        .map(|v| (v["request_id"].as_str().expect("request_id").to_owned(), v))
        .collect();
    assert_eq!(sent.len(), recorded.len(), "{stdout}");
    assert_eq!(server.requests().len(), recorded.len());
    let ms = |v: &serde_json::Value, key: &str| v[key].as_f64().expect(key);
    for row in &recorded {
        let this = &sent[row["request_id"].as_str().expect("id")];
        assert!(this["error"].is_null(), "{this}");
        assert_eq!(this["play_id"], row["play_id"]);
        assert_eq!(this["session_id"], row["session_id"]);
        for dependency in row["dependencies"].as_array().expect("dependencies") {
            let on = &sent[dependency["request_id"].as_str().expect("dependency")];
            let answered = ms(on, "dispatched_ms") + ms(on, "latency_ms");
            let delay = dependency["delay_ms"].as_f64().expect("delay") / 50.0;
            assert!(
                ms(this, "dispatched_ms") + 0.001 >= answered + delay,
                "{this} sent before {on} was answered + {delay} ms"
            );
        }
    }
}
