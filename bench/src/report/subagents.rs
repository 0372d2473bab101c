//! Background subagents: the memory of 1,000 running forks (`subagent_forks`) and the makespan of
//! four researchers in the background against one after another on Dynamo (`subagent_makespan`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// What `subagent_forks` prints.
#[derive(Debug, Deserialize)]
pub struct Memory {
    forks: u64,
    messages: u64,
    history_bytes: u64,
    per_fork_bytes: f64,
    per_copy_bytes: f64,
    /// A fork in Python lllm (`scripts/bench/python_lllm_forks.py`), when it was measured.
    #[serde(default)]
    python: Option<PythonFork>,
}

/// What `scripts/bench/python_lllm_forks.py` prints: Python lllm's `Agent.fork`, which
/// deep-copies the messages.
#[derive(Debug, Deserialize)]
struct PythonFork {
    version: String,
    per_fork_bytes: f64,
}

/// What `subagent_makespan` prints.
#[derive(Debug, Deserialize)]
pub struct Makespan {
    researchers: u64,
    researcher_tokens: u64,
    rounds: u64,
    lead_prompt_tokens: u64,
    legs: BTreeMap<String, Leg>,
}

/// One leg's runs.
#[derive(Debug, Deserialize)]
struct Leg {
    seconds: Vec<f64>,
    median_s: f64,
    requests: u64,
    researcher_prompt_tokens: u64,
    researcher_cached_tokens: u64,
}

/// The section from the two benchmarks' figures and the mocker's arguments.
pub fn report(memory: &Path, makespan: &Path, mock: &str) -> Result<Vec<Section>, ReportError> {
    let memory: Memory = read_json(memory)?;
    let makespan: Makespan = read_json(makespan)?;
    for leg in ["background", "sequential"] {
        if !makespan.legs.contains_key(leg) {
            return Err(ReportError::Figures(format!(
                "the makespan figures have no `{leg}` leg"
            )));
        }
    }
    Ok(vec![section(&memory, &makespan, mock)])
}

fn kib(bytes: f64) -> String {
    format!("{} KiB", thousands(bytes / 1024.0, 1))
}

fn memory_table(memory: &Memory) -> String {
    let memory_rows = vec![vec![
        thousands(memory.forks as f64, 0),
        format!(
            "{} messages, {}",
            memory.messages,
            kib(memory.history_bytes as f64)
        ),
        format!("**{}**", kib(memory.per_fork_bytes)),
        kib(memory.per_copy_bytes),
        format!(
            "{:.2}",
            memory.per_fork_bytes / memory.per_copy_bytes.max(1.0)
        ),
        match &memory.python {
            Some(python) => format!(
                "{} ({:.0}× lllm's)",
                kib(python.per_fork_bytes),
                python.per_fork_bytes / memory.per_fork_bytes.max(1.0)
            ),
            None => "not measured".to_owned(),
        },
    ]];
    let python = match &memory.python {
        Some(python) => format!("Python lllm {} per fork", python.version),
        None => "Python lllm per fork".to_owned(),
    };
    table(
        &[
            "forks running",
            "the dialog",
            "RSS per fork",
            "RSS per deep copy",
            "fork / copy",
            &python,
        ],
        &memory_rows,
    )
}

fn makespan_table(makespan: &Makespan) -> String {
    let legs = [
        ("background", "in the background (`background: true`)"),
        (
            "sequential",
            "one after another (`background: false`, one tool at a time)",
        ),
    ];
    let rows: Vec<Vec<String>> = legs
        .iter()
        .filter_map(|(name, words)| {
            let leg = makespan.legs.get(*name)?;
            let each: Vec<String> = leg.seconds.iter().map(|s| format!("{s:.2}")).collect();
            Some(vec![
                (*words).to_owned(),
                format!("**{:.2} s**", leg.median_s),
                format!("{} s", each.join(" / ")),
                leg.requests.to_string(),
                format!(
                    "{} of {}",
                    thousands(leg.researcher_cached_tokens as f64, 0),
                    thousands(leg.researcher_prompt_tokens as f64, 0)
                ),
            ])
        })
        .collect();
    table(
        &[
            "four researchers",
            "lead's makespan, median",
            "each run",
            "requests",
            "researchers' prompt tokens cached",
        ],
        &rows,
    )
}

