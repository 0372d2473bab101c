//! A recorded trace replayed (`scripts/bench_replay.sh`): live on Dynamo, `lllm replay --json`'s
//! rows and the frontend's log for each of two legs, and offline, `scripts/replay_agentic.py
//! --json`'s report of Dynamo's simulator.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, read_json_lines, table, today, ReportError};
use crate::splice::Section;

/// The live legs: the file names' stem in the work folder, and the flags `lllm replay` ran with.
pub const LIVE_LEGS: [(&str, &str); 2] = [
    ("dynamo", "--profile dynamo"),
    ("plain", "--profile openai --no-session"),
];

/// One row of `lllm replay --json`.
#[derive(Debug, Deserialize)]
pub struct Replayed {
    session_id: String,
    response_id: Option<String>,
    prompt_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    error: Option<String>,
}

/// A live leg's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    flags: &'static str,
    requests: usize,
    errors: usize,
    pinned: usize,
    sessions: usize,
    cached_pct: f64,
}

/// What `replay_agentic.py --json` prints (the parts the table shows).
#[derive(Debug, Deserialize)]
pub struct Offline {
    runs: Vec<OfflineRun>,
}

#[derive(Debug, Deserialize)]
struct OfflineRun {
    router_mode: String,
    requests_completed: u64,
    requests_total: u64,
    makespan_ms: f64,
    ttft_ms: Pair,
    prefix_cache_reused_ratio: Option<f64>,
    #[serde(default)]
    check: Option<Check>,
}

