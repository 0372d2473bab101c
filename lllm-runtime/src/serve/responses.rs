//! `POST /v1/responses`: a tactic answers as a Responses model, streamed with the standard
//! `response.*` events, or not. `previous_response_id` continues that response's dialogs.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lllm_core::{DialogId, DialogTree, Usage};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::read_body;
use super::error::ApiError;
use super::failure::Failure;
use super::input::{parse_body, push_paragraph, response_input, turn};
use super::run_stream::{Ask, LiveRun, Step};
use super::session::CallerSession;
use super::sse::json_event;
use super::ServeState;
use crate::engine::RunOutput;

/// Responses kept for `previous_response_id`; the oldest is forgotten first.
const KEPT_RESPONSES: usize = 512;

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
    stream: Option<bool>,
    #[serde(default)]
    store: Option<bool>,
}

/// What a later request needs to continue a response: its model, conversation and dialogs.
#[derive(Debug, Clone)]
struct Stored {
    model: String,
    session: String,
    dialogs: Vec<(String, DialogTree)>,
}

/// The latest responses, for `previous_response_id` (in memory: a restarted server forgets them).
#[derive(Debug, Default)]
pub(crate) struct ResponseStore {
    kept: Mutex<(HashMap<String, Stored>, VecDeque<String>)>,
}

impl ResponseStore {
    fn get(&self, id: &str) -> Option<Stored> {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .get(id)
            .cloned()
    }

    fn keep(&self, id: String, stored: Stored) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *kept;
        map.insert(id.clone(), stored);
        order.push_back(id);
        while order.len() > KEPT_RESPONSES {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }
}

/// Answers a response with a run of the model's tactic.
pub(crate) async fn respond(
    State(state): State<Arc<ServeState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let request: ResponsesRequest = parse_body(&read_body(&state, body).await?)?;
    let model = state.model(&request.model)?;
    let mut turn = turn(&response_input(&request.input)?, "input")?;
    if let Some(instructions) = &request.instructions {
        let mut system = instructions.clone();
        push_paragraph(&mut system, &turn.client_system);
        turn.client_system = system;
    }
    let (session, dialogs) = match &request.previous_response_id {
        None => (CallerSession::from_headers(&headers), Vec::new()),
        Some(previous) => {
            let stored = continued(&state, previous, &request.model)?;
            if !turn.seed.is_empty() {
                return Err(ApiError::invalid(
                    "`input`: with `previous_response_id`, the input is the new user message only (the earlier turns are the previous response's)",
                ));
            }
            (
                CallerSession::from_headers_or(&headers, &stored.session),
                stored.dialogs,
            )
        }
    };
    let stream = request.stream.unwrap_or(false);
    let ask = Ask {
        turn,
        session,
        dialogs,
        stream,
        source: "responses",
    };
    let mut live = LiveRun::start(&state, model, ask).await?;
    let meta = Meta {
        id: format!("resp_{}", DialogId::new().to_string().replace('-', "")),
        message: format!("msg_{}", DialogId::new().to_string().replace('-', "")),
        created: super::now(),
        model: live.model.clone(),
        previous: request.previous_response_id.clone(),
        instructions: request.instructions.clone(),
        keep: request
            .store
            .unwrap_or(true)
            .then(|| (state.clone(), live.session.id.clone())),
    };
    if stream {
        return Ok(live.sse(meta.renderer()));
    }
    let outcome = live.wait().await;
    match outcome.as_ref() {
        Ok(output) => {
            meta.keep(output);
            Ok((
                live.headers(),
                Json(meta.response("completed", Some(output), None)),
            )
                .into_response())
        }
        Err(error) => Err(live.failure(error)),
    }
}

/// The response `previous` names, for a request on `model`.
fn continued(state: &ServeState, previous: &str, model: &str) -> Result<Stored, ApiError> {
    let stored = state.responses.get(previous).ok_or_else(|| {
        ApiError::not_found(
            "previous_response_not_found",
            format!(
                "`previous_response_id`: no response `{}` here (responses are kept in memory, the latest {KEPT_RESPONSES}, and only when `store` is not false)",
                super::shorten(previous)
            ),
        )
    })?;
    if stored.model != model {
        return Err(ApiError::invalid(format!(
            "`previous_response_id`: that response is of the model `{}`, not `{model}`",
            stored.model
        )));
    }
    Ok(stored)
}

/// What every event of one response repeats.
struct Meta {
    id: String,
    message: String,
    created: u64,
    model: String,
    previous: Option<String>,
    instructions: Option<String>,
    /// Where to keep the response for a later `previous_response_id`, and its conversation.
    keep: Option<(Arc<ServeState>, String)>,
}

impl Meta {
    fn keep(&self, output: &RunOutput) {
        if let Some((state, session)) = &self.keep {
            let dialogs = output
                .agents
                .iter()
                .map(|agent| (agent.name.clone(), agent.dialogs.clone()))
                .collect();
            state.responses.keep(
                self.id.clone(),
                Stored {
                    model: self.model.clone(),
                    session: session.clone(),
                    dialogs,
                },
            );
        }
    }

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
            "store": self.keep.is_some(),
        })
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
                    let answer = output.answer.as_str();
                    emit(
                        "response.output_text.done",
                        json!({"item_id": self.message, "output_index": 0, "content_index": 0, "text": answer, "logprobs": []}),
                    );
                    emit(
                        "response.content_part.done",
                        json!({"item_id": self.message, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": answer, "annotations": []}}),
                    );
                    emit(
                        "response.output_item.done",
                        json!({"output_index": 0, "item": self.message_item("completed", Some(answer))}),
                    );
                    self.keep(output);
                    emit(
                        "response.completed",
                        json!({ "response": self.response("completed", Some(output), None) }),
                    );
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
