//! What OpenTelemetry export adds to a run (`otel_overhead`, and with `--e2e` `otel_e2e`): one
//! JSON object each.

use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, today, ReportError};
use crate::splice::Section;

/// What `otel_overhead` prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    repetitions: u64,
    legs: Legs,
    export: Export,
    dead: Dead,
}

#[derive(Debug, Deserialize)]
struct Legs {
    none: Leg,
    export: Leg,
    dead: Leg,
}

#[derive(Debug, Deserialize)]
struct Leg {
    median_ms: f64,
    p90_ms: f64,
}

#[derive(Debug, Deserialize)]
struct Export {
    added_us_per_request_median: f64,
    added_us_per_request_p90: f64,
    overhead_paired_median_pct: f64,
    spans_per_run: f64,
    posts_per_run: f64,
    bytes_per_span: f64,
    flush_median_ms: f64,
    flush_us_per_span: f64,
}

#[derive(Debug, Deserialize)]
struct Dead {
    added_us_per_request_median: f64,
    added_us_per_request_p90: f64,
    flush_median_ms: f64,
}

/// What `otel_e2e` prints: whole `lllm run` processes.
#[derive(Debug, Deserialize)]
pub struct Processes {
    runs: u64,
    none_median_ms: f64,
    export_median_ms: f64,
    added_median_ms: f64,
    dead_median_ms: f64,
}

/// The section from the figures in the file at `figures` and, if given, the whole processes'
/// in the file at `processes`.
pub fn report(figures: &Path, processes: Option<&Path>) -> Result<Vec<Section>, ReportError> {
    let processes = processes.map(read_json).transpose()?;
    Ok(vec![section(&read_json(figures)?, processes.as_ref())])
}

/// The table's rows: one per subscriber.
fn rows(f: &Figures) -> Vec<Vec<String>> {
    let (l, e, d) = (&f.legs, &f.export, &f.dead);
    let leg = |leg: &Leg| format!("{:.1} / {:.1} ms", leg.median_ms, leg.p90_ms);
    let dash = || "–".to_owned();
    vec![
        vec![
            "no subscriber".to_owned(),
            leg(&l.none),
            dash(),
            dash(),
            dash(),
            dash(),
        ],
        vec![
            "exporting to a collector on 127.0.0.1".to_owned(),
            leg(&l.export),
            format!(
                "**{:.1} µs** / {:.0} µs",
                e.added_us_per_request_median, e.added_us_per_request_p90
            ),
            format!("{:.0} ({:.0} POST)", e.spans_per_run, e.posts_per_run),
            format!("{:.0} B", e.bytes_per_span),
            format!(
                "{:.2} ms ({:.1} µs per span)",
                e.flush_median_ms, e.flush_us_per_span
            ),
        ],
        vec![
            "exporting to 127.0.0.1:9 (nothing listens)".to_owned(),
            leg(&l.dead),
            format!(
                "{:.1} µs / {:.0} µs",
                d.added_us_per_request_median, d.added_us_per_request_p90
            ),
            "0".into(),
            dash(),
            format!(
                "{:.0} ms (fails after the exporter's 3 retries)",
                d.flush_median_ms
            ),
        ],
    ]
}

/// The sentence on whole `lllm run` processes.
fn processes_sentence(w: &Processes) -> String {
    format!(
        " Whole `lllm run` processes (one request each, against `stub_server`; {} of each, \
         alternating): {:.1} ms without export, {:.1} ms exporting to a collector process on \
         127.0.0.1 (+{:.1} ms run by run: setting up the exporter and the flush at exit), {:.0} \
         ms exporting to 127.0.0.1:9.",
        w.runs, w.none_median_ms, w.export_median_ms, w.added_median_ms, w.dead_median_ms
    )
}