#[derive(Debug, Deserialize)]
struct Pair {
    p50: Option<f64>,
    p90: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Check {
    ok: bool,
}

/// The sections from the work folder `dir`: `LEG.out` and `LEG.log` for each live leg, and
/// `offline.json`.
pub fn report(dir: &Path) -> Result<Vec<Section>, ReportError> {
    let mut live = Vec::new();
    for (stem, flags) in LIVE_LEGS {
        let rows: Vec<Replayed> = read_json_lines(&dir.join(format!("{stem}.out")))?;
        let log = dir.join(format!("{stem}.log"));
        let log = log
            .to_str()
            .ok_or_else(|| ReportError::Figures(format!("{}: not a UTF-8 path", log.display())))?;
        live.push(live_leg(
            flags,
            &rows,
            &lllm_runtime::testing::dynamo_workers(log),
        ));
    }
    let offline: Offline = read_json(&dir.join("offline.json"))?;
    let failed: Vec<&str> = offline
        .runs
        .iter()
        .filter(|r| r.check.as_ref().is_some_and(|c| !c.ok))
        .map(|r| r.router_mode.as_str())
        .collect();
    if !failed.is_empty() {
        return Err(ReportError::Figures(format!(
            "the offline replay's check failed for {}",
            failed.join(", ")
        )));
    }
    Ok(vec![live_section(&live), offline_section(&offline)])
}

/// A live leg's figures from its rows and the worker of each response (by request id).
pub fn live_leg(
    flags: &'static str,
    rows: &[Replayed],
    workers: &std::collections::HashMap<String, String>,
) -> Live {
    let mut sessions: BTreeMap<&str, BTreeSet<Option<&String>>> = BTreeMap::new();
    for r in rows {
        let id = r.response_id.as_deref().unwrap_or("");
        let worker = workers.get(id.strip_prefix("chatcmpl-").unwrap_or(id));
        sessions.entry(&r.session_id).or_default().insert(worker);
    }
    let prompt: u64 = rows.iter().filter_map(|r| r.prompt_tokens).sum();
    let cached: u64 = rows.iter().filter_map(|r| r.cached_tokens).sum();
    Live {
        flags,
        requests: rows.len(),
        errors: rows.iter().filter(|r| r.error.is_some()).count(),
        pinned: sessions.values().filter(|w| w.len() == 1).count(),
        sessions: sessions.len(),
        cached_pct: 100.0 * cached as f64 / prompt.max(1) as f64,
    }
}

/// The section `replay`: the live legs.
pub fn live_section(legs: &[Live]) -> Section {
    let rows: Vec<Vec<String>> = legs
        .iter()
        .map(|l| {
            vec![
                format!("`{}`", l.flags),
                l.requests.to_string(),
                l.errors.to_string(),
                format!("{}/{}", l.pinned, l.sessions),
                format!("{:.1} %", l.cached_pct),
            ]
        })
        .collect();
    let header = [
        "replay",
        "requests",
        "errors",
        "sessions on one worker",
        "prompt tokens served from cache",
    ];
    Section {
        name: "replay",
        heading: "A recorded trace, replayed",
        body: format!(
            "Measured {} on {}; command `scripts/bench_replay.sh --write`.\n\n{}",
            today(),
            machine(),
            table(&header, &rows)
        ),
    }
}

/// The section `replay-offline`: each router in Dynamo's simulator.
pub fn offline_section(offline: &Offline) -> Section {
    let rows: Vec<Vec<String>> = offline
        .runs
        .iter()
        .map(|r| {
            let router = match r.router_mode.as_str() {
                "kv_router" => "KV router",
                "round_robin" => "round robin",
                other => other,
            };
            vec![
                router.to_owned(),
                format!("{}/{}", r.requests_completed, r.requests_total),
                format!("{:.2} s", r.makespan_ms / 1e3),
                format!(
                    "{} / {} ms",
                    one_decimal(r.ttft_ms.p50),
                    one_decimal(r.ttft_ms.p90)
                ),
                format!(
                    "{:.1} %",
                    100.0 * r.prefix_cache_reused_ratio.unwrap_or(0.0)
                ),
            ]
        })
        .collect();
    let header = [
        "router",
        "requests completed",
        "makespan",
        "TTFT p50 / p90",
        "prompt tokens reused from the prefix cache",
    ];
    Section {
        name: "replay-offline",
        heading: "The payoff workload replayed offline in Dynamo's simulator",
        body: table(&header, &rows),
    }
}

fn one_decimal(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn row(session: &str, response: Option<&str>, prompt: u64, cached: u64) -> Replayed {
        Replayed {
            session_id: session.into(),
            response_id: response.map(str::to_owned),
            prompt_tokens: Some(prompt),
            cached_tokens: Some(cached),
            error: None,
        }
    }

    #[test]
    fn a_session_is_pinned_when_every_response_came_from_one_worker() {
        let workers: HashMap<String, String> =
            [("a1", "w1"), ("a2", "w1"), ("b1", "w1"), ("b2", "w2")]
                .into_iter()
                .map(|(r, w)| (r.to_owned(), w.to_owned()))
                .collect();
        let mut rows = vec![
            row("a", Some("chatcmpl-a1"), 100, 0),
            row("a", Some("chatcmpl-a2"), 200, 100),
            row("b", Some("chatcmpl-b1"), 100, 0),
            row("b", Some("chatcmpl-b2"), 200, 60),
            // A response the log does not name is a worker of its own.
            row("c", Some("chatcmpl-c1"), 100, 0),
            row("c", None, 100, 0),
        ];
        rows[5].error = Some("timed out".into());
        let live = live_leg("--profile dynamo", &rows, &workers);
        assert_eq!(
            (live.requests, live.errors, live.pinned, live.sessions),
            (6, 1, 2, 3)
        );
        assert!((live.cached_pct - 20.0).abs() < 1e-9, "{}", live.cached_pct);
        let body = live_section(&[live]).body;
        assert!(
            body.ends_with("| `--profile dynamo` | 6 | 1 | 2/3 | 20.0 % |"),
            "{body}"
        );
    }

    #[test]
    fn the_offline_rows_are_as_benchmarks_md_writes_them() {
        let offline: Offline = serde_json::from_str(
            r#"{"engine": {"workers": 4}, "runs": [
                {"router_mode": "kv_router", "requests_completed": 332, "requests_total": 332,
                 "makespan_ms": 33350.2, "ttft_ms": {"p50": 55.08, "p90": 78.0},
                 "prefix_cache_reused_ratio": 0.6181, "check": {"ok": true, "failures": []}},
                {"router_mode": "round_robin", "requests_completed": 332, "requests_total": 332,
                 "makespan_ms": 33470.0, "ttft_ms": {"p50": 63.7, "p90": 90.7},
                 "prefix_cache_reused_ratio": 0.302}]}"#,
        )
        .expect("offline");
        assert_eq!(
            offline_section(&offline).body,
            "| router | requests completed | makespan | TTFT p50 / p90 | prompt tokens reused from the prefix cache |\n\
             |---|---|---|---|---|\n\
             | KV router | 332/332 | 33.35 s | 55.1 / 78.0 ms | 61.8 % |\n\
             | round robin | 332/332 | 33.47 s | 63.7 / 90.7 ms | 30.2 % |"
        );
    }
}
