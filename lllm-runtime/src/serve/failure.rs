//! Why a run has no answer, as a client may read it: its message without the tactic's secrets.

use serde_json::{Map, Value};

use super::error::ApiError;
use crate::engine::RunError;

/// Why a run has no answer, as a client may read it: its message holds no secret.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) message: String,
    /// Whether the request (the tactic, its input) is at fault, not the run.
    pub(crate) usage: bool,
}

impl Failure {
    /// `error`, its message without `secrets`.
    pub(crate) fn of(secrets: &lllm_core::secret::Secrets, error: &RunError) -> Self {
        Failure {
            message: secrets.redact(&lllm_core::full_message(error)),
            usage: error.is_usage(),
        }
    }

    /// The `error` object a stream carries.
    pub(crate) fn body(&self) -> Value {
        let kind = if self.usage {
            "invalid_request_error"
        } else {
            "server_error"
        };
        let mut body = Map::new();
        body.insert("type".into(), kind.into());
        body.insert("message".into(), self.message.clone().into());
        body.insert("code".into(), "run_failed".into());
        Value::Object(body)
    }
}

/// A run's failure as an error before the first byte.
pub(crate) fn failure(secrets: &lllm_core::secret::Secrets, error: &RunError) -> ApiError {
    let failure = Failure::of(secrets, error);
    if failure.usage {
        ApiError::invalid(failure.message).code("invalid_run")
    } else {
        ApiError::run_failed(failure.message)
    }
}
