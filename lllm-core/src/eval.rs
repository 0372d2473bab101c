//! What an eval case expects of a run, and the checks themselves: pure functions over the run's
//! tool calls and answer, each failure said in words (`lllm eval` prints the first one).

use serde_json::Value;

use crate::Schema;

/// How expected tool calls are matched against the run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolsOrder {
    /// The run's calls are exactly the expected ones: as many, in the same order, each matching.
    Strict,
    /// Each expected call, in the order written, is matched by the first call of the run that
    /// matches it and no earlier expected call took; the run may make other calls too.
    #[default]
    Any,
}

/// An expected tool call: its name, and arguments matched as a subset ([`json_subset`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    /// The tool's name.
    pub name: String,
    /// Arguments the call must have.
    pub args: Option<Value>,
}

/// A check of the final answer.
#[derive(Debug, Clone)]
pub enum OutputCheck {
    /// The answer, trimmed, equals this.
    Equals(String),
    /// The answer contains this.
    Contains(String),
    /// The answer matches this pattern.
    Regex(regex::Regex),
    /// The answer is JSON valid under this schema.
    JsonSchema(Schema),
}

/// A judge: an agent of the tactic and the criteria it judges by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judge {
    /// The agent's name.
    pub agent: String,
    /// The criteria, in words.
    pub criteria: String,
}

/// What every trial of a case must show.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// Tool calls the run must make.
    pub tools: Vec<ExpectedCall>,
    /// How they are matched.
    pub tools_order: ToolsOrder,
    /// Tools the run must not call.
    pub forbid_tools: Vec<String>,
    /// A check of the answer.
    pub output: Option<OutputCheck>,
    /// A judge of the answer.
    pub judge: Option<Judge>,
    /// Most model requests.
    pub max_requests: Option<u64>,
    /// Most tokens.
    pub max_tokens: Option<u64>,
}

/// A tool call the run made: the tool's name and its arguments as sent (a string that is not JSON
/// is kept as a JSON string).
#[derive(Debug, Clone, PartialEq)]
pub struct MadeCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub args: Value,
}

/// Whether `expected` is a subset of `actual`: every key of an expected object is in the actual
/// object with a subset value; arrays, strings, numbers, booleans and null must be equal.
pub fn json_subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(key, value)| have.get(key).is_some_and(|h| json_subset(value, h))),
        // Numbers compare as numbers: `1` matches `1.0`.
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => expected == actual,
    }
}

fn matches(expected: &ExpectedCall, call: &MadeCall) -> bool {
    expected.name == call.name
        && expected
            .args
            .as_ref()
            .is_none_or(|a| json_subset(a, &call.args))
}

fn describe(expected: &ExpectedCall) -> String {
    match &expected.args {
        Some(args) => format!("`{}` with arguments including {args}", expected.name),
        None => format!("`{}`", expected.name),
    }
}

fn listed(calls: &[MadeCall]) -> String {
    if calls.is_empty() {
        return "no tool".into();
    }
    calls
        .iter()
        .map(|c| format!("`{}` {}", c.name, c.args))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks the run's `calls` against the expected ones; the error says the first that failed.
pub fn check_tools(
    expected: &[ExpectedCall],
    order: ToolsOrder,
    calls: &[MadeCall],
) -> Result<(), String> {
    match order {
        ToolsOrder::Strict => {
            for (i, want) in expected.iter().enumerate() {
                match calls.get(i) {
                    Some(call) if matches(want, call) => {}
                    Some(call) => {
                        return Err(format!(
                            "tool call {} was `{}` {}, expected {} (the run called: {})",
                            i + 1,
                            call.name,
                            call.args,
                            describe(want),
                            listed(calls)
                        ))
                    }
                    None => {
                        return Err(format!(
                            "expected tool call {} to be {}, but the run made only {} call(s): {}",
                            i + 1,
                            describe(want),
                            calls.len(),
                            listed(calls)
                        ))
                    }
                }
            }
            if calls.len() > expected.len() {
                return Err(format!(
                    "the run made {} tool call(s), {} expected in strict order: {}",
                    calls.len(),
                    expected.len(),
                    listed(calls)
                ));
            }
            Ok(())
        }
        ToolsOrder::Any => {
            let mut taken = vec![false; calls.len()];
            for want in expected {
                let found = calls
                    .iter()
                    .enumerate()
                    .position(|(i, call)| !taken[i] && matches(want, call));
                match found {
                    Some(i) => taken[i] = true,
                    None => {
                        return Err(format!(
                            "expected a call of {}, but the run called: {}",
                            describe(want),
                            listed(calls)
                        ))
                    }
                }
            }
            Ok(())
        }
    }
}

/// Checks that no call is of a forbidden tool.
pub fn check_forbidden(forbidden: &[String], calls: &[MadeCall]) -> Result<(), String> {
    match calls.iter().find(|c| forbidden.contains(&c.name)) {
        Some(call) => Err(format!(
            "called the forbidden tool `{}` with {}",
            call.name, call.args
        )),
        None => Ok(()),
    }
}

/// Most characters of an answer quoted in a failure.
const QUOTED: usize = 200;

/// The answer quoted for a message: at most 200 characters (`QUOTED`), control characters shown escaped.
pub fn quote(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(QUOTED)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().count() > QUOTED {
        out.push('…');
    }
    format!("\"{out}\"")
}

impl OutputCheck {
    /// Checks the answer; the error says how it fails.
    pub fn check(&self, answer: &str) -> Result<(), String> {
        match self {
            OutputCheck::Equals(want) if answer.trim() == want.trim() => Ok(()),
            OutputCheck::Equals(want) => Err(format!(
                "the answer {} is not {}",
                quote(answer),
                quote(want)
            )),
            OutputCheck::Contains(want) if answer.contains(want.as_str()) => Ok(()),
            OutputCheck::Contains(want) => Err(format!(
                "the answer {} does not contain {}",
                quote(answer),
                quote(want)
            )),
            OutputCheck::Regex(pattern) if pattern.is_match(answer) => Ok(()),
            OutputCheck::Regex(pattern) => Err(format!(
                "the answer {} does not match /{}/",
                quote(answer),
                pattern.as_str()
            )),
            OutputCheck::JsonSchema(schema) => {
                let value: Value = serde_json::from_str(answer.trim())
                    .map_err(|e| format!("the answer {} is not JSON ({e})", quote(answer)))?;
                schema
                    .check(&value)
                    .map_err(|v| format!("the answer does not match the JSON Schema: {v}"))
            }
        }
    }
}

/// A judge's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the answer passed.
    pub pass: bool,
    /// The judge's reason.
    pub reason: String,
}

