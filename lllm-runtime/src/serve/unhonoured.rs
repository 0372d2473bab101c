//! Request fields that would change the answer and that a served tactic cannot honour: a 400
//! naming the field, never a silent drop. Fields that change nothing, or that the tactic's own
//! agents settle (`temperature`, `max_tokens`, a model's sampling), are accepted and not used.

use serde_json::Value;

use super::error::ApiError;

/// Chat Completions' `n` (several answers) and a `response_format` other than text.
pub(crate) fn chat(n: Option<u64>, response_format: Option<&Value>) -> Result<(), ApiError> {
    if n.is_some_and(|n| n > 1) {
        return Err(ApiError::invalid(
            "`n`: a served tactic gives one answer per request: send `n: 1`, or one request per answer",
        ));
    }
    format("response_format", response_format)
}

/// Responses' `text.format` other than text, and `background` mode.
pub(crate) fn responses(text: Option<&Value>, background: Option<bool>) -> Result<(), ApiError> {
    if background == Some(true) {
        return Err(ApiError::invalid(
            "`background`: a served tactic answers in the request (or its stream); for a run that outlives the request use `POST /v1/runs`",
        ));
    }
    format("text.format", text.and_then(|t| t.get("format")))
}

fn format(field: &str, format: Option<&Value>) -> Result<(), ApiError> {
    let kind = format.and_then(|f| f.get("type")).and_then(Value::as_str);
    match kind {
        None | Some("text") => Ok(()),
        Some(other) => Err(ApiError::invalid(format!(
            "`{field}`: a served tactic answers text; the format `{other}` cannot be honoured (ask for the structure in the message, or give the tactic's agent a `response_format`)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_would_change_the_answer_is_refused_naming_the_field() {
        assert!(chat(Some(1), Some(&json!({"type": "text"}))).is_ok());
        assert!(chat(None, None).is_ok());
        let schema = json!({"type": "json_schema", "json_schema": {"name": "x"}});
        for (error, field) in [
            (chat(Some(2), None), "`n`"),
            (chat(None, Some(&schema)), "`response_format`"),
            (
                responses(Some(&json!({"format": schema})), None),
                "`text.format`",
            ),
            (responses(None, Some(true)), "`background`"),
        ] {
            let message = error.expect_err(field).body()["message"].to_string();
            assert!(message.contains(field), "{message}");
        }
        assert!(responses(
            Some(&json!({"format": {"type": "text"}, "verbosity": "low"})),
            Some(false)
        )
        .is_ok());
    }
}
