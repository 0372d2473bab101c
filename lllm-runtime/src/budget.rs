//! What a run may still spend: requests, tokens, tool calls and time, against its `limits:`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lllm_core::{RunLimits, Usage};

/// A limit of the run was reached: the agent reports it as
/// [`AgentErrorKind::Limit`](crate::agent::AgentErrorKind::Limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LimitReached {
    /// The limit (`max_requests`, `max_total_tokens`, `max_tool_calls`, `max_seconds`).
    pub(crate) limit: &'static str,
    /// Its value, as the run has it.
    pub(crate) value: String,
}

/// A run's spending so far, shared by its agents. Reaching a limit fails the next request or tool
/// call with [`AgentErrorKind::Limit`](crate::agent::AgentErrorKind::Limit).
#[derive(Debug)]
pub struct RunBudget {
    limits: RunLimits,
    started: Instant,
    requests: AtomicU64,
    tokens: AtomicU64,
    tool_calls: AtomicU64,
}

impl RunBudget {
    /// A budget with these limits, its clock started now.
    pub fn new(limits: RunLimits) -> Self {
        RunBudget {
            limits,
            started: Instant::now(),
            requests: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            tool_calls: AtomicU64::new(0),
        }
    }

    /// The limits.
    pub fn limits(&self) -> &RunLimits {
        &self.limits
    }

    /// Requests, tokens and tool calls spent so far.
    pub fn spent(&self) -> (u64, u64, u64) {
        (
            self.requests.load(Ordering::SeqCst),
            self.tokens.load(Ordering::SeqCst),
            self.tool_calls.load(Ordering::SeqCst),
        )
    }

    /// Counts a request about to be sent (or answered from a journal), unless a limit forbids it.
    pub(crate) fn request(&self) -> Result<(), LimitReached> {
        self.time()?;
        if let Some(max) = self.limits.max_total_tokens {
            if self.tokens.load(Ordering::SeqCst) >= max {
                return Err(limit("max_total_tokens", max.to_string()));
            }
        }
        take(&self.requests, self.limits.max_requests, "max_requests")
    }

    /// Counts the tokens of an answer.
    pub(crate) fn answered(&self, usage: Option<&Usage>) {
        if let Some(usage) = usage {
            self.tokens
                .fetch_add(usage.total_tokens(), Ordering::SeqCst);
        }
    }

    /// Counts a tool call about to run, unless a limit forbids it.
    pub(crate) fn tool_call(&self) -> Result<(), LimitReached> {
        self.time()?;
        take(
            &self.tool_calls,
            self.limits.max_tool_calls,
            "max_tool_calls",
        )
    }

    /// How long the run may still take, when it has `max_seconds`: a request or tool call still
    /// going at that moment is stopped (its process killed), not left to run past the limit.
    pub(crate) fn time_left(&self) -> Option<Duration> {
        let max = self.limits.max_seconds?;
        let left = max - self.started.elapsed().as_secs_f64();
        Some(Duration::try_from_secs_f64(left.max(0.0)).unwrap_or(Duration::MAX))
    }

    /// The `max_seconds` limit, reached: what a call stopped at the deadline fails with.
    pub(crate) fn out_of_time(&self) -> LimitReached {
        let max = self.limits.max_seconds.unwrap_or(0.0);
        limit("max_seconds", max.to_string())
    }

    /// Runs `work` within the time the run has left: past `max_seconds` it is dropped (a command
    /// tool's process with it) and the call fails with the limit.
    pub(crate) async fn within<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, LimitReached> {
        match self.time_left() {
            Some(left) => tokio::time::timeout(left, work)
                .await
                .map_err(|_| self.out_of_time()),
            None => Ok(work.await),
        }
    }

    fn time(&self) -> Result<(), LimitReached> {
        match self.limits.max_seconds {
            Some(max) if self.started.elapsed().as_secs_f64() >= max => {
                Err(limit("max_seconds", max.to_string()))
            }
            _ => Ok(()),
        }
    }
}

/// Takes one from `counter` if it stays within `max`.
fn take(counter: &AtomicU64, max: Option<u64>, name: &'static str) -> Result<(), LimitReached> {
    let Some(max) = max else {
        counter.fetch_add(1, Ordering::SeqCst);
        return Ok(());
    };
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .map(|_| ())
        .map_err(|_| limit(name, max.to_string()))
}

fn limit(limit: &'static str, value: String) -> LimitReached {
    LimitReached { limit, value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_stops_at_its_figure() {
        let budget = RunBudget::new(RunLimits {
            max_requests: Some(2),
            max_tool_calls: Some(1),
            max_total_tokens: Some(100),
            max_seconds: None,
        });
        assert!(budget.request().is_ok() && budget.request().is_ok());
        assert!(matches!(
            budget.request(),
            Err(LimitReached {
                limit: "max_requests",
                ref value
            }) if value == "2"
        ));
        assert!(budget.tool_call().is_ok());
        assert!(budget.tool_call().is_err());
        let tokens = RunBudget::new(RunLimits {
            max_total_tokens: Some(10),
            ..RunLimits::default()
        });
        assert!(tokens.request().is_ok());
        tokens.answered(Some(&Usage {
            prompt_tokens: 8,
            completion_tokens: 4,
            ..Usage::default()
        }));
        assert!(matches!(
            tokens.request(),
            Err(LimitReached {
                limit: "max_total_tokens",
                ..
            })
        ));
        let time = RunBudget::new(RunLimits {
            max_seconds: Some(0.000_001),
            ..RunLimits::default()
        });
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(time.request().is_err());
        assert_eq!(budget.spent(), (2, 0, 1));
    }
}
