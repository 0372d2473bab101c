//! The pieces of replay's error messages: what a JSON value is, serde's message without its line,
//! and text shortened for a message.

use serde_json::Value;

/// What kind of JSON value `value` is, for a message.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value for a message: a number as written, a string quoted (shortened), else its kind.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string \"{}\"", shorten(s)),
        other => kind(other).to_owned(),
    }
}

/// A serde_json message without its "at line 1 column N" (every line is line 1 to it), with the
/// column kept.
pub(super) fn plain(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    format!("{message}, at column {}", error.column())
}

/// [`plain`], and the field whose value the error is in, when the line shows one before it: serde
/// refuses numbers beyond a double (`1e400`) before any field is known.
pub(super) fn plain_in(error: &serde_json::Error, text: &str) -> String {
    let before = text
        .get(..error.column().saturating_sub(1))
        .unwrap_or_default();
    let field = before.rfind("\":").and_then(|end| {
        let start = before[..end].rfind('"')? + 1;
        let name = &before[start..end];
        (!name.is_empty() && name.len() <= 64 && !name.contains(['{', '}', ','])).then_some(name)
    });
    match field {
        Some(name) => format!("{}, in field `{name}`", plain(error)),
        None => plain(error),
    }
}

/// At most 64 characters of `text`, for messages.
pub(super) fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
