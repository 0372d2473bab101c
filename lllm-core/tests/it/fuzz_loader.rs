//! Fuzzing the tactic loader: arbitrary bytes, and structure-aware mutations of the example tactics
//! and the YAML of the docs, parsed as if read from a folder that holds a base chain and prompts.
//! Every outcome must be a spec or a `ConfigError` with a message; nothing may panic.
//!
//! Normal runs spend a few seconds. `LLLM_FUZZ_SECONDS=N` runs for N seconds and prints the number
//! of cases on stderr:
//! `LLLM_FUZZ_SECONDS=600 cargo test --release -p lllm-core --test it -- fuzz_loader:: --nocapture`.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lllm_core::{ConfigError, TacticLoader};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Pieces a mutation inserts: YAML structure, the format's keys, and values known to be hostile.
const TOKENS: &[&str] = &[
    "\n",
    "  ",
    "\t",
    "- ",
    ": ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    "\"",
    "#",
    "&a ",
    "*a",
    "<<: *a",
    "---\n",
    "...\n",
    "%YAML 1.2\n",
    "!!binary ",
    "!!str ",
    "? ",
    "|\n  ",
    ">-\n  ",
    "\0",
    "\u{feff}",
    "\r\n",
    "\u{2028}",
    "base: ",
    "base: base.yaml",
    "base: cycle.yaml",
    "base: deep/b0.yaml",
    "base: /dev/zero",
    "base: ../x.yaml",
    "global:",
    "agent_configs:",
    "steps:",
    "output: ",
    "tactic_type: ",
    "config: ",
    "name: ",
    "model_name: m",
    "system_prompt: ",
    "system_prompt_path: ",
    "system_prompt_path: hello",
    "system_prompt_path: ../../etc/passwd",
    "model_args: ",
    "api_base: ",
    "api_key: ",
    "http://u:p@h st/v1",
    "extra_headers: {x: \"a\\nb\"}",
    "extra_body: ",
    "inference_hints: ",
    "profile: dynamo",
    "priority: ",
    "cache_salt: ",
    "tools: ",
    "command: [sh]",
    "command: [no-such-prog]",
    "max_output_bytes: ",
    "parameters: ",
    "output_schema: ",
    "parallel: ",
    "fork_from: ",
    "save: ",
    "receive: ",
    "agent: ",
    "dialog: ",
    "{{ input }}",
    "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
    "{{ x",
    "{% if %}",
    "${HOME}",
    "${",
    "$${X}",
    "${X:-1}",
    "18446744073709551616",
    "-1",
    "1e400",
    ".nan",
    "~",
    "null",
    "true",
    "no",
    "0x1F",
    "0o17",
];

/// Tactics to mutate: the examples, and every YAML block of the docs.
fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut seeds = Vec::new();
    for example in std::fs::read_dir(root.join("examples")).unwrap().flatten() {
        let tactic = example.path().join("tactic.yaml");
        if let Ok(text) = std::fs::read_to_string(&tactic) {
            seeds.push(text);
        }
    }
    for doc in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(doc.path()) else {
            continue;
        };
        let mut block: Option<String> = None;
        for line in text.lines() {
            match (&mut block, line.trim_start()) {
                (None, "```yaml") => block = Some(String::new()),
                (Some(b), "```") => {
                    seeds.push(std::mem::take(b));
                    block = None;
                }
                (Some(b), _) => {
                    b.push_str(line);
                    b.push('\n');
                }
                _ => {}
            }
        }
    }
    assert!(seeds.len() >= 5, "seeds: {}", seeds.len());
    seeds
}

/// One edit of a tactic's text.
#[derive(Debug, Clone)]
enum Mutation {
    Insert(usize, usize),
    Delete(usize, usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    Indent(usize, usize),
    Byte(usize, u8),
    Repeat(usize, usize, u16),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, t)| Mutation::Insert(at, t)),
        2 => (any::<usize>(), 1usize..40).prop_map(|(at, n)| Mutation::Delete(at, n)),
        1 => any::<usize>().prop_map(Mutation::DuplicateLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => (any::<usize>(), 0usize..9).prop_map(|(l, n)| Mutation::Indent(l, n)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Byte(at, b)),
        1 => (any::<usize>(), 1usize..20, 1u16..2000).prop_map(|(at, len, n)| Mutation::Repeat(at, len, n)),
    ]
}

