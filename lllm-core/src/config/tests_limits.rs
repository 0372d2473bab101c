//! `limits:` and `--limit KEY=VALUE` read a value the same way: for every limit and every kind of
//! value, the file and the flag give the same limits, or refuse with the same rule.

use std::path::Path;

use super::*;
use crate::{Limit, LimitError, LimitSetting, RunLimits, ValueError};

/// What reading one value gave: the limits, or the rule that refused it.
#[derive(Debug, PartialEq)]
enum Outcome {
    Set(RunLimits),
    Refused { allowed: String },
}

/// The value written in `limits:` (`yaml` is the YAML scalar as written in the file).
fn in_file(limit: Limit, yaml: &str) -> Outcome {
    let text = format!(
        "agent_configs: [{{name: a, model_name: m, system_prompt: hi}}]\nlimits: {{{}: {yaml}}}\n",
        limit.name()
    );
    match parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None) {
        Ok(spec) => Outcome::Set(*spec.limits()),
        Err(e) => {
            let field = format!("limits.{}", limit.name());
            assert_eq!(e.field(), Some(field.as_str()), "{e}");
            assert_eq!(e.position().map(|p| p.line), Some(2), "{e}");
            match e.kind() {
                ConfigErrorKind::Value(ValueError::Number { allowed, written }) => {
                    assert!(written.chars().count() <= 45, "{e}");
                    Outcome::Refused {
                        allowed: allowed.clone(),
                    }
                }
                other => panic!("{yaml}: not a value error: {other:?} ({e})"),
            }
        }
    }
}

/// The value given as `--limit NAME=flag`.
fn on_command_line(limit: Limit, flag: &str) -> Outcome {
    let mut limits = RunLimits::default();
    match format!("{}={flag}", limit.name()).parse::<LimitSetting>() {
        Ok(setting) => {
            setting.apply(&mut limits);
            Outcome::Set(limits)
        }
        Err(LimitError::Invalid { name, problem }) => {
            assert_eq!(name, limit.name());
            let shown = problem.to_string();
            assert!(shown.len() < 200, "{shown}");
            match problem {
                ValueError::Number { allowed, .. } => Outcome::Refused { allowed },
                other => panic!("{flag}: {other:?}"),
            }
        }
        Err(other) => panic!("{flag}: {other}"),
    }
}

fn set(limit: Limit, count: u64, seconds: f64) -> Outcome {
    let mut limits = RunLimits::default();
    match limit {
        Limit::MaxRequests => limits.max_requests = Some(count),
        Limit::MaxTotalTokens => limits.max_total_tokens = Some(count),
        Limit::MaxToolCalls => limits.max_tool_calls = Some(count),
        Limit::MaxSeconds => limits.max_seconds = Some(seconds),
    }
    Outcome::Set(limits)
}

#[test]
fn every_limit_reads_a_value_in_the_file_as_on_the_command_line() {
    let counts = "a whole number from 0 to 18446744073709551615 (0 allows none)";
    let seconds = "a number of seconds from 0.001 to 1000000000 (about 31 years)";
    let refused = |limit: Limit| Outcome::Refused {
        allowed: match limit {
            Limit::MaxSeconds => seconds,
            _ => counts,
        }
        .to_owned(),
    };
    // (as written in the file, as given to --limit, the count it sets, the seconds it sets); a
    // count or seconds of `None` is refused.
    let table: [(&str, &str, Option<u64>, Option<f64>); 29] = [
        ("0", "0", Some(0), None),
        ("-0", "-0", Some(0), None),
        ("1", "1", Some(1), Some(1.0)),
        ("30", " 30 ", Some(30), Some(30.0)),
        ("-1", "-1", None, None),
        ("-0.5", "-0.5", None, None),
        ("1.5", "1.5", None, Some(1.5)),
        ("2.0", "2.0", None, Some(2.0)),
        ("0.001", "0.001", None, Some(0.001)),
        ("0.0005", "0.0005", None, None),
        ("1e-300", "1e-300", None, None),
        ("1e3", "1e3", None, Some(1000.0)),
        ("1000000000", "1000000000", Some(1_000_000_000), Some(1e9)),
        ("1000000001", "1000000001", Some(1_000_000_001), None),
        ("1e300", "1e300", None, None),
        (
            "18446744073709551615",
            "18446744073709551615",
            Some(u64::MAX),
            None,
        ),
        ("18446744073709551616", "18446744073709551616", None, None),
        (
            "999999999999999999999999999999999999999999",
            "999999999999999999999999999999999999999999",
            None,
            None,
        ),
        ("ten", "ten", None, None),
        ("\"7\"", "7", Some(7), Some(7.0)),
        ("\"\"", "", None, None),
        // Infinity and NaN reach the rule, as written and as text.
        (".nan", "nan", None, None),
        (".inf", "inf", None, None),
        ("-.inf", "-inf", None, None),
        ("\"NaN\"", "NaN", None, None),
        ("\"inf\"", "inf", None, None),
        ("true", "true", None, None),
        // Values of another kind reach it too, named by their kind.
        ("[1]", "[1]", None, None),
        ("{a: 1}", "{a: 1}", None, None),
    ];
    for limit in Limit::ALL {
        for (yaml, flag, count, secs) in table {
            let expected = match (limit, count, secs) {
                (Limit::MaxSeconds, _, Some(s)) => set(limit, 0, s),
                (Limit::MaxSeconds, _, None) => refused(limit),
                (_, Some(n), _) => set(limit, n, 0.0),
                (_, None, _) => refused(limit),
            };
            let file = in_file(limit, yaml);
            let flag_outcome = on_command_line(limit, flag);
            assert_eq!(file, expected, "{}: {yaml} in limits:", limit.name());
            assert_eq!(flag_outcome, expected, "{}: --limit {flag}", limit.name());
        }
    }
}

#[test]
fn a_refused_limit_names_its_field_and_rule() {
    let text = "agent_configs: [{name: a, model_name: m, system_prompt: hi}]\nlimits: {max_seconds: 1e-300}\n";
    let error = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None)
        .expect_err("below a millisecond")
        .to_string();
    assert_eq!(error, "t.yaml:2:23: limits.max_seconds: must be a number of seconds from 0.001 to 1000000000 (about 31 years), not `1e-300`");
    let error = "max_seconds=1e-300"
        .parse::<LimitSetting>()
        .expect_err("below a millisecond")
        .to_string();
    assert_eq!(error, "max_seconds must be a number of seconds from 0.001 to 1000000000 (about 31 years), not `1e-300`");
    let error = "max_request=3"
        .parse::<LimitSetting>()
        .expect_err("unknown")
        .to_string();
    assert_eq!(error, "unknown limit `max_request`; the limits are max_requests, max_total_tokens, max_tool_calls, max_seconds");
}

#[test]
fn limits_that_are_not_a_mapping_name_the_section_and_its_keys() {
    for (written, kind) in [("[1, 2]", "a list"), ("5", "a number"), ("off", "text")] {
        let text = format!(
            "agent_configs: [{{name: a, model_name: m, system_prompt: hi}}]\nlimits: {written}\n"
        );
        let error = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None)
            .expect_err(written)
            .to_string();
        assert_eq!(
            error,
            format!("t.yaml:2:9: limits: must be a mapping of `max_requests`, `max_total_tokens`, `max_tool_calls`, `max_seconds`, not {kind}")
        );
    }
}
