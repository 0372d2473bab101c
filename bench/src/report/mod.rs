//! The benchmarks' figures as sections of BENCHMARKS.md. Each benchmark binary prints its figures
//! as JSON; a module here reads them (into typed structs: a missing or mistyped field is an error
//! naming it) and writes the Markdown section that [`crate::splice`] puts between the markers.
//! `report NAME INPUT...` (the `report` binary) prints the section, and with `--write` splices it.

pub mod admission;
pub mod compaction;
pub mod concurrency;
pub mod continuation;
pub mod criterion;
pub mod eval;
pub mod floor;
pub mod journal;
pub mod mcp;
pub mod otel;
pub mod payoff;
pub mod priority;
pub mod python;
pub mod queue;
pub mod replay;
pub mod serve;
pub mod subagents;

mod format;
mod machine;

pub use format::{short_time, thousands};
pub use machine::{cores, machine, today};

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// Why figures could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A file's JSON is not the figures expected (the message names the field and line).
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// What serde said.
        source: serde_json::Error,
    },
    /// Figures are missing or do not fit together.
    #[error("{0}")]
    Figures(String),
}

/// Reads the file at `path` as text.
pub fn read_text(path: &Path) -> Result<String, ReportError> {
    std::fs::read_to_string(path).map_err(|source| ReportError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Reads the file at `path` as one JSON value of type `T`.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, ReportError> {
    serde_json::from_str(&read_text(path)?).map_err(|source| ReportError::Json {
        path: path.to_owned(),
        source,
    })
}

/// Reads the file at `path` as JSON values of type `T`, one a line (lines that do not start with `{`
/// are the benchmark's other output, and skipped).
pub fn read_json_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, ReportError> {
    read_text(path)?
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| {
            serde_json::from_str(line).map_err(|source| ReportError::Json {
                path: path.to_owned(),
                source,
            })
        })
        .collect()
}

/// A Markdown table: the header's cells, then each row's.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!(
        "| {} |\n|{}",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for row in rows {
        out.push_str(&format!("\n| {} |", row.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_has_its_header_rule_and_rows() {
        let rows = vec![vec!["a".to_owned(), "1".to_owned()]];
        assert_eq!(
            table(&["name", "n"], &rows),
            "| name | n |\n|---|---|\n| a | 1 |"
        );
    }

    #[test]
    fn a_missing_field_is_named_with_its_file() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)] // Read for the error only.
        struct Figures {
            calls: u64,
        }
        let dir = std::env::temp_dir().join(format!("lllm-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("figures.jsonl");
        std::fs::write(&path, "building\n{\"call\": 3}\n").expect("write");
        let error = read_json_lines::<Figures>(&path).expect_err("missing field");
        let message = error.to_string();
        assert!(
            message.contains("figures.jsonl: missing field `calls`"),
            "{message}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