fn apply(seed: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = seed.as_bytes().to_vec();
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::Insert(at, t) => {
                let at = at % (bytes.len() + 1);
                bytes.splice(at..at, TOKENS[t].bytes());
            }
            Mutation::Delete(at, n) => {
                let at = at % len;
                let end = (at + n).min(bytes.len());
                if at < end {
                    bytes.drain(at..end);
                }
            }
            Mutation::DuplicateLine(l) | Mutation::SwapLines(l, _) | Mutation::Indent(l, _) => {
                let mut lines: Vec<Vec<u8>> =
                    bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
                let i = l % lines.len();
                match *m {
                    Mutation::DuplicateLine(_) => {
                        let line = lines[i].clone();
                        lines.insert(i, line);
                    }
                    Mutation::SwapLines(_, other) => {
                        let j = other % lines.len();
                        lines.swap(i, j);
                    }
                    Mutation::Indent(_, n) => {
                        let mut line = vec![b' '; n];
                        line.extend(lines[i].iter().skip_while(|b| **b == b' '));
                        lines[i] = line;
                    }
                    _ => {}
                }
                bytes = lines.join(&b'\n');
            }
            Mutation::Byte(at, b) => {
                if !bytes.is_empty() {
                    let at = at % bytes.len();
                    bytes[at] = b;
                }
            }
            Mutation::Repeat(at, span, n) => {
                if !bytes.is_empty() {
                    let at = at % bytes.len();
                    let end = (at + span).min(bytes.len());
                    let piece = bytes[at..end].repeat(usize::from(n));
                    bytes.splice(at..at, piece);
                }
            }
        }
    }
    bytes
}

/// A folder with the files mutations may name: a base, a cycle, a chain, prompts.
struct Fixture(PathBuf);

impl Fixture {
    fn new() -> Fixture {
        let dir = std::env::temp_dir().join(format!("lllm-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("prompts")).unwrap();
        std::fs::create_dir_all(dir.join("deep")).unwrap();
        std::fs::write(
            dir.join("base.yaml"),
            "global:\n  model_name: m\n  system_prompt: You help {{ input }}.\n",
        )
        .unwrap();
        std::fs::write(dir.join("cycle.yaml"), "base: cycle.yaml\n").unwrap();
        for i in 0..40 {
            std::fs::write(
                dir.join(format!("deep/b{i}.yaml")),
                format!("base: b{}.yaml\n", i + 1),
            )
            .unwrap();
        }
        std::fs::write(dir.join("prompts/hello.md"), "Hello {{ name }}").unwrap();
        Fixture(dir)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn check(loader: &TacticLoader, bytes: &[u8], path: &Path) -> Result<(), TestCaseError> {
    match loader.parse(bytes, path) {
        Ok(_) => Ok(()),
        Err(error) => {
            let error: ConfigError = error;
            let message = error.to_string();
            prop_assert!(!message.trim().is_empty(), "empty message");
            prop_assert!(
                message.len() < 64 * 1024,
                "a message of {} bytes",
                message.len()
            );
            Ok(())
        }
    }
}

#[test]
fn the_loader_never_panics_and_always_explains() {
    let budget = std::env::var("LLLM_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(Duration::from_secs(3), Duration::from_secs);
    let fixture = Fixture::new();
    let path = fixture.0.join("t.yaml");
    let loader = TacticLoader::new()
        .env(|name| (name == "HOME").then(|| "/home/x".to_owned()))
        .max_file_bytes(1024 * 1024);
    let seeds = seeds();
    let seed_count = seeds.len();
    let started = Instant::now();
    let mut cases: u64 = 0;
    let mut round: u32 = 0;
    while started.elapsed() < budget {
        round += 1;
        let config = Config {
            cases: 64,
            failure_persistence: None,
            rng_seed: proptest::test_runner::RngSeed::Fixed(u64::from(round)),
            ..Config::default()
        };
        let mut runner = TestRunner::new(config.clone());
        let mutated = (0..seed_count, prop::collection::vec(mutation(), 0..12));
        runner
            .run(&mutated, |(seed, mutations)| {
                check(&loader, &apply(&seeds[seed], &mutations), &path)
            })
            .unwrap();
        let mut runner = TestRunner::new(config);
        runner
            .run(&prop::collection::vec(any::<u8>(), 0..512), |bytes| {
                check(&loader, &bytes, &path)
            })
            .unwrap();
        cases += 128;
    }
    eprintln!(
        "fuzz_loader: {cases} cases in {:.1} s ({seed_count} seeds)",
        started.elapsed().as_secs_f64()
    );
}
