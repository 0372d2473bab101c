//! `POST /v1/chat/completions`: a tactic answers as a chat model, streamed as
//! `chat.completion.chunk` events ending in `data: [DONE]`, or not.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use lllm_core::Usage;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Caller;
use super::body::read_body;
use super::caller_tools::{chat_results, chat_tools, offered};
use super::error::ApiError;
use super::identity::named_id;
use super::identity::{identify, Claims};
use super::input::{parse_body, turn, WireMessage};
use super::paused::Named;
use super::run_stream::{paused_for_turn, Ask, Given, Handback, LiveRun, Step};
use super::sse::json_event;
use super::unhonoured;
use super::{now, ServeState};
use crate::journal::PendingCall;

/// The fields of a Chat Completions request lllm reads; the others are accepted and not used (the
/// tactic's agents carry their own model settings).
#[derive(Debug, Deserialize)]
struct ChatRequest {
    model: String,
    messages: Vec<WireMessage>,
    #[serde(default)]
    prompt_cache_key: Option<String>,
    #[serde(default)]
    n: Option<u64>,
    #[serde(default)]
    response_format: Option<Value>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

/// What of a Chat request the caller's tools need: its messages as sent, and its `tools`.
#[derive(Debug, Deserialize)]
struct ToolFields {
    messages: Vec<Value>,
    #[serde(default)]
    tools: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

/// Answers a chat completion with a run of the model's tactic.
pub(crate) async fn complete(
    State(state): State<Arc<ServeState>>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(&state, body).await?;
    let request: ChatRequest = parse_body(&bytes)?;
    let fields: ToolFields = parse_body(&bytes)?;
    let model = state.model(&request.model)?;
    unhonoured::chat(request.n, request.response_format.as_ref())?;
    let stream = request.stream.unwrap_or(false);
    let caller = caller.map(|Extension(c)| c).unwrap_or_default();
    let caller_tools = offered(model, chat_tools(fields.tools.as_ref())?)?;
    let results = if model.tactic.takes_caller_tools() {
        chat_results(&fields.messages)?
    } else {
        Vec::new()
    };
    let asked = (stream, "chat.completions");
    let named = Named {
        conversation: named_id(&headers, request.prompt_cache_key.as_deref(), None).map(|n| n.0),
        previous: None,
    };
    let mut live = if results.is_empty() {
        let turn = turn(&request.messages, "messages")?;
        match paused_for_turn(&state, model, (&caller, &named), &turn) {
            // A new user message while calls wait: the paused run goes on with it.
            Some(paused) => {
                let given = Given::Turn(&turn.input);
                LiveRun::resume(&state, model, paused, given, asked, None).await?
            }
            None => {
                let identified = chat_identity(&state, &headers, &request, (&caller, model), &turn);
                let ask = Ask {
                    turn,
                    identified,
                    answer_ids: None,
                    stream,
                    source: "chat.completions",
                    caller_tools,
                };
                LiveRun::start(&state, model, ask).await?
            }
        }
    } else {
        let paused = state
            .paused
            .take((&caller.0, &model.id), &named, &results, "messages")?;
        LiveRun::resume(&state, model, paused, Given::Results(&results), asked, None).await?
    };
    let chunk = Chunk {
        id: format!("chatcmpl-{}", lllm_core::DialogId::new()),
        created: now(),
        model: live.model.clone(),
    };
    if stream {
        let usage = request
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        return Ok(live.sse(chunk.renderer(usage)));
    }
    let outcome = live.wait().await;
    match outcome.as_ref() {
        Ok(output) => Ok((
            live.headers(),
            Json(chunk.completion(&output.answer, &output.usage)),
        )
            .into_response()),
        Err(error) => match Handback::of(error).filter(|_| live.hands_calls()) {
            Some(handback) => Ok((live.headers(), Json(chunk.handed(handback))).into_response()),
            None => Err(live.failure(error)),
        },
    }
}

/// The conversation of a Chat request that starts a turn.
fn chat_identity(
    state: &ServeState,
    headers: &HeaderMap,
    request: &ChatRequest,
    (caller, model): (&Caller, &super::Model),
    turn: &super::input::Turn,
) -> super::identity::Identified {
    let claims = Claims {
        prompt_cache_key: request.prompt_cache_key.as_deref(),
        ..Claims::default()
    };
    let key = (&*caller.0, model.id.as_str());
    identify(headers, claims, &state.conversations, key, turn)
}

/// What every chunk of one completion repeats.
struct Chunk {
    id: String,
    created: u64,
    model: String,
}

impl Chunk {
    fn completion(&self, answer: &str, usage: &Usage) -> Value {
        let message = json!({"role": "assistant", "content": answer});
        self.whole(message, "stop", usage)
    }