/// The section `subagents`.
pub fn section(memory: &Memory, makespan: &Makespan, mock: &str) -> Section {
    let (memory_table, makespan_table) = (memory_table(memory), makespan_table(makespan));
    let ratio = match (
        makespan.legs.get("background"),
        makespan.legs.get("sequential"),
    ) {
        (Some(b), Some(s)) if b.median_s > 0.0 => {
            format!(
                " In the background the lead is done in {:.2}× less time.",
                s.median_s / b.median_s
            )
        }
        _ => String::new(),
    };
    Section {
        name: "subagents",
        heading: "Background subagents",
        body: format!(
            "Measured {} on {}; command `scripts/bench_subagents.sh --write`.\n\n\
             **Memory.** {} background `fork` subagents of one dialog started in one process \
             (`Agent::spawn`, what `task_start` does), every child running with its request held \
             in flight when the resident set is read; then as many deep copies of the dialog's \
             messages, what a framework that copies the history into each child holds. A fork \
             shares its parent's messages: it costs its own dialog, its task and its request. Python \
             lllm's `Agent.fork` (`scripts/bench/python_lllm_forks.py`, the same 200 messages, \
             forks made and held, no request in flight) deep-copies the messages into each \
             child.\n\n\
             {memory_table}\n\n\
             **Makespan on NVIDIA Dynamo 1.6.1** (KV router, two mocker workers, `{mock}`): a lead \
             whose first request holds {} prompt tokens (a system prompt and sources) starts {} \
             `fork` researchers, each decoding {} tokens; the wall time of the lead's `respond`, \
             from its first request to its last answer, {} rounds alternating the legs, each run \
             with system prompts of its own (nothing cached from the run before). In the \
             background the lead takes one more turn (the task ids, then the answers); one after \
             another, each researcher answers before the next starts.{ratio}\n\n\
             {makespan_table}",
            today(),
            machine(),
            thousands(memory.forks as f64, 0),
            thousands(makespan.lead_prompt_tokens as f64, 0),
            makespan.researchers,
            makespan.researcher_tokens,
            makespan.rounds,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_as_benchmarks_md_writes_them() {
        let memory: Memory = serde_json::from_str(
            r#"{"forks": 1000, "messages": 200, "history_bytes": 100966, "rss_before_bytes": 1,
                "per_fork_bytes": 24985.6, "per_copy_bytes": 136294.4,
                "python": {"version": "0.2.1", "per_fork_bytes": 369471.5}}"#,
        )
        .expect("memory");
        let makespan: Makespan = serde_json::from_str(
            r#"{"researchers": 4, "researcher_tokens": 256, "rounds": 2, "lead_prompt_tokens": 6850,
                "legs": {
                  "background": {"seconds": [3.1, 2.9], "median_s": 3.1, "requests": 7,
                                 "researcher_prompt_tokens": 27476, "researcher_cached_tokens": 27376,
                                 "researcher_completion_tokens": 1024},
                  "sequential": {"seconds": [9.0, 9.4], "median_s": 9.4, "requests": 6,
                                 "researcher_prompt_tokens": 27476, "researcher_cached_tokens": 27376}}}"#,
        )
        .expect("makespan");
        let body = section(&memory, &makespan, "--speedup-ratio 1").body;
        assert!(
            body.contains("| 1,000 | 200 messages, 98.6 KiB | **24.4 KiB** | 133.1 KiB | 0.18 | 360.8 KiB (15× lllm's) |"),
            "{body}"
        );
        assert!(body.contains("done in 3.03× less time"), "{body}");
        assert!(
            body.ends_with(
                "| in the background (`background: true`) | **3.10 s** | 3.10 / 2.90 s | 7 | 27,376 of 27,476 |\n\
                 | one after another (`background: false`, one tool at a time) | **9.40 s** | 9.00 / 9.40 s | 6 | 27,376 of 27,476 |"
            ),
            "{body}"
        );
    }
}
