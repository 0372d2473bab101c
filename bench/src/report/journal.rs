//! Journal overhead (`journal_overhead`): one JSON object.

use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// What `journal_overhead` prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    journal_dir: String,
    workloads: Vec<Workload>,
    append: Append,
}

/// One workload's two legs.
#[derive(Debug, Deserialize)]
struct Workload {
    workload: String,
    repetitions: u64,
    without_journal: Leg,
    with_journal: Leg,
    overhead_median_pct: f64,
    overhead_paired_median_pct: f64,
    journal_bytes: u64,
    journal_lines: u64,
    bytes_per_turn: f64,
    added_us_per_line: f64,
}

#[derive(Debug, Deserialize)]
struct Leg {
    median_ms: f64,
    p90_ms: f64,
}

/// One append in a tight loop, taken apart.
#[derive(Debug, Deserialize)]
struct Append {
    answer_line_bytes: u64,
    append_ns: f64,
    serialise_ns: f64,
    write_ns: f64,
    create_median_us: f64,
}

/// The section from the figures in the file at `path`.
pub fn report(path: &Path) -> Result<Vec<Section>, ReportError> {
    let figures: Figures = read_json(path)?;
    let fs = file_system(Path::new(&figures.journal_dir));
    Ok(vec![section(&figures, &fs)?])
}

/// The section `journal`; `fs` names the file system the journals were written on.
pub fn section(f: &Figures, fs: &str) -> Result<Section, ReportError> {
    let first = f
        .workloads
        .first()
        .ok_or_else(|| ReportError::Figures("journal_overhead measured no workload".into()))?;
    let rows: Vec<Vec<String>> = f.workloads.iter().map(row).collect();
    let worst = f
        .workloads
        .iter()
        .map(|w| w.overhead_median_pct)
        .fold(f64::NEG_INFINITY, f64::max);
    let a = &f.append;
    let header = [
        "each turn",
        "journal lines per run",
        "without journal, median / p90",
        "with journal, median / p90",
        "overhead (medians)",
        "overhead run by run (median)",
        "added time per line",
        "journal size",
        "per turn",
    ];
    let body = format!(
        "Measured {} on {}, journal on {fs}; command `scripts/bench_journal.sh --write`. One process \
         holds the agent and the testing kit's stand-in server, which answers at once: the run is as \
         short as a run can be, so this is the worst case for the journal's share (against a real \
         model, whose answers take milliseconds to seconds, the same writes are a vanishing share). \
         One run is 100 turns of one dialog (`receive` + `respond`), timed from creating the journal \
         to recording the run's end; runs with and without a journal (a fresh file each time) \
         alternate, {} of each after 3 warm-up runs of each.\n\n{}\n\n\
         Goal: less than 5 % ({}: at most {worst:.1} %). One append of a typical answer ({}-byte \
         line) in a tight loop takes {:.1} µs: {:.2} µs to serialise it and {:.1} µs for its one \
         `write()`; creating a journal takes {:.0} µs. Inside a run, between requests, caches are \
         cold and each line costs more (the column \"added time per line\").",
        today(),
        machine(),
        first.repetitions,
        table(&header, &rows),
        if worst < 5.0 { "met" } else { "not met" },
        a.answer_line_bytes,
        a.append_ns / 1e3,
        a.serialise_ns / 1e3,
        a.write_ns / 1e3,
        a.create_median_us,
    );
    Ok(Section {
        name: "journal",
        heading: "Journal overhead",
        body,
    })
}

fn row(w: &Workload) -> Vec<String> {
    let (o, j) = (&w.without_journal, &w.with_journal);
    let name = match w.workload.as_str() {
        "text" => "text answer",
        "tool" => "one tool call, then the answer",
        other => other,
    };
    vec![
        name.to_owned(),
        w.journal_lines.to_string(),
        format!("{:.1} / {:.1} ms", o.median_ms, o.p90_ms),
        format!("{:.1} / {:.1} ms", j.median_ms, j.p90_ms),
        format!("**{:.1} %**", w.overhead_median_pct),
        format!("{:.1} %", w.overhead_paired_median_pct),
        format!("{:.1} µs", w.added_us_per_line),
        format!("{} B", thousands(w.journal_bytes as f64, 0)),
        format!("{:.0} B", w.bytes_per_turn),
    ]
}

/// The type of the file system `dir` is on (the longest mount point above it in the mount table),
/// or `unknown`.
fn file_system(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (point, fs) = (fields.nth(1)?, fields.next()?);
            dir.starts_with(point).then(|| (point.len(), fs.to_owned()))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".to_owned(), |(_, fs)| fs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURES: &str = r#"{"journal_dir": "/tmp", "workloads": [
        {"workload": "text", "repetitions": 101, "without_journal": {"median_ms": 31.26, "p90_ms": 34.31},
         "with_journal": {"median_ms": 31.71, "p90_ms": 34.28}, "overhead_median_pct": 1.46,
         "overhead_paired_median_pct": 1.31, "journal_bytes": 23517, "journal_lines": 103,
         "bytes_per_turn": 235.17, "added_us_per_line": 4.4},
        {"workload": "tool", "repetitions": 101, "without_journal": {"median_ms": 114.1, "p90_ms": 126.3},
         "with_journal": {"median_ms": 115.4, "p90_ms": 133.4}, "overhead_median_pct": 1.2,
         "overhead_paired_median_pct": 2.3, "journal_bytes": 74757, "journal_lines": 403,
         "bytes_per_turn": 747.57, "added_us_per_line": 3.3}],
        "append": {"answer_line_bytes": 232, "append_ns": 1490.0, "serialise_ns": 360.0,
                   "write_ns": 1100.0, "create_median_us": 16.2}}"#;

    #[test]
    fn rows_and_goal_are_as_benchmarks_md_writes_them() {
        let figures: Figures = serde_json::from_str(FIGURES).expect("figures");
        let body = section(&figures, "ext4").expect("section").body;
        assert!(body.contains(", journal on ext4; command `scripts/bench_journal.sh --write`."));
        assert!(body.contains("alternate, 101 of each after 3 warm-up runs of each."));
        assert!(body.contains(
            "| text answer | 103 | 31.3 / 34.3 ms | 31.7 / 34.3 ms | **1.5 %** | 1.3 % | 4.4 µs | 23,517 B | 235 B |"
        ), "{body}");
        assert!(body.contains(
            "| one tool call, then the answer | 403 | 114.1 / 126.3 ms | 115.4 / 133.4 ms | **1.2 %** | 2.3 % | 3.3 µs | 74,757 B | 748 B |"
        ), "{body}");
        assert!(body.contains(
            "Goal: less than 5 % (met: at most 1.5 %). One append of a typical answer (232-byte line) \
             in a tight loop takes 1.5 µs: 0.36 µs to serialise it and 1.1 µs for its one `write()`; \
             creating a journal takes 16 µs."
        ), "{body}");
    }

    #[test]
    fn no_workload_is_an_error() {
        let figures: Figures = serde_json::from_str(
            r#"{"journal_dir": "/", "workloads": [], "append": {"answer_line_bytes": 1,
                "append_ns": 1, "serialise_ns": 1, "write_ns": 1, "create_median_us": 1}}"#,
        )
        .expect("figures");
        assert!(section(&figures, "ext4").is_err());
    }

    #[test]
    fn the_file_system_of_the_root_is_known() {
        assert_ne!(file_system(Path::new("/")), "unknown");
    }
}