/// What a judge is asked: the criteria, the answer and the tool calls, and the form of its verdict.
pub fn judge_question(criteria: &str, answer: &str, calls: &[MadeCall]) -> String {
    format!(
        "You judge an answer against criteria.\n\nCriteria:\n{criteria}\n\nTool calls made: {}\n\nAnswer:\n{answer}\n\n\
         Reply with one line: `PASS: <reason>` if the answer meets every criterion, else `FAIL: <reason>`.",
        listed(calls)
    )
}

/// Reads a judge's reply strictly: it starts with `PASS` or `FAIL` (capitals), then `:` and a
/// reason; anything else is an error quoting the reply.
pub fn parse_verdict(reply: &str) -> Result<Verdict, String> {
    let text = reply.trim();
    let (pass, rest) = if let Some(rest) = text.strip_prefix("PASS") {
        (true, rest)
    } else if let Some(rest) = text.strip_prefix("FAIL") {
        (false, rest)
    } else {
        return Err(format!(
            "the judge's reply {} is not a verdict (`PASS: reason` or `FAIL: reason`)",
            quote(reply)
        ));
    };
    let reason = rest.strip_prefix(':').map(str::trim).unwrap_or_default();
    if reason.is_empty() {
        return Err(format!(
            "the judge's reply {} gives no reason after `PASS:` or `FAIL:`",
            quote(reply)
        ));
    }
    Ok(Verdict {
        pass,
        reason: reason.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> MadeCall {
        MadeCall {
            name: name.into(),
            args,
        }
    }

    fn want(name: &str, args: Option<Value>) -> ExpectedCall {
        ExpectedCall {
            name: name.into(),
            args,
        }
    }

    #[test]
    fn args_match_as_a_subset() {
        let have = json!({"city": "Paris", "units": {"t": "C", "w": "kmh"}, "days": [1, 2]});
        assert!(json_subset(&json!({"city": "Paris"}), &have));
        assert!(json_subset(&json!({"units": {"t": "C"}}), &have));
        assert!(!json_subset(&json!({"units": {"t": "F"}}), &have));
        assert!(
            !json_subset(&json!({"days": [1]}), &have),
            "arrays are equal or not"
        );
        assert!(!json_subset(&json!({"country": "FR"}), &have));
        assert!(json_subset(&json!(1), &json!(1.0)));
    }

    #[test]
    fn strict_order_is_the_exact_list_and_any_takes_distinct_calls() {
        let calls = [call("a", json!({"x": 1})), call("b", json!({}))];
        let exp = [want("a", Some(json!({"x": 1}))), want("b", None)];
        assert!(check_tools(&exp, ToolsOrder::Strict, &calls).is_ok());
        let reversed = [want("b", None), want("a", None)];
        let e = check_tools(&reversed, ToolsOrder::Strict, &calls).expect_err("fails");
        assert!(e.starts_with("tool call 1 was `a`"), "{e}");
        assert!(check_tools(&reversed, ToolsOrder::Any, &calls).is_ok());
        let e = check_tools(&exp[..1], ToolsOrder::Strict, &calls).expect_err("fails");
        assert!(e.contains("made 2 tool call(s), 1 expected"), "{e}");
        let twice = [want("a", None), want("a", None)];
        let e = check_tools(&twice, ToolsOrder::Any, &calls).expect_err("fails");
        assert!(e.starts_with("expected a call of `a`"), "{e}");
    }

    #[test]
    fn verdicts_are_read_strictly() {
        assert_eq!(
            parse_verdict(" PASS: cites the source\n").expect("a verdict"),
            Verdict {
                pass: true,
                reason: "cites the source".into()
            }
        );
        assert!(!parse_verdict("FAIL: wrong city").expect("a verdict").pass);
        assert!(parse_verdict("pass: fine").is_err());
        assert!(parse_verdict("I think PASS: fine").is_err());
        assert!(parse_verdict("PASS").is_err());
    }
}
