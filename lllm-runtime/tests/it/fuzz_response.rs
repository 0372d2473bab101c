//! Fuzzing of the answer parsers: the whole-body parser and the server-sent-event parser get arbitrary
//! bytes and structure-aware mutations of valid answers (bytes flipped, cut, inserted, deleted,
//! duplicated; streams split anywhere; small limits). Every outcome must be an answer or a typed error
//! whose text is short and printable; nothing may panic.
//!
//! The normal test run spends a few seconds. `LLLM_FUZZ_SECONDS=N` runs for N seconds instead
//! (`LLLM_FUZZ_SEED=S` picks the seed); the number of cases run is reported on stderr.

#![allow(clippy::print_stderr)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use lllm_runtime::invoker::ResponseLimits;
use lllm_runtime::testing::{parse_completion, parse_event_stream};
use lllm_runtime::{ChatResponse, InvokeError};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

/// A fuzz case.
#[derive(Debug, Clone)]
enum Case {
    /// A body for the whole-answer parser.
    Body(Vec<u8>),
    /// An event stream, split at these points, read with these limits (event, stream).
    Stream {
        bytes: Vec<u8>,
        cuts: Vec<Index>,
        limits: (usize, usize),
    },
}

/// One change to a byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Insert(Index, &'static [u8]),
    Delete(Index, usize),
    Truncate(Index),
    Duplicate(Index, usize),
}

/// Bytes that mean something to JSON, SSE or UTF-8.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"42",
    b"-1e999",
    b"18446744073709551616",
    b"\"\\ud800\"",
    b"\\u0000",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"data: ",
    b"data: [DONE]\n\n",
    b"event: ping\n",
    b": keepalive\n\n",
    b"\xff\xfe",
    b"\xe2\x82",
    b"\x1f\x8b\x08\x00",
    b"\"choices\"",
    b"\"content\"",
    b"\"tool_calls\"",
    b"\"finish_reason\": \"stop\"",
    b"\"usage\": {\"prompt_tokens\": 1}",
    b"\"error\": {\"message\": \"x\"}",
    b"{\"index\": 4294967295}",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), proptest::sample::select(TOKENS))
            .prop_map(|(i, t)| Mutation::Insert(i, t)),
        (any::<Index>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), 1usize..64).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let at = |i: &Index, len: usize| if len == 0 { 0 } else { i.index(len + 1) };
        match m {
            Mutation::Flip(i, b) if !bytes.is_empty() => {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            Mutation::Flip(..) => {}
            Mutation::Insert(i, t) => {
                let at = at(i, bytes.len());
                bytes.splice(at..at, t.iter().copied());
            }
            Mutation::Delete(i, n) => {
                let at = at(i, bytes.len());
                let end = (at + n).min(bytes.len());
                bytes.drain(at..end);
            }
            Mutation::Truncate(i) => {
                let at = at(i, bytes.len());
                bytes.truncate(at);
            }
            Mutation::Duplicate(i, n) => {
                let at = at(i, bytes.len());
                let end = (at + n).min(bytes.len());
                let piece = bytes[at..end].to_vec();
                bytes.splice(at..at, piece);
            }
        }
    }
    bytes
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z ]{0,12}",
        any::<String>(),
        Just("é漢\u{0}\u{1b}[31m\"\\".to_owned()),
    ]
}

fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("{\"a\": 1}")),
        text().prop_map(Value::from),
        Just(json!({"a": [1, 2.5, null, true, "x"], "b": {}})),
        Just(json!(7)),
        Just(Value::Null),
    ]
}

fn tool_call() -> impl Strategy<Value = Value> {
    (
        proptest::option::of("[a-z]{1,6}"),
        text(),
        arguments(),
        proptest::option::of(0u32..4),
    )
        .prop_map(|(id, name, args, index)| {
            json!({"index": index, "id": id, "type": "function",
                   "function": {"name": name, "arguments": args}})
        })
}

fn usage() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        (0u64..1000, 0u64..1000).prop_map(|(p, c)| json!({"prompt_tokens": p,
            "completion_tokens": c, "prompt_tokens_details": {"cached_tokens": p / 2}})),
    ]
}

/// A valid chat completion, in the shapes servers send.
fn completion() -> impl Strategy<Value = Value> {
    (
        text(),
        proptest::bool::ANY,
        proptest::collection::vec(tool_call(), 0..3),
        proptest::option::of(text()),
        proptest::option::of("stop|length|tool_calls|brand_new"),
        usage(),
        0usize..3,
    )
        .prop_map(|(content, parts, calls, reasoning, finish, usage, extra)| {
            let content = if parts {
                json!([{"type": "text", "text": content}, {"type": "image_url"}])
            } else {
                Value::from(content)
            };
            let choice = json!({"index": 0, "message": {"role": "assistant", "content": content,
                "reasoning_content": reasoning, "tool_calls": calls}, "finish_reason": finish});
            json!({"id": "c1", "object": "chat.completion", "choices": vec![choice; 1 + extra],
                   "usage": usage, "extension": {"x": [1]}})
        })
}

