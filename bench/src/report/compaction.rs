//! What context compaction saves on Dynamo (`compaction`): one JSON line per leg (`none`, `ride`,
//! `fresh`), each with the cached and uncached prompt tokens per bucket of turns.

use std::path::Path;

use serde::Deserialize;

use super::{read_json_lines, table, thousands, today, ReportError};
use crate::splice::Section;

/// What one `compaction` leg prints.
#[derive(Debug, Deserialize)]
pub struct Leg {
    leg: String,
    agents: u64,
    turns: u64,
    window: u64,
    requests: u64,
    errors: u64,
    failed_at: Vec<u64>,
    compactions: u64,
    prompt_tokens: u64,
    cached_tokens: u64,
    summary_requests: u64,
    /// Requests whose prompt was longer than the window (a real engine with that window refuses them).
    over_window: u64,
    summary_prompt_tokens: u64,
    summary_cached_tokens: u64,
    seconds: f64,
    buckets: Vec<Bucket>,
}

/// Cached and uncached prompt tokens of the requests of turns `first..=last`, all agents.
#[derive(Debug, Deserialize)]
pub struct Bucket {
    first: u64,
    last: u64,
    cached: u64,
    uncached: u64,
    requests: u64,
}

impl Leg {
    fn uncached(&self) -> u64 {
        self.prompt_tokens.saturating_sub(self.cached_tokens)
    }
}

/// The section from the legs in the file at `path`, run on Dynamo started with `mock_args`.
pub fn report(path: &Path, mock_args: &str) -> Result<Vec<Section>, ReportError> {
    let legs: Vec<Leg> = read_json_lines(path)?;
    if legs.is_empty() {
        return Err(ReportError::Figures(format!("{}: no leg", path.display())));
    }
    Ok(vec![section(&legs, mock_args)])
}

/// The section `compaction` (`legs` is not empty).
pub fn section(legs: &[Leg], mock_args: &str) -> Section {
    let first = &legs[0];
    let mut body = format!(
        "Measured {} on {}, Linux, NVIDIA Dynamo 1.6.1 (KV router with session affinity, mocker \
         `{mock_args}`, 16-token blocks), command `scripts/bench_compaction.sh --write`: {} turns \
         per agent (a tool call and its 150-250-word result every turn, an 800-word system \
         prompt), window {} tokens, `compact_at: 0.8`, `keep_last: 6`. Uncached tokens are the \
         prompt tokens the engines computed; cached ones were served from their prefix cache.\n\n{}\n",
        today(),
        std::env::consts::ARCH,
        first.turns,
        thousands(first.window as f64, 0),
        totals(legs)
    );
    let mut groups: Vec<u64> = legs.iter().map(|l| l.agents).collect();
    groups.dedup();
    for agents in groups {
        body.push_str(&savings(legs, agents));
    }
    body.push_str(&format!(
        "\n\nPer {} turns (all agents; thousands of prompt tokens, cached / uncached):\n\n{}",
        first.buckets.first().map_or(0, |b| b.last - b.first + 1),
        per_turn(legs)
    ));
    Section {
        name: "compaction",
        heading: "Context compaction on Dynamo",
        body,
    }
}

/// What compaction saved with `agents` at once: uncached tokens against no compaction, and the
/// summary requests' cached share riding the prefix against a fresh prompt.
fn savings(legs: &[Leg], agents: u64) -> String {
    let find = |name: &str| legs.iter().find(|l| l.leg == name && l.agents == agents);
    let mut out = String::new();
    if let (Some(none), Some(ride)) = (find("none"), find("ride")) {
        out.push_str(&format!(
            "\n{agents} agent{}: uncached prompt tokens with compaction ÷ without: **{:.0} %**.",
            if agents == 1 { "" } else { "s at once" },
            100.0 * ride.uncached() as f64 / none.uncached().max(1) as f64
        ));
    }
    if let (Some(ride), Some(fresh)) = (find("ride"), find("fresh")) {
        out.push_str(&format!(
            " Summary requests riding the prefix: {:.1} % of their prompt tokens cached; sent as a \
             fresh prompt: {:.1} % (uncached tokens of the whole run: {} against {}).",
            percent(ride.summary_cached_tokens, ride.summary_prompt_tokens),
            percent(fresh.summary_cached_tokens, fresh.summary_prompt_tokens),
            thousands(ride.uncached() as f64, 0),
            thousands(fresh.uncached() as f64, 0)
        ));
    }
    out
}

