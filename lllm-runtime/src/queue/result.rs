//! A result taken off the queue, as the batch writes it: what was parsed, written again on one
//! line, or the item's failure. A result message is whatever was published on the subject, and the
//! output holds one JSON object a line.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::QueuedItem;
use crate::engine::batch::ItemOutcome;
use crate::engine::item_id;

/// A result line as a worker publishes it ([`ItemOutcome::line`]).
#[derive(Deserialize)]
struct Published {
    id: Box<RawValue>,
    output: Option<String>,
    usage: Option<lllm_core::Usage>,
    error: Option<String>,
    #[serde(default)]
    seconds: f64,
}

/// The output line for `item` from a result published for its attempt, and whether it answers the
/// item: the result written again by lllm (one line, the item's own id), or the item's failure
/// when it is not a result line of this item. A failure, not a wait: a result of the same attempt
/// published later is dropped as a duplicate.
pub(crate) fn output_line(payload: &[u8], item: &QueuedItem) -> (String, bool) {
    let outcome = match read(payload, &item.id) {
        Ok((outcome, seconds)) => return written(outcome, item, seconds),
        Err(problem) => ItemOutcome::Failed {
            error: format!(
                "its result on the queue is not a result line of this item ({problem}); run the batch again to retry it"
            ),
        },
    };
    written(outcome, item, 0.0)
}

fn written(outcome: ItemOutcome, item: &QueuedItem, seconds: f64) -> (String, bool) {
    let answered = matches!(outcome, ItemOutcome::Answered { .. });
    (outcome.line(&item.id_json, seconds.max(0.0)), answered)
}

fn read(payload: &[u8], id: &str) -> Result<(ItemOutcome, f64), String> {
    let published: Published = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
    if item_id(&published.id).as_deref() != Some(id) {
        return Err("another id".into());
    }
    let outcome = match (published.output, published.error) {
        (Some(output), None) => ItemOutcome::Answered {
            output,
            usage: published.usage.unwrap_or_default(),
        },
        (None, Some(error)) => ItemOutcome::Failed { error },
        _ => return Err("not one of an output and an error".into()),
    };
    Ok((outcome, published.seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> QueuedItem {
        QueuedItem {
            id: "7".into(),
            id_json: RawValue::from_string("7".into()).expect("json"),
            input: None,
            vars: lllm_core::PromptVars::new(),
            tactic: String::new(),
            round: 0,
        }
    }

    #[test]
    fn a_result_is_written_again_on_one_line_or_as_the_items_failure() {
        let spread = "{\n  \"id\": 7,\n  \"output\": \"two\\nlines\",\n  \"usage\": {\"prompt_tokens\": 3, \"completion_tokens\": 4},\n  \"seconds\": 1.5\n}\n";
        let (line, answered) = output_line(spread.as_bytes(), &item());
        assert!(answered);
        assert_eq!(
            line,
            r#"{"id":7,"output":"two\nlines","usage":{"completion_tokens":4,"prompt_tokens":3,"total_tokens":7},"seconds":1.5}"#
        );
        for bad in [
            "{not json",
            r#"{"id": 8, "output": "x"}"#,
            r#"{"id": 7}"#,
            r#"{"id": 7, "output": "x", "error": "y"}"#,
            r#"{"id": 7, "output": "x"} {"id": 7, "output": "y"}"#,
        ] {
            let (line, answered) = output_line(bad.as_bytes(), &item());
            assert!(!answered, "{bad}");
            assert!(!line.contains('\n'), "{line}");
            let value: serde_json::Value = serde_json::from_str(&line).expect(bad);
            assert_eq!(value["id"], 7);
            assert!(value["error"]
                .as_str()
                .is_some_and(|e| e.contains("not a result line of this item")));
        }
    }
}
