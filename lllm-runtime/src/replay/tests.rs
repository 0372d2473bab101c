//! The replay's rules, one test each: every limit, every overflow, and a fuzz of the reader.

use super::limits::*;
use super::*;
use std::path::Path;

const HEADER: &str = r#"{"format": "lllm-trace/1", "block_size": 16, "blocks": "chars/4"}"#;

/// A valid row of session `s`, with `field` set to the JSON `value` (or removed when it is empty).
fn row_with(field: &str, value: &str) -> String {
    let mut row: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
        r#"{"session_id": "s", "agent": "a", "timestamp": 0, "delay": 0, "tool_wait_ms": 0,
            "input_length": 3, "output_length": 2, "hash_ids": [1, 2], "latency_ms": 1}"#,
    )
    .expect("row");
    if value.is_empty() {
        row.remove(field);
        return serde_json::Value::Object(row).to_string();
    }
    let text = serde_json::Value::Object(row).to_string();
    // Splice the raw text in, so that values JSON cannot hold as numbers (1e400) reach the reader.
    let marker = "\"__value__\"";
    let mut with: serde_json::Value = serde_json::from_str(&text).expect("row");
    with[field] = serde_json::Value::String("__value__".into());
    with.to_string().replace(marker, value)
}

fn trace(rows: &[String]) -> String {
    let mut text = String::from(HEADER);
    for row in rows {
        text.push('\n');
        text.push_str(row);
    }
    text
}

/// The error of reading `text`, as a line number and message.
fn refused(text: &str) -> (usize, String) {
    match Trace::parse(text, 64) {
        Ok(trace) => panic!("accepted: {} requests", trace.requests()),
        Err(ReplayError::Format { line, message }) => (line, message),
        Err(other) => panic!("not a format error: {other}"),
    }
}

#[track_caller]
fn assert_refused(text: &str, line: usize, needles: &[&str]) {
    let (at, message) = refused(text);
    assert_eq!(at, line, "{message}");
    for needle in needles {
        assert!(message.contains(needle), "missing `{needle}` in: {message}");
    }
}

fn options(speed: f64) -> ReplayOptions {
    ReplayOptions {
        api_base: "http://127.0.0.1:1/v1".into(),
        model: "m".into(),
        profile: Profile::Dynamo,
        session: true,
        speed,
        block_size: 64,
    }
}

#[test]
fn block_texts_are_stable_and_distinct() {
    let text = |id, tokens| {
        let mut out = String::new();
        push_block(&mut out, id, tokens);
        out
    };
    assert_eq!(text(7, 64), text(7, 64));
    assert_ne!(text(7, 64), text(8, 64));
    assert_eq!(text(1, 64).split(' ').count(), 64);
}

#[test]
fn traces_are_checked_line_by_line() {
    let other = r#"{"format": "other", "block_size": 1, "blocks": "x"}"#;
    assert_refused(other, 1, &["field `format`", "is not `lllm-trace/1`"]);
    assert_refused(
        &trace(&["{\"oops\": 1}".into()]),
        2,
        &["missing field `session_id`"],
    );
    let row = row_with("agent", "\"a\"");
    let read = Trace::parse(&row, 32).expect("rows only");
    assert_eq!(
        (read.block_size(), read.requests(), read.sessions()),
        (32, 1, 1)
    );
}

#[test]
fn the_block_size_is_from_1_to_65536() {
    for bad in ["0", "65537", "4000000000", "18446744073709551615"] {
        let header = HEADER.replace("16", bad);
        assert_refused(
            &format!("{header}\n{}", row_with("agent", "\"a\"")),
            1,
            &["field `block_size`", "from 1 to 65536"],
        );
    }
    for bad in ["-1", "1.5", "\"16\"", "1e400"] {
        let header = HEADER.replace("16", bad);
        assert_refused(
            &format!("{header}\n{}", row_with("agent", "\"a\"")),
            1,
            &["block_size"],
        );
    }
    let header = HEADER.replace("16", "65536");
    let read = Trace::parse(&format!("{header}\n{}", row_with("agent", "\"a\"")), 64).expect("max");
    assert_eq!(read.block_size(), 65536);
    // The default block size of a rows-only trace is an option, checked the same way.
    for bad in [0, MAX_BLOCK_TOKENS + 1, usize::MAX] {
        let err = Trace::parse(&row_with("agent", "\"a\""), bad).expect_err("default block");
        assert!(
            matches!(err, ReplayError::BlockSize { tokens } if tokens == bad),
            "{err}"
        );
    }
}

