//! When to try a failed model call again, and how long to wait first.

use std::time::Duration;

use crate::invoker::InvokeError;

/// Retry settings of an agent: how often and after how long a failed model call is sent again.
///
/// Only failures worth retrying are retried (429, 408, 409, 5xx, connection failures, timeouts), and
/// never a stream that already showed text. A server's `Retry-After` is honoured up to
/// [`max_retry_after`](Self::max_retry_after). `max_call_retries` is also `max_call_retries` (alias `max_llm_recall`) in tactic files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first try (so at most `1 + max_call_retries` requests per call).
    pub max_call_retries: u32,
    /// Wait before the first retry; it doubles for each further one.
    pub base_delay: Duration,
    /// Longest computed wait.
    pub max_delay: Duration,
    /// Longest wait granted to a server's `Retry-After`. An agent also grants no longer than the
    /// request's `model_args.timeout` and what is left of its `model_args.deadline`; a server that asks
    /// for more fails the call at once ([`InvokeError::RetryAfterTooLong`]). Any duration is a
    /// valid cap (with zero, a server that asks for any wait fails the call at once), so it has no
    /// range, unlike the seconds of tactic files ([`SecondsRange`](lllm_core::SecondsRange)).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_call_retries: lllm_core::DEFAULT_MAX_CALL_RETRIES,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The policy with `retries` retries after the first try.
    pub fn max_call_retries(mut self, retries: u32) -> Self {
        self.max_call_retries = retries;
        self
    }

    /// The policy waiting `delay` before the first retry.
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// The policy waiting at most `delay` between tries.
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The policy granting a server's `Retry-After` at most `wait`.
    pub fn max_retry_after(mut self, wait: Duration) -> Self {
        self.max_retry_after = wait;
        self
    }

    /// A policy with `max_call_retries` retries and default waits.
    pub fn with_max_call_retries(max_call_retries: u32) -> Self {
        RetryPolicy {
            max_call_retries,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (0 for the first) after `error`, or `None` when the error is
    /// not worth retrying or no retry is left.
    pub fn delay(&self, retry: u32, error: &InvokeError) -> Option<Duration> {
        if retry >= self.max_call_retries || !error.is_retryable() {
            return None;
        }
        if let Some(wait) = error.retry_after() {
            return Some(wait.min(self.max_retry_after));
        }
        let exponential = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay);
        // Jitter in [½, 1] of the wait, so clients that failed together do not retry together.
        Some(exponential.mul_f64(0.5 + fastrand::f64() / 2.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> InvokeError {
        InvokeError::Http {
            status: http::StatusCode::from_u16(status).expect("a status"),
            message: "x".into(),
            retry_after,
        }
    }

    #[test]
    fn backs_off_exponentially_with_jitter_and_a_cap() {
        let policy = RetryPolicy {
            max_call_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(5),
        };
        for (retry, full) in [(0, 100), (1, 200), (2, 400), (3, 800), (6, 1000)] {
            let wait = policy.delay(retry, &http(503, None)).expect("retryable");
            let full = Duration::from_millis(full);
            assert!(wait >= full / 2 && wait <= full, "retry {retry}: {wait:?}");
        }
    }

    #[test]
    fn honours_retry_after_up_to_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(0, &http(429, Some(Duration::from_secs(3)))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            policy.delay(0, &http(429, Some(Duration::from_secs(3600)))),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn stops_on_client_errors_and_when_retries_run_out() {
        let policy = RetryPolicy::with_max_call_retries(2);
        assert_eq!(policy.delay(0, &http(400, None)), None);
        assert_eq!(
            policy.delay(
                0,
                &InvokeError::InvalidResponse {
                    problem: "x".into()
                }
            ),
            None
        );
        assert!(policy
            .delay(1, &InvokeError::Timeout(Duration::from_secs(1)))
            .is_some());
        assert_eq!(policy.delay(2, &http(500, None)), None);
    }
}
