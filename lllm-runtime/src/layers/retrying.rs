//! The retries of a model call, as a layer: the attempt loop and the policing of `Retry-After`;
//! what is sent next is the policies' to say.

use std::borrow::Cow;

use async_trait::async_trait;
use tokio::time::Instant;

use super::fallback_hop::FallbackHop;
use super::policy::{policy_for, Backoff, Failure, Policy};
use super::{CallError, DeltaSink, Reply, Service};
use crate::endpoints::Endpoints;
use crate::invoker::{ChatRequest, Delta, InvokeError, WaitLimit, DEFAULT_TIMEOUT};
use crate::retry::RetryPolicy;

/// Sends a request until it is answered or no policy sends it again: first the hop to the next
/// fallback endpoint (past open circuits in `endpoints`), then the backoff of the agent's
/// [`RetryPolicy`], which resends the same request, so every attempt carries the same dialog's
/// hints. A stream that already delivered text is not sent again, here or elsewhere, since what
/// was shown cannot be taken back. A server that asks (`Retry-After`) for a longer wait than the
/// call may take is not waited for: the call moves on, or fails at once with
/// [`InvokeError::RetryAfterTooLong`].
#[derive(Debug)]
pub(crate) struct Retrying<S> {
    inner: S,
    policy: RetryPolicy,
    endpoints: Endpoints,
}

impl<S> Retrying<S> {
    pub(crate) fn new(inner: S, policy: RetryPolicy, endpoints: Endpoints) -> Self {
        Retrying {
            inner,
            policy,
            endpoints,
        }
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
            (
                policy_for(self.policy, request).max_retry_after,
                WaitLimit::Policy,
            ),
            (args.timeout.unwrap_or(DEFAULT_TIMEOUT), WaitLimit::Timeout),
        ];
        if let Some(deadline) = args.deadline {
            let left = deadline.saturating_sub(started.elapsed());
            limits.push((left, WaitLimit::Deadline));
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

/// One attempt; whether it streamed anything.
async fn attempt<S: Service>(
    inner: &S,
    request: &ChatRequest,
    sink: Option<&mut DeltaSink<'_>>,
) -> (Result<Reply, CallError>, bool) {
    let mut streamed = false;
    let result = match sink {
        Some(sink) => {
            let mut watch = |delta: Delta<'_>| {
                streamed = true;
                sink(delta);
            };
            inner.send(request, Some(&mut watch)).await
        }
        None => inner.send(request, None).await,
    };
    (result, streamed)
}

#[async_trait]
impl<S: Service> Service for Retrying<S> {
    async fn send(
        &self,
        request: &ChatRequest,
        mut sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        let mut hop = FallbackHop::new(request, &self.endpoints);
        let mut backoff = Backoff::new(self.policy);
        let mut sending: Cow<'_, ChatRequest> = hop.first();
        let (started, mut attempts) = (Instant::now(), 0);
        loop {
            attempts += 1;
            let (result, streamed) = attempt(&self.inner, &sending, sink.as_deref_mut()).await;
            let (error, queue_wait) = match result {
                Err(CallError::Invoke {
                    error, queue_wait, ..
                }) => (error, queue_wait),
                done => return done,
            };
            let too_long = self.refuse_retry_after(&sending, &error, started);
            let failure = Failure {
                request: &sending,
                error: &error,
                wait_too_long: too_long.is_some(),
            };
            let policies: [&mut dyn Policy; 2] = [&mut hop, &mut backoff];
            // Nothing is sent again after a stream showed text.
            let next = (!streamed).then(|| policies.into_iter().find_map(|p| p.retry(&failure)));
            let Some(next) = next.flatten() else {
                let error = too_long.unwrap_or(error);
                return Err(CallError::Invoke {
                    attempts,
                    error,
                    queue_wait,
                });
            };
            if !next.wait.is_zero() {
                tokio::time::sleep(next.wait).await;
            }
            sending = Cow::Owned(next.request);
        }
    }
}
