//! A server's resources as two tools (`resources: true`): `<prefix>list_resources` lists them and
//! the URI templates the server fills in, `<prefix>read_resource {uri}` reads one. Both answers are
//! held to the server's `max_output_bytes`: a longer one is cut, with a line saying so (the model
//! can still use the beginning of a long document), and binary contents are described, not dumped.

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::ToolSpec;
use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::ServiceError;
use serde_json::{json, Value};

use super::content::{base64_len, label, size};
use super::state::Inner;
use crate::tools::{Tool, ToolError, ToolOutput};

/// Most pages of a resource (or template) listing read: a server that always returns a next cursor
/// must not keep the model waiting.
const MAX_PAGES: usize = 16;
/// Longest URI a model may ask for.
const MAX_URI_BYTES: usize = 4096;
/// Most characters of a description repeated in a listing.
const MAX_DESCRIPTION_CHARS: usize = 300;
/// JSON-RPC's "method not found": a server without resource templates.
const METHOD_NOT_FOUND: i32 = -32601;

/// The two resource tools of `server`, named with its prefix.
pub(crate) fn resource_tools(server: &Arc<Inner>) -> Vec<Arc<dyn Tool>> {
    let list = server.offered_name("list_resources");
    let read = server.offered_name("read_resource");
    let name = &server.name;
    let list_spec = ToolSpec {
        name: list.clone(),
        description: format!("List the resources (documents, files, data) of MCP server `{name}`, and the URI templates it can fill in. Read one with `{read}`."),
        parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
    };
    let read_spec = ToolSpec {
        name: read,
        description: format!("Read a resource of MCP server `{name}` by its URI, as `{list}` lists it (or a template with its placeholders filled in)."),
        parameters: json!({
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI"}},
            "required": ["uri"],
            "additionalProperties": false
        }),
    };
    vec![
        Arc::new(ResourceTool {
            server: server.clone(),
            spec: list_spec,
            read: false,
        }),
        Arc::new(ResourceTool {
            server: server.clone(),
            spec: read_spec,
            read: true,
        }),
    ]
}

/// `list_resources` (`read: false`) or `read_resource`.
#[derive(Debug)]
struct ResourceTool {
    server: Arc<Inner>,
    spec: ToolSpec,
    read: bool,
}

#[async_trait]
impl Tool for ResourceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Listing and reading change nothing on the server.
    fn idempotent(&self) -> bool {
        true
    }

    fn source(&self) -> String {
        format!("MCP server `{}` (its resources)", self.server.name)
    }

    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        let uri = if self.read {
            Some(uri_of(&arguments)?)
        } else {
            None
        };
        let work = async {
            match uri {
                Some(uri) => self.read_resource(uri).await,
                None => self.list().await,
            }
        };
        let timeout = self.server.timeout;
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok(text)) => Ok(ToolOutput::Text(cut(text, self.server.max_output_bytes))),
            Ok(Err(error)) => Err(self.server.failed_call(&self.spec.name, error).await),
            Err(_) => Err(ToolError::new(format!(
                "the server did not answer within {} s (timeout_s of MCP server `{}`)",
                timeout.as_secs_f64(),
                self.server.name
            ))),
        }
    }
}

/// The `uri` argument, checked.
fn uri_of(arguments: &Value) -> Result<&str, ToolError> {
    match arguments.get("uri").and_then(Value::as_str) {
        Some(uri) if !uri.is_empty() && uri.len() <= MAX_URI_BYTES => Ok(uri),
        _ => Err(ToolError::new(format!(
            "`uri` must be a resource URI of 1 to {MAX_URI_BYTES} bytes, as the listing gives it"
        ))),
    }
}

