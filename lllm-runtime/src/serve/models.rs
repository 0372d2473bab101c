//! `GET /v1/models`, and the answer to a route that does not exist.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::Uri;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use super::{Model, ServeState};

fn entry(model: &Model) -> Value {
    json!({
        "id": model.id,
        "object": "model",
        "created": model.created,
        "owned_by": "lllm",
    })
}

/// Every served tactic.
pub(crate) async fn list(State(state): State<Arc<ServeState>>) -> Json<Value> {
    let data: Vec<Value> = state.models.iter().map(entry).collect();
    Json(json!({ "object": "list", "data": data }))
}

/// One served tactic.
pub(crate) async fn one(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(entry(state.model(&id)?)))
}

/// Any other path.
pub(crate) async fn no_route(uri: Uri) -> ApiError {
    ApiError::not_found(
        "unknown_route",
        format!(
            "no route {}: this server answers /v1/models, /v1/chat/completions, /v1/responses and /v1/runs",
            super::shorten(uri.path())
        ),
    )
}
