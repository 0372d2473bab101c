//! `--baseline FILE`: this report against an earlier `--json`, per case, in words. A regression is
//! a lower pass rate, a case that passed and now fails, or more tokens or requests per trial, or a
//! smaller cached share (the prefix cache is the product's heart: losing it is a regression too).

use std::fmt::Write as _;

use super::report::{CaseReport, EvalReport};

/// Per-trial figures of a case, so that reports with different trial counts compare.
fn per_trial(case: &CaseReport) -> (f64, f64) {
    let trials = f64::from(case.trials.max(1));
    (case.tokens as f64 / trials, case.requests as f64 / trials)
}

fn change(before: f64, after: f64) -> String {
    if before == 0.0 {
        return format!("{before:.0} → {after:.0}");
    }
    format!(
        "{before:.0} → {after:.0} ({:+.0}%)",
        (after - before) / before * 100.0
    )
}

/// The comparison in words (one paragraph per case that changed) and whether anything regressed.
pub fn compare(now: &EvalReport, baseline: &EvalReport) -> (String, bool) {
    let mut text = String::new();
    let mut regressed = false;
    for case in &now.cases {
        let Some(before) = baseline.cases.iter().find(|c| c.id == case.id) else {
            let _ = writeln!(text, "{}: new case (not in the baseline)", case.id);
            continue;
        };
        let mut notes = Vec::new();
        let mut worse = Vec::new();
        if (case.pass_rate - before.pass_rate).abs() > 1e-9 {
            let line = format!(
                "pass rate {:.0}% → {:.0}%",
                before.pass_rate * 100.0,
                case.pass_rate * 100.0
            );
            if case.pass_rate < before.pass_rate {
                worse.push(line);
            } else {
                notes.push(line);
            }
        }
        if before.passed && !case.passed {
            worse.push("passed before, fails now".to_owned());
        }
        let ((tokens_before, requests_before), (tokens, requests)) =
            (per_trial(before), per_trial(case));
        if (tokens - tokens_before).abs() >= 0.5 {
            let line = format!("tokens per trial {}", change(tokens_before, tokens));
            if tokens > tokens_before {
                worse.push(line)
            } else {
                notes.push(line)
            }
        }
        if (requests - requests_before).abs() >= 0.01 {
            let line = format!("requests per trial {}", change(requests_before, requests));
            if requests > requests_before {
                worse.push(line)
            } else {
                notes.push(line)
            }
        }
        if (case.cached_share - before.cached_share).abs() >= 0.005 {
            let line = format!(
                "cached share {:.0}% → {:.0}%",
                before.cached_share * 100.0,
                case.cached_share * 100.0
            );
            if case.cached_share < before.cached_share {
                worse.push(line)
            } else {
                notes.push(line)
            }
        }
        if !worse.is_empty() {
            regressed = true;
            let _ = writeln!(text, "{}: REGRESSION: {}", case.id, worse.join("; "));
        }
        if !notes.is_empty() {
            let _ = writeln!(text, "{}: {}", case.id, notes.join("; "));
        }
    }
    for before in &baseline.cases {
        if !now.cases.iter().any(|c| c.id == before.id) {
            let _ = writeln!(text, "{}: in the baseline, not run now", before.id);
        }
    }
    if text.is_empty() {
        text.push_str("no change against the baseline\n");
    }
    (text, regressed)
}