impl ResourceTool {
    /// The resources, then the templates (a server without templates lists none).
    async fn list(&self) -> Result<String, ServiceError> {
        let peer = &self.server.peer;
        let mut lines = vec!["resources:".to_owned()];
        let mut cursor = None;
        let mut listed = 0;
        for _ in 0..MAX_PAGES {
            let page = peer.list_resources(paged(cursor.take())).await?;
            listed += page.resources.len();
            lines.extend(page.resources.iter().map(|r| {
                entry(
                    &r.uri,
                    &r.name,
                    r.mime_type.as_deref(),
                    r.description.as_deref(),
                )
            }));
            match page.next_cursor.filter(|c| !c.is_empty()) {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        if cursor.is_some() {
            lines.push(format!(
                "[the listing goes on; only its first {MAX_PAGES} pages are shown]"
            ));
        }
        if listed == 0 {
            lines.push("(none)".into());
        }
        lines.extend(self.templates().await?);
        Ok(lines.join("\n"))
    }

    /// The template lines, with a heading; none when the server has no templates.
    async fn templates(&self) -> Result<Vec<String>, ServiceError> {
        let mut lines = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = match self
                .server
                .peer
                .list_resource_templates(paged(cursor.take()))
                .await
            {
                Err(ServiceError::McpError(e)) if e.code.0 == METHOD_NOT_FOUND => break,
                other => other?,
            };
            lines.extend(page.resource_templates.iter().map(|t| {
                entry(
                    &t.uri_template,
                    &t.name,
                    t.mime_type.as_deref(),
                    t.description.as_deref(),
                )
            }));
            match page.next_cursor.filter(|c| !c.is_empty()) {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        if !lines.is_empty() {
            lines.insert(
                0,
                "templates (fill in the {placeholders}, then read the URI):".into(),
            );
        }
        Ok(lines)
    }

    /// The resource's text contents joined; a binary one described.
    async fn read_resource(&self, uri: &str) -> Result<String, ServiceError> {
        let result = self
            .server
            .peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await?;
        let pieces: Vec<String> = result.contents.iter().map(content_text).collect();
        Ok(if pieces.is_empty() {
            "[the resource is empty]".to_owned()
        } else {
            pieces.join("\n")
        })
    }
}

fn paged(cursor: Option<String>) -> Option<PaginatedRequestParams> {
    cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)))
}

/// One line of a listing: `- uri (name, type): description`.
fn entry(uri: &str, name: &str, mime: Option<&str>, description: Option<&str>) -> String {
    let mut line = format!("- {} ({}", label(uri), label(name));
    if let Some(mime) = mime {
        line.push_str(", ");
        line.push_str(&label(mime));
    }
    line.push(')');
    if let Some(description) = description.map(str::trim).filter(|d| !d.is_empty()) {
        let one_line = description.split_whitespace().collect::<Vec<_>>().join(" ");
        line.push_str(": ");
        line.push_str(&super::listing::excerpt_chars(
            &label(&one_line),
            MAX_DESCRIPTION_CHARS,
        ));
    }
    line
}

/// Text as it is; a blob as a line naming its URI, type and size.
fn content_text(content: &ResourceContents) -> String {
    match content {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[binary resource: {}, {}, {}; not shown]",
            label(uri),
            mime_type
                .as_deref()
                .map(label)
                .unwrap_or_else(|| "unknown type".into()),
            size(base64_len(blob))
        ),
        _ => "[resource contents of a kind lllm does not know; not shown]".to_owned(),
    }
}

/// `text` within `limit` bytes: longer text is cut at a character boundary, with a last line saying
/// how much was left out.
fn cut(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[truncated: {} of {} bytes shown (max_output_bytes of the server)]",
        &text[..end],
        end,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_at_a_character_boundary_with_a_marker() {
        assert_eq!(cut("short".into(), 10), "short");
        let cut_text = cut("ééééé".into(), 5); // 10 bytes; byte 5 is inside the third é
        assert_eq!(
            cut_text,
            "éé\n[truncated: 4 of 10 bytes shown (max_output_bytes of the server)]"
        );
    }

    #[test]
    fn blobs_are_described_and_entries_are_one_line() {
        let blob = ResourceContents::BlobResourceContents {
            uri: "demo://b/1".into(),
            mime_type: Some("application/octet-stream".into()),
            blob: "YWJj".into(),
            meta: None,
        };
        assert_eq!(
            content_text(&blob),
            "[binary resource: demo://b/1, application/octet-stream, 3 bytes; not shown]"
        );
        assert_eq!(
            entry(
                "a://x",
                "X",
                Some("text/plain"),
                Some("two\nlines\u{1b}[2J")
            ),
            "- a://x (X, text/plain): two lines[2J"
        );
        assert_eq!(entry("a://y", "Y", None, None), "- a://y (Y)");
    }
}
