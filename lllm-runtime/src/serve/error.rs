//! Errors of the HTTP surface, in OpenAI's shape: `{"error": {"type", "message", "code", "param"}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The header the OpenAI SDKs read before retrying: `false` and they do not.
pub(crate) const SHOULD_RETRY: &str = "x-should-retry";

/// An error answered before the first byte of a response.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    status: StatusCode,
    kind: &'static str,
    code: Option<&'static str>,
    /// The request's field at fault, when one is.
    param: Option<&'static str>,
    message: String,
    retry_after: Option<u64>,
    /// Whether to tell the client not to retry (`x-should-retry: false`): a retry would run the
    /// whole tactic again for the same failure.
    no_retry: bool,
    /// The run the request was about, as `GET /v1/runs/{id}` shows it, beside `error`.
    run: Option<Box<serde_json::Value>>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            code: None,
            param: None,
            message: message.into(),
            retry_after: None,
            no_retry: false,
            run: None,
        }
    }

    /// The request cannot be served as it is (400).
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// Nothing of that name (404).
    pub(crate) fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request_error", message).code(code)
    }

    /// No key, or the wrong one (401).
    pub(crate) fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "a valid API key is required: send `Authorization: Bearer KEY` with the key the server was started with",
        )
        .code("invalid_api_key")
    }

    /// The request is not allowed from where it comes (403).
    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "permission_error", message)
    }

    /// The request conflicts with what the server holds (409).
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "invalid_request_error", message).code("conflict")
    }

    /// Too many runs at once (429, with `Retry-After`).
    pub(crate) fn busy(limit: usize) -> Self {
        let mut error = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            format!("{limit} runs are running already (the server's limit of runs at once); retry later"),
        )
        .code("too_many_runs");
        error.retry_after = Some(1);
        error
    }

    /// The body is larger than the server takes (413).
    pub(crate) fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("the request body is larger than {limit} bytes (the server's limit)"),
        )
        .code("body_too_large")
    }

    /// The server failed (500); `message` must hold no secret.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    /// The run failed before its response started, after lllm's own retries (502: the failure is
    /// downstream or the tactic's), with `x-should-retry: false`: the OpenAI SDKs would otherwise
    /// run the whole tactic again, twice.
    pub(crate) fn run_failed(message: impl Into<String>) -> Self {
        let mut error =
            Self::new(StatusCode::BAD_GATEWAY, "server_error", message).code("run_failed");
        error.no_retry = true;
        error
    }

    /// The run failed because the serving side is overloaded (503, with `Retry-After` when it
    /// said how long): a later retry may succeed, so the client's retry is kept.
    pub(crate) fn overloaded(message: impl Into<String>, retry_after: Option<u64>) -> Self {
        let mut error = Self::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", message)
            .code("downstream_overloaded");
        error.retry_after = retry_after;
        error
    }

    /// The run ran out of time (504): a retry may succeed, so the client's retry is kept.
    pub(crate) fn timed_out(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GATEWAY_TIMEOUT, "server_error", message).code("run_timed_out")
    }

    /// Answers with the run as it is now beside the error (a decision that lost says where the run
    /// went instead).
    pub(crate) fn with_run(mut self, run: serde_json::Value) -> Self {
        self.run = Some(Box::new(run));
        self
    }

    /// Sets the machine-readable code.
    pub(crate) fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// Names the request's field at fault (`param`).
    pub(crate) fn param(mut self, field: &'static str) -> Self {
        self.param = Some(field);
        self
    }

    /// The status.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The `error` object, as the body and stream error events carry it.
    pub(crate) fn body(&self) -> serde_json::Value {
        json!({
            "type": self.kind,
            "message": self.message,
            "code": self.code,
            "param": self.param,
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": self.body() });
        if let Some(run) = self.run {
            body["run"] = *run;
        }
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.no_retry {
            response
                .headers_mut()
                .insert(SHOULD_RETRY, HeaderValue::from_static("false"));
        }
        response
    }
}
