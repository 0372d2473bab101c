//! `/v1/runs`: runs started and watched over HTTP (cancels and approvals: `decisions.rs`). A run
//! whose tool needs a confirmation waits in `requires_action` with its pending calls; an approval
//! continues it from its journal, so nothing answered is sent again and no finished tool runs twice.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::auth::Caller;
use super::body::read_body;
use super::error::ApiError;
use super::failure::Failure;
use super::input::{parse_body, CLIENT_SYSTEM_VAR};
use super::session::{CallerSession, ECHO_HEADER};
use super::sse::run_event;
use super::store::{is_run_id, new_run_id, RunMeta, RunRecord, RunState, Stopped};
use super::watch::start_recorded;
use super::ServeState;
use crate::conversation::Conversation;
use crate::engine::{JournalPlan, RunHandle, RunPlan, StreamedEvent};
use crate::events::{RunEvent, RunStatus};
use crate::tools::Decisions;

/// The longest `Idempotency-Key` taken.
const MAX_IDEMPOTENCY_KEY_BYTES: usize = 256;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRun {
    model: String,
    #[serde(default)]
    input: Option<String>,
    #[serde(default)]
    vars: Option<Map<String, Value>>,
}

/// `POST /v1/runs`.
pub(crate) async fn create(
    State(state): State<Arc<ServeState>>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = Caller::of(caller);
    let bytes = read_body(&state, body).await?;
    let key = idempotency_key(&headers)?;
    let digest = hex(&Sha256::digest(&bytes));
    // The look-up and the creation of a keyed run are one step: a request with the key waits here
    // while another creates its run, then finds it.
    let _creating = match &key {
        Some(key) => Some(state.keys.lock(&caller.scoped(key)).await),
        None => None,
    };
    if let Some(key) = &key {
        if let Some(record) = state.runs.by_key(&caller.0, key) {
            return keyed_again(&state, &record, &digest);
        }
    }
    let request: CreateRun = parse_body(&bytes)?;
    let model = state.model(&request.model)?;
    has_its_input(model, request.input.as_deref())?;
    let session = CallerSession::from_headers(&headers);
    let ticket = state.admission.admit(&caller.scoped(&session.id)).await?;
    let id = new_run_id();
    let mut vars: lllm_core::PromptVars = request.vars.unwrap_or_default().into_iter().collect();
    vars.entry(CLIENT_SYSTEM_VAR.into())
        .or_insert_with(|| "".into());
    let log = state.runs.new_log();
    let mut plan = RunPlan::new()
        .maybe_input(request.input)
        .observer(log.observer())
        // The answer's text reaches the run's events (`text`) as it arrives.
        .stream(true)
        .vars(vars)
        .conversation(Conversation::new(session.id.clone()).parent(session.parent.clone()))
        // Every call that needs a confirmation pauses the run (declined without a journal).
        .confirm(log.confirm(Decisions::new()));
    if let Some(journal) = state.runs.journal_for(&id) {
        plan = plan.journal(JournalPlan::Create(journal));
    }
    let meta = RunMeta {
        id,
        model: model.id.clone(),
        created: super::now(),
        created_ns: 0,
        session: session.id.clone(),
        caller: caller.recorded(),
        idempotency: key.map(|k| (k, digest)),
        source: None,
        status: None,
        error: None,
        last_event: 0,
        running: true,
        sources: Vec::new(),
    };
    let record = state
        .runs
        .add(meta, queued(), log)
        .map_err(ApiError::internal)?;
    start_recorded(&state.engine, model, &record, plan, 0, ticket);
    let mut response = view(&state, &record).into_response();
    if let Ok(value) = session.id.parse() {
        response.headers_mut().insert(ECHO_HEADER, value);
    }
    Ok(response)
}

/// A chat answers an input: without one, a 400 naming the field, before any run.
fn has_its_input(model: &super::Model, input: Option<&str>) -> Result<(), ApiError> {
    if input.is_some() || !model.tactic.is_chat() {
        return Ok(());
    }
    Err(ApiError::invalid(format!(
        "`input` is required: the model `{}` is a chat, which answers an input",
        model.id
    ))
    .param("input"))
}

/// A run written but not started yet.
fn queued() -> RunState {
    let stopped = Stopped {
        status: RunStatus::Queued,
        output: None,
        error: None,
        pending: Vec::new(),
    };
    RunState::Stopped { stopped, last: 0 }
}

