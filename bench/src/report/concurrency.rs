//! 1,000 dialogs in flight (`concurrency`): one JSON object.

use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// What `concurrency` prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    dialogs: u64,
    turns_per_dialog: u64,
    requests: u64,
    seconds: f64,
    turns_per_second: f64,
    peak_rss_mib: f64,
    dialogs_with_lost_or_crossed_messages: u64,
}

/// The section from the figures in the file at `path`.
pub fn report(path: &Path) -> Result<Vec<Section>, ReportError> {
    Ok(vec![section(&read_json(path)?)])
}

/// The section `concurrency`.
pub fn section(f: &Figures) -> Section {
    let rows = vec![vec![
        thousands(f.dialogs as f64, 0),
        f.turns_per_dialog.to_string(),
        thousands(f.requests as f64, 0),
        format!("{:.2} s", f.seconds),
        thousands(f.turns_per_second, 0),
        format!("{:.0} MiB", f.peak_rss_mib),
        f.dialogs_with_lost_or_crossed_messages.to_string(),
    ]];
    let header = [
        "dialogs in flight",
        "turns each",
        "requests",
        "wall time",
        "turns per second",
        "peak RSS",
        "dialogs with a lost or crossed message",
    ];
    Section {
        name: "concurrency",
        heading: "1,000 dialogs in flight",
        body: format!(
            "Measured {} on {}; command `scripts/bench_concurrency.sh --write`. One process holds the \
             agent and the stand-in server (which keeps every request it received, so the memory \
             figure includes the server's record).\n\n{}",
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
    fn the_row_is_as_benchmarks_md_writes_it() {
        let figures: Figures = serde_json::from_str(
            r#"{"dialogs": 1000, "turns_per_dialog": 10, "requests": 10000, "seconds": 0.5612,
                "turns_per_second": 17872.1, "peak_rss_mib": 290.6,
                "dialogs_with_lost_or_crossed_messages": 0}"#,
        )
        .expect("figures");
        let body = section(&figures).body;
        assert!(
            body.ends_with("| 1,000 | 10 | 10,000 | 0.56 s | 17,872 | 291 MiB | 0 |"),
            "{body}"
        );
        assert!(body.contains("command `scripts/bench_concurrency.sh --write`. One process"));
    }
}
