//! What the benchmark binaries of `lllm-bench` share: synthetic prompt text, percentiles, the
//! sections of BENCHMARKS.md made from their figures ([`report`]) and the one splicer that puts a
//! section in place ([`splice`]).
#![doc = include_str!("../../docs/benchmarks.md")]

pub mod report;
pub mod splice;

/// Words the simulated engine's tokenizer knows: about one token each.
const WORDS: &[&str] = &[
    "plan", "step", "task", "part", "agent", "tool", "answer", "question", "result", "first",
    "next", "then", "last", "time", "day", "week", "weather", "city", "write", "read", "count",
    "word", "list", "make", "find", "check", "again", "more", "less", "good", "best", "session",
    "dialog", "team", "merge", "split", "reply", "review", "point", "revise", "draft", "polish",
    "the", "of", "and",
];

/// `words` words drawn from a small vocabulary with `rng`, joined by spaces: prompt text that
/// shares no prefix with other draws, at about one token a word.
pub fn random_words(rng: &mut fastrand::Rng, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// The number in the environment variable `name`, or `default` when it is unset; a benchmark's
/// knob set wrongly stops it, naming the variable.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}: not a number: {v}")),
        Err(_) => default,
    }
}

/// The value at fraction `p` (0 to 1) of `sorted` (ascending, not empty), by nearest rank.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}
