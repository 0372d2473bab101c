//! What an MCP tool result becomes for the model: text as the tool message, `structuredContent` as
//! JSON, `isError` as an error result, and images, audio and resources as a short placeholder naming
//! their type and size (a chat model cannot read them from a tool message).
//!
//! Content blocks are read one at a time from their JSON form rather than the SDK's enums, so that a
//! block type lllm does not know becomes a placeholder (the SDK itself refuses a result with a block
//! type it does not know: that call is an error result). Only `limit` bytes of text are kept: a
//! result of hundreds of thousands of blocks is measured, not copied.

use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::tools::{ToolError, ToolOutput};

/// Most characters of a URI or MIME type a placeholder repeats.
const MAX_LABEL_CHARS: usize = 200;

/// The model's view of a `tools/call` result, within `limit` bytes.
pub(crate) fn to_output(result: &CallToolResult, limit: usize) -> Result<ToolOutput, ToolError> {
    let is_error = result.is_error == Some(true);
    let structured = result.structured_content.as_ref().filter(|v| !v.is_null());
    if let (Some(structured), false) = (structured, is_error) {
        let size = structured.to_string().len();
        if size > limit {
            return Err(too_large(size, limit));
        }
        return Ok(ToolOutput::Json(structured.clone()));
    }
    let (text, size) = joined_text(result, limit);
    if size > limit {
        return Err(too_large(size, limit));
    }
    if !is_error {
        return Ok(ToolOutput::Text(text));
    }
    // An error is a diagnostic, shown on a terminal too: no escape sequences.
    Err(ToolError::new(if text.trim().is_empty() {
        "the tool reported an error without saying why".to_owned()
    } else {
        super::printable(&text)
    }))
}

/// The blocks' text joined by newlines, kept only while it has at most `limit` bytes, and the size
/// of the whole.
fn joined_text(result: &CallToolResult, limit: usize) -> (String, usize) {
    let mut text = String::new();
    let mut size = 0;
    for (i, block) in result.content.iter().enumerate() {
        let piece = serde_json::to_value(block)
            .map(|block| block_text(&block))
            .unwrap_or_else(|_| "[unreadable content]".to_owned());
        size += piece.len() + usize::from(i > 0);
        if size <= limit {
            if i > 0 {
                text.push('\n');
            }
            text.push_str(&piece);
        }
    }
    (text, size)
}

fn too_large(size: usize, limit: usize) -> ToolError {
    ToolError::new(format!(
        "the result has {size} bytes, more than the {limit} this server's results may have (max_output_bytes); ask for less, for example a smaller range or a narrower query"
    ))
}

/// One content block as text.
fn block_text(block: &Value) -> String {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let mime = |v: &Value| {
        v.get("mimeType")
            .and_then(Value::as_str)
            .map(label)
            .unwrap_or_else(|| "unknown type".into())
    };
    match kind {
        "text" => block
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        "image" | "audio" => {
            let bytes = base64_len(block.get("data").and_then(Value::as_str).unwrap_or(""));
            format!("[{kind}: {}, {}]", mime(block), size(bytes))
        }
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).map(label);
            let bytes = match (resource.get("text"), resource.get("blob")) {
                (Some(Value::String(text)), _) => text.len(),
                (_, Some(Value::String(blob))) => base64_len(blob),
                _ => 0,
            };
            format!(
                "[resource: {}, {}, {}]",
                uri.unwrap_or_else(|| "no uri".into()),
                mime(resource),
                size(bytes)
            )
        }
        "resource_link" => {
            let uri = block.get("uri").and_then(Value::as_str).map(label);
            format!(
                "[resource link: {}, {}]",
                uri.unwrap_or_else(|| "no uri".into()),
                mime(block)
            )
        }
        other => format!("[{} content]", label(other)),
    }
}

/// Text from the server, cut and stripped of control characters, to name something in a placeholder.
pub(crate) fn label(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .take(MAX_LABEL_CHARS)
        .collect()
}

/// The decoded length of base64 text.
pub(crate) fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

pub(crate) fn size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn output(result: &Value, limit: usize) -> Result<ToolOutput, ToolError> {
        let typed: CallToolResult =
            serde_json::from_value(result.clone()).expect("a CallToolResult");
        to_output(&typed, limit)
    }

    #[test]
    fn text_blocks_are_joined_and_structured_content_wins() {
        let result =
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
        assert_eq!(output(&result, 100), Ok(ToolOutput::Text("a\nb".into())));
        let result = json!({"content": [{"type": "text", "text": "{\"sum\": 3}"}], "structuredContent": {"sum": 3}});
        assert_eq!(
            output(&result, 100),
            Ok(ToolOutput::Json(json!({"sum": 3})))
        );
    }

    #[test]
    fn errors_images_and_resources() {
        let result = json!({"content": [{"type": "text", "text": "disk full"}], "isError": true});
        assert_eq!(output(&result, 100), Err(ToolError::new("disk full")));
        let result = json!({"content": [], "isError": true});
        assert!(output(&result, 100).is_err());
        let png = "iVBORw0KGgo="; // 8 bytes
        let result = json!({"content": [{"type": "image", "data": png, "mimeType": "image/png"}]});
        assert_eq!(
            output(&result, 100),
            Ok(ToolOutput::Text("[image: image/png, 8 bytes]".into()))
        );
        let result = json!({"content": [{"type": "resource", "resource": {"uri": "file:///tmp/x.txt", "mimeType": "text/plain", "text": "hello"}}]});
        assert_eq!(
            output(&result, 100),
            Ok(ToolOutput::Text(
                "[resource: file:///tmp/x.txt, text/plain, 5 bytes]".into()
            ))
        );
        // The SDK refuses a result with such a block today; should it take them, they are named.
        assert_eq!(
            block_text(&json!({"type": "hologram"})),
            "[hologram content]"
        );
    }

    #[test]
    fn results_over_the_limit_are_errors() {
        let result = json!({"content": [{"type": "text", "text": "x".repeat(101)}]});
        let error = output(&result, 100).expect_err("too large");
        assert!(error.message().contains("101 bytes"), "{error}");
        let result =
            json!({"content": [{"type": "text", "text": "y".repeat(500)}], "isError": true});
        assert!(output(&result, 100)
            .expect_err("too large")
            .message()
            .contains("500 bytes"));
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("YQ=="), 1);
        assert_eq!(base64_len("YWI="), 2);
        assert_eq!(base64_len("YWJj"), 3);
    }
}
