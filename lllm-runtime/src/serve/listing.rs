//! `GET /v1/runs` (the server's runs, newest first, as a list or as a stream that sends the list
//! again whenever a run changes) and `GET /v1/runs/{id}/dialogs` (a run's dialog tree, model calls
//! and tool calls): what the console reads.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Caller;
use super::error::ApiError;
use super::runs::{record, view};
use super::ServeState;

/// Runs listed by default.
const DEFAULT_LIMIT: usize = 100;
/// The most runs one list holds.
const MAX_LIMIT: usize = 1_000;
/// A stream sends the list at most this often, however often runs change.
const STREAM_PERIOD: Duration = Duration::from_millis(250);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    stream: Option<bool>,
}

/// `GET /v1/runs?limit=N&stream=true`.
pub(crate) async fn list(
    State(state): State<Arc<ServeState>>,
    caller: Option<axum::Extension<Caller>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| {
        ApiError::invalid(format!(
            "the query: {}; it takes `limit` (1 to {MAX_LIMIT}) and `stream` (true or false)",
            e.body_text()
        ))
    })?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "`limit` must be 1 to {MAX_LIMIT}, not {limit}"
        )));
    }
    let caller = Caller::of(caller);
    if query.stream != Some(true) {
        return Ok(Json(runs(&state, limit, &caller)).into_response());
    }
    let changes = state.runs.changes();
    let closing = state.closing.subscribe();
    let stream = futures::stream::unfold(
        (state, changes, closing, true),
        move |(state, mut changes, mut closing, first)| {
            let caller = caller.clone();
            async move {
                if !first {
                    // Woken by a change, then a pause, so a busy server sends one list per period;
                    // the stream ends when the server stops.
                    tokio::select! {
                        changed = changes.changed() => changed.ok()?,
                        _ = closing.wait_for(|closing| *closing) => return None,
                    }
                    tokio::time::sleep(STREAM_PERIOD).await;
                }
                if *closing.borrow() {
                    return None;
                }
                let version = *changes.borrow_and_update();
                let data = state.lists.get(version, (limit, &caller), || {
                    runs(&state, limit, &caller).to_string()
                });
                let event = Event::default().event("runs").data(data.as_str());
                Some((
                    Ok::<Event, Infallible>(event),
                    (state, changes, closing, false),
                ))
            }
        },
    );
    Ok(Sse::new(stream.boxed())
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The lists sent lately, by length: the streams woken by one change send the list built once.
#[derive(Debug, Default)]
pub(crate) struct ListCache(Mutex<HashMap<(usize, Caller), Built>>);

/// A list and the version of the runs it was built from.
type Built = (u64, Arc<String>);

impl ListCache {
    /// The list of `limit` runs of `caller` as of `version` of the runs, built by `build` if nobody
    /// did yet.
    fn get(
        &self,
        version: u64,
        (limit, caller): (usize, &Caller),
        build: impl FnOnce() -> String,
    ) -> Arc<String> {
        let mut lists = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let asked = (limit, caller.clone());
        match lists.get(&asked) {
            Some((built, data)) if *built == version => data.clone(),
            _ => {
                let data = Arc::new(build());
                // At most a few lengths are asked for; an odd one replaces the others.
                if lists.len() >= 4 {
                    lists.clear();
                }
                lists.insert(asked, (version, data.clone()));
                data
            }
        }
    }
}

/// The newest `limit` runs of `caller`.
fn runs(state: &ServeState, limit: usize, caller: &Caller) -> Value {
    let data: Vec<Value> = state
        .runs
        .newest(limit, &caller.0)
        .iter()
        .map(|record| {
            let mut run = view(state, record).0;
            if let Some(source) = record.meta().source {
                run["source"] = source.into();
            }
            // The list is an overview: an answer is read on the run's own page.
            if let Some(map) = run.as_object_mut() {
                map.remove("output");
            }
            run
        })
        .collect();
    json!({"object": "list", "data": data})
}

/// `GET /v1/runs/{id}/dialogs`: the run's dialogs as a tree, each with its model calls, and its
/// tool calls with their results.
pub(crate) async fn dialogs(
    State(state): State<Arc<ServeState>>,
    caller: Option<axum::Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = record(&state, &Caller::of(caller), &id)?;
    let mut out = record.log.to_json();
    out["id"] = record.meta().id.into();
    out["object"] = "run.dialogs".into();
    // A run an earlier server started: what it did before this server is in its journal only.
    out["restored"] = record.read_back.into();
    Ok(Json(out))
}