#[test]
fn a_prompt_is_at_most_max_prompt_tokens() {
    // 65536-token blocks: at most 16 ids.
    let header = HEADER.replace("16", "65536");
    let ids = |n: u64| {
        format!(
            "[{}]",
            (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        )
    };
    let at_limit = format!("{header}\n{}", row_with("hash_ids", &ids(16)));
    Trace::parse(&at_limit, 64).expect("16 blocks of 65536 tokens");
    let over = format!("{header}\n{}", row_with("hash_ids", &ids(17)));
    let (line, message) = refused(&over);
    assert_eq!(line, 2);
    assert!(
        message.contains("field `hash_ids`") && message.contains("1048576"),
        "{message}"
    );
    // The prompt's size bound holds for the largest prompt, and the text stays under it.
    let read = Trace::parse(&at_limit, 64).expect("read");
    let request = &read.sessions[0].requests[0];
    let bound = prompt_bytes(request, read.block_size);
    assert!(
        bound <= MAX_IN_FLIGHT_PROMPT_BYTES,
        "one prompt always fits"
    );
    assert!(prompt(request, read.block_size).len() as u64 <= bound);
}

#[test]
fn block_ids_are_at_most_2_pow_53_minus_1() {
    Trace::parse(&row_with("hash_ids", &format!("[{MAX_HASH_ID}]")), 64).expect("max id");
    assert_refused(
        &trace(&[row_with("hash_ids", &format!("[1, {}]", MAX_HASH_ID + 1))]),
        2,
        &["field `hash_ids`, item 2", "out of range"],
    );
    for bad in [
        "[-1]", "[1.5]", "[\"1\"]", "[null]", "[[1]]", "1", "\"1,2\"",
    ] {
        assert_refused(
            &trace(&[row_with("hash_ids", bad)]),
            2,
            &["field `hash_ids`"],
        );
    }
}

#[test]
fn times_are_at_most_7_days_and_never_overflow() {
    for field in [
        "timestamp",
        "delay",
        "tool_wait_ms",
        "latency_ms",
        "ttft_ms",
    ] {
        Trace::parse(&row_with(field, &MAX_SCHEDULE_MS.to_string()), 64).expect(field);
        for bad in [
            (MAX_SCHEDULE_MS + 1).to_string(),
            u64::MAX.to_string(),
            "18446744073709551616".into(),
            "-1".into(),
            "1.5".into(),
            "1e400".into(),
        ] {
            assert_refused(
                &trace(&[row_with(field, &bad)]),
                2,
                &[&format!("field `{field}`")],
            );
        }
    }
}

#[test]
fn a_session_schedule_is_at_most_7_days_in_all() {
    let half = (MAX_SCHEDULE_MS / 2 + 1).to_string();
    let first = row_with("timestamp", &half);
    let second = row_with("delay", &half);
    assert_refused(
        &trace(&[first.clone(), second.clone()]),
        3,
        &["field `delay`", "session `s`", "7 days"],
    );
    // Other sessions have their own schedule.
    let other = second.replace("\"session_id\":\"s\"", "\"session_id\":\"t\"");
    Trace::parse(&trace(&[first, other]), 64).expect("two sessions");
}

#[test]
fn token_counts_are_at_most_2_pow_24() {
    for field in ["input_length", "output_length", "cached_tokens", "osl"] {
        Trace::parse(&row_with(field, &MAX_TOKENS.to_string()), 64).expect(field);
        for bad in [
            (MAX_TOKENS + 1).to_string(),
            u64::MAX.to_string(),
            "-3".into(),
            "2.5".into(),
        ] {
            assert_refused(
                &trace(&[row_with(field, &bad)]),
                2,
                &[&format!("field `{field}`")],
            );
        }
    }
}

#[test]
fn priority_fits_32_bits() {
    Trace::parse(&row_with("priority", "-2147483648"), 64).expect("i32::MIN");
    for bad in ["2147483648", "-2147483649", "9223372036854775808", "1.5"] {
        assert_refused(
            &trace(&[row_with("priority", bad)]),
            2,
            &["field `priority`"],
        );
    }
}

#[test]
fn a_recorded_profile_is_one_lllm_knows() {
    let needles = [
        "field `profile`",
        "one of dynamo, vllm, sglang, openai",
        "\"tgi\"",
    ];
    let header = HEADER.replace('}', r#", "profile": "tgi"}"#);
    assert_refused(
        &format!("{header}\n{}", row_with("agent", "\"a\"")),
        1,
        &needles,
    );
    assert_refused(&trace(&[row_with("profile", "\"tgi\"")]), 2, &needles);
    assert_refused(&trace(&[row_with("profile", "3")]), 2, &["field `profile`"]);
    let header = HEADER.replace('}', r#", "profile": "vllm"}"#);
    let read = Trace::parse(
        &format!("{header}\n{}", row_with("profile", "\"dynamo\"")),
        64,
    )
    .expect("known profiles");
    assert_eq!(
        read.sessions[0].requests[0].sent_with,
        Some(Profile::Dynamo)
    );
    let read = Trace::parse(&format!("{header}\n{}", row_with("agent", "\"a\"")), 64)
        .expect("the header's");
    assert_eq!(read.sessions[0].requests[0].sent_with, Some(Profile::Vllm));
    let read = Trace::parse(&trace(&[row_with("agent", "\"a\"")]), 64).expect("none");
    assert_eq!(read.sessions[0].requests[0].sent_with, None);
}

#[test]
fn session_ids_must_fit_a_header() {
    let long = format!("\"{}\"", "s".repeat(257));
    for bad in ["\"\"", "\"a b\"", "\"a\\nb\"", "\"é\"", long.as_str()] {
        assert_refused(
            &trace(&[row_with("session_id", bad)]),
            2,
            &["field `session_id`"],
        );
        assert_refused(
            &trace(&[row_with("parent_session_id", bad)]),
            2,
            &["field `parent_session_id`"],
        );
    }
    for bad in ["1", "null", "[]"] {
        assert_refused(
            &trace(&[row_with("session_id", bad)]),
            2,
            &["field `session_id`"],
        );
    }
}

#[test]
fn malformed_lines_name_their_line_and_field() {
    assert_refused(
        &trace(&[row_with("agent", "\"a\""), "{".into()]),
        3,
        &["not valid JSON"],
    );
    assert_refused(
        &trace(&["[1, 2]".into()]),
        2,
        &["JSON object, not an array"],
    );
    assert_refused(
        &trace(&[row_with("agent", "")]),
        2,
        &["missing field `agent`", "every row needs"],
    );
    assert_refused(
        &trace(&[row_with("lengths_estimated", "1")]),
        2,
        &["field `lengths_estimated`"],
    );
    let duplicate = row_with("agent", "\"a\"").replacen('{', "{\"delay\": 1, ", 1);
    assert_refused(&trace(&[duplicate]), 2, &["duplicate field `delay`"]);
    assert_refused(&format!("{HEADER}\n{HEADER}"), 2, &["a second header"]);
    assert_refused("not json", 1, &["not valid JSON"]);
    assert_refused("42", 1, &["must be a JSON object"]);
    assert_refused(
        r#"{"format": "lllm-trace/1", "blocks": "x"}"#,
        1,
        &["missing field `block_size`"],
    );
    // Unknown keys are allowed: the rows are a superset of Mooncake's, and may grow.
    Trace::parse(&trace(&[row_with("future_field", "{}")]), 64).expect("extra key");
}

#[test]
fn empty_and_header_only_traces_are_refused() {
    assert_refused("", 1, &["the trace is empty"]);
    assert_refused("\n  \n\n", 1, &["the trace is empty"]);
    assert_refused(HEADER, 1, &["header but no rows"]);
    assert_refused(&format!("\n{HEADER}\n\n"), 2, &["header but no rows"]);
}

#[test]
fn bytes_are_read_within_bounds() {
    // Not UTF-8.
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(b"{\"session_id\": \"\xff\"}\n");
    match Trace::read(&bytes[..], 64) {
        Err(ReplayError::Format { line: 2, message }) => {
            assert!(message.contains("not UTF-8"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // An endless line is cut at MAX_LINE_BYTES, not read to its end.
    let endless = std::io::BufReader::new(std::io::Read::chain(
        HEADER.as_bytes(),
        std::io::Read::chain(&b"\n"[..], std::io::repeat(b' ')),
    ));
    match Trace::read(endless, 64) {
        Err(ReplayError::Format { line: 2, message }) => {
            assert!(message.contains("longer than 16 MiB"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // The whole trace is bounded too, and so are its rows.
    let text = trace(&[row_with("agent", "\"a\""), row_with("agent", "\"b\"")]);
    let small = Trace::read_within(text.as_bytes(), 64, 100, MAX_ROWS).expect_err("bytes");
    assert!(
        small.to_string().contains("larger than 100 bytes"),
        "{small}"
    );
    let few = Trace::read_within(text.as_bytes(), 64, MAX_TRACE_BYTES, 1).expect_err("rows");
    assert!(
        few.to_string().starts_with("line 3: more than 1 requests"),
        "{few}"
    );
    // A byte-order mark and CRLF line ends are fine.
    let windows = format!("\u{feff}{}", text.replace('\n', "\r\n"));
    assert_eq!(Trace::parse(&windows, 64).expect("crlf").requests(), 2);
}

#[test]
fn only_regular_files_are_opened() {
    let dir = std::env::temp_dir();
    let err = Trace::open(&dir, 64).expect_err("a folder");
    assert!(err.to_string().contains("is a folder"), "{err}");
    let err = Trace::open(Path::new("/dev/zero"), 64).expect_err("a device");
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let err = Trace::open(Path::new("/no/such/trace.jsonl"), 64).expect_err("missing");
    assert!(
        matches!(
            err,
            ReplayError::File {
                source: Some(_),
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn speeds_are_from_0_001_to_1000000() {
    for bad in [
        0.0,
        -1.0,
        1e-300,
        1e300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0009,
    ] {
        let err = check_speed(bad).expect_err("bad speed");
        assert!(err.to_string().contains("from 0.001 to 1000000"), "{err}");
        assert!(options(bad).check().is_err());
    }
    for good in [MIN_SPEED, 1.0, MAX_SPEED] {
        check_speed(good).expect("good speed");
    }
}

#[test]
fn scaled_waits_cannot_overflow() {
    assert_eq!(scaled(1000.0, 1.0), Duration::from_secs(1));
    assert_eq!(scaled(1000.0, 2.0), Duration::from_millis(500));
    assert_eq!(scaled(1.5, 1.0), Duration::from_micros(1500));
    // The longest schedule at the slowest speed is still a valid duration.
    let longest = scaled(MAX_SCHEDULE_MS as f64, MIN_SPEED);
    assert!(longest > Duration::from_secs(86_400) && longest <= Duration::from_secs(366 * 86_400));
    // Even values the reader refuses, at speeds the options refuse, give a duration, not a panic.
    for (ms, speed) in [
        (u64::MAX as f64, MIN_SPEED),
        (u64::MAX as f64, 1e-300),
        (1.0, 0.0),
        (1.0, f64::NAN),
        (1.0, -1.0),
        (f64::MAX, 1.0),
        (f64::INFINITY, 1.0),
        (-1.0, 1.0),
        (f64::NAN, 1.0),
    ] {
        let _ = scaled(ms, speed);
    }
    assert_eq!(scaled(-1.0, 1.0), Duration::ZERO);
    assert_eq!(
        scaled(u64::MAX as f64, MAX_SPEED),
        scaled(u64::MAX as f64, MAX_SPEED)
    );
}

#[test]
fn api_bases_are_http_urls_and_never_shown_with_credentials() {
    for good in ["http://127.0.0.1:8000/v1", "https://api.example.invalid/v1"] {
        check_api_base(good).expect(good);
    }
    for bad in [
        "notaurl",
        "",
        "ftp://h/v1",
        "http://",
        "file:///etc/passwd",
        "127.0.0.1:8000",
    ] {
        let err = check_api_base(bad).expect_err(bad);
        assert!(
            err.to_string().contains("http://127.0.0.1:8000/v1"),
            "{err}"
        );
    }
    let err = check_api_base("ftp://user:hunter2@h/v1?key=sk-secret").expect_err("ftp");
    let shown = err.to_string();
    assert!(
        !shown.contains("hunter2") && !shown.contains("sk-secret"),
        "{shown}"
    );
}

#[test]
fn options_are_checked_before_anything_is_sent() {
    let mut empty_model = options(1.0);
    empty_model.model = " ".into();
    assert!(matches!(empty_model.check(), Err(ReplayError::NoModel)));
    for block in [0, MAX_BLOCK_TOKENS + 1] {
        let mut bad = options(1.0);
        bad.block_size = block;
        let error = bad.check().expect_err("block");
        assert!(
            matches!(error, ReplayError::BlockSize { tokens } if tokens == block),
            "{error}"
        );
        assert!(error.to_string().contains("the block size"), "{error}");
    }
    options(1.0).check().expect("good options");
}

/// A row of `session` at `timestamp` with `ids` blocks, as text.
fn session_row(session: &str, ids: usize) -> String {
    let ids: Vec<String> = (1..=ids).map(|i| i.to_string()).collect();
    row_with("hash_ids", &format!("[{}]", ids.join(","))).replace(
        "\"session_id\":\"s\"",
        &format!("\"session_id\":\"{session}\""),
    )
}

#[tokio::test]
async fn prompt_text_in_flight_is_bounded() {
    use crate::testing::{StubReply, StubServer};
    let server = StubServer::start().await.expect("server");
    let mut opts = options(1.0);
    opts.api_base = server.base_url();
    // Sessions that all start at once with 6 blocks of 65536 tokens (under the stub's 2 MB body
    // limit): only a few fit the in-flight budget.
    let header = HEADER.replace("16", "65536");
    let sessions = 20;
    let rows: Vec<String> = (0..sessions)
        .map(|i| session_row(&format!("big{i}"), 6))
        .collect();
    for _ in 0..sessions {
        server.push(StubReply::text("ok").delay(Duration::from_millis(200)));
    }
    let text = format!("{header}\n{}", rows.join("\n"));
    let report = replay(&text, &opts).await.expect("replays");
    assert_eq!(report.requests.len(), sessions);
    assert!(
        report.requests.iter().all(|r| r.error.is_none()),
        "{:?}",
        report.requests[0].error
    );
    let most = (MAX_IN_FLIGHT_PROMPT_BYTES / (6 * 65_536 * 6)) as usize;
    assert!(most < sessions);
    assert!(
        (1..=most).contains(&server.most_in_flight()),
        "{} in flight, budget {most}",
        server.most_in_flight()
    );
}

#[tokio::test]
async fn requests_in_flight_are_at_most_max_in_flight() {
    use crate::testing::{StubReply, StubServer};
    let server = StubServer::start().await.expect("server");
    let mut opts = options(1.0);
    opts.api_base = server.base_url();
    let sessions = MAX_IN_FLIGHT + 44;
    let rows: Vec<String> = (0..sessions)
        .map(|i| session_row(&format!("s{i}"), 1))
        .collect();
    for _ in 0..sessions {
        server.push(StubReply::text("ok").delay(Duration::from_millis(300)));
    }
    let report = replay(&trace(&rows), &opts).await.expect("replays");
    assert_eq!(report.requests.len(), sessions);
    assert!(
        report.requests.iter().all(|r| r.error.is_none()),
        "{:?}",
        report.requests[0].error
    );
    assert!(
        server.most_in_flight() <= MAX_IN_FLIGHT,
        "{} in flight",
        server.most_in_flight()
    );
}

#[tokio::test]
async fn a_replay_keeps_sessions_grouped_in_trace_order() {
    use crate::testing::StubServer;
    let server = StubServer::start().await.expect("server");
    let mut opts = options(MAX_SPEED);
    opts.api_base = server.base_url();
    let rows = [
        session_row("b", 1),
        session_row("a", 2),
        session_row("b", 3).replace("\"delay\":0", "\"delay\":1000"),
    ];
    let report = replay(&trace(&rows), &opts).await.expect("replays");
    let order: Vec<&str> = report
        .requests
        .iter()
        .map(|r| r.session_id.as_str())
        .collect();
    assert_eq!(order, ["a", "b", "b"]);
    assert_eq!(server.requests().len(), 3);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// Any JSON value a hostile trace might put in a field.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            (0u64..100).prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| Value::from(f).to_string()),
            Just("1e400".to_owned()),
            "[a-z :\\n\"\\\\é]{0,12}".prop_map(|s| Value::from(s).to_string()),
            prop::collection::vec(any::<u64>(), 0..6).prop_map(|v| Value::from(v).to_string()),
            prop::collection::vec(0u64..50, 0..6).prop_map(|v| Value::from(v).to_string()),
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("{}".to_owned()),
        ]
    }

    /// A line: a valid row with one field replaced or dropped, a header with one field replaced, or
    /// raw bytes.
    fn line() -> impl Strategy<Value = Vec<u8>> {
        let fields = prop::sample::select(vec![
            "session_id",
            "parent_session_id",
            "agent",
            "timestamp",
            "delay",
            "tool_wait_ms",
            "input_length",
            "output_length",
            "cached_tokens",
            "hash_ids",
            "priority",
            "osl",
            "latency_ms",
            "ttft_ms",
        ]);
        prop_oneof![
            4 => (fields.clone(), value()).prop_map(|(f, v)| row_with(f, &v).into_bytes()),
            1 => fields.prop_map(|f| row_with(f, "").into_bytes()),
            1 => value().prop_map(|v| HEADER.replace("16", &v).into_bytes()),
            1 => prop::collection::vec(any::<u8>(), 0..64),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 400,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Whatever the lines, reading ends in a trace that keeps every limit, or a format error with
        /// a line number, never a panic.
        #[test]
        fn the_reader_never_panics(lines in prop::collection::vec(line(), 0..8), header in any::<bool>()) {
            let mut bytes = Vec::new();
            if header {
                bytes.extend_from_slice(HEADER.as_bytes());
                bytes.push(b'\n');
            }
            for line in &lines {
                bytes.extend_from_slice(line);
                bytes.push(b'\n');
            }
            match Trace::read(&bytes[..], 64) {
                Ok(trace) => {
                    prop_assert!(trace.requests() > 0);
                    prop_assert!((1..=MAX_BLOCK_TOKENS).contains(&trace.block_size()));
                    for session in &trace.sessions {
                        let mut schedule = 0u64;
                        for (i, r) in session.requests.iter().enumerate() {
                            prop_assert!(r.hash_ids.len() as u64 * trace.block_size() as u64 <= MAX_PROMPT_TOKENS);
                            prop_assert!(r.hash_ids.iter().all(|id| *id <= MAX_HASH_ID));
                            prop_assert!(r.output_length <= MAX_TOKENS);
                            schedule += if i == 0 { r.timestamp } else { r.delay };
                        }
                        prop_assert!(schedule <= MAX_SCHEDULE_MS);
                    }
                }
                Err(ReplayError::Format { line, message }) => {
                    prop_assert!(line >= 1 && line <= lines.len() + 2, "line {}", line);
                    prop_assert!(!message.is_empty());
                }
                Err(other) => prop_assert!(false, "unexpected error: {}", other),
            }
        }

        /// Arbitrary bytes: the same.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            match Trace::read(&bytes[..], 64) {
                Ok(trace) => prop_assert!(trace.requests() > 0),
                Err(ReplayError::Format { line, .. }) => prop_assert!(line >= 1),
                Err(other) => prop_assert!(false, "unexpected error: {}", other),
            }
        }
    }
}

mod agentic_traces {
    use super::*;

    const AGENTIC: &str = r#"{"schema": "dynamo.agentic_mooncake", "version": 2, "block_size": 4, "hash_id_scope": "local", "source": {"format": "t", "digest": "d"}}"#;

    fn agentic_row(id: &str, session: &str, input: u64, ids: &str, deps: &str) -> String {
        format!(
            r#"{{"request_id": "{id}", "play_id": "p", "session_id": "{session}", "model": "m", "input_length": {input}, "output_length": 3, "hash_ids": {ids}, "not_before_ms": 0, "dependencies": {deps}}}"#
        )
    }

    fn graph(trace: &Trace) -> &agentic::Graph {
        trace.graph.as_ref().expect("an agentic trace")
    }

    #[test]
    fn the_last_block_is_as_long_as_input_length_says() {
        let text = format!("{AGENTIC}\n{}", agentic_row("a", "s", 6, "[7, 8]", "[]"));
        let trace = Trace::parse(&text, 64).expect("reads");
        let request = &graph(&trace).nodes[0].request;
        assert_eq!(request.last_block, Some(2));
        let text = prompt(request, trace.block_size);
        assert_eq!(text.split_whitespace().count(), 6, "{text}");
        assert!(text.len() as u64 <= prompt_bytes(request, trace.block_size));
        // The partial block is the start of the whole one: prefixes stay shared.
        let mut whole = String::new();
        push_block(&mut whole, 8, 4);
        let last = text.lines().nth(1).expect("two blocks");
        assert!(whole.starts_with(last), "{whole} / {last}");
    }

    #[test]
    fn a_forks_turns_all_name_its_parent() {
        let spawn =
            r#"[{"request_id": "m1", "trigger": "dispatch", "delay_ms": 0, "relation": "spawn"}]"#;
        let next = r#"[{"request_id": "f1", "trigger": "completion", "delay_ms": 2.5, "relation": "sequence"}]"#;
        let own = r#"[{"request_id": "m1", "trigger": "completion", "delay_ms": 0, "relation": "spawn"}]"#;
        let text = [
            AGENTIC.to_owned(),
            agentic_row("f2", "fork", 4, "[1]", next),
            agentic_row("m1", "main", 4, "[1]", "[]"),
            agentic_row("f1", "fork", 4, "[1]", spawn),
            agentic_row("m2", "main", 4, "[1]", own),
        ]
        .join("\n");
        let trace = Trace::parse(&text, 64).expect("reads");
        let parents: Vec<Option<&str>> = graph(&trace)
            .nodes
            .iter()
            .map(|n| n.request.parent.as_deref())
            .collect();
        // A spawn from its own session names no parent.
        assert_eq!(parents, [Some("main"), None, Some("main"), None]);
        assert_eq!(trace.sessions(), 2);
        let f2 = &graph(&trace).nodes[0];
        assert_eq!(f2.dependencies.len(), 1);
        assert_eq!(f2.dependencies[0].from, 2);
        assert_eq!(f2.dependencies[0].delay_ms, 2.5);
    }

    #[test]
    fn not_before_is_shifted_to_start_at_0() {
        let rows: Vec<String> = [("a", 5000.0), ("b", 5250.5)]
            .iter()
            .map(|(id, at)| {
                agentic_row(id, "s", 4, "[1]", "[]")
                    .replace("\"not_before_ms\": 0", &format!("\"not_before_ms\": {at}"))
            })
            .collect();
        let trace = Trace::parse(&format!("{AGENTIC}\n{}", rows.join("\n")), 64).expect("reads");
        let at: Vec<f64> = graph(&trace)
            .nodes
            .iter()
            .map(|n| n.not_before_ms)
            .collect();
        assert_eq!(at, [0.0, 250.5]);
    }

    #[test]
    fn agentic_traces_keep_the_byte_and_row_bounds() {
        let text = [
            AGENTIC.to_owned(),
            agentic_row("a", "s", 4, "[1]", "[]"),
            agentic_row("b", "s", 4, "[1]", "[]"),
        ]
        .join("\n");
        match Trace::read_within(text.as_bytes(), 64, MAX_TRACE_BYTES, 1) {
            Err(ReplayError::Format { line: 3, message }) => {
                assert!(message.contains("more than 1 requests"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        match Trace::read_within(text.as_bytes(), 64, 200, MAX_ROWS) {
            Err(ReplayError::Format { message, .. }) => {
                assert!(message.contains("larger than 200 bytes"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        // The prompt bound: blocks × block size ≤ MAX_PROMPT_TOKENS, as for lllm traces.
        let big = AGENTIC.replace("\"block_size\": 4", "\"block_size\": 65536");
        let ids = format!(
            "[{}]",
            (1..=17)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let over = agentic_row("a", "s", 16 * 65_536 + 1, &ids, "[]");
        assert_refused(
            &format!("{big}\n{over}"),
            2,
            &[
                "input_length: 1048577 tokens in blocks of 65536",
                "at most 16 blocks",
            ],
        );
        // Block ids are only seeds of text: any u64 is one.
        let any = agentic_row("a", "s", 4, &format!("[{}]", u64::MAX), "[]");
        Trace::parse(&format!("{AGENTIC}\n{any}"), 64).expect("a u64 block id");
    }
}
