//! Inside lllm (criterion): the medians criterion saved under `target/criterion/` for the
//! micro-benchmarks of `lllm-core` and `lllm-runtime`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::format::three_digits;
use super::{machine, read_json, short_time, table, today, ReportError};
use crate::splice::Section;

/// The rows of the table: each benchmark's id and what it measures, in order.
const ROWS: [(&str, &str); 7] = [
    (
        "request/100_messages_dynamo_hints_merge_json",
        "build one request for a 100-message forked dialog: dynamo hints, merge under `extra_headers`/`extra_body`, JSON body",
    ),
    ("request/100_messages_to_body_bytes", "the same, serialised to bytes"),
    ("fork/100_messages", "fork a 100-message dialog"),
    (
        "fork/10000_messages",
        "fork a 10,000-message dialog (O(1): shares the prefix)",
    ),
    (
        "fork/deep_copy_baseline_10000_messages",
        "deep-copy 10,000 messages (what a fork would cost without sharing)",
    ),
    (
        "dialog_serde_10000_messages/to_json",
        "serialise a 10,000-message dialog to JSON",
    ),
    ("dialog_serde_10000_messages/from_json", "deserialise it"),
];

/// What criterion saved of one benchmark: its id and the bytes one iteration handles.
#[derive(Debug, Deserialize)]
struct Benchmark {
    full_id: String,
    throughput: Option<HashMap<String, u64>>,
}

#[derive(Debug, Deserialize)]
struct Estimates {
    median: Estimate,
}

#[derive(Debug, Deserialize)]
struct Estimate {
    /// Nanoseconds.
    point_estimate: f64,
}

/// One benchmark's median and the bytes one iteration handles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Median {
    ns: f64,
    bytes: Option<u64>,
}

/// The section from criterion's folder `dir` (`target/criterion`).
pub fn report(dir: &Path) -> Result<Vec<Section>, ReportError> {
    let mut medians = HashMap::new();
    for folder in new_folders(dir) {
        let benchmark: Benchmark = read_json(&folder.join("benchmark.json"))?;
        let estimates: Estimates = read_json(&folder.join("estimates.json"))?;
        let bytes = benchmark
            .throughput
            .and_then(|t| t.get("Bytes").or(t.get("BytesDecimal")).copied());
        medians.insert(
            benchmark.full_id,
            Median {
                ns: estimates.median.point_estimate,
                bytes,
            },
        );
    }
    Ok(vec![section(&medians)?])
}

/// The section `criterion`, from each benchmark's median by id.
pub fn section(medians: &HashMap<String, Median>) -> Result<Section, ReportError> {
    let mut rows = Vec::new();
    for (id, label) in ROWS {
        let m = medians
            .get(id)
            .ok_or_else(|| ReportError::Figures(format!("criterion saved no figures of `{id}`")))?;
        let time = match m.bytes {
            Some(bytes) => format!(
                "{} ({})",
                short_time(m.ns),
                rate(bytes as f64 / (m.ns / 1e9))
            ),
            None => short_time(m.ns),
        };
        rows.push(vec![label.to_owned(), time]);
    }
    Ok(Section {
        name: "criterion",
        heading: "Inside lllm (criterion)",
        body: format!(
            "Measured {} on {}; medians of criterion's estimates.\n\n{}",
            today(),
            machine(),
            table(&["operation", "time"], &rows)
        ),
    })
}

/// Bytes per second as criterion prints them: `1.32 GiB/s`, `434 MiB/s`.
fn rate(bytes_per_s: f64) -> String {
    const KIB: f64 = 1024.0;
    let (value, unit) = if bytes_per_s >= KIB * KIB * KIB {
        (bytes_per_s / (KIB * KIB * KIB), "GiB/s")
    } else if bytes_per_s >= KIB * KIB {
        (bytes_per_s / (KIB * KIB), "MiB/s")
    } else if bytes_per_s >= KIB {
        (bytes_per_s / KIB, "KiB/s")
    } else {
        (bytes_per_s, "B/s")
    };
    format!("{} {unit}", three_digits(value))
}

/// The `new` folders under `dir` that hold a `benchmark.json` (criterion's latest run of each).
fn new_folders(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if entry.file_name() == "new" && path.join("benchmark.json").is_file() {
                found.push(path);
            } else {
                pending.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_as_benchmarks_md_writes_them() {
        let times = [
            29_700.0,
            34_700.0,
            276.0,
            723.0,
            542_000.0,
            549_000.0,
            1_710_000.0,
        ];
        let mut medians: HashMap<String, Median> = ROWS
            .iter()
            .zip(times)
            .map(|((id, _), ns)| (id.to_string(), Median { ns, bytes: None }))
            .collect();
        let bytes = Some(778_000);
        for id in [
            "dialog_serde_10000_messages/to_json",
            "dialog_serde_10000_messages/from_json",
        ] {
            medians.get_mut(id).expect("row").bytes = bytes;
        }
        let body = section(&medians).expect("section").body;
        assert!(
            body.contains("| fork a 100-message dialog | 276 ns |"),
            "{body}"
        );
        assert!(
            body.contains("| the same, serialised to bytes | 34.7 µs |"),
            "{body}"
        );
        assert!(
            body.contains("| serialise a 10,000-message dialog to JSON | 549 µs (1.32 GiB/s) |"),
            "{body}"
        );
        assert!(
            body.contains("| deserialise it | 1.71 ms (434 MiB/s) |"),
            "{body}"
        );
        medians.remove("fork/100_messages");
        let error = section(&medians).expect_err("a row is missing");
        assert_eq!(
            error.to_string(),
            "criterion saved no figures of `fork/100_messages`"
        );
    }

    #[test]
    fn criterions_files_are_found_and_read() {
        let dir = std::env::temp_dir().join(format!("lllm-criterion-{}", std::process::id()));
        for (i, (id, _)) in ROWS.iter().enumerate() {
            let new = dir.join(id.replace('/', "_")).join("new");
            std::fs::create_dir_all(&new).expect("dir");
            let throughput = if i == 5 {
                r#"{"Bytes": 778000}"#
            } else {
                "null"
            };
            std::fs::write(
                new.join("benchmark.json"),
                format!(r#"{{"group_id": "g", "full_id": "{id}", "throughput": {throughput}}}"#),
            )
            .expect("write");
            std::fs::write(
                new.join("estimates.json"),
                r#"{"median": {"point_estimate": 549000.0, "standard_error": 1.0}}"#,
            )
            .expect("write");
        }
        let sections = report(&dir).expect("report");
        assert!(sections[0]
            .body
            .contains("| serialise a 10,000-message dialog to JSON | 549 µs (1.32 GiB/s) |"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
