//! Streamed answers: lenient chunk types, and assembling chunks into one message.

use lllm_core::{Message, Role, ToolCall};
use serde::Deserialize;

use super::error::{printable, Secrets, EXCERPT_CHARS};
use super::json::{parse_json, ErrorField, FirstOnly, ToolCallList};
use super::service::{ResponseLimits, SseDecoder, SseEvent, MAX_TOOL_CALLS};
use super::wire::{short, WireNvext, WireUsage};
use super::{ChatResponse, Delta, InvokeError};

#[derive(Debug, Deserialize)]
pub(crate) struct WireChunk {
    id: Option<String>,
    model: Option<String>,
    nvext: Option<WireNvext>,
    choices: Option<FirstOnly<ChunkChoice>>,
    usage: Option<WireUsage>,
    /// Some servers (vLLM) report a failure inside the stream.
    error: Option<ErrorField>,
}

impl WireChunk {
    /// Parses the data of one event; what is not a chunk is an [`InvokeError::InvalidResponse`] that
    /// names the field at fault or shows a short excerpt.
    pub(crate) fn parse(data: &str, secrets: &Secrets) -> Result<Self, InvokeError> {
        parse_json(data.as_bytes(), secrets).map_err(|problem| InvokeError::InvalidResponse {
            problem: format!("an event of the stream is not a chunk: {problem}"),
        })
    }
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    delta: Option<ChunkDelta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChunkDelta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<ToolCallList<ChunkToolCall>>,
}

#[derive(Debug, Deserialize)]
struct ChunkToolCall {
    index: Option<u32>,
    id: Option<String>,
    function: Option<ChunkFunction>,
}

#[derive(Debug, Deserialize)]
struct ChunkFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u32>,
    id: Option<String>,
    name: String,
    arguments: String,
    /// Where the arguments stand as JSON, updated as they grow (so telling whether they are
    /// complete costs nothing, however many pieces arrive).
    scan: JsonScan,
}

/// Tracks, one piece at a time, whether a text is one complete JSON object or array.
#[derive(Debug, Default, Clone, Copy)]
struct JsonScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    opened: bool,
    closed: bool,
    broken: bool,
}

impl JsonScan {
    fn feed(&mut self, text: &str) {
        for byte in text.bytes() {
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            if self.closed {
                self.broken |= !byte.is_ascii_whitespace();
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.opened = true;
                    self.depth = self.depth.saturating_add(1);
                }
                b'}' | b']' => match self.depth {
                    0 => self.broken = true,
                    1 => {
                        self.depth = 0;
                        self.closed = true;
                    }
                    _ => self.depth -= 1,
                },
                _ => self.broken |= !self.opened && !byte.is_ascii_whitespace(),
            }
        }
    }

    fn complete(&self) -> bool {
        self.opened && self.closed && !self.broken && !self.in_string
    }
}

/// Collects the chunks of one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct StreamAccumulator {
    id: Option<String>,
    model: Option<String>,
    worker: Option<String>,
    content: Option<String>,
    reasoning: Option<String>,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<lllm_core::Usage>,
    /// Usage came with or after the finish reason: nothing is left to come.
    complete: bool,
}

