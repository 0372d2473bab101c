//! An invoker that sends nothing: it shows each request it would send and answers with a placeholder.

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::Message;
use serde_json::{json, Map, Value};

use super::{ChatRequest, ChatResponse, InvokeError, Invoker, OpenAiInvoker, PreparedRequest};

/// The text of every dry-run answer.
pub(crate) const DRY_RUN_ANSWER: &str = "[dry run: no server was called]";

/// Receives each request a dry run would send, once per request, in order.
type RequestSink = dyn Fn(&PreparedRequest) + Send + Sync;

/// Prepares requests exactly as [`OpenAiInvoker`] would, hands them to a sink, and answers
/// `[dry run: no server was called]` (or, for a structured answer, the simplest value its schema
/// allows) without contacting any server.
#[derive(Clone)]
pub struct DryRunInvoker {
    inner: OpenAiInvoker,
    sink: Arc<RequestSink>,
}

impl std::fmt::Debug for DryRunInvoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DryRunInvoker").finish_non_exhaustive()
    }
}

impl DryRunInvoker {
    /// A dry-run invoker preparing requests like `inner` and reporting them to `sink`.
    pub fn new(
        inner: OpenAiInvoker,
        sink: impl Fn(&PreparedRequest) + Send + Sync + 'static,
    ) -> Self {
        DryRunInvoker {
            inner,
            sink: Arc::new(sink),
        }
    }
}

#[async_trait]
impl Invoker for DryRunInvoker {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let prepared = self.inner.prepare(request)?;
        (self.sink)(&prepared);
        // An answer that must match a schema gets the simplest value that does, so the run goes on.
        let text = match request
            .response_format
            .as_ref()
            .and_then(|f| f.pointer("/json_schema/schema"))
        {
            Some(schema) => placeholder_for(schema).to_string(),
            None => DRY_RUN_ANSWER.to_owned(),
        };
        Ok(ChatResponse::new(Message::assistant(text)))
    }
}

/// The simplest value of a schema: required properties filled, the first enum value, zero, "" or [].
fn placeholder_for(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
    {
        return first.clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.first().and_then(Value::as_str),
        Some(Value::String(kind)) => Some(kind.as_str()),
        _ => None,
    };
    match kind {
        Some("object") => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let required = schema.get("required").and_then(Value::as_array);
            let mut object = Map::new();
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                object.insert(name.to_owned(), placeholder_for(property));
            }
            Value::Object(object)
        }
        Some("array") => json!([]),
        Some("string") => json!(""),
        Some("integer") | Some("number") => json!(0),
        Some("boolean") => json!(false),
        Some("null") => Value::Null,
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_required_fields_by_type() {
        let schema = json!({"type": "object", "required": ["n", "tags", "mode", "inner"], "properties": {
            "n": {"type": "integer"}, "tags": {"type": "array"}, "mode": {"enum": ["fast", "slow"]},
            "inner": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}},
            "optional": {"type": "string"}}});
        assert_eq!(
            placeholder_for(&schema),
            json!({"n": 0, "tags": [], "mode": "fast", "inner": {"ok": false}})
        );
    }
}
