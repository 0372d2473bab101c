//! What `lllm serve` adds (`serve_overhead`): one JSON object.

use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// What `serve_overhead` prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    requests: u64,
    in_process: Leg,
    served: Leg,
    clients: u64,
    window_s: u64,
    requests_per_second: f64,
    conversations: u64,
    rss_started_mib: Option<f64>,
    rss_conversations_mib: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Leg {
    p50_ms: f64,
    p99_ms: f64,
}

/// The section from the figures in the file at `path`.
pub fn report(path: &Path) -> Result<Vec<Section>, ReportError> {
    let figures: Figures = read_json(path)?;
    Ok(vec![section(&figures)])
}

/// The sentence on the server's memory.
fn resident(f: &Figures) -> String {
    match (f.rss_started_mib, f.rss_conversations_mib) {
        (Some(started), Some(held)) => format!(
            "A `lllm serve` process (the release binary) has an RSS of {started:.1} MiB after it \
             started and **{held:.1} MiB** with {} conversations held (each made a chat request and \
             a stored response, and keeps its connection open, idle).",
            f.conversations
        ),
        _ => "The memory of a `lllm serve` process was not measured (`--lllm` not given).".to_owned(),
    }
}

/// The section `serve`.
pub fn section(f: &Figures) -> Section {
    let added_p50 = f.served.p50_ms - f.in_process.p50_ms;
    let row = |name: &str, a: f64, b: f64| {
        vec![
            name.to_owned(),
            format!("{a:.3} ms"),
            format!("{b:.3} ms"),
            format!("**{:+.3} ms**", b - a),
        ]
    };
    let rows = vec![
        row("p50", f.in_process.p50_ms, f.served.p50_ms),
        row("p99", f.in_process.p99_ms, f.served.p99_ms),
    ];
    let header = [
        "one chat turn",
        "in process (`lllm run`'s path)",
        "over HTTP (`lllm serve`)",
        "added",
    ];
    let body = format!(
        "Measured {} on {}; command `scripts/bench_serve.sh --write`. One process holds the testing \
         kit's stand-in server (it answers at once), the engine and an `lllm serve` router on \
         127.0.0.1; a chat turn of a one-agent tactic is run in process (`Engine::run`, the path of \
         `lllm run`) and asked over HTTP (`POST /v1/chat/completions`, a keep-alive client), legs \
         alternating, {} turns each after 50 warm-up turns.\n\n{}\n\n\
         Target: at most 2 ms added at p50 ({}: {added_p50:+.3} ms). With {} clients at once for {} s \
         the server completed **{} requests per second**. {}",
        today(),
        machine(),
        f.requests,
        table(&header, &rows),
        if added_p50 <= 2.0 { "met" } else { "not met" },
        f.clients,
        f.window_s,
        thousands(f.requests_per_second, 0),
        resident(f),
    );
    Section {
        name: "serve",
        heading: "lllm serve",
        body,
    }
}
