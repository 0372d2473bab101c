//! Retries with backoff, jitter and `Retry-After`, as a layer.

use std::time::Duration;

use async_trait::async_trait;

use super::DeltaSink;
use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker};
use crate::retry::RetryPolicy;

/// Sends a request again after a failure worth retrying, as the [`RetryPolicy`] allows. The same
/// request is resent, so every attempt carries the same dialog's hints.
#[derive(Debug)]
pub(crate) struct Retrying<I> {
    inner: I,
    policy: RetryPolicy,
}

/// The last failure of a call, and how many requests were sent.
#[derive(Debug)]
pub(crate) struct Exhausted {
    pub(crate) attempts: u32,
    pub(crate) error: InvokeError,
}

impl<I: Invoker> Retrying<I> {
    pub(crate) fn new(inner: I, policy: RetryPolicy) -> Self {
        Retrying { inner, policy }
    }

    pub(crate) fn policy(&self) -> RetryPolicy {
        self.policy
    }

    /// Sends `request` until it is answered, a failure is not worth retrying, or retries run out.
    /// With `on_delta`, streams; a stream that already delivered text is not retried, since what was
    /// shown cannot be taken back.
    pub(crate) async fn call(
        &self,
        request: &ChatRequest,
        mut on_delta: Option<&mut DeltaSink<'_>>,
    ) -> Result<ChatResponse, Exhausted> {
        let mut retry = 0;
        loop {
            let mut streamed = false;
            let result = match on_delta.as_deref_mut() {
                Some(sink) => {
                    let mut watch = |delta: Delta<'_>| {
                        streamed = true;
                        sink(delta);
                    };
                    self.inner.invoke_stream(request, &mut watch).await
                }
                None => self.inner.invoke(request).await,
            };
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