fn percent(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// One row per leg: requests, compactions, and the prompt tokens cached and computed.
fn totals(legs: &[Leg]) -> String {
    let rows: Vec<Vec<String>> = legs
        .iter()
        .map(|l| {
            vec![
                l.leg.clone(),
                l.agents.to_string(),
                l.requests.to_string(),
                format!("{} ({} failed)", l.errors, l.failed_at.len()),
                l.compactions.to_string(),
                l.summary_requests.to_string(),
                l.over_window.to_string(),
                thousands(l.prompt_tokens as f64, 0),
                format!(
                    "{} ({:.1} %)",
                    thousands(l.cached_tokens as f64, 0),
                    percent(l.cached_tokens, l.prompt_tokens)
                ),
                thousands(l.uncached() as f64, 0),
                format!("{:.0} s", l.seconds),
            ]
        })
        .collect();
    let header = [
        "leg",
        "agents",
        "requests",
        "errors (agents failed)",
        "compactions",
        "summary requests",
        "requests over the window",
        "prompt tokens",
        "cached",
        "uncached (computed)",
        "wall time",
    ];
    table(&header, &rows)
}

/// Turns down, legs across: cached / uncached thousands of tokens.
fn per_turn(legs: &[Leg]) -> String {
    let mut header = vec!["turns".to_owned()];
    header.extend(legs.iter().map(|l| format!("{} ×{}", l.leg, l.agents)));
    let rows_count = legs.iter().map(|l| l.buckets.len()).max().unwrap_or(0);
    let rows: Vec<Vec<String>> = (0..rows_count)
        .map(|i| {
            let mut row = Vec::new();
            for leg in legs {
                let Some(b) = leg.buckets.get(i) else {
                    row.push(String::new());
                    continue;
                };
                if row.is_empty() {
                    row.push(format!("{}-{}", b.first, b.last));
                }
                row.push(if b.requests == 0 {
                    "-".to_owned()
                } else {
                    format!(
                        "{:.1} / {:.1}",
                        b.cached as f64 / 1000.0,
                        b.uncached as f64 / 1000.0
                    )
                });
            }
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    table(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leg(name: &str, agents: u64, prompt: u64, cached: u64, summary: (u64, u64)) -> Leg {
        serde_json::from_value(serde_json::json!({
            "leg": name, "agents": agents, "turns": 40, "window": 8192, "requests": 80 * agents,
            "errors": 0, "failed_at": [], "compactions": if name == "none" { 0 } else { agents },
            "prompt_tokens": prompt, "cached_tokens": cached, "summary_requests": summary.0.min(1), "over_window": if name == "none" { 50 } else { 0 },
            "summary_prompt_tokens": summary.0, "summary_cached_tokens": summary.1, "seconds": 4.2,
            "buckets": [
                {"first": 1, "last": 20, "cached": cached / 2, "uncached": (prompt - cached) / 2, "requests": 40},
                {"first": 21, "last": 40, "cached": cached / 2, "uncached": (prompt - cached) / 2, "requests": 40}
            ]
        }))
        .expect("a leg")
    }

    #[test]
    fn totals_ratios_and_turns_are_as_benchmarks_md_writes_them() {
        let legs = [
            leg("none", 4, 2_000_000, 1_000_000, (0, 0)),
            leg("ride", 4, 500_000, 400_000, (7_000, 6_800)),
            leg("fresh", 4, 500_000, 300_000, (7_000, 100)),
            leg("none", 1, 500_000, 490_000, (0, 0)),
            leg("ride", 1, 200_000, 188_000, (7_000, 6_800)),
        ];
        let body = section(&legs, "--num-workers 2").body;
        assert!(body.contains("mocker `--num-workers 2`"), "{body}");
        assert!(
            body.contains("| ride | 4 | 320 | 0 (0 failed) | 4 | 1 | 0 | 500,000 | 400,000 (80.0 %) | 100,000 | 4 s |"),
            "{body}"
        );
        assert!(
            body.contains("4 agents at once: uncached prompt tokens with compaction ÷ without: **10 %**. \
                 Summary requests riding the prefix: 97.1 % of their prompt tokens cached; sent as a \
                 fresh prompt: 1.4 % (uncached tokens of the whole run: 100,000 against 200,000)."),
            "{body}"
        );
        assert!(
            body.contains("1 agent: uncached prompt tokens with compaction ÷ without: **120 %**."),
            "{body}"
        );
        assert!(
            body.ends_with("| 21-40 | 500.0 / 500.0 | 200.0 / 50.0 | 150.0 / 100.0 | 245.0 / 5.0 | 94.0 / 6.0 |"),
            "{body}"
        );
    }
}
