//! Retry decisions, as tower's `Policy`: after a failed attempt, what to send next and when.

use std::time::Duration;

use crate::invoker::{ChatRequest, InvokeError};
use crate::retry::RetryPolicy;

/// A failed attempt, as the policies see it.
pub(crate) struct Failure<'a> {
    pub(crate) request: &'a ChatRequest,
    pub(crate) error: &'a InvokeError,
    /// The server asked (`Retry-After`) for a longer wait than the call may take.
    pub(crate) wait_too_long: bool,
}

/// What to send after a failure, and how long to wait first.
pub(crate) struct Retry {
    pub(crate) request: ChatRequest,
    pub(crate) wait: Duration,
}

/// Decides, for one call, whether a failed attempt is followed by another, and what that one
/// sends: the policy may rewrite the request.
pub(crate) trait Policy {
    /// The next attempt after `failure` (`None`: not this policy's to retry).
    fn retry(&mut self, failure: &Failure<'_>) -> Option<Retry>;
}

/// The agent's backoff: the same request again, after the wait its [`RetryPolicy`] gives (a
/// short `Retry-After` honoured), while retries are left; never when the server asked for longer
/// than the call may wait.
pub(crate) struct Backoff {
    policy: RetryPolicy,
    retries: u32,
}

impl Backoff {
    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Backoff { policy, retries: 0 }
    }
}

impl Policy for Backoff {
    fn retry(&mut self, failure: &Failure<'_>) -> Option<Retry> {
        if failure.wait_too_long {
            return None;
        }
        let policy = policy_for(self.policy, failure.request);
        let wait = policy.delay(self.retries, failure.error)?;
        self.retries += 1;
        tracing::warn!(
            attempt = self.retries,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            error = %failure.error,
            "model call failed; retrying"
        );
        let mut request = failure.request.clone();
        request.notes.retry = self.retries;
        request.notes.moved = 0;
        Some(Retry { request, wait })
    }
}

/// `policy` for `request`: with its endpoint's `max_retry_after` when set.
pub(crate) fn policy_for(mut policy: RetryPolicy, request: &ChatRequest) -> RetryPolicy {
    if let Some(max) = request.model_args.endpoint.max_retry_after {
        policy.max_retry_after = max;
    }
    policy
}
