//! Retries with backoff, jitter and `Retry-After`, as a layer.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tracing::Instrument;

use super::{CallError, DeltaSink, Service};
use crate::endpoints::{moves_on, CallCounter, Endpoints, Route};
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
    /// The breakers of the endpoints a call may go to.
    endpoints: Endpoints,
    /// Whose attempts these are, for their `chat` spans (none: no spans).
    facts: Option<AgentFacts>,
    /// Where the agent counts endpoints answering, hops and waits (none: not counted).
    calls: Option<Arc<CallCounter>>,
}

/// The last failure of a call, and how many requests were sent.
#[derive(Debug)]
pub(crate) struct Exhausted {
    pub(crate) attempts: u32,
    pub(crate) error: InvokeError,
}

impl<I: Invoker> Retrying<I> {
    pub(crate) fn new(inner: I, policy: RetryPolicy, endpoints: Endpoints) -> Self {
        Retrying {
            inner,
            policy,
            endpoints,
            facts: None,
            calls: None,
        }
    }

    /// Counts endpoints answering, hops and waits in `calls`.
    pub(crate) fn counting(mut self, calls: Option<Arc<CallCounter>>) -> Self {
        self.calls = calls;
        self
    }

    /// Makes a `chat` span of every attempt, as `facts`' agent.
    pub(crate) fn spans(mut self, facts: AgentFacts) -> Self {
        self.facts = Some(facts);
        self
    }

    /// Sends `request` until it is answered, a failure is not worth retrying, or retries run out.
    /// With `on_delta`, streams; a stream that already delivered text is not retried (here or
    /// elsewhere), since what was shown cannot be taken back.
    ///
    /// The one retry loop of a call, fallbacks included: an overloaded, unreachable or slow
    /// endpoint, or one that asks (`Retry-After`) for a longer wait than the call may take, sends
    /// the call on to the next endpoint of `model_args.fallback` at once; a short `Retry-After`
    /// is waited for and the same endpoint tried again. Without a next endpoint, a server that
    /// asks for too long a wait fails the call at once with [`InvokeError::RetryAfterTooLong`].
    pub(crate) async fn call(
        &self,
        request: &ChatRequest,
        mut on_delta: Option<&mut DeltaSink<'_>>,
    ) -> Result<ChatResponse, Exhausted> {
        let route = Route::new(request, &self.endpoints);
        let mut at = route.start();
        self.count_hops(at);
        let (mut retry, mut attempts) = (0, 0);
        let started = Instant::now();
        loop {
            let attempt = route.request(at);
            attempts += 1;
            let (result, streamed) = self
                .attempt(&attempt, retry + 1, on_delta.as_deref_mut())
                .await;
            self.count_wait(&attempt);
            let error = match result {
                Ok(response) => {
                    route.answered(at);
                    self.count_answer(&attempt);
                    return Ok(response);
                }
                Err(error) => error,
            };
            route.failed(at, &error);
            let too_long = self.refuse_retry_after(&attempt, &error, started);
            let next = (!streamed && moves_on(&error, too_long.is_some()))
                .then(|| route.next(at))
                .flatten();
            if let Some(next) = next {
                tracing::warn!(from = at, to = next, %error, "model call failed; trying the next endpoint");
                self.count_hops(next - at);
                at = next;
                continue;
            }
            let wait = match too_long {
                Some(_) => None,
                None if streamed => None,
                None => self.policy_for(&attempt).delay(retry, &error),
            };
            let Some(wait) = wait else {
                let error = too_long.unwrap_or(error);
                return Err(Exhausted { attempts, error });
            };
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

    /// One attempt, in its `chat` span; whether it streamed any text.
    async fn attempt(
        &self,
        request: &ChatRequest,
        number: u32,
        on_delta: Option<&mut DeltaSink<'_>>,
    ) -> (Result<ChatResponse, InvokeError>, bool) {
        let mut streamed = false;
        let span = match &self.facts {
            Some(facts) => telemetry::chat_span(facts, request, number),
            None => tracing::Span::none(),
        };
        let result = match on_delta {
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
        (result, streamed)
    }
}

impl<I> Retrying<I> {
    /// The policy for `request`: the agent's, with its endpoint's `max_retry_after` when set.
    fn policy_for(&self, request: &ChatRequest) -> RetryPolicy {
        let mut policy = self.policy;
        if let Some(max) = request.model_args.endpoint.max_retry_after {
            policy.max_retry_after = max;
        }
        policy
    }

    fn count_hops(&self, hops: usize) {
        if let (Some(counter), Ok(hops @ 1..)) = (&self.calls, u64::try_from(hops)) {
            counter.count(|c| c.hops += hops);
        }
    }

    fn count_wait(&self, attempt: &ChatRequest) {
        let waited = attempt.queue_wait();
        if let (Some(counter), false) = (&self.calls, waited.is_zero()) {
            counter.count(|c| c.queue_wait += waited);
        }
    }

    fn count_answer(&self, attempt: &ChatRequest) {
        let Some(counter) = &self.calls else { return };
        let endpoint = attempt.endpoint().unwrap_or_else(|| "default".to_owned());
        counter.count(|c| {
            *c.answered_by.entry(endpoint).or_default() += 1;
            if attempt.hop > 0 {
                c.fallback_answers += 1;
            }
        });
    }

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
        let args = &request.model_args.endpoint;
        let mut limits = vec![
            (self.policy_for(request).max_retry_after, WaitLimit::Policy),
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
