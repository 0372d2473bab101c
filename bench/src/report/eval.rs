//! What `lllm eval` costs (`scripts/bench_eval.sh`): cases per second on replay, trials per second
//! while recording against the stub server, and the time per case of a live eval against `lllm run`
//! processes and a bare process start.

use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// What the script's measuring part writes: counts, and total wall times in seconds.
#[derive(Debug, Deserialize)]
pub struct Figures {
    cases: u64,
    trials: u64,
    runs: u64,
    repeats: u64,
    /// One replay of every trial, the best of `repeats`.
    replay_s: f64,
    /// Recording every trial against the stub server.
    record_s: f64,
    /// A live eval of `runs` cases, one trial at a time.
    live_s: f64,
    /// `runs` `lllm run` processes, one after another.
    run_s: f64,
    /// `runs` `lllm --version` processes.
    start_s: f64,
}

/// The section from the figures in the file at `path`.
pub fn report(path: &Path) -> Result<Vec<Section>, ReportError> {
    let figures: Figures = read_json(path)?;
    if figures.cases == 0 || figures.trials == 0 || figures.runs == 0 {
        return Err(ReportError::Figures(format!(
            "{}: no cases, trials or runs",
            path.display()
        )));
    }
    Ok(vec![section(&figures)])
}

/// The section `eval`.
pub fn section(f: &Figures) -> Section {
    let ms = |s: f64| format!("{} ms", thousands(s * 1000.0, 2));
    let trials = (f.cases * f.trials) as f64;
    let runs = f.runs as f64;
    let per_case = f.live_s / runs;
    let per_run = f.run_s / runs;
    let per_start = f.start_s / runs;
    let rows = vec![
        vec![
            format!(
                "replay, no server: {} trials, wall time (best of {})",
                thousands(trials, 0),
                f.repeats
            ),
            format!("{:.2} s", f.replay_s),
        ],
        vec![
            format!("replay: cases per second ({} trials each)", f.trials),
            format!("**{}**", thousands(f.cases as f64 / f.replay_s, 1)),
        ],
        vec![
            "replay: trials per second".to_owned(),
            thousands(trials / f.replay_s, 1),
        ],
        vec![
            "recording against the stub: trials per second (8 at once)".to_owned(),
            thousands(trials / f.record_s, 1),
        ],
        vec![
            "live eval, one trial at a time: per case (one process for all)".to_owned(),
            ms(per_case),
        ],
        vec![
            "`lllm run`, one process per input: per run".to_owned(),
            ms(per_run),
        ],
        vec![
            "`lllm --version`, one process: start and exit".to_owned(),
            ms(per_start),
        ],
        vec![
            "eval's overhead per case over a run's own work (live per case − (run − start))"
                .to_owned(),
            format!("**{:+.2} ms**", (per_case - (per_run - per_start)) * 1000.0),
        ],
    ];
    Section {
        name: "eval",
        heading: "What `lllm eval` costs",
        body: format!(
            "Measured {} on {}; command `scripts/bench_eval.sh --write`. An eval of {} cases × {} \
             trials recorded against the stub server (`stub_server`, which answers at once) and \
             replayed with no server; then a live eval of {} cases one trial at a time \
             (`max_in_flight: 1`) against {} `lllm run` processes of the same tactic and {} \
             `lllm --version` processes. The eval journals every trial (as `lllm eval` always \
             does); the runs do not. A negative overhead means one eval process answers a case \
             in less time than a run process spends past its own start.\n\n{}",
            today(),
            machine(),
            f.cases,
            f.trials,
            f.runs,
            f.runs,
            f.runs,
            table(&["figure", "value"], &rows)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rows_are_as_benchmarks_md_writes_them() {
        let figures: Figures = serde_json::from_str(
            r#"{"cases": 100, "trials": 5, "runs": 100, "repeats": 3, "replay_s": 0.5,
                "record_s": 2.0, "live_s": 1.5, "run_s": 4.0, "start_s": 1.0}"#,
        )
        .expect("figures");
        let body = section(&figures).body;
        assert!(
            body.contains("| replay: cases per second (5 trials each) | **200.0** |"),
            "{body}"
        );
        assert!(
            body.contains("| recording against the stub: trials per second (8 at once) | 250.0 |"),
            "{body}"
        );
        assert!(body.ends_with(
            "| `lllm --version`, one process: start and exit | 10.00 ms |\n\
             | eval's overhead per case over a run's own work (live per case − (run − start)) | **-15.00 ms** |"
        ), "{body}");
    }
}