/// The section `otel`.
pub fn section(f: &Figures, processes: Option<&Processes>) -> Section {
    let rows = rows(f);
    let header = [
        "subscriber",
        "run of 100 requests, median / p90",
        "added per request, median / p90 (run by run)",
        "spans received per run",
        "bytes per span",
        "flush after the run",
    ];
    let mut body = format!(
        "Measured {} on {}; command `scripts/bench_otel.sh{} --write`. One process holds the agent, \
         the testing kit's stand-in server (which answers at once: the worst case for export's share \
         of a run) and an OTLP collector on 127.0.0.1 that counts the requests, bytes and spans it \
         receives. One run is a workflow span around 100 turns of one dialog (`receive` + \
         `respond`): 201 spans (1 `invoke_workflow`, 100 `invoke_agent`, 100 `chat`). The exporting \
         legs use the subscriber `lllm` sets up when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (a \
         `tracing-opentelemetry` layer on the `lllm::gen_ai` spans, a batch processor with a queue \
         of 4,096, the OTLP HTTP/protobuf exporter of opentelemetry-otlp 0.33), without its `warn` \
         log layer. The legs alternate, {} runs of each after 3 warm-up runs of each; after each \
         exporting run the provider is flushed (timed apart: the batch processor exports on a \
         thread of its own, every 5 s or per 512 spans, never on the run's path) and the run's \
         spans are counted at the collector.\n\n{}\n\n\
         Export adds {:.1} % to a run against a server that answers at once (the p90 of the \
         run-by-run difference is the machine's noise: runs of the same leg differ by more; from one \
         run of the script to the next the median moves by a few µs). The cost is making the spans \
         and handing them to the batch queue, not sending them: a dead collector costs the run no \
         more than a live one. It costs the exit: a batch that cannot be sent is given up only after \
         the exporter's retries (3, backing off from 100 ms), and `lllm` waits for the last flush at \
         most 3 s.",
        today(),
        machine(),
        if processes.is_some() { " --e2e" } else { "" },
        f.repetitions,
        table(&header, &rows),
        f.export.overhead_paired_median_pct,
    );
    if let Some(w) = processes {
        body.push_str(&processes_sentence(w));
    }
    Section {
        name: "otel",
        heading: "Observability",
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURES: &str = r#"{"turns": 100, "repetitions": 101,
        "legs": {"none": {"median_ms": 36.21, "p90_ms": 39.04}, "export": {"median_ms": 38.2, "p90_ms": 40.6},
                 "dead": {"median_ms": 38.1, "p90_ms": 40.3}},
        "export": {"added_us_per_request_median": 15.1, "added_us_per_request_p90": 42.2,
                   "overhead_paired_median_pct": 4.3, "spans_per_run": 201.0, "posts_per_run": 1.0,
                   "bytes_per_span": 534.4, "flush_median_ms": 1.25, "flush_us_per_span": 6.2},
        "dead": {"added_us_per_request_median": 17.0, "added_us_per_request_p90": 41.0,
                 "flush_median_ms": 897.3}}"#;

    #[test]
    fn rows_and_processes_are_as_benchmarks_md_writes_them() {
        let figures: Figures = serde_json::from_str(FIGURES).expect("figures");
        let processes: Processes = serde_json::from_str(
            r#"{"runs": 21, "none_median_ms": 9.52, "none_p90_ms": 10.0, "export_median_ms": 15.3,
                "export_p90_ms": 16.0, "added_median_ms": 5.7, "dead_runs": 3,
                "dead_median_ms": 926.1, "dead_max_ms": 930.0, "dead_warning": null}"#,
        )
        .expect("processes");
        let body = section(&figures, Some(&processes)).body;
        assert!(body.contains("command `scripts/bench_otel.sh --e2e --write`."));
        for row in [
            "| no subscriber | 36.2 / 39.0 ms | – | – | – | – |",
            "| exporting to a collector on 127.0.0.1 | 38.2 / 40.6 ms | **15.1 µs** / 42 µs | 201 (1 POST) | 534 B | 1.25 ms (6.2 µs per span) |",
            "| exporting to 127.0.0.1:9 (nothing listens) | 38.1 / 40.3 ms | 17.0 µs / 41 µs | 0 | – | 897 ms (fails after the exporter's 3 retries) |",
        ] {
            assert!(body.contains(row), "{row}\n{body}");
        }
        assert!(body.contains("Export adds 4.3 % to a run"));
        assert!(body.ends_with(
            "(one request each, against `stub_server`; 21 of each, alternating): 9.5 ms without \
             export, 15.3 ms exporting to a collector process on 127.0.0.1 (+5.7 ms run by run: \
             setting up the exporter and the flush at exit), 926 ms exporting to 127.0.0.1:9."
        ), "{body}");
        let without = section(&figures, None).body;
        assert!(without.contains("command `scripts/bench_otel.sh --write`."));
        assert!(without.ends_with("waits for the last flush at most 3 s."));
    }
}
