//! Message content as span attributes, for runs that ask for it.

use lllm_core::{Message, Role};
use serde_json::{json, Value};

/// The standard variable that turns content capture on (`true`).
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Most bytes of one content attribute: a long dialog must not make one span megabytes large.
const MAX_CONTENT_BYTES: usize = 128 * 1024;

/// Messages in the conventions' shape (`[{"role", "parts": [{"type": "text", "content"}]}]`), as
/// JSON text cut at [`MAX_CONTENT_BYTES`].
pub(super) fn messages<'m>(messages: impl Iterator<Item = &'m Message>) -> String {
    let shaped: Vec<Value> = messages.map(shape).collect();
    bounded(&Value::Array(shaped).to_string())
}

fn shape(message: &Message) -> Value {
    let mut parts = Vec::new();
    if let Some(text) = &message.content {
        let kind = if message.role == Role::Tool {
            "tool_call_response"
        } else {
            "text"
        };
        let mut part = json!({"type": kind, "content": text});
        if let Some(id) = &message.tool_call_id {
            part["id"] = json!(id);
        }
        parts.push(part);
    }
    for call in &message.tool_calls {
        parts.push(json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}));
    }
    let mut shaped = json!({"role": message.role.as_str(), "parts": parts});
    if let Some(reason) = &message.finish_reason {
        shaped["finish_reason"] = json!(reason);
    }
    shaped
}

/// `text` cut at [`MAX_CONTENT_BYTES`] on a character boundary, marked when cut.
pub(super) fn bounded(text: &str) -> String {
    if text.len() <= MAX_CONTENT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_CONTENT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[cut at {MAX_CONTENT_BYTES} bytes]", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_take_the_conventions_shape() {
        let text = messages([Message::system("be brief"), Message::user("hi")].iter());
        let value: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            value,
            json!([
                {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
                {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
            ])
        );
    }

    #[test]
    fn long_content_is_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let cut = bounded(&long);
        assert!(cut.len() < long.len());
        assert!(cut.ends_with("bytes]"), "{}", &cut[cut.len() - 40..]);
    }
}
