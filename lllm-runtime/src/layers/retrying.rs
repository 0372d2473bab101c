//! Retries with backoff, jitter and `Retry-After`, as a layer.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tracing::Instrument;

use super::{CallError, DeltaSink, Service};
use crate::invoker::{
    ChatRequest, ChatResponse, Delta, InvokeError, Invoker, WaitLimit, DEFAULT_TIMEOUT,
};
use crate::retry::RetryPolicy;
use crate::telemetry::{self, AgentFacts};

/// Sends a request again after a failure worth retrying, as the [`RetryPolicy`] allows. The same
/// request is resent, so every attempt carries the same dialog's hints.
#[derive(Debug)]
pub(crate) struct Retrying<I> {
    inner: I,
    policy: RetryPolicy,
    /// Whose attempts these are, for their `chat` spans (none: no spans).
    facts: Option<AgentFacts>,
}

/// The last failure of a call, and how many requests were sent.
#[derive(Debug)]
pub(crate) struct Exhausted {
    pub(crate) attempts: u32,
    pub(crate) error: InvokeError,
}

impl<I: Invoker> Retrying<I> {
    pub(crate) fn new(inner: I, policy: RetryPolicy) -> Self {
        Retrying {
            inner,
            policy,
            facts: None,
        }
    }

    /// Makes a `chat` span of every attempt, as `facts`' agent.
    pub(crate) fn spans(mut self, facts: AgentFacts) -> Self {
        self.facts = Some(facts);
        self
    }

    /// Sends `request` until it is answered, a failure is not worth retrying, or retries run out.
    /// With `on_delta`, streams; a stream that already delivered text is not retried, since what was
    /// shown cannot be taken back. A server that asks (`Retry-After`) for a longer wait than the
    /// request may take fails the call at once with [`InvokeError::RetryAfterTooLong`].
    pub(crate) async fn call(
        &self,
        request: &ChatRequest,
        mut on_delta: Option<&mut DeltaSink<'_>>,
    ) -> Result<ChatResponse, Exhausted> {
        let mut retry = 0;
        let started = Instant::now();
        loop {
            let mut streamed = false;
            let span = match &self.facts {
                Some(facts) => telemetry::chat_span(facts, request, retry + 1),
                None => tracing::Span::none(),
            };
            let result = match on_delta.as_deref_mut() {
                Some(sink) => {
                    let mut watch = |delta: Delta<'_>| {
                        streamed = true;
                        sink(delta);
                    };
                    self.inner
                        .invoke_stream(request, &mut watch)
                        .instrument(span.clone())
                        .await
                }
                None => self.inner.invoke(request).instrument(span.clone()).await,
            };
            match &result {
                Ok(response) => telemetry::record_response(&span, response),
                Err(error) => telemetry::record_invoke_error(&span, error),
            }
            drop(span);
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let wait = if streamed {
                None
            } else {
                self.policy.delay(retry, &error)
            };
            let Some(wait) = wait else {
                return Err(Exhausted {
                    attempts: retry + 1,
                    error,
                });
            };
            if let Some(error) = self.refuse_retry_after(request, &error, started) {
                return Err(Exhausted {
                    attempts: retry + 1,
                    error,
                });
            }
            tracing::warn!(
                attempt = retry + 1,
                wait_ms = millis(wait),
                %error,
                "model call failed; retrying"
            );
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }
}

impl<I> Retrying<I> {
    /// The error to end the call with when the server asks for a longer wait than allowed: by the
    /// policy's `max_retry_after`, by the request's timeout (a server that needs longer will not
    /// answer in time either), or by what is left of the respond's deadline.
    fn refuse_retry_after(
        &self,
        request: &ChatRequest,
        error: &InvokeError,
        started: Instant,
    ) -> Option<InvokeError> {
        let InvokeError::Http {
            status,
            message,
            retry_after: Some(asked),
        } = error
        else {
            return None;
        };
        let args = &request.model_args;
        let mut limits = vec![
            (self.policy.max_retry_after, WaitLimit::Policy),
            (args.timeout.unwrap_or(DEFAULT_TIMEOUT), WaitLimit::Timeout),
        ];
        if let Some(deadline) = args.deadline {
            limits.push((
                deadline.saturating_sub(started.elapsed()),
                WaitLimit::Deadline,
            ));
        }
        let (allowed, limited_by) = limits.into_iter().min_by_key(|(d, _)| *d)?;
        (*asked > allowed).then(|| InvokeError::RetryAfterTooLong {
            status: *status,
            message: message.as_str().into(),
            asked: *asked,
            allowed,
            limited_by,
        })
    }
}

#[async_trait]
impl<I: Invoker> Service for Retrying<I> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<ChatResponse, CallError> {
        self.call(request, sink)
            .await
            .map_err(|e| CallError::Invoke {
                attempts: e.attempts,
                error: e.error,
            })
    }
}

#[async_trait]
impl<I: Invoker> Invoker for Retrying<I> {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        self.call(request, None).await.map_err(|e| e.error)
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        self.call(request, Some(on_delta))
            .await
            .map_err(|e| e.error)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
