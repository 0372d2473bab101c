//! What a request asks a tactic: the last user message is the input, the earlier turns seed the
//! conversation's first dialog, and the client's system or developer text goes to the templates as
//! `client_system` (it never replaces the tactic's system prompt).

use lllm_core::Message;
use serde::Deserialize;
use serde_json::Value;

use super::error::ApiError;

/// The template variable holding the client's system and developer text (empty when none).
pub const CLIENT_SYSTEM_VAR: &str = "client_system";

/// One request's turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    /// The earlier user and assistant messages.
    pub(crate) seed: Vec<Message>,
    /// The last user message's text.
    pub(crate) input: String,
    /// The client's system and developer text, joined by blank lines.
    pub(crate) client_system: String,
}

/// A message as Chat Completions and Responses send them: a role and text content, as a string or
/// as parts. Other fields (`name`, `tool_calls`, ...) are accepted and not used.
#[derive(Debug, Deserialize)]
pub(crate) struct WireMessage {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// Text part types, of both APIs.
const TEXT_PARTS: [&str; 3] = ["text", "input_text", "output_text"];

impl WireMessage {
    /// The message's text, or why it has none that a tactic can read (`at` names it).
    fn text(&self, at: &str) -> Result<String, ApiError> {
        match &self.content {
            None => Ok(String::new()),
            Some(Content::Text(text)) => Ok(text.clone()),
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for (i, part) in parts.iter().enumerate() {
                    match (&part.text, TEXT_PARTS.contains(&part.kind.as_str())) {
                        (Some(piece), true) => text.push_str(piece),
                        _ => {
                            return Err(ApiError::invalid(format!(
                                "{at}.content[{i}]: a part of type `{}` cannot be served: a tactic reads text parts only ({})",
                                part.kind,
                                TEXT_PARTS.join(", ")
                            )))
                        }
                    }
                }
                Ok(text)
            }
        }
    }
}

/// The turn of `messages` (`field` names them in errors): the last one must be the user's.
pub(crate) fn turn(messages: &[WireMessage], field: &str) -> Result<Turn, ApiError> {
    let mut turn = Turn {
        seed: Vec::new(),
        input: String::new(),
        client_system: String::new(),
    };
    let last_user = messages
        .iter()
        .rposition(is_message)
        .filter(|&i| messages[i].role.as_deref() == Some("user"))
        .ok_or_else(|| {
            ApiError::invalid(format!(
                "{field}: the last message must be the user's: it is the tactic's input"
            ))
        })?;
    for (i, message) in messages.iter().enumerate() {
        let at = format!("{field}[{i}]");
        if !is_message(message) {
            // A client's own tool calls and their outputs: the tactic runs its own tools.
            continue;
        }
        let text = message.text(&at)?;
        match message.role.as_deref() {
            Some("system" | "developer") => push_paragraph(&mut turn.client_system, &text),
            Some("user") if i == last_user => turn.input = text,
            Some("user") => turn.seed.push(Message::user(text)),
            Some("assistant") if !text.is_empty() => turn.seed.push(Message::assistant(text)),
            Some("assistant" | "tool" | "function") => {}
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "{at}.role: `{other}` is not a role (system, developer, user, assistant, tool)"
                )))
            }
            None => return Err(ApiError::invalid(format!("{at}: a message needs a `role`"))),
        }
    }
    Ok(turn)
}

/// Whether an item is a message (Responses items of other types are calls and their outputs).
fn is_message(message: &WireMessage) -> bool {
    message.kind.as_deref().is_none_or(|kind| kind == "message")
}

/// Adds `text` to `out` as a paragraph of its own.
pub(crate) fn push_paragraph(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(text);
}

/// Reads a JSON body into `T`, naming the field that is wrong. The body is one JSON value and
/// nothing after it (whitespace aside): text after the value is refused, not ignored, so that
/// two requests run together, or a value cut and pasted twice, are not half-read.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ApiError::invalid(format!("the body is not a valid request: {inner}"))
        } else {
            ApiError::invalid(format!("`{path}`: {inner}"))
        }
    })?;
    deserializer.end().map_err(|e| {
        ApiError::invalid(format!(
            "the body must be one JSON value and nothing after it: text follows the value at line {}, column {}; send the value alone",
            e.line(),
            e.column()
        ))
    })?;
    Ok(value)
}

/// Messages of the Responses `input`: a string is one user message.
pub(crate) fn response_input(input: &Value) -> Result<Vec<WireMessage>, ApiError> {
    match input {
        Value::String(text) => Ok(vec![WireMessage {
            kind: None,
            role: Some("user".into()),
            content: Some(Content::Text(text.clone())),
        }]),
        Value::Array(_) => Vec::<WireMessage>::deserialize(input)
            .map_err(|e| ApiError::invalid(format!("`input`: {e}"))),
        _ => Err(ApiError::invalid(
            "`input` must be a string or a list of items",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(value: Value) -> Vec<WireMessage> {
        serde_json::from_value(value).expect("messages")
    }

    #[test]
    fn earlier_turns_seed_and_system_text_is_kept_apart() {
        let list = messages(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
            {"role": "developer", "content": "Use metric units."},
            {"role": "user", "content": [{"type": "text", "text": "How far"}, {"type": "text", "text": " is it?"}]}
        ]));
        let turn = turn(&list, "messages").expect("a turn");
        assert_eq!(turn.input, "How far is it?");
        assert_eq!(
            turn.seed,
            vec![Message::user("Hi"), Message::assistant("Hello")]
        );
        assert_eq!(turn.client_system, "Be brief.\n\nUse metric units.");
    }

    #[test]
    fn the_last_message_must_be_the_users_and_parts_must_be_text() {
        let list = messages(
            json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]),
        );
        assert!(turn(&list, "messages").is_err());
        let list = messages(
            json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]),
        );
        let error = turn(&list, "messages").expect_err("an image");
        assert!(error.body()["message"]
            .as_str()
            .unwrap_or("")
            .contains("messages[0].content[0]"));
        let list =
            messages(json!([{"role": "wizard", "content": "a"}, {"role": "user", "content": "b"}]));
        assert!(turn(&list, "messages").is_err());
    }

    #[test]
    fn text_after_the_json_value_is_refused_and_whitespace_is_not() {
        #[derive(Debug, serde::Deserialize)]
        struct Body {
            #[allow(dead_code)]
            model: String,
        }
        assert!(parse_body::<Body>(b"{\"model\": \"m\"} \r\n\t").is_ok());
        for body in [
            &b"{\"model\": \"m\"}{\"model\": \"n\"}"[..],
            b"{\"model\": \"m\"} x",
            b"{\"model\": \"m\"}\n\"more\"",
        ] {
            let error = parse_body::<Body>(body).expect_err("trailing text");
            assert_eq!(error.status(), axum::http::StatusCode::BAD_REQUEST);
            let message = error.body()["message"].as_str().unwrap_or("").to_owned();
            assert!(message.contains("nothing after it"), "{message}");
            assert!(message.contains("column"), "{message}");
        }
    }

    #[test]
    fn responses_input_takes_a_string_or_items_and_skips_calls() {
        let list = response_input(&json!("Hi")).expect("a string");
        assert_eq!(turn(&list, "input").expect("turn").input, "Hi");
        let list = response_input(&json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Q1"}]},
            {"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
            {"role": "user", "content": "Q2"}
        ]))
        .expect("items");
        let turn = turn(&list, "input").expect("turn");
        assert_eq!((turn.input.as_str(), turn.seed.len()), ("Q2", 1));
        assert!(response_input(&json!(5)).is_err());
    }
}
