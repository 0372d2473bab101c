//! Why a run has no answer, as a client may read it: its message without the tactic's secrets, and
//! whether the client's retry could cure it.

use serde_json::{Map, Value};

use super::error::ApiError;
use crate::agent::AgentError;
use crate::engine::RunError;
use crate::tactic::TacticError;

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

/// What a client's retry of a failed run could do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cure {
    /// Nothing: lllm retried already, and the failure would recur (a server error, a tool, a limit).
    None,
    /// The serving side was overloaded (429, 503, 529 after lllm's retries): later, it may answer;
    /// the seconds it asked to wait, when it said.
    Later(Option<u64>),
    /// Time ran out: another try may be quicker.
    Time,
}

/// What a retry of the run that failed with `error` could do.
fn cure(error: &RunError) -> Cure {
    let RunError::Tactic(TacticError::Agent(agent)) = error else {
        return Cure::None;
    };
    if agent.is_timeout() {
        return Cure::Time;
    }
    overload(agent).map_or(Cure::None, Cure::Later)
}

/// The wait asked for (if any) when the server's last answer said it was overloaded.
fn overload(agent: &AgentError) -> Option<Option<u64>> {
    let invoke = agent.invoke_error()?;
    let busy = matches!(invoke.status()?.as_u16(), 429 | 503 | 529);
    busy.then(|| {
        invoke
            .retry_after()
            .map(|wait| wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
    })
}

/// A run's failure as an error before the first byte: `x-should-retry: false` unless a retry could
/// cure it (an overloaded server: 503; time ran out: 504).
pub(crate) fn failure(secrets: &lllm_core::secret::Secrets, error: &RunError) -> ApiError {
    let failure = Failure::of(secrets, error);
    if failure.usage {
        return ApiError::invalid(failure.message).code("invalid_run");
    }
    match cure(error) {
        Cure::None => ApiError::run_failed(failure.message),
        Cure::Later(wait) => ApiError::overloaded(failure.message, wait),
        Cure::Time => ApiError::timed_out(failure.message),
    }
}
