//! What lllm adds to an MCP tool call (`mcp_overhead`): one JSON object per message size.

use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// What one `mcp_overhead` run prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    message_bytes: u64,
    calls: u64,
    through_lllm: Calls,
    through_sdk: Calls,
    overhead_p50_us: f64,
    overhead_mean_us: f64,
}

/// One side's call times.
#[derive(Debug, Deserialize)]
struct Calls {
    p50_us: f64,
    p90_us: f64,
    mean_us: f64,
}

/// The section from the figures in the files at `paths`, one message size each.
pub fn report(paths: &[&Path]) -> Result<Vec<Section>, ReportError> {
    let runs = paths
        .iter()
        .map(|path| read_json(path))
        .collect::<Result<Vec<Figures>, _>>()?;
    Ok(vec![section(&runs)])
}

/// The section `mcp`.
pub fn section(runs: &[Figures]) -> Section {
    let times = |c: &Calls| format!("{:.0} / {:.0} / {:.0} µs", c.p50_us, c.p90_us, c.mean_us);
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|f| {
            vec![
                format!("{} B", thousands(f.message_bytes as f64, 0)),
                thousands(f.calls as f64, 0),
                times(&f.through_lllm),
                times(&f.through_sdk),
                format!("**{:.1} µs**", f.overhead_p50_us),
                format!("{:.1} µs", f.overhead_mean_us),
            ]
        })
        .collect();
    let header = [
        "message",
        "calls",
        "through lllm p50 / p90 / mean",
        "bare SDK p50 / p90 / mean",
        "lllm's own time, median",
        "lllm's own time, mean",
    ];
    Section {
        name: "mcp",
        heading: "MCP tool calls: what lllm adds",
        body: format!(
            "Measured {} on {}; command `scripts/bench_mcp.sh --write`. The reference server \
             `@modelcontextprotocol/server-everything` over stdio, its `echo` tool, one call at a \
             time; the same server program started twice, once behind lllm's MCP tool (the call as \
             an agent makes it: arguments checked against the server's schema, the call with its \
             timeout, the result turned into the model's text) and once behind the bare `rmcp` \
             client, in alternating blocks of 100 calls.\n\n{}",
            today(),
            machine(),
            table(&header, &rows)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_as_benchmarks_md_writes_them() {
        let run = |json: &str| serde_json::from_str::<Figures>(json).expect("figures");
        let small = run(
            r#"{"message_bytes": 43, "calls": 2000, "overhead_p50_us": 13.5, "overhead_mean_us": 27.7,
            "through_lllm": {"p50_us": 278.2, "p90_us": 387.0, "mean_us": 384.1},
            "through_sdk": {"p50_us": 264.4, "p90_us": 360.0, "mean_us": 356.4}}"#,
        );
        let large = run(
            r#"{"message_bytes": 32768, "calls": 500, "overhead_p50_us": 28.7, "overhead_mean_us": 27.8,
            "through_lllm": {"p50_us": 567.0, "p90_us": 717.0, "mean_us": 674.0},
            "through_sdk": {"p50_us": 538.0, "p90_us": 712.0, "mean_us": 647.0}}"#,
        );
        let body = section(&[small, large]).body;
        assert!(body.ends_with(
            "| 43 B | 2,000 | 278 / 387 / 384 µs | 264 / 360 / 356 µs | **13.5 µs** | 27.7 µs |\n\
             | 32,768 B | 500 | 567 / 717 / 674 µs | 538 / 712 / 647 µs | **28.7 µs** | 27.8 µs |"
        ), "{body}");
    }
}
