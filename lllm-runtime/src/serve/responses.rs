//! `POST /v1/responses`: a tactic answers as a Responses model, streamed with the standard
//! `response.*` events, or not. `previous_response_id`, `conversation` and `item_reference`s name
//! the conversation a request continues (see `identity`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use lllm_core::{DialogId, Usage};
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Caller;
use super::body::read_body;
use super::caller_tools::{offered, responses_results, responses_tools};
use super::conversations::Found;
use super::error::ApiError;
use super::failure::Failure;
use super::identity::named_id;
use super::identity::{identify, Claims};
use super::input::{parse_body, push_paragraph, response_input, turn, Turn};
use super::memo::AnswerIds;
use super::paused::{Named, PausedRun};
use super::references;
use super::run_stream::{paused_for_turn, Ask, Given, Handback, LiveRun, Step};
use super::sse::json_event;
use super::unhonoured;
use super::ServeState;
use crate::engine::RunOutput;
use crate::journal::PendingCall;

/// The fields of a Responses request lllm reads; the others are accepted and not used.
#[derive(Debug, Deserialize)]
struct ResponsesRequest {
    model: String,
    input: Value,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    previous_response_id: Option<String>,
    #[serde(default)]
    conversation: Option<ConversationRef>,
    #[serde(default)]
    prompt_cache_key: Option<String>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    store: Option<bool>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    background: Option<bool>,
    #[serde(default)]
    tools: Option<Value>,
}

/// Responses' `conversation`: its id, or an object with it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ConversationRef {
    Id(String),
    Object { id: String },
}

impl ConversationRef {
    fn id(&self) -> &str {
        match self {
            ConversationRef::Id(id) | ConversationRef::Object { id } => id,
        }
    }
}

/// Answers a response with a run of the model's tactic.
pub(crate) async fn respond(
    State(state): State<Arc<ServeState>>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let mut request: ResponsesRequest = parse_body(&read_body(&state, body).await?)?;
    let model = state.model(&request.model)?;
    unhonoured::responses(request.text.as_ref(), request.background)?;
    let caller = caller.map(|Extension(c)| c).unwrap_or_default();
    let caller_tools = offered(model, responses_tools(request.tools.as_ref())?)?;
    let stream = request.stream.unwrap_or(false);
    let meta = Meta {
        id: format!("resp_{}", DialogId::new().to_string().replace('-', "")),
        message: format!("msg_{}", DialogId::new().to_string().replace('-', "")),
        created: super::now(),
        model: model.id.clone(),
        previous: request.previous_response_id.clone(),
        instructions: request.instructions.clone(),
        store: request.store.unwrap_or(true),
    };
    let answer_ids = meta.store.then(|| AnswerIds {
        response: meta.id.clone(),
        item: meta.message.clone(),
    });
    let results = if model.tactic.takes_caller_tools() {
        responses_results(&request.input)?
    } else {
        Vec::new()
    };
    let conversation = request.conversation.as_ref().map(ConversationRef::id);
    let named = Named {
        conversation: named_id(&headers, request.prompt_cache_key.as_deref(), conversation)
            .map(|(id, _)| id),
        previous: request.previous_response_id.as_deref(),
    };
    let asked = (stream, "responses");
    let mut live = if !results.is_empty() {
        let paused = state
            .paused
            .take((&caller.0, &model.id), &named, &results, "input")?;
        let given = Given::Results(&results);
        LiveRun::resume(&state, model, paused, given, asked, answer_ids).await?
    } else if let Some((paused, turn)) = paused_turn(&state, model, (&caller, &named), &request) {
        // A new user message while calls wait: the paused run goes on with it.
        let given = Given::Turn(&turn.input);
        LiveRun::resume(&state, model, paused, given, asked, answer_ids).await?
    } else {
        let ask = ask(&state, &headers, &mut request, &caller, model)?;
        let ask = Ask {
            answer_ids,
            stream,
            caller_tools,
            ..ask
        };
        LiveRun::start(&state, model, ask).await?
    };
    if stream {
        return Ok(live.sse(meta.renderer()));
    }
    let outcome = live.wait().await;
    match outcome.as_ref() {
        Ok(output) => Ok((
            live.headers(),
            Json(meta.response("completed", Some(output), None)),
        )
            .into_response()),
        Err(error) => match Handback::of(error).filter(|_| live.hands_calls()) {
            Some(handback) => Ok((live.headers(), Json(meta.handed(handback))).into_response()),
            None => Err(live.failure(error)),
        },
    }
}