/// A valid event stream: text and tool-call pieces, a finish reason, usage, `[DONE]`.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(text(), 0..5),
        proptest::collection::vec(tool_call(), 0..3),
        proptest::option::of("stop|tool_calls"),
        usage(),
        proptest::bool::ANY,
        proptest::sample::select(&["\n\n", "\r\n\r\n", "\r\r"][..]),
    )
        .prop_map(|(pieces, calls, finish, usage, done, end)| {
            let mut events: Vec<Value> = pieces
                .into_iter()
                .map(|p| json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": p}}]}))
                .collect();
            events.extend(
                calls
                    .into_iter()
                    .map(|c| json!({"choices": [{"index": 0, "delta": {"tool_calls": [c]}}]})),
            );
            events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
            events.push(json!({"choices": [], "usage": usage}));
            let mut out = String::from(": hello\n\n");
            for event in events {
                out.push_str(&format!("data: {event}{end}"));
            }
            if done {
                out.push_str(&format!("data: [DONE]{end}"));
            }
            out.into_bytes()
        })
}

fn case() -> impl Strategy<Value = Case> {
    let mutations = || proptest::collection::vec(mutation(), 0..6);
    let limits = prop_oneof![
        3 => Just((4 * 1024 * 1024, 64 * 1024 * 1024)),
        1 => (1usize..256, 1usize..4096),
    ];
    let cuts = proptest::collection::vec(any::<Index>(), 0..6);
    prop_oneof![
        // Valid completions, mutated.
        4 => (completion(), mutations()).prop_map(|(v, m)| {
            Case::Body(apply(serde_json::to_vec(&v).unwrap_or_default(), &m))
        }),
        // Valid streams, mutated and split anywhere.
        4 => (stream(), mutations(), cuts.clone(), limits.clone())
            .prop_map(|(s, m, cuts, limits)| Case::Stream { bytes: apply(s, &m), cuts, limits }),
        // Arbitrary bytes, to both.
        1 => proptest::collection::vec(any::<u8>(), 0..512).prop_map(Case::Body),
        1 => (proptest::collection::vec(any::<u8>(), 0..512), cuts, limits)
            .prop_map(|(bytes, cuts, limits)| Case::Stream { bytes, cuts, limits }),
    ]
}

/// An outcome is fine when it is an answer, or an error whose text is short and printable.
fn check_outcome(outcome: &Result<ChatResponse, InvokeError>) {
    if let Err(error) = outcome {
        let shown = error.to_string();
        assert!(shown.chars().count() <= 1_000, "too long: {shown}");
        assert!(
            !shown.chars().any(char::is_control),
            "control characters: {shown:?}"
        );
    }
}

fn run(case: &Case) {
    match case {
        Case::Body(bytes) => check_outcome(&parse_completion(bytes)),
        Case::Stream {
            bytes,
            cuts,
            limits,
        } => {
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut pieces = Vec::new();
            let mut from = 0;
            for point in points {
                pieces.push(&bytes[from..point]);
                from = point;
            }
            pieces.push(&bytes[from..]);
            let limits = ResponseLimits::default()
                .max_event_bytes(limits.0)
                .max_stream_bytes(limits.1);
            let (outcome, _text) = parse_event_stream(&pieces, &limits);
            check_outcome(&outcome);
        }
    }
}

fn passes(case: &Case) -> bool {
    catch_unwind(AssertUnwindSafe(|| run(case))).is_ok()
}

#[test]
fn the_parsers_take_any_bytes_without_panicking() {
    let seconds: Option<u64> = std::env::var("LLLM_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok());
    let budget = Duration::from_secs(seconds.unwrap_or(3));
    let seed: u64 = std::env::var("LLLM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            if seconds.is_some() {
                fastrand::u64(..)
            } else {
                20_261_203
            }
        });
    let mut seed_bytes = [0u8; 16];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    seed_bytes[8..].copy_from_slice(&seed.rotate_left(32).to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::XorShift, &seed_bytes),
    );
    let strategy = case();
    let started = Instant::now();
    let mut cases: u64 = 0;
    let (mut bodies, mut streams, mut answers) = (0u64, 0u64, 0u64);
    while started.elapsed() < budget {
        let mut tree = strategy.new_tree(&mut runner).expect("a case");
        let case = tree.current();
        match &case {
            Case::Body(b) => {
                bodies += 1;
                answers += u64::from(parse_completion(b).is_ok());
            }
            Case::Stream { .. } => streams += 1,
        }
        cases += 1;
        if passes(&case) {
            continue;
        }
        // Shrink to a smallest failing case, quietly, then fail with it.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let mut smallest = case;
        while tree.simplify() {
            let candidate = tree.current();
            if passes(&candidate) {
                if !tree.complicate() {
                    break;
                }
            } else {
                smallest = candidate;
            }
        }
        std::panic::set_hook(hook);
        eprintln!("fuzz_response: failure after {cases} cases (seed {seed}): {smallest:?}");
        run(&smallest);
        panic!("the case failed only once: {smallest:?}");
    }
    eprintln!(
        "fuzz_response: {cases} cases in {:.1}s (seed {seed}): {bodies} bodies ({answers} parsed as answers), {streams} streams; no failure",
        started.elapsed().as_secs_f64()
    );
    assert!(cases > 0);
}
