//! The payoff of session hints on Dynamo (`payoff`): one JSON line per leg.

use std::path::Path;

use serde::Deserialize;

use super::{read_json_lines, table, thousands, today, ReportError};
use crate::splice::Section;

/// What one `payoff` leg prints.
#[derive(Debug, Deserialize)]
pub struct Leg {
    leg: String,
    requests: u64,
    errors: u64,
    dialogs: u64,
    pinned: u64,
    forks: u64,
    forks_on_parent_worker: u64,
    cached_of_ideal: f64,
    prefill_tokens: u64,
    seconds: f64,
}

/// The section from the legs in the file at `path`, run on `workers` simulated workers.
pub fn report(path: &Path, workers: u32) -> Result<Vec<Section>, ReportError> {
    let legs: Vec<Leg> = read_json_lines(path)?;
    if legs.is_empty() {
        return Err(ReportError::Figures(format!("{}: no leg", path.display())));
    }
    Ok(vec![section(&legs, workers)])
}

/// The section `payoff`.
pub fn section(legs: &[Leg], workers: u32) -> Section {
    let rows: Vec<Vec<String>> = legs
        .iter()
        .map(|l| {
            vec![
                l.leg.clone(),
                l.requests.to_string(),
                l.errors.to_string(),
                format!(
                    "{}/{} ({:.0} %)",
                    l.pinned,
                    l.dialogs,
                    100.0 * l.pinned as f64 / l.dialogs.max(1) as f64
                ),
                format!("{}/{}", l.forks_on_parent_worker, l.forks),
                format!("{:.3}", l.cached_of_ideal),
                thousands(l.prefill_tokens as f64, 0),
                format!("{:.0} s", l.seconds),
            ]
        })
        .collect();
    let header = [
        "leg",
        "requests",
        "errors",
        "dialogs pinned to one worker",
        "forks on parent's worker",
        "cached ÷ ideal",
        "prefill tokens computed",
        "wall time",
    ];
    let mut body = format!(
        "Measured {} on {}, Linux, NVIDIA Dynamo 1.6.1 (KV router, one mocker process with {workers} \
         workers × 2,048 blocks, `--speedup-ratio 1`), command `scripts/bench_payoff.sh --write`.\
         \n\n{}\n",
        today(),
        std::env::consts::ARCH,
        table(&header, &rows)
    );
    let find = |name: &str| legs.iter().find(|l| l.leg == name);
    if let (Some(none), Some(family)) = (find("none"), find("family")) {
        if family.prefill_tokens > 0 {
            let ratio = none.prefill_tokens as f64 / family.prefill_tokens as f64;
            body.push_str(&format!(
                "\nPrefill tokens without identity ÷ with `family` hints: **{ratio:.2}×**."
            ));
        }
    }
    Section {
        name: "payoff",
        heading: "The payoff of session hints on NVIDIA Dynamo",
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leg(name: &str, pinned: u64, home: u64, cached: f64, prefill: u64, seconds: f64) -> Leg {
        Leg {
            leg: name.into(),
            requests: 332,
            errors: 0,
            dialogs: 60,
            pinned,
            forks: 12,
            forks_on_parent_worker: home,
            cached_of_ideal: cached,
            prefill_tokens: prefill,
            seconds,
        }
    }

    #[test]
    fn rows_and_ratio_are_as_benchmarks_md_writes_them() {
        let legs = [
            leg("family", 60, 12, 0.9961, 114_264, 36.2),
            leg("own", 60, 4, 0.976, 124_072, 33.4),
            leg("none", 7, 6, 0.714, 251_672, 34.0),
        ];
        let body = section(&legs, 4).body;
        assert!(body.contains("one mocker process with 4 workers × 2,048 blocks"));
        assert!(
            body.ends_with(
                "| family | 332 | 0 | 60/60 (100 %) | 12/12 | 0.996 | 114,264 | 36 s |\n\
             | own | 332 | 0 | 60/60 (100 %) | 4/12 | 0.976 | 124,072 | 33 s |\n\
             | none | 332 | 0 | 7/60 (12 %) | 6/12 | 0.714 | 251,672 | 34 s |\n\n\
             Prefill tokens without identity ÷ with `family` hints: **2.20×**."
            ),
            "{body}"
        );
    }
}
