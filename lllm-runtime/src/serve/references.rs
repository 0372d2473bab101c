//! Responses' `item_reference` items: an earlier answer of lllm's, named by the id of the output
//! item that carried it (the Vercel AI SDK sends earlier assistant turns so). Each is replaced by
//! the message it names, from the caller's own conversations; one lllm cannot resolve is a 400
//! naming it, never dropped (the turn would go out without that answer).

use serde_json::{json, Value};

use super::conversations::{Conversations, Found};
use super::error::ApiError;

/// Resolves the references of a Responses `input` in place; the first one's place in its
/// conversation.
pub(crate) fn resolve(
    input: &mut Value,
    store: &Conversations,
    caller: &str,
) -> Result<Option<Found>, ApiError> {
    let Value::Array(items) = input else {
        return Ok(None);
    };
    let mut first = None;
    for (i, item) in items.iter_mut().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("item_reference") {
            continue;
        }
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return Err(ApiError::invalid(format!(
                "`input[{i}].id`: an `item_reference` needs the `id` of the item it names"
            )));
        };
        let found = store.by_item(caller, id).ok_or_else(|| {
            ApiError::invalid(format!(
                "`input[{i}]`: no item `{}` here to refer to (lllm resolves the items of its own stored responses, while their conversation is kept): send the item itself instead of a reference",
                super::shorten(id)
            ))
        })?;
        let text = &found.snapshot.transcript[found.upto - 1].text;
        *item = json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        });
        first.get_or_insert(found);
    }
    Ok(first)
}