    /// The answer that hands the calls to the caller, the model's text beside them as its content
    /// (null when none).
    fn handed(&self, handback: Handback<'_>) -> Value {
        let content = Some(handback.text).filter(|t| !t.is_empty());
        let calls = tool_calls(handback.pending);
        let message = json!({"role": "assistant", "content": content, "tool_calls": calls});
        self.whole(message, "tool_calls", handback.usage)
    }

    /// A non-streamed completion of one choice.
    fn whole(&self, message: Value, finish: &str, usage: &Usage) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": finish,
            }],
            "usage": usage_json(usage),
        })
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Event {
        json_event(
            None,
            &json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
            }),
        )
    }

    /// The finish chunk, the usage chunk when asked for, `[DONE]`.
    fn finish(&self, out: &mut Vec<Event>, reason: &str, usage: Option<&Usage>) {
        out.push(self.chunk(json!({}), Some(reason)));
        if let Some(usage) = usage {
            out.push(json_event(
                None,
                &json!({
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": usage_json(usage),
                }),
            ));
        }
        out.push(Event::default().data("[DONE]"));
    }

    /// The events of a streamed completion: the role first, each piece of text, the whole answer
    /// at the end when the tactic streamed none (a tactic of steps answers at its end), or the
    /// calls handed to the caller (`tool_calls` deltas, finish `tool_calls`), the finish, the usage
    /// when asked for, `[DONE]`; or an error event.
    fn renderer(self, with_usage: bool) -> impl FnMut(Step<'_>) -> Vec<Event> + Send + 'static {
        let mut started = false;
        let mut streamed = false;
        move |step| {
            let mut out = Vec::new();
            if !started {
                started = true;
                out.push(self.chunk(json!({"role": "assistant", "content": ""}), None));
            }
            match step {
                Step::Started => {}
                Step::Text(text) => {
                    streamed = true;
                    out.push(self.chunk(json!({ "content": text }), None));
                }
                Step::Answered(output) => {
                    if !streamed && !output.answer.is_empty() {
                        out.push(self.chunk(json!({ "content": output.answer }), None));
                    }
                    self.finish(&mut out, "stop", with_usage.then_some(&output.usage));
                }
                Step::Handed(handback) => {
                    if !streamed && !handback.text.is_empty() {
                        out.push(self.chunk(json!({ "content": handback.text }), None));
                    }
                    // One chunk per call, its arguments whole: a client's accumulator joins the
                    // pieces of each index, and there is one.
                    for call in tool_calls(handback.pending) {
                        out.push(self.chunk(json!({ "tool_calls": [call] }), None));
                    }
                    self.finish(&mut out, "tool_calls", with_usage.then_some(handback.usage));
                }
                Step::Failed(failure) => {
                    out.push(json_event(None, &json!({ "error": failure.body() })));
                }
            }
            out
        }
    }
}

/// The `pending` calls as Chat's `tool_calls` (each with its `index`, as a stream's delta has it).
fn tool_calls(pending: &[PendingCall]) -> Vec<Value> {
    pending
        .iter()
        .enumerate()
        .map(|(i, call)| {
            json!({
                "index": i,
                "id": call.call,
                "type": "function",
                "function": {"name": call.tool, "arguments": call.arguments.to_string()},
            })
        })
        .collect()
}

/// Usage in Chat Completions' shape.
fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens(),
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens.unwrap_or(0)},
    })
}