/// The paused run a request with a new user message and no results continues, and its turn (a
/// request whose input a paused run cannot read is not its continuation).
fn paused_turn(
    state: &ServeState,
    model: &super::Model,
    (caller, named): (&Caller, &Named<'_>),
    request: &ResponsesRequest,
) -> Option<(PausedRun, Turn)> {
    let turn = turn(&response_input(&request.input).ok()?, "input").ok()?;
    let mut history = turn.clone();
    if let Some(instructions) = &request.instructions {
        history.client_system = instructions.clone();
        push_paragraph(&mut history.client_system, &turn.client_system);
    }
    paused_for_turn(state, model, (caller, named), &history).map(|paused| (paused, turn))
}

/// What a request that brings no results asks: its turn in its conversation.
fn ask(
    state: &ServeState,
    headers: &HeaderMap,
    request: &mut ResponsesRequest,
    caller: &Caller,
    model: &super::Model,
) -> Result<Ask, ApiError> {
    let referenced = references::resolve(&mut request.input, &state.conversations, &caller.0)?;
    let mut turn = turn(&response_input(&request.input)?, "input")?;
    if let Some(instructions) = &request.instructions {
        let mut system = instructions.clone();
        push_paragraph(&mut system, &turn.client_system);
        turn.client_system = system;
    }
    let previous = previous(state, request, caller, &turn)?;
    let claims = Claims {
        prompt_cache_key: request.prompt_cache_key.as_deref(),
        conversation: request.conversation.as_ref().map(ConversationRef::id),
        previous,
        referenced,
    };
    if request.conversation.is_some() && !turn.seed.is_empty() {
        return Err(ApiError::invalid(
            "`input`: with `conversation`, the input is the new turn only (the earlier turns are the conversation's); send the earlier messages without `conversation` instead",
        ));
    }
    let identified = identify(
        headers,
        claims,
        &state.conversations,
        (&caller.0, &model.id),
        &turn,
    );
    Ok(Ask {
        turn,
        identified,
        answer_ids: None,
        stream: false,
        source: "responses",
        caller_tools: Vec::new(),
    })
}

/// The response `previous_response_id` names, of this caller and model; with it, the input is the
/// new turn only.
fn previous(
    state: &ServeState,
    request: &ResponsesRequest,
    caller: &Caller,
    turn: &Turn,
) -> Result<Option<Found>, ApiError> {
    let Some(previous) = &request.previous_response_id else {
        return Ok(None);
    };
    if request.conversation.is_some() {
        return Err(ApiError::invalid(
            "`previous_response_id` and `conversation` name the earlier turns twice: send one of them",
        ));
    }
    let found = state
        .conversations
        .by_response(&caller.0, previous)
        .ok_or_else(|| {
            ApiError::not_found(
                "previous_response_not_found",
                format!(
                    "`previous_response_id`: no response `{}` here (responses are kept with their conversation, the least recently used forgotten first, and only when `store` is not false)",
                    super::shorten(previous)
                ),
            )
        })?;
    if found.snapshot.key.model != request.model {
        return Err(ApiError::invalid(format!(
            "`previous_response_id`: that response is of the model `{}`, not `{}`",
            found.snapshot.key.model, request.model
        )));
    }
    if !turn.seed.is_empty() {
        return Err(ApiError::invalid(
            "`input`: with `previous_response_id`, the input is the new user message only (the earlier turns are the previous response's)",
        ));
    }
    Ok(Some(found))
}

/// What every event of one response repeats.
struct Meta {
    id: String,
    message: String,
    created: u64,
    model: String,
    previous: Option<String>,
    instructions: Option<String>,
    /// Whether the response is kept for a later `previous_response_id` or `item_reference`.
    store: bool,
}

impl Meta {
    fn message_item(&self, status: &str, text: Option<&str>) -> Value {
        let content: Vec<Value> = text
            .map(|text| vec![json!({"type": "output_text", "text": text, "annotations": []})])
            .unwrap_or_default();
        json!({
            "type": "message",
            "id": self.message,
            "status": status,
            "role": "assistant",
            "content": content,
        })
    }

    /// The response that hands the calls to the caller: the model's text beside them as a message
    /// item (when it wrote any), then a `function_call` item each, and the run's usage so far.
    fn handed(&self, handback: Handback<'_>) -> Value {
        let mut response = self.response("completed", None, None);
        let mut output = Vec::new();
        if !handback.text.is_empty() {
            output.push(self.message_item("completed", Some(handback.text)));
        }
        output.extend(function_calls(handback.pending));
        response["output"] = output.into();
        response["usage"] = usage_json(handback.usage);
        response
    }

    /// The response object.
    fn response(&self, status: &str, output: Option<&RunOutput>, error: Option<Value>) -> Value {
        let items: Vec<Value> = output
            .map(|o| vec![self.message_item("completed", Some(&o.answer))])
            .unwrap_or_default();
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": items,
            "usage": output.map(|o| usage_json(&o.usage)),
            "error": error,
            "incomplete_details": null,
            "instructions": self.instructions,
            "previous_response_id": self.previous,
            "parallel_tool_calls": false,
            "tool_choice": "auto",
            "tools": [],
            "metadata": {},
            "text": {"format": {"type": "text"}},
            "temperature": null,
            "top_p": null,
            "truncation": "disabled",
            "store": self.store,
        })
    }

    /// Ends the message item of the stream, its text `text`.
    fn close_message(&self, emit: &mut impl FnMut(&str, Value), text: &str) {
        emit(
            "response.output_text.done",
            json!({"item_id": self.message, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}),
        );
        emit(
            "response.content_part.done",
            json!({"item_id": self.message, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}}),
        );
        emit(
            "response.output_item.done",
            json!({"output_index": 0, "item": self.message_item("completed", Some(text))}),
        );
    }

    /// The standard event sequence: created, in progress, the message item and its text part
    /// opened, each delta, the text and the item done, completed; or `response.failed`.
    fn renderer(self) -> impl FnMut(Step<'_>) -> Vec<Event> + Send + 'static {
        let mut sequence = 0u64;
        let mut text = String::new();
        let mut opened = false;
        move |step| {
            let mut out = Vec::new();
            let mut emit = |kind: &str, mut data: Value| {
                data["type"] = kind.into();
                data["sequence_number"] = sequence.into();
                sequence += 1;
                out.push(json_event(Some(kind), &data));
            };
            if !opened {
                opened = true;
                let response = self.response("in_progress", None, None);
                emit("response.created", json!({ "response": response }));
                emit("response.in_progress", json!({ "response": response }));
                emit(
                    "response.output_item.added",
                    json!({"output_index": 0, "item": self.message_item("in_progress", None)}),
                );
                emit(
                    "response.content_part.added",
                    json!({"item_id": self.message, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
            }
            let delta = |piece: &str| json!({"item_id": self.message, "output_index": 0, "content_index": 0, "delta": piece, "logprobs": []});
            match step {
                Step::Started => {}
                Step::Text(piece) => {
                    text.push_str(piece);
                    emit("response.output_text.delta", delta(piece));
                }
                Step::Answered(output) => {
                    if text.is_empty() && !output.answer.is_empty() {
                        emit("response.output_text.delta", delta(&output.answer));
                    }
                    self.close_message(&mut emit, &output.answer);
                    emit(
                        "response.completed",
                        json!({ "response": self.response("completed", Some(output), None) }),
                    );
                }
                Step::Handed(handback) => {
                    if text.is_empty() && !handback.text.is_empty() {
                        text.push_str(handback.text);
                        emit("response.output_text.delta", delta(handback.text));
                    }
                    self.close_message(&mut emit, &text);
                    let calls = function_calls(handback.pending);
                    stream_calls(&mut emit, &calls);
                    let mut response = self.response("completed", None, None);
                    let mut output = vec![self.message_item("completed", Some(&text))];
                    output.extend(calls);
                    response["output"] = output.into();
                    response["usage"] = usage_json(handback.usage);
                    emit("response.completed", json!({ "response": response }));
                }
                Step::Failed(failure) => failed(&self, failure, &mut emit),
            }
            out
        }
    }
}

fn failed(meta: &Meta, failure: &Failure, emit: &mut impl FnMut(&str, Value)) {
    let body = failure.body();
    let error = json!({"code": "server_error", "message": body["message"]});
    emit(
        "response.failed",
        json!({ "response": meta.response("failed", None, Some(error)) }),
    );
}

/// The events of `calls` (`function_call` items) after the message item: each added, its
/// arguments (one delta, then done), done.
fn stream_calls(emit: &mut impl FnMut(&str, Value), calls: &[Value]) {
    for (k, call) in calls.iter().enumerate() {
        let index = k + 1;
        let mut opened = call.clone();
        opened["arguments"] = "".into();
        opened["status"] = "in_progress".into();
        emit(
            "response.output_item.added",
            json!({"output_index": index, "item": opened}),
        );
        let (id, arguments) = (&call["id"], &call["arguments"]);
        emit(
            "response.function_call_arguments.delta",
            json!({"item_id": id, "output_index": index, "delta": arguments}),
        );
        emit(
            "response.function_call_arguments.done",
            json!({"item_id": id, "output_index": index, "arguments": arguments}),
        );
        emit(
            "response.output_item.done",
            json!({"output_index": index, "item": call}),
        );
    }
}

/// The `pending` calls as Responses' `function_call` items.
fn function_calls(pending: &[PendingCall]) -> Vec<Value> {
    pending
        .iter()
        .map(|call| {
            json!({
                "type": "function_call",
                "id": format!("fc_{}", DialogId::new().to_string().replace('-', "")),
                "call_id": call.call,
                "name": call.tool,
                "arguments": call.arguments.to_string(),
                "status": "completed",
            })
        })
        .collect()
}

/// Usage in the Responses API's shape.
fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens.unwrap_or(0)},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens(),
    })
}