/// The run an `Idempotency-Key` already started: itself for the same body, else 409.
fn keyed_again(state: &ServeState, record: &RunRecord, digest: &str) -> Result<Response, ApiError> {
    match record.meta().idempotency {
        Some((_, same)) if same == digest => Ok(view(state, record).into_response()),
        _ => Err(ApiError::conflict(
            "this Idempotency-Key was used for a run with a different body",
        )),
    }
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key) if !key.is_empty() && key.len() <= MAX_IDEMPOTENCY_KEY_BYTES => {
            Ok(Some(key.to_owned()))
        }
        _ => Err(ApiError::invalid(format!(
            "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_BYTES} visible ASCII characters"
        ))),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn record(
    state: &ServeState,
    caller: &Caller,
    id: &str,
) -> Result<Arc<RunRecord>, ApiError> {
    // Another key's run is not found, as a run that does not exist.
    let found = is_run_id(id)
        .then(|| state.runs.get(id))
        .flatten()
        .filter(|record| record.is_of(&caller.0));
    found.ok_or_else(|| {
        ApiError::not_found(
            "run_not_found",
            format!("no run `{}` here", super::shorten(id)),
        )
    })
}

/// `GET /v1/runs/{id}`.
pub(crate) async fn get(
    State(state): State<Arc<ServeState>>,
    caller: Option<axum::Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = record(&state, &Caller::of(caller), &id)?;
    Ok(view(&state, &record))
}

/// What a client sees of a run.
pub(crate) fn view(state: &ServeState, record: &RunRecord) -> Json<Value> {
    let meta = record.meta();
    // The revision counts the log's changes and the run's events (a status is one), so that it
    // changes whenever the status does, `queued` to `running` included.
    let (mut stopped, events) = match record.state() {
        RunState::Stopped { stopped, last } => (stopped, last),
        RunState::Live { handle, base } => live_view(state, &meta, &handle, base),
    };
    // A running run whose tool asks its caller a question waits for the answer.
    let question = record.log.questions.shown();
    if question.is_some() && stopped.status == RunStatus::Running {
        stopped.status = RunStatus::RequiresAction;
    }
    let mut out = json!({
        "id": meta.id,
        "object": "run",
        "model": meta.model,
        "created_at": meta.created,
        "session_id": meta.session,
        "status": stopped.status,
        "revision": record.log.revision() + events,
    });
    let totals = record.log.totals();
    if totals.calls > 0 {
        out["usage"] = totals.to_json();
    }
    let (tasks, running) = record.log.task_counts();
    if tasks > 0 {
        out["tasks"] = json!({"started": tasks, "running": running});
    }
    if let Some(output) = stopped.output {
        out["output"] = output.into();
    }
    if let Some(error) = stopped.error.or_else(|| meta.error.clone()) {
        out["error"] = json!({"type": "server_error", "message": error});
    }
    if let Some(question) = question {
        out["question"] = question;
    }
    if !stopped.pending.is_empty() {
        let pending: Vec<Value> = stopped
            .pending
            .iter()
            .map(|p| {
                let source = record
                    .log
                    .source(p.agent.as_deref(), &p.call)
                    .or_else(|| meta.source_of(p.agent.as_deref(), &p.call));
                // A JSON string, as in the `tool_call` events and OpenAI's tool calls.
                json!({"id": p.call, "agent": p.agent, "tool": p.tool, "source": source,
                       "arguments": p.arguments.to_string()})
            })
            .collect();
        out["pending"] = pending.into();
    }
    Json(out)
}

/// A live run as it is now, and the number of its latest event (after `base`, its earlier parts').
fn live_view(state: &ServeState, meta: &RunMeta, handle: &RunHandle, base: u64) -> (Stopped, u64) {
    let (status, latest) = handle.status_and_latest();
    let mut view = Stopped {
        status,
        output: None,
        error: None,
        pending: handle.pending(),
    };
    if let Some(outcome) = handle.outcome() {
        match outcome.as_ref() {
            Ok(output) => view.output = Some(output.answer.clone()),
            Err(e) if e.is_paused() => {}
            Err(e) => {
                view.error = state
                    .model(&meta.model)
                    .ok()
                    .map(|m| Failure::of(m.tactic.secrets(), e).message)
            }
        }
    }
    (view, base + latest)
}

/// `GET /v1/runs/{id}/events`: the run's events as server-sent events, after `Last-Event-ID`.
pub(crate) async fn events(
    State(state): State<Arc<ServeState>>,
    caller: Option<axum::Extension<Caller>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let record = record(&state, &Caller::of(caller), &id)?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let stream = match record.state() {
        RunState::Live { handle, base } => handle
            .events(after.saturating_sub(base))
            .map(move |event| Ok::<_, Infallible>(run_event(base, &event)))
            .boxed(),
        RunState::Stopped { stopped, last } => {
            let event = StreamedEvent {
                id: last,
                event: RunEvent::Status(stopped.status),
            };
            let events: Vec<Result<Event, Infallible>> = if after < event.id {
                vec![Ok(run_event(0, &event))]
            } else {
                Vec::new()
            };
            futures::stream::iter(events).boxed()
        }
    };
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
