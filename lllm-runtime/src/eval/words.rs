//! The report in words, as the terminal shows it: one line per case (passes/trials, requests,
//! tokens, cached share, time), the first failing expectation under a case that failed, then the
//! verdict.

use std::fmt::Write as _;

use super::report::EvalReport;

/// `report` in words.
pub fn in_words(report: &EvalReport) -> String {
    let mut text = String::new();
    for case in &report.cases {
        let mark = if case.passed { "PASS" } else { "FAIL" };
        let _ = writeln!(
            text,
            "{mark} {}: {}/{} trials passed, {} requests, {} tokens, {:.0}% cached, {:.2}s",
            case.id,
            case.passes,
            case.trials,
            case.requests,
            case.tokens,
            case.cached_share * 100.0,
            case.seconds
        );
        if let Some(failure) = case.first_failure.as_deref().filter(|_| !case.passed) {
            let _ = writeln!(text, "     first failure: {}", printable(failure));
        } else if case.trials == 0 {
            let _ = writeln!(text, "     no trial ended");
        }
    }
    let failed = report.cases.iter().filter(|c| !c.passed).count();
    let verdict = if report.interrupted {
        "interrupted: a partial report".to_owned()
    } else if failed == 0 {
        format!(
            "all {} case(s) reached the pass rate {}",
            report.cases.len(),
            report.pass_rate
        )
    } else {
        format!(
            "{failed} of {} case(s) under the pass rate {}",
            report.cases.len(),
            report.pass_rate
        )
    };
    let _ = writeln!(text, "{verdict}");
    text
}

/// What a model or tool wrote, safe on a terminal: control characters shown escaped.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}