impl StreamAccumulator {
    /// Whether the answer is whole (finish reason and usage came): a server that goes on sending
    /// instead of ending the stream is not waited for.
    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    /// Adds one chunk, reporting its text to `on_delta`; a chunk carrying an error ends the stream.
    pub(crate) fn push(
        &mut self,
        chunk: WireChunk,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<(), InvokeError> {
        if let Some(error) = chunk.error {
            return Err(InvokeError::InvalidResponse {
                problem: format!(
                    "the server reported an error in the stream: {}",
                    printable(&error.0, EXCERPT_CHARS, false)
                ),
            });
        }
        if self.id.is_none() {
            self.id = chunk.id;
        }
        if self.model.is_none() {
            self.model = chunk.model.as_deref().map(short);
        }
        if let Some(worker) = chunk.nvext.as_ref().and_then(WireNvext::worker) {
            self.worker = Some(worker);
        }
        let has_usage = chunk.usage.is_some();
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into_usage());
        }
        self.complete |= has_usage && self.finish_reason.is_some();
        let Some(choice) = chunk.choices.and_then(|c| c.0) else {
            return Ok(());
        };
        if choice.finish_reason.is_some() {
            self.finish_reason = choice.finish_reason;
            self.complete |= has_usage;
        }
        let Some(delta) = choice.delta else {
            return Ok(());
        };
        // Servers open with an empty piece (`"content": ""`); it is not text anyone has seen.
        if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
            if !text.is_empty() {
                on_delta(Delta::Reasoning(&text));
            }
            self.reasoning
                .get_or_insert_with(String::new)
                .push_str(&text);
        }
        if let Some(text) = delta.content {
            if !text.is_empty() {
                on_delta(Delta::Text(&text));
            }
            self.content.get_or_insert_with(String::new).push_str(&text);
        }
        for call in delta.tool_calls.map(|c| c.0).unwrap_or_default() {
            let slot = self.call_slot(&call)?;
            if slot.id.is_none() {
                slot.id = call.id;
            }
            if let Some(function) = call.function {
                if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                    // A name arrives whole, once per call (some servers repeat it).
                    slot.name = name;
                }
                if let Some(arguments) = function.arguments {
                    slot.scan.feed(&arguments);
                    slot.arguments.push_str(&arguments);
                }
            }
        }
        Ok(())
    }

    /// The call a tool-call delta continues. With an `index`, the call of that index. Without one (some
    /// servers omit it), a delta starts a new call when it has a new id, or when it names a tool while
    /// the last call already has a name and complete arguments; otherwise it continues the last call.
    /// More than [`MAX_TOOL_CALLS`] calls in one answer is an error.
    fn call_slot(&mut self, delta: &ChunkToolCall) -> Result<&mut PartialCall, InvokeError> {
        let position = match delta.index {
            Some(index) => self.calls.iter().position(|c| c.index == Some(index)),
            None => self.calls.last().and_then(|last| {
                let new_id = delta.id.is_some() && delta.id != last.id;
                let names_a_tool = delta
                    .function
                    .as_ref()
                    .and_then(|f| f.name.as_deref())
                    .is_some_and(|n| !n.is_empty());
                let last_complete = !last.name.is_empty() && last.scan.complete();
                let starts_new = new_id || (delta.id.is_none() && names_a_tool && last_complete);
                (!starts_new).then_some(self.calls.len() - 1)
            }),
        };
        let position = match position {
            Some(position) => position,
            None if self.calls.len() >= MAX_TOOL_CALLS => {
                return Err(InvokeError::InvalidResponse {
                    problem: format!("more than {MAX_TOOL_CALLS} tool calls in one answer"),
                })
            }
            None => {
                self.calls.push(PartialCall {
                    index: delta.index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        Ok(&mut self.calls[position])
    }

    /// The whole answer. A stream that ended without a finish reason was cut off.
    pub(crate) fn finish(self, url: &str) -> Result<ChatResponse, InvokeError> {
        if self.finish_reason.is_none() {
            return Err(InvokeError::Connection {
                url: lllm_core::secret::redact_url(url),
                message: "the stream ended before the answer was complete".into(),
            });
        }
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{i}")),
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        Ok(ChatResponse {
            id: self.id,
            model: self.model,
            worker: self.worker,
            message: Message {
                role: Role::Assistant,
                content: self.content,
                reasoning: self.reasoning,
                tool_calls,
                tool_call_id: None,
                usage: self.usage,
                finish_reason: self.finish_reason,
            },
        })
    }
}

/// A streamed answer as bytes arrive: events decoded within the limits, chunks parsed and collected.
#[derive(Debug)]
pub(crate) struct SseAnswer {
    decoder: SseDecoder,
    answer: StreamAccumulator,
    events: Vec<SseEvent>,
    secrets: Secrets,
    done: bool,
}

impl SseAnswer {
    pub(crate) fn new(limits: &ResponseLimits, secrets: Secrets) -> Self {
        SseAnswer {
            decoder: SseDecoder::new(limits),
            answer: StreamAccumulator::default(),
            events: Vec::new(),
            secrets,
            done: false,
        }
    }

    /// Feeds bytes of the stream, reporting text to `on_delta`. Returns whether the answer is done
    /// (`[DONE]`, or finish reason and usage came): what the server sends after it is not read.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<bool, InvokeError> {
        if self.done {
            return Ok(true);
        }
        self.decoder.feed(bytes, &mut self.events)?;
        for event in self.events.drain(..) {
            if event.data == "[DONE]" {
                self.done = true;
                break;
            }
            if matches!(event.event.as_str(), "keepalive" | "ping") {
                continue;
            }
            let chunk = WireChunk::parse(&event.data, &self.secrets)?;
            self.answer.push(chunk, on_delta)?;
            if self.answer.is_complete() {
                self.done = true;
                break;
            }
        }
        self.events.clear();
        Ok(self.done)
    }

    /// The whole answer, once the stream ended.
    pub(crate) fn finish(mut self, url: &str) -> Result<ChatResponse, InvokeError> {
        self.decoder.finish();
        self.answer.finish(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(chunks: &[serde_json::Value]) -> (Result<ChatResponse, InvokeError>, String) {
        let mut acc = StreamAccumulator::default();
        let mut text = String::new();
        for chunk in chunks {
            let chunk = WireChunk::parse(&chunk.to_string(), &Secrets::default()).expect("chunk");
            let pushed = acc.push(chunk, &mut |d| {
                if let Delta::Text(t) = d {
                    text.push_str(t)
                }
            });
            if let Err(error) = pushed {
                return (Err(error), text);
            }
        }
        (acc.finish("http://127.0.0.1:1/v1/chat/completions"), text)
    }

    #[test]
    fn assembles_text_usage_and_indexed_tool_calls() {
        let (response, text) = feed(&[
            json!({"id": "c1", "choices": [{"delta": {"role": "assistant", "content": "Hel"}}]}),
            json!({"choices": [{"delta": {"content": "lo"}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}),
        ]);
        let message = response.expect("complete").message;
        assert_eq!(text, "Hello");
        assert_eq!(message.content.as_deref(), Some("Hello"));
        assert_eq!(message.tool_calls.len(), 2);
        assert_eq!(message.tool_calls[0].arguments, r#"{"x": 1}"#);
        assert_eq!(message.tool_calls[1].name, "g");
        assert_eq!(message.usage.map(|u| u.completion_tokens), Some(4));
    }

    #[test]
    fn tool_calls_without_index_are_split_by_id() {
        let (response, _) = feed(&[
            json!({"choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": ""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "{\"n\":"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "2}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        ]);
        let calls = response.expect("complete").message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].arguments.as_str()),
            ("a", r#"{"n":2}"#)
        );
        assert_eq!((calls[1].id.as_str(), calls[1].name.as_str()), ("b", "g"));
    }

    #[test]
    fn whole_tool_calls_without_index_or_id_stay_apart() {
        let (response, _) = feed(&[
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "f", "arguments": "{\"a\": 1}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "f", "arguments": "{\"a\": 2}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        ]);
        let calls = response.expect("complete").message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].name.as_str(), calls[0].arguments.as_str()),
            ("f", r#"{"a": 1}"#)
        );
        assert_eq!(calls[1].arguments, r#"{"a": 2}"#);
    }

    #[test]
    fn empty_pieces_are_not_reported_and_errors_in_the_stream_are() {
        let mut reported = 0;
        let mut acc = StreamAccumulator::default();
        let empty = WireChunk::parse(
            r#"{"choices": [{"delta": {"role": "assistant", "content": ""}}]}"#,
            &Secrets::default(),
        )
        .expect("chunk");
        acc.push(empty, &mut |_| reported += 1).expect("fine");
        assert_eq!(reported, 0);
        let (response, _) = feed(&[json!({"error": {"message": "out of memory", "code": 500}})]);
        match response {
            Err(InvokeError::InvalidResponse { problem }) => {
                assert!(problem.contains("out of memory"))
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_stream_without_finish_reason_is_incomplete() {
        let (response, text) = feed(&[json!({"choices": [{"delta": {"content": "half"}}]})]);
        assert_eq!(text, "half");
        assert!(matches!(response, Err(InvokeError::Connection { .. })));
    }
}
