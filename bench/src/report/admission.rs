//! Admission by priority against first come, first served (`admission`): one JSON line per leg
//! (a target, a number of tactics at once, `fcfs` or `auto`).

use std::path::Path;

use serde::Deserialize;

use super::{read_json_lines, table, today, ReportError};
use crate::splice::Section;

/// What one `admission` leg prints.
#[derive(Debug, Deserialize)]
pub struct Leg {
    leg: String,
    target: String,
    tactics: u64,
    slots: u64,
    runs: u64,
    service_ms: Option<u64>,
    makespan_s: f64,
    mean_finish_s: f64,
    requests_per_tactic: u64,
}

/// The section from the legs in the files at `paths` (the stub's, then Dynamo's).
pub fn report(paths: &[&Path], dynamo_args: &str) -> Result<Vec<Section>, ReportError> {
    let mut legs: Vec<Leg> = Vec::new();
    for path in paths {
        legs.extend(read_json_lines::<Leg>(path)?);
    }
    if legs.is_empty() {
        return Err(ReportError::Figures("admission: no leg".into()));
    }
    Ok(vec![section(&legs, dynamo_args)])
}

/// The section `admission`: one row per target and number of tactics, both orders side by side.
pub fn section(legs: &[Leg], dynamo_args: &str) -> Section {
    let first = &legs[0];
    let rows: Vec<Vec<String>> = legs
        .iter()
        .filter(|l| l.leg == "fcfs")
        .filter_map(|fcfs| {
            let auto = legs.iter().find(|l| {
                l.leg == "auto" && l.target == fcfs.target && l.tactics == fcfs.tactics
            })?;
            let target = match fcfs.service_ms {
                Some(ms) => format!("stub, {ms} ms per request"),
                None => "Dynamo".to_owned(),
            };
            Some(vec![
                target,
                fcfs.tactics.to_string(),
                format!("{:.2} s", fcfs.makespan_s),
                format!("{:.2} s", auto.makespan_s),
                format!(
                    "{:+.0} %",
                    100.0 * (auto.makespan_s / fcfs.makespan_s - 1.0)
                ),
                format!("{:.2} s", fcfs.mean_finish_s),
                format!("{:.2} s", auto.mean_finish_s),
            ])
        })
        .collect();
    let header = [
        "target",
        "tactics at once",
        "makespan, first come first served",
        "makespan, `priority: auto`",
        "change",
        "mean finish, fcfs",
        "mean finish, auto",
    ];
    let body = format!(
        "Measured {} on {}, Linux, command `scripts/bench_admission.sh --write`: fan-out tactics \
         of {} requests each (a plan, fifteen one-turn branches and a six-turn branch listed last, \
         a merge) share one endpoint under `max_in_flight: {}`; the median of {} runs. Dynamo \
         1.6.1: `{dynamo_args}`.\n\n{}\n",
        today(),
        std::env::consts::ARCH,
        first.requests_per_tactic,
        first.slots,
        first.runs,
        table(&header, &rows)
    );
    Section {
        name: "admission",
        heading: "Admission by priority",
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leg(leg: &str, target: &str, tactics: u64, makespan: f64) -> Leg {
        Leg {
            leg: leg.into(),
            target: target.into(),
            tactics,
            slots: 4,
            runs: 3,
            service_ms: (target == "stub").then_some(40),
            makespan_s: makespan,
            mean_finish_s: makespan - 0.01,
            requests_per_tactic: 23,
        }
    }

    #[test]
    fn each_target_and_count_is_one_row_with_both_orders() {
        let legs = [
            leg("fcfs", "stub", 1, 0.48),
            leg("auto", "stub", 1, 0.40),
            leg("fcfs", "dynamo", 4, 2.0),
            leg("auto", "dynamo", 4, 2.1),
        ];
        let body = section(&legs, "--speedup-ratio 1").body;
        assert!(body.contains("`max_in_flight: 4`"), "{body}");
        assert!(
            body.contains(
                "| stub, 40 ms per request | 1 | 0.48 s | 0.40 s | -17 % | 0.47 s | 0.39 s |"
            ),
            "{body}"
        );
        assert!(
            body.contains("| Dynamo | 4 | 2.00 s | 2.10 s | +5 % |"),
            "{body}"
        );
    }
}
