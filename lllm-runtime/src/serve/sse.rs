//! Server-sent events of JSON, and a run's events as `/v1/runs/{id}/events` sends them: each
//! event's name and data are what [`RunEvent`](crate::events::RunEvent) serializes to.

use axum::response::sse::Event;
use serde_json::Value;

use crate::engine::StreamedEvent;

/// One SSE event of JSON data, named or not.
pub(crate) fn json_event(name: Option<&str>, data: &Value) -> Event {
    let event = Event::default().data(data.to_string());
    match name {
        Some(name) => event.event(name),
        None => event,
    }
}

/// One event of a run on the wire: its id (`base` plus its number), its name, its JSON data.
pub(crate) fn run_event(base: u64, streamed: &StreamedEvent) -> Event {
    // An event serializes as `{"event": NAME, "data": {...}}` (and cannot fail: its keys are text).
    let mut wire = serde_json::to_value(&streamed.event).unwrap_or_default();
    let data = wire.get_mut("data").map(Value::take).unwrap_or_default();
    let name = wire.get("event").and_then(Value::as_str);
    json_event(name, &data).id((base + streamed.id).to_string())
}

#[cfg(test)]
mod tests;
